"""An immutable ReleasePolicy is hashable (a fresh user's drill, session 39, L4): ``hash(policy)``
raised ``TypeError: unhashable type: 'FrozenList'`` though the docs call a policy immutable."""

from __future__ import annotations

from dpriv.policy import ReleasePolicy

FIELDS = {
    "id": "rid",
    "time": "view",
    "qi": ["age", "sex"],
    "sensitive": "disease",
    "k": 3,
    "domains": {"sex": ["F", "M"], "disease": ["flu", "hiv", "none"]},
}


def test_equal_policies_hash_alike_and_serve_as_dict_keys():
    a, b = ReleasePolicy.from_dict(FIELDS), ReleasePolicy.from_dict(dict(FIELDS))
    assert a == b and hash(a) == hash(b)
    assert {a: "cached"}[b] == "cached"
    other = a.with_overrides(k=4)
    assert other != a and other not in {a: 1}
    assert a.with_overrides(domains={**a.domains, "sex": ["F", "M", "X"]}) not in {a, other}

"""A misspelled column name in ``qi`` (or ``sensitive``) whose ``[domains]``, ``[kinds]`` or
``[hierarchies]`` entry is spelled right is named as the likely typo (s46 drill): it was refused
as "[domains] names 'weight', which is neither a QI nor the sensitive column", pointing at the one
entry that was right."""

import pytest

from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy

BASE = {"id": "rid", "qi": ["age", "wieght"], "sensitive": "disease"}


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"domains": {"weight": [60, 90]}}, "[domains] names 'weight', which is neither a QI"),
        ({"kinds": {"weight": "numeric"}}, "[kinds] names 'weight', which is not a QI (['age', 'wieght'])"),
        ({"hierarchies": {"weight": "w.csv"}}, "[hierarchies] names 'weight', which is not a QI"),
    ],
)
def test_the_misspelled_policy_column_is_named(fields, said):
    with pytest.raises(PolicyError) as info:
        ReleasePolicy.from_dict({**BASE, **fields})
    msg = str(info.value)
    assert said in msg, msg
    table = said.split(" names")[0]
    assert f"the policy column 'wieght' has no {table} entry: if it is a misspelling of 'weight'" in msg, msg
    assert "[columns] or --qi/--sensitive" in msg


def test_a_misspelled_sensitive_column_is_named_too():
    fields = {**BASE, "qi": ["age"], "sensitive": "diesase", "domains": {"disease": ["a", "b"]}}
    with pytest.raises(PolicyError, match="the policy column 'diesase' has no \\[domains\\] entry"):
        ReleasePolicy.from_dict(fields)


def test_no_hint_where_no_column_looks_like_the_entry():
    # a stray entry far from every column; and a near column that has its own entry already
    for domains in ({"height": [1, 2]}, {"weight": [60, 90], "wieght": [60, 90]}):
        with pytest.raises(PolicyError) as info:
            ReleasePolicy.from_dict({**BASE, "domains": domains})
        msg = str(info.value)
        assert "neither a QI nor the sensitive column" in msg and "misspelling" not in msg, msg

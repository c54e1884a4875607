import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.errors import PolicyError
from dpriv.hilbert import grid_bits
from dpriv.policy import ReleasePolicy
from dpriv.policy_keys import flags_named

TOML = """
[columns]
id = "respondent_id"
time = "view"
qi = ["age", "gender", "weight"]
sensitive = "exam_result"
[privacy]
k = 4
t = 0.25
j = 0.2
emd_ground = "ordered"
[domains]
age = [45, 74]
gender = [1, 2]
weight = [60, 89]
exam_result = ["a", "b", "c"]
[kinds]
gender = "categorical"
[release]
seed = 7
[knowledge]
dk = "knowledge/dk.npz"
"""


def test_toml_round_trip_and_flags_win(tmp_path):
    f = tmp_path / "policy.toml"
    f.write_text(TOML)
    p = ReleasePolicy.from_toml(f, k=6, t=None)
    assert (p.k, p.t, p.j, p.seed, p.emd_ground) == (6, 0.25, 0.2, 7, "ordered")
    assert p.numeric_qi == ["age", "weight"] and p.categorical_qi == ["gender"]
    assert p.prior_columns == ["p__a", "p__b", "p__c"]
    assert p.knowledge_path("dk") == tmp_path / "knowledge" / "dk.npz"
    assert grid_bits(p) == 5  # 30 ages -> ceil(log2 30) = 5


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"k": 0}, "k"),
        ({"t": 1.5}, "t"),
        ({"j": -0.1}, "j"),
        ({"emd_ground": "manhattan"}, "emd_ground"),
        ({"qi": []}, "qi"),
        ({"colour": 1}, "colour"),
    ],
)
def test_invalid_values_name_the_field(bad, field):
    with pytest.raises(PolicyError, match=field):
        ReleasePolicy.from_dict({"qi": ["a"], "sensitive": "s", **bad})


def test_column_used_twice_is_refused():
    with pytest.raises(PolicyError, match="used twice"):
        ReleasePolicy.from_dict({"qi": ["a", "s"], "sensitive": "s"})


def test_bad_numeric_domain_and_unknown_table(tmp_path):
    with pytest.raises(PolicyError, match="min <= max"):
        ReleasePolicy.from_dict({"qi": ["a"], "sensitive": "s", "domains": {"a": [5, 1]}})
    f = tmp_path / "p.toml"
    f.write_text("[colums]\nqi=['a']\n")
    with pytest.raises(PolicyError, match="unknown table"):
        ReleasePolicy.from_toml(f)
    # a key above the first header is no table (a drill: "unknown table [colour]")
    f.write_text("k = 5\ncolour = 'red'\n[privacy]\nt = 0.3\n")
    with pytest.raises(PolicyError) as said:
        ReleasePolicy.from_toml(f)
    said = str(said.value)
    assert "'k' stands before any [table] header: put it under [columns], [privacy] or [release]" in said
    assert "'colour' stands before any [table] header: not a policy key" in said
    with pytest.raises(PolicyError, match="does not exist"):
        ReleasePolicy.from_toml(tmp_path / "none.toml")
    with pytest.raises(PolicyError, match=r"policy file .* cannot be read \(Is a directory\)"):
        ReleasePolicy.from_toml(tmp_path)  # a folder given for the file
    data = tmp_path / "history.parquet"  # a history given for the policy (not UTF-8 text)
    pd.DataFrame({"a": [1.5, 2.5]}).to_parquet(data)
    named = r"history\.parquet is not text .* --policy \(ReleasePolicy\.from_toml\) takes the TOML"
    with pytest.raises(PolicyError, match=named):
        ReleasePolicy.from_toml(data)
    latin = tmp_path / "latin.toml"  # a comment saved as Latin-1 was called "not text (a binary file)"
    latin.write_bytes("[privacy]\nk = 5\n# caf\u00e9\n".encode("latin-1"))
    with pytest.raises(
        PolicyError, match=r"latin\.toml is not UTF-8 \(byte 0xe9 on line 3\): save it as UTF-8"
    ):
        ReleasePolicy.from_toml(latin)


def test_exit_values_outside_the_declared_domain_are_named():
    base = {"qi": ["a"], "sensitive": "s", "domains": {"s": ["x", "dead", "gone"]}}
    with pytest.raises(PolicyError, match=r"\['gnoe'\] are not values of the sensitive column 's'"):
        ReleasePolicy.from_dict({**base, "exit_values": ["dead", "gnoe"]})
    assert ReleasePolicy.from_dict({**base, "exit_values": ["dead", "gone"]}).exit_values == ["dead", "gone"]
    # a sensitive domain of numbers, the exit values as text (how the guard compares them)
    coded = {"qi": ["a"], "sensitive": "s", "domains": {"s": [0, 1, 2]}, "exit_values": ["1", "2"]}
    assert ReleasePolicy.from_dict(coded).exit_values == ["1", "2"]
    # no declared domain yet (inferred from the data later): nothing to check against here
    assert ReleasePolicy.from_dict({"qi": ["a"], "sensitive": "s", "exit_values": ["p", "q"]}).exit_values


def test_resolve_infers_kinds_and_domains():
    df = pd.DataFrame({"id": [1, 2, 3], "age": [30, 50, 41], "sex": ["M", "F", "M"], "s": ["y", "x", "y"]})
    p, notes = ReleasePolicy(id="id", qi=["age", "sex"], sensitive="s").resolve(df)
    assert p.domains == {"age": [30, 50], "sex": ["F", "M"], "s": ["x", "y"]}
    assert p.kind("age") == "numeric" and p.kind("sex") == "categorical"
    assert len(notes) == 3 and "age" in notes[0]


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [("k", "true", "k must be a number, got True"), ("max_suppression", "true", "must be a number"),
     ("retro_max_gain", '"0.2"', "retro_max_gain must be a number, got '0.2'"),
     ("retro_retries", "true", "must be a number"), ("prior_key", '"no"', "prior_key must be true or false")],
)  # fmt: skip
def test_values_of_the_wrong_type_are_refused_not_coerced(tmp_path, key, value, words):
    """pydantic alone reads k = true as k = 1 (no anonymity) and "0.2" as 0.2."""
    path = tmp_path / "p.toml"
    path.write_text(f'[columns]\nqi = ["age"]\nsensitive = "s"\n[privacy]\n{key} = {value}\n')
    with pytest.raises(PolicyError, match=re.escape(words)):
        ReleasePolicy.from_toml(path)


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "é", "", " a", "nan"])), max_size=40),
    domain=st.lists(st.sampled_from(["a", "b", "é", "", "nan", "zz"]), unique=True, max_size=6),
    dtype=st.sampled_from(["string[pyarrow]", "string[python]", "str", "object"]),
)
def test_codes_of_arrow_strings_equal_the_index_lookup(values, domain, dtype):
    # strings held by Arrow take Arrow's hash lookup: every code (absent and missing: -1) must
    # be the one the Index lookup gives for the same values as Python objects
    from dpriv.domain_codes import codes

    series = pd.Series(values, dtype=dtype)
    expected = pd.Index(domain, dtype=object).get_indexer(pd.Index(values, dtype=object))
    got = codes(series, domain)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("line", "words"),
    [('k = "five"', "\n  k must be a number, got 'five'"), ("t = [1]", "\n  t: must be a number, got [1]"),
     ("k = 2.5", "\n  k: must be a whole number, got 2.5"), ("grouping = 3", "\n  grouping: "),
     ("rbk_closeness = 1.5", "\n  rbk_closeness: must be a number in [0, 1], got 1.5")],
)  # fmt: skip
def test_a_bad_value_in_a_policy_file_names_the_file_the_field_and_the_value(tmp_path, line, words):
    path = tmp_path / "p.toml"
    path.write_text(f'[columns]\nqi = ["age"]\nsensitive = "s"\n[privacy]\n{line}\n')
    with pytest.raises(PolicyError) as caught:
        ReleasePolicy.from_toml(path)
    said = str(caught.value)
    assert said.startswith(f"invalid policy (policy file {path}):") and words in said
    with pytest.raises(PolicyError, match=re.escape(f"(policy file {path} with overrides j=0.5):")):
        ReleasePolicy.from_toml(path, j=0.5)
    with pytest.raises(PolicyError, match=re.escape(f"(policy file {path} with --j):")):  # the CLI's flags
        ReleasePolicy.read_toml(path, {"j": 0.5}, flags_named)


def test_a_key_set_in_two_tables_is_refused(tmp_path):
    """k = 5 in [privacy] and k = 7 in [release] released with k = 7 without a word."""
    path = tmp_path / "p.toml"
    path.write_text('[columns]\nqi = ["age"]\nsensitive = "s"\n[privacy]\nk = 5\nt = 0.4\n[release]\nk = 7\n')
    with pytest.raises(PolicyError, match=r"p\.toml: 'k' is set in \[privacy\] and \[release\]: keep one"):
        ReleasePolicy.from_toml(path)
    path.write_text('[columns]\nqi = ["age"]\nsensitive = "s"\n[privacy]\nk = 5\n[release]\nt = 0.4\n')
    assert (ReleasePolicy.from_toml(path).k, ReleasePolicy.from_toml(path).t) == (5, 0.4)  # any one table


def test_a_policy_file_saved_with_a_byte_order_mark_reads(tmp_path):
    """'not valid TOML: Invalid statement (at line 1, column 1)' for a file a Windows editor saved."""
    path = tmp_path / "p.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'[columns]\nqi = ["age"]\nsensitive = "s"\n[privacy]\nk = 4\n')
    assert ReleasePolicy.from_toml(path).k == 4


DRILL = {"id": "rid", "qi": ["age"], "sensitive": "dis", "t": 0.5, "j": 2}


@pytest.mark.parametrize(
    ("bad", "words"),
    [({"t": 2}, "invalid policy:\n  t: must be a number in [0, 1], got 2"),
     ({"kk": 5}, "invalid policy:\n  unknown key 'kk'; did you mean 'k'?"),
     ({"k": "5"}, "invalid policy:\n  k must be a number, got '5'"),
     ({"qi": ["age", "dis"]}, "invalid policy:\n  columns ['dis'] are used twice")],
)  # fmt: skip
def test_the_constructor_refuses_a_bad_policy_in_the_words_of_from_dict(bad, words):
    """ReleasePolicy(...) (the README's way) raised pydantic's ValidationError ("Extra inputs are
    not permitted", no 'did you mean'), from_dict a PolicyError naming the key."""
    with pytest.raises(PolicyError) as built:
        ReleasePolicy(**{**DRILL, **bad})
    with pytest.raises(PolicyError) as read:
        ReleasePolicy.from_dict({**DRILL, **bad})
    assert str(built.value) == str(read.value) and str(built.value).startswith(words)
    assert built.value.__cause__ is None and built.value.__suppress_context__  # no pydantic chain shown
    assert "pydantic" not in str(built.value) and str(read.value).count("invalid policy") == 1


def test_a_policy_is_not_changed_in_place():
    """p.k = 3 raised pydantic's 'Instance is frozen [type=frozen_instance, ...]'."""
    p = ReleasePolicy(**DRILL)
    with pytest.raises(PolicyError) as caught:
        p.k = 3
    assert str(caught.value) == (
        "a ReleasePolicy is immutable: p.k = 3 is refused; make a changed copy with p.with_overrides(k=3)"
    )
    with pytest.raises(
        PolicyError, match=re.escape('del p.t is refused; make a changed copy with p.without("t")')
    ):
        del p.t
    with pytest.raises(
        PolicyError, match=re.escape("p.kk = 3 is refused (unknown key 'kk'; did you mean 'k'?)")
    ):
        p.kk = 3
    assert (p.k, p.t) == (5, 0.5) and p.with_overrides(k=3).k == 3


def test_without_sets_keys_back_to_their_defaults():
    """with_overrides(posterior_bound=None) kept the bound without a word: None is a flag not given."""
    p = ReleasePolicy(**DRILL, time="week", k=7, posterior_bound=0.9)
    assert p.with_overrides(posterior_bound=None, k=None).posterior_bound == 0.9  # None: not given
    q = p.without("posterior_bound", "time", "k")
    assert (q.posterior_bound, q.time, q.k, q.t, q.qi) == (None, None, 5, 0.5, ["age"])
    assert p.posterior_bound == 0.9  # a copy
    typo = "without('posterior_bund'): unknown key 'posterior_bund'; did you mean 'posterior_bound'?"
    with pytest.raises(PolicyError, match=re.escape(typo)):
        p.without("posterior_bund")
    with pytest.raises(PolicyError, match=re.escape("without('k', 'qi'): qi: no default to go back to")):
        p.without("k", "qi")
    gated = ReleasePolicy(**DRILL, retro_max_gain=0.2, retro_lever="k")
    with pytest.warns(UserWarning, match="retro_lever set but the release gate is off"):  # checked anew
        gated.without("retro_max_gain")


def test_model_copy_validates_its_update():
    """pydantic's model_copy(update=...) skipped validation: k = 0 (and a QI named twice) made a
    policy, and a date QI's domain stayed dates; it is refused or normalised as with_overrides."""
    p = ReleasePolicy(**DRILL)
    for update in ({"k": 0}, {"qi": ["age", "age"]}, {"kk": 3}):
        with pytest.raises(PolicyError) as copied:
            p.model_copy(update=update)
        with pytest.raises(PolicyError) as overridden:
            p.with_overrides(**update)
        assert str(copied.value) == str(overridden.value) and str(copied.value).startswith("invalid policy:")
    dated = p.model_copy(update={"kinds": {"age": "date"}, "domains": {"age": ["1970-01-02", "1970-01-31"]}})
    assert dated.domains["age"] == [1, 30] and dated.k == 5
    with pytest.raises(PolicyError, match="immutable"):  # its tables read-only, as any policy's
        dated.domains["age"].append(99)
    assert p.model_copy() == p and p.model_copy(update={"time": "week"}).time == "week"


def test_the_lists_and_tables_of_a_policy_are_read_only():
    """p.qi.append("rid") changed a validated policy: the id became a QI too, unchecked."""
    import hashlib
    import json
    import pickle

    p = ReleasePolicy(**DRILL, kinds={"age": "numeric"}, domains={"age": [20, 79], "dis": ["a", "b"]})
    immutable = "a ReleasePolicy is immutable: its {} cannot be changed in place; make a changed copy with "
    with pytest.raises(PolicyError) as caught:
        p.qi.append("rid")
    assert str(caught.value) == immutable.format("qi") + "p.with_overrides(qi=...)"
    for change in (
        lambda: p.domains["age"].append(99),
        lambda: p.domains.update(rid=[0, 1]),
        lambda: p.kinds.pop("age"),
        lambda: p.exit_values.extend(["a", "b"]),
    ):
        with pytest.raises(PolicyError, match=re.escape("immutable: its ")):
            change()
    with pytest.raises(PolicyError, match=re.escape(immutable.format("qi"))):
        p.qi += ["rid"]
    assert (p.qi, p.domains, p.kinds, p.exit_values) == (
        ["age"],
        {"age": [20, 79], "dis": ["a", "b"]},
        {"age": "numeric"},
        [],
    )
    # read as lists and dicts: pandas' columns, plain copies, policy.json's bytes, a Dask worker's copy
    view = pd.DataFrame({"rid": [1], "age": [30], "dis": ["a"]})
    assert view[p.qi].columns.tolist() == ["age"] and type(p.qi + ["rid"]) is list
    fingerprint = json.dumps(p.fingerprint(), sort_keys=True).encode()  # the digest with plain lists
    assert hashlib.sha256(fingerprint).hexdigest().startswith("f782d3b09c1915be55fa11262ee432df")
    assert type(p.model_dump()["domains"]["age"]) is list and p.model_dump()["qi"] == ["age"]
    again = pickle.loads(pickle.dumps(p))
    assert again == p and again.domains["age"] == [20, 79]
    with pytest.raises(PolicyError):
        again.domains["age"].append(99)

"""The released-view format (dpriv.released): value sets with escaped values, one writer and
one parser, checked end to end by the verifier."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv._random import keyed
from dpriv.anonymity import mondrian_view, verify_release
from dpriv.metrics import draw_microdata
from dpriv.policy import ReleasePolicy
from dpriv.released import escape_value, group_labels, parse_value_set, split_value_sets, value_set_items

ODD = ["a", "a,b", "{x}", "b\\", "\\,"]


def test_value_set_escaping_round_trips():
    for v in ODD:
        text = "{" + escape_value(v) + ",z}"
        assert value_set_items(text) == [v, "z"], text
        assert split_value_sets(pd.Series([text, "{p,q}"])).tolist() == [[v, "z"], ["p", "q"]]
    assert escape_value("plain") == "plain"  # ordinary values: the bytes of before
    assert parse_value_set(" { a , b ,a} ") == ("a", "b")
    assert parse_value_set("Male") == ("Male",)


def test_values_with_commas_and_braces_are_released_and_verified():
    n = 40
    rng = np.random.default_rng(0)
    view = pd.DataFrame(
        {
            "rid": np.arange(n),
            "x": rng.integers(0, 10, n),
            "c": rng.choice(ODD, n),
            "s": rng.choice(["u", "v"], n),
        }
    )
    policy = ReleasePolicy(
        id="rid", qi=["x", "c"], sensitive="s", k=4, t=1.0, j=10.0,
        domains={"x": [0, 9], "c": ODD, "s": ["u", "v"]}, kinds={"x": "numeric", "c": "categorical"},
    )  # fmt: skip
    rel = mondrian_view(view, policy, model="k").released
    assert rel["c"].str.contains("\\", regex=False).any()  # some sets hold escaped values
    counts = np.bincount(pd.Index(["u", "v"]).get_indexer(view["s"]), minlength=2)
    report = verify_release(rel, policy, view_counts=counts)
    assert report.ok, report.problems
    drawn = draw_microdata(rel, policy)["c"]
    assert set(drawn) <= set(ODD)


def test_create_qig_keeps_the_meta_dtypes_under_pandas_2_and_3():
    """The pandas path gives the dtypes of the Dask meta (pandas 3 would infer ``str`` for the
    value sets and the text sensitive column from object arrays; the meta says object)."""
    from dpriv.released import LABEL, create_qig, released_meta

    policy = ReleasePolicy(
        id="rid",
        qi=["age", "city"],
        sensitive="s",
        k=2,
        t=1.0,
        j=5.0,
        domains={"age": [0, 99], "city": ["Metz", "Paris, FR"], "s": ["a", "b"]},
    )
    part = pd.DataFrame(
        {
            "rid": [1, 2, 3, 4],
            "age": np.array([30, 41, 35, 50], dtype=np.int64),
            "city": np.array(["Metz", "Paris, FR", "Metz", "Metz"], dtype=object),
            "s": np.array(["a", "b", "b", "a"], dtype=object),
            LABEL: np.array([7, 7, 9, 9], dtype=np.int64),
        }
    )
    out = create_qig(part, policy)
    meta = released_meta(policy, np.dtype(object), {"age": np.dtype("int64")})
    assert out.dtypes.to_dict() == meta.dtypes.to_dict()
    assert out["city"].tolist() == ["{Metz,Paris\\, FR}"] * 2 + ["{Metz}"] * 2
    assert out[["age_min", "age_max"]].values.tolist() == [[30, 41]] * 2 + [[35, 50]] * 2


# ------------------------------------------------------------------ dtype of the text columns (s34)
def test_released_text_columns_are_object_in_memory_and_read_back(tmp_path):
    """anonymize() returns object text columns; pd.read_parquet of the same file gives pandas 3's
    str (object on pandas 2): read_released gives the release's own frame back on both."""
    from conftest import random_view

    from dpriv.io import write_parquet
    from dpriv.release import anonymize
    from dpriv.released import read_released

    view = random_view(120, seed=3)  # gender as text F/M: a categorical QI
    policy = ReleasePolicy(id="respondent_id", qi=["age", "gender"], sensitive="exam_result", k=4, t=0.9, j=5)
    rel = anonymize(view, policy, prior="uniform").released
    assert rel["gender"].dtype == object and rel["exam_result"].dtype == object
    assert isinstance(rel["gender"].iloc[0], str)
    write_parquet(tmp_path / "view.parquet", rel)  # the ledger's writer
    back = read_released(tmp_path / "view.parquet")
    pd.testing.assert_frame_equal(back, rel.reset_index(drop=True), check_dtype=True)
    assert {str(t) for t in back.dtypes} == {"int64", "object"}


def test_text_as_object_converts_every_pandas_string_dtype_and_nothing_else():
    from dpriv.released import text_as_object

    frame = pd.DataFrame(
        {
            "s": pd.array(["a", None], dtype="string"),
            "p": pd.array(["{F,M}", "b"], dtype="string[pyarrow]"),
            "o": pd.Series(["x", "y"], dtype=object),  # object stays (pandas 3 would infer str from an array)
            "n": [1, 2],
            "f": [0.5, np.nan],
        }
    )
    out = text_as_object(frame)
    assert [str(t) for t in out.dtypes] == ["object", "object", "object", "int64", "float64"]
    assert out["s"].tolist() == ["a", None] and out["p"].tolist() == ["{F,M}", "b"]
    assert out["o"].tolist() == ["x", "y"] and out[["n", "f"]].equals(frame[["n", "f"]])
    plain = frame[["o", "n", "f"]]
    assert text_as_object(plain) is plain  # nothing to convert: the frame itself


@pytest.mark.parametrize("release_format", ["generalized", "anatomy"])
def test_ledger_reads_a_release_back_with_object_text_columns(tmp_path, release_format):
    """Ledger.read_view (and read_sensitive of an Anatomy release) gave pandas 3's str dtype for the
    text columns; they now give object columns of Python str on pandas 2 and 3, as the released view
    anonymize() returns."""
    from conftest import random_view

    from dpriv.ledger import Ledger
    from dpriv.release import anonymize
    from dpriv.released import text_as_object

    view = random_view(120, seed=3, qi=("age", "gender"))  # gender F/M, exam_result a, b, c: text
    policy = ReleasePolicy(
        id="respondent_id",
        qi=["age", "gender"],
        sensitive="exam_result",
        k=4,
        t=0.9,
        j=5,
        release_format=release_format,
    )
    out = anonymize(view, policy, prior="uniform")
    led = Ledger(tmp_path / "led", create=True)
    led.commit(1, out.released, {}, view, {}, sensitive=out.sensitive)
    back = led.read_view(1)
    assert back["gender"].dtype == object and isinstance(back["gender"].iloc[0], str)
    pd.testing.assert_frame_equal(
        back, out.released.drop(columns="_order", errors="ignore").reset_index(drop=True)
    )
    if release_format == "anatomy":
        table = led.read_sensitive(1)
        assert table["exam_result"].dtype == object and set(table["exam_result"]) == {"a", "b", "c"}
        # anonymize() keeps this table str on pandas 3 (object would change the bytes of sensitive.parquet)
        pd.testing.assert_frame_equal(table, text_as_object(out.sensitive.reset_index(drop=True)))
    else:
        assert back["exam_result"].dtype == object and led.read_sensitive(1) is None


@settings(max_examples=150, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(
            st.sampled_from([-1, 0, 1, 2, 7, 10**6, 2**40]),
            st.sampled_from([0, 1, 5, 2**63, 2**64 - 1, 123456789]) | st.integers(0, 2**64 - 1),
        ),
        max_size=40,
    ),
    seed=st.integers(0, 2**40),
)
def test_group_labels_hash_each_groups_smallest_key(pairs, seed):
    # reference written out: a group's label is its smallest tie-break key, seeded hash, >> 1
    group = np.array([g for g, _ in pairs], dtype=np.int64)
    ties = np.array([t for _, t in pairs], dtype=np.uint64)
    smallest: dict[int, int] = {}
    for g, t in pairs:
        if g >= 0:
            smallest[g] = min(smallest.get(g, t), t)
    hashed = {
        g: int(keyed(np.array([t], dtype=np.uint64), seed, "label")[0] >> np.uint64(1))
        for g, t in smallest.items()
    }
    want = [hashed.get(g, -1) for g, _ in pairs]
    got = group_labels(ties, group, seed)
    assert got.dtype == np.int64 and got.tolist() == want

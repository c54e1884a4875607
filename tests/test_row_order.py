"""Tests of dpriv.row_order: the release's stable multi-column sorts agree with pandas'."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.row_order import in_order, stable_positions, stably_sorted


def _frame(a: list[int], b: list[int], dtype_a: str = "int64", dtype_b: str = "uint64") -> pd.DataFrame:
    n = min(len(a), len(b))
    return pd.DataFrame(
        {
            "a": np.asarray(a[:n], dtype=dtype_a),
            "b": np.asarray(b[:n], dtype=dtype_b),
            "x": np.arange(n, dtype=float) / 7,  # a payload column the sort must carry along
            "s": pd.array([f"v{i % 3}" for i in range(n)], dtype="string"),
        },
        index=np.arange(n)[::-1] * 3,  # not a RangeIndex: the labels must follow their rows
    )


@settings(max_examples=150, deadline=None)
@given(
    a=st.lists(st.integers(-3, 3), max_size=40),
    b=st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 4), max_size=40),
)
def test_same_rows_and_positions_as_pandas(a, b):
    frame = _frame(a, b)
    want = frame.sort_values(["a", "b"], kind="stable")
    pd.testing.assert_frame_equal(stably_sorted(frame, ["a", "b"]), want)
    positions = frame.reset_index(drop=True).sort_values(["a", "b"], kind="stable").index.to_numpy()
    np.testing.assert_array_equal(stable_positions(frame, ["a", "b"]), positions)
    # ties on both keys keep their input order (stable), as the second column alone shows
    by_b = np.argsort(frame["b"].to_numpy(), kind="stable")
    np.testing.assert_array_equal(stable_positions(frame, ["b"]), by_b)


def test_large_uint64_keys_order_by_value():
    """uint64 keys above 2**63 (Hilbert keys, seeded ties) sort after the small ones: a
    conversion to int64 on the way would put them first."""
    frame = _frame([0, 0, 0, 0], [2**64 - 1, 5, 2**63, 5])
    np.testing.assert_array_equal(stable_positions(frame, ["a", "b"]), [1, 3, 2, 0])


def test_a_frame_in_order_is_handed_back():
    frame = _frame([1, 1, 2, 2], [9, 9, 0, 1])
    assert stably_sorted(frame, ["a", "b"]) is frame
    np.testing.assert_array_equal(stable_positions(frame, ["a", "b"]), np.arange(4))


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ([[1, 1, 2], [5, 6, 0]], True),  # the first key rises, the second may fall
        ([[1, 1, 2], [6, 5, 0]], False),  # a tie on the first key, the second falls
        ([[1, 2, 1], [0, 0, 0]], False),
        ([[3, 3, 3], [1, 1, 1]], True),  # all tied
        ([[7], [0]], True),
        ([[], []], True),
    ],
)
def test_in_order(keys, expected):
    assert in_order([np.asarray(k, dtype=np.int64) for k in keys]) is expected


def test_other_dtypes_sorted_by_pandas():
    """Nullable, float and string keys keep pandas' own order (missing values last)."""
    frame = pd.DataFrame(
        {
            "a": pd.array([2, None, 1, 2], dtype="Int64"),
            "f": [0.5, np.nan, -1.0, 0.5],
            "s": pd.array(["b", "a", None, "a"], dtype="string"),
        }
    )
    for cols in (["a", "s"], ["f", "s"], ["s"]):
        want = frame.sort_values(cols, kind="stable")
        pd.testing.assert_frame_equal(stably_sorted(frame, cols), want)
        np.testing.assert_array_equal(stable_positions(frame, cols), want.index.to_numpy())


def test_membership_in_label_id_order_is_not_sorted_again():
    """The in-process release sorts its membership by (label, id) once: the verification's
    canonical rows and the pk step's canonical order then find it in order (no copy, identity
    positions) and agree with pandas' sort on a shuffled membership."""
    from dpriv.release_check import canonical_rows
    from dpriv.released import LABEL
    from dpriv.state import canonical_order

    class Policy:  # the one field both read
        id = "rid"

    rng = np.random.default_rng(3)
    labels, ids = rng.integers(0, 50, 500), rng.permutation(500)
    shuffled = pd.DataFrame({LABEL: labels, "rid": ids, "p": rng.random(500)})
    ordered = canonical_rows(shuffled, Policy)
    pd.testing.assert_frame_equal(ordered, shuffled.sort_values([LABEL, "rid"], kind="stable"))
    assert canonical_rows(ordered, Policy) is ordered
    np.testing.assert_array_equal(canonical_order(ordered, Policy), np.arange(500))
    np.testing.assert_array_equal(canonical_order(shuffled, Policy), ordered.index.to_numpy())


def test_state_order_of_ordered_ids_sorts_nothing(monkeypatch):
    """The new state's ids of a first release come in (bucket, id) order already: their order
    is found without a sort (pandas' and NumPy's sorts are made to fail here), and a shuffle
    of them is put back in that order."""
    from dpriv.state_buckets import state_buckets, state_order

    ids = pd.Series(np.arange(1, 2001, dtype=np.int64))
    want = np.lexsort((ids.to_numpy(), state_buckets(ids, 4)))
    ordered = ids.iloc[want]
    shuffled = ordered.sample(frac=1.0, random_state=5)
    np.testing.assert_array_equal(shuffled.to_numpy()[state_order(shuffled, 4)], ordered.to_numpy())

    def no_sort(*args, **kwargs):
        raise AssertionError("sorted an ordered column")

    for owner, name in (
        (pd.Series, "sort_values"),
        (pd.DataFrame, "sort_values"),
        (np, "lexsort"),
        (np, "argsort"),
    ):
        monkeypatch.setattr(owner, name, no_sort)
    np.testing.assert_array_equal(state_order(ordered, 4), np.arange(2000))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0, 1, 7, 2**63, 2**64 - 1])), max_size=40),
    st.booleans(),
)
def test_key_tie_positions_is_the_stable_order_of_the_pairs(pairs, key_sorted):
    """Positions in (key, tie) order, equal pairs in input order, whether the keys come sorted
    (ties then sorted within each run of a key) or not; None exactly when nothing moves. The
    reference is Python's stable sort of the pairs (large uint64 values compared as integers)."""
    from dpriv.row_order import key_tie_positions

    if key_sorted:
        pairs = sorted(pairs, key=lambda p: p[0])
    key = np.array([p[0] for p in pairs], dtype=np.uint64)
    tie = np.array([p[1] for p in pairs], dtype=np.uint64)
    want = sorted(range(len(pairs)), key=lambda i: pairs[i])
    got = key_tie_positions(key, tie)
    if want == list(range(len(pairs))):
        assert got is None
    else:
        assert got.dtype == np.int64 and got.tolist() == want


def test_key_tie_positions_sorts_long_runs_of_one_key():
    """A run of one key longer than a few rows (hundreds per key at 10^6 tuples) is sorted by its
    ties as a whole, between runs left in place."""
    from dpriv.row_order import key_tie_positions

    rng = np.random.default_rng(5)
    key = np.repeat(np.array([3, 9, 2**40], dtype=np.uint64), [1, 600, 250])
    tie = rng.integers(0, 2**63, len(key), dtype=np.uint64)
    tie[100:110] = tie[100]  # equal pairs keep their input order
    got = key_tie_positions(key, tie)
    assert got.tolist() == np.lexsort((tie, key)).tolist()
    assert got[0] == 0 and set(got[1:601]) == set(range(1, 601))

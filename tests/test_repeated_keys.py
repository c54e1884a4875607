"""The hash check of repeated (time, id) keys of a Dask history (dpriv.repeated_keys): it says
"no" only when no key occurs twice (a property against pandas' own ``duplicated``), so the
row checks of a valid Dask history end in ONE compute (the exact count per key, a groupby of
every key, ran as a second one before); a repeated respondent is named as before, also where
the hash cannot decide (float ids: 0.0 and -0.0 are one key)."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.callbacks import Callback

from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.repeated_keys import may_repeat
from dpriv.validate import check_rows

POLICY = ReleasePolicy(
    id="id",
    time="t",
    qi=["age"],
    sensitive="s",
    k=2,
    domains={"age": [0, 100], "s": ["a", "b"]},
)


def history(ids, times) -> pd.DataFrame:
    n = len(ids)
    return pd.DataFrame(
        {"id": ids, "t": times, "age": [30 + i % 50 for i in range(n)], "s": ["a", "b"] * (n // 2)}
    )


@pytest.mark.parametrize("seed", range(12))
def test_may_repeat_is_false_exactly_when_no_key_occurs_twice(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    ids = rng.integers(0, int(rng.choice([3, 50, 10**6])), n)
    keys = pd.DataFrame({"t": rng.integers(1, 3, n), "id": ids})
    if seed % 2:  # text ids
        keys["id"] = pd.array([f"r{i}" for i in ids], dtype="string")
    repeated = bool(keys.duplicated().any())  # pandas' reference, one frame
    for parts in (1, 3, 7):
        got = may_repeat(dd.from_pandas(keys, npartitions=parts, sort=False)).compute()
        assert got is repeated, (parts, keys)


def test_keys_hashing_cannot_decide_are_left_to_the_exact_count():
    keys = pd.DataFrame({"t": [1, 1], "id": [0.0, -0.0]})  # one key to a groupby, two bit patterns
    assert may_repeat(dd.from_pandas(keys, npartitions=2, sort=False)) is True
    objects = pd.DataFrame({"t": [1, 1], "id": pd.Series([1, 1.0], dtype=object)})  # one key, two texts
    with dask.config.set({"dataframe.convert-string": False}):
        assert may_repeat(dd.from_pandas(objects, npartitions=2, sort=False)) is True


class _Graphs(Callback):
    """Counts the graphs run by the local scheduler."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def _start(self, dsk):
        self.n += 1


def test_a_valid_dask_history_is_row_checked_in_one_compute():
    frame = history(list(range(20)) * 2, [1] * 20 + [2] * 20)  # each respondent once per view
    data = dd.from_pandas(frame, npartitions=4, sort=False)
    with dask.config.set(scheduler="sync"), _Graphs() as graphs:
        check_rows(data, POLICY)
    assert graphs.n == 1


@pytest.mark.parametrize("ids", [[1, 2, 3, 1, 5, 6, 7, 8], [1.0, 2.0, 3.0, 0.0, 5.0, -0.0, 7.0, 8.0]])
def test_a_respondent_twice_in_a_view_is_still_named_with_its_rows(ids):
    frame = history(ids, [1] * 8)  # rows 0 and 3 (or 3 and 5: 0.0 and -0.0) hold one respondent
    rows = "row 0 .*row 3" if ids[0] == ids[3] else "row 3 .*row 5"
    for data in (frame, dd.from_pandas(frame, npartitions=3, sort=False)):
        with pytest.raises(InputError, match=rf"duplicate 'id' within one view.*{rows}"):
            check_rows(data, POLICY)

"""The state's buckets re-cut where they lie (:func:`dpriv.state_buckets.by_bucket` given the
buckets its partitions hold, ``held``), against the pandas cut
(:func:`dpriv.state_buckets.split_by_bucket`) as the oracle.

When the bucket count doubles (or more) at a release, each output bucket j keeps the rows of
held bucket ``j % held`` whose hash falls in j (issue 13; docs/scaling.md, "The doubling's split
where its bucket lies"): the rows, their order, index and dtypes are those of the pandas cut."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.state_buckets import BUCKET, bucket_rows, by_bucket, split_by_bucket

ID = "rid"


def held(frame: pd.DataFrame, nheld: int) -> dd.DataFrame:
    """``frame`` as a Dask state of ``nheld`` buckets: partition b the rows of bucket b."""
    return dd.concat([dd.from_pandas(p, npartitions=1) for p in split_by_bucket(frame, ID, nheld)])


def parts(frame: dd.DataFrame) -> list[pd.DataFrame]:
    return list(dask.compute(*frame.to_delayed(), scheduler="sync"))


def test_a_doubling_by_hand():
    # buckets of 2: 5 1 9 2 7 3 8 4 6 10 11 12 -> 0 1 1 0 0 0 0 0 0 1 1 0
    # buckets of 4: 5 1 9 2 7 3 8 4 6 10 11 12 -> 0 1 3 2 0 0 0 0 0 1 1 0
    ids = [5, 1, 9, 2, 7, 3, 8, 4, 6, 10, 11, 12]
    frame = pd.DataFrame({ID: np.array(ids, dtype=np.int64), "v": np.arange(12.0)})
    out = by_bucket(held(frame, 2), ID, 4, held=2)
    assert out.divisions == (0, 1, 2, 3, 3)
    got = parts(out)
    # bucket 0 of 2 holds 5 2 7 3 8 4 6 12: 2 goes to bucket 2, the rest stay in 0, in order
    assert [p[ID].tolist() for p in got] == [[5, 7, 3, 8, 4, 6, 12], [1, 10, 11], [2], [9]]
    assert [p["v"].tolist() for p in got] == [[0, 4, 5, 6, 7, 8, 11], [1, 9, 10], [3], [2]]
    assert [p.index.tolist() for p in got] == [[0] * 7, [1] * 3, [2], [3]]
    assert all(p.index.name == BUCKET for p in got)


def test_one_bucket_s_rows_by_hand_keyed_or_not():
    """:func:`bucket_rows` (the pk step's cut of a held bucket) and its keyed form (what
    ``by_bucket`` reads): the same rows, order and index, the keyed one with the bucket last."""
    ids = [5, 1, 9, 2, 7, 3, 8, 4, 6, 10, 11, 12]  # buckets of 4: 0 1 3 2 0 0 0 0 0 1 1 0
    frame = pd.DataFrame(
        {ID: np.array(ids, dtype=np.int64), "v": np.arange(12.0)}, index=np.arange(120, 0, -10)
    )
    plain = bucket_rows(frame, ID, 4, 1)
    assert plain[ID].tolist() == [1, 10, 11] and plain["v"].tolist() == [1, 9, 10]
    assert plain.index.tolist() == [110, 30, 20] and list(plain.columns) == [ID, "v"]
    keyed = bucket_rows(frame, ID, 4, 1, keyed=True)
    assert list(keyed.columns) == [ID, "v", BUCKET] and keyed[BUCKET].dtype == np.int64
    pd.testing.assert_frame_equal(keyed, plain.assign(**{BUCKET: np.array([1, 1, 1], dtype=np.int64)}))
    assert bucket_rows(frame, ID, 4, 2, keyed=True)[ID].tolist() == [2]
    empty = bucket_rows(frame.iloc[:0], ID, 4, 1, keyed=True)
    assert empty.empty and list(empty.columns) == [ID, "v", BUCKET]


@pytest.mark.parametrize("string_ids", [False, True])
@pytest.mark.parametrize("nheld,factor", [(1, 2), (2, 2), (2, 4), (3, 2), (3, 4)])
def test_split_where_it_lies_equals_the_pandas_cut(nheld, factor, string_ids):
    """n = 2h and 4h buckets from h held: partition j has exactly the rows of bucket j in
    their order (the pandas cut of the same rows), indexed by j, in the input's dtypes."""
    n = nheld * factor
    rng = np.random.default_rng(10 * nheld + factor + string_ids)
    ids = rng.permutation(10_000)[:300]
    frame = pd.DataFrame({ID: ids.astype(str) if string_ids else ids, "x": rng.random(300)})
    source = held(frame, nheld)
    out = by_bucket(source, ID, n, held=nheld)
    assert out.npartitions == n and out.divisions == (*range(n), n - 1)
    expected = split_by_bucket(source.compute(scheduler="sync"), ID, n)
    got = parts(out)
    assert sum(map(len, got)) == len(frame)
    for j, (part, want) in enumerate(zip(got, expected, strict=True)):
        assert (part.index == j).all() and part.index.name == BUCKET
        pd.testing.assert_frame_equal(part.reset_index(drop=True), want, check_exact=True)
    assert out._meta.dtypes.equals(source._meta.dtypes)  # no Arrow strings the kernels do not make

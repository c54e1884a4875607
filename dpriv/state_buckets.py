"""The respondent state's buckets and row order (docs/architecture.md, "the state").

The state is written bucket after bucket, each bucket sorted by id, on both release paths, so
its bytes do not depend on the path taken or the number of partitions: a bucket is a seed-free
hash of the id modulo the number of buckets (:func:`state_buckets`). :func:`by_bucket` puts a
Dask frame in one partition per bucket (without moving a row when the frame's partitions are
its buckets already); :func:`state_order` gives the rows' order in pandas.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._random import stable_hash
from dpriv.row_order import in_order, increasing_positions, then_by

#: Private column of a state row's bucket (:func:`state_buckets`) while the state is re-cut.
BUCKET = "_bucket"


def state_buckets(ids: pd.Series | np.ndarray, nbuckets: int) -> np.ndarray:
    """The bucket (int64 in ``0..nbuckets-1``) of each respondent id: a seed-free hash of the
    id (:func:`dpriv._random.stable_hash`; not the same for every dtype of the same values:
    int32 -1 and int64 -1 hash apart, so a resumed history's ids are cast to the ledger's dtype
    first, :func:`dpriv.resume_types.resumed_types`) modulo ``nbuckets``."""
    return (stable_hash(ids) % np.uint64(max(int(nbuckets), 1))).astype(np.int64)


def state_order(ids: pd.Series, n: int) -> np.ndarray:
    """Positions (int64) of ``ids`` (unique) in the state's row order: bucket
    (:func:`state_buckets` of ``n``), then id."""
    # one bucket (a Dask bucket's own rows, a one-part state): every row in bucket 0, no hash
    values = ids.to_numpy()
    buckets = state_buckets(ids, n) if n > 1 else np.zeros(len(values), dtype=np.int64)
    ints = values.dtype.kind in "iu"
    if ints and in_order([buckets, values]):  # a first release's new state
        return np.arange(len(values), dtype=np.int64)
    by_id = increasing_positions(values) if ints else None
    if by_id is None:  # ties or text ids: pandas' stable sort
        by_id = ids.reset_index(drop=True).sort_values(kind="stable").index.to_numpy()
    return by_id if n <= 1 else then_by(by_id, buckets, n)


def _with_bucket(part: pd.DataFrame, column: str, nbuckets: int) -> pd.DataFrame:
    return part.assign(**{BUCKET: state_buckets(part[column], nbuckets)})


def by_bucket(frame: dd.DataFrame, column: str, nbuckets: int, *, held: int | None = None) -> dd.DataFrame:
    """``frame`` indexed by the bucket of its ``column`` (:func:`state_buckets`), one partition
    per bucket, divisions ``(0, 1, ..., nbuckets - 1, nbuckets - 1)``.

    ``held``: the number of buckets a frame's partitions already are (partition b holding
    bucket b of ``held``, as :func:`next_state` returns a state). Then no row moves when
    ``nbuckets`` is a multiple of it: the partitions are declared the buckets (equal counts)
    or each is split where it lies (bucket j of ``nbuckets`` is the part of bucket
    ``j % held`` whose hash modulo ``nbuckets`` is j). Otherwise one shuffle on the bucket."""
    n = max(int(nbuckets), 1)
    meta = _with_bucket(frame._meta, column, n)
    divisions = (*range(n), n - 1)
    if not held or n % held or frame.npartitions != held:
        return frame.map_partitions(_with_bucket, column, n, meta=meta).set_index(BUCKET, divisions=divisions)
    if held == n:
        keyed = frame.map_partitions(_with_bucket, column, n, meta=meta)
    else:  # partition j reads bucket j % held and keeps its rows of bucket j
        sources = frame.partitions[[j % held for j in range(n)]]
        keyed = sources.map_partitions(_bucket_rows, column, n, meta=meta)
    return keyed.set_index(BUCKET, sorted=True, divisions=divisions)


def _bucket_rows(part: pd.DataFrame, column: str, nbuckets: int, partition_info=None) -> pd.DataFrame:
    """The rows of ``part`` in bucket ``partition_info["number"]`` (Dask passes it), keyed."""
    return bucket_rows(part, column, nbuckets, partition_info["number"], keyed=True)


def bucket_rows(
    part: pd.DataFrame, column: str, nbuckets: int, bucket: int, *, keyed: bool = False
) -> pd.DataFrame:
    """The rows of ``part`` whose ``column`` is in bucket ``bucket`` of ``nbuckets``
    (:func:`state_buckets`), in their order, ``part``'s columns and index: the rows
    :func:`by_bucket` keeps of a held bucket when the count grows (there indexed by the bucket).
    ``keyed``: with the bucket (int64) in a last column :data:`BUCKET`, as :func:`by_bucket`
    reads them (the ids hashed once, the column added to the kept rows only)."""
    buckets = state_buckets(part[column], nbuckets)
    mask = buckets == bucket
    rows = part[mask]
    return rows.assign(**{BUCKET: buckets[mask]}) if keyed else rows


def split_by_bucket(frame: pd.DataFrame, column: str, nbuckets: int) -> list[pd.DataFrame]:
    """The rows of ``frame`` cut by the bucket of ``column`` (:func:`state_buckets` of
    ``nbuckets``): a list of ``nbuckets`` frames, item b holding the rows of bucket b in their
    order in ``frame`` (empty frames with ``frame``'s columns and dtypes for empty buckets), each
    on a RangeIndex. One stable sort by bucket and ``nbuckets`` slices of it (a mask per bucket
    was a pass over the frame per bucket)."""
    n = max(int(nbuckets), 1)
    frame = frame.reset_index(drop=True)
    if n == 1:
        return [frame]
    buckets = state_buckets(frame[column], n)
    order = np.argsort(buckets, kind="stable")
    bounds = np.searchsorted(buckets[order], np.arange(n + 1))
    ordered = frame.take(order).reset_index(drop=True)
    return [ordered.iloc[a:b].reset_index(drop=True) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

"""RBK^sv of a view from the respondent state (E7; docs/algorithms.md §1.2, Algorithm 1 line 6).

The ``rbk`` step of a release (:func:`revised`): each respondent of the view gets her revised
prior from the last ``W`` posteriors of her state row (:mod:`dpriv.state`), a first-timer her
BK^sv. On Dask the view is joined with the state on the id and revised per partition
(:func:`with_state`, :func:`with_revised_priors`), except at a first release (empty state:
:func:`revised_view` per partition); in process only the state rows of the view's
respondents are read (:func:`revised_view`). The adversary (:mod:`dpriv.attack`)
revises with the same kernel (:func:`revised_priors`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, map_frame, shared, to_pandas
from dpriv.anonymity.persistent import PGROUP
from dpriv.knowledge.revision import revise
from dpriv.knowledge.tables import MarkovTables
from dpriv.policy import ReleasePolicy
from dpriv.state import STATE, pk_columns
from dpriv.state_buckets import by_bucket
from dpriv.state_homes import Homes, pinned

#: Run each pinned bucket's revision in its join's task (the release's default); a benchmark
#: turns it off to compare (``benchmarks/bench_pinned_release.py --join``).
PIN_REVISION = True


def revised(
    view: pd.DataFrame | dd.DataFrame,
    state: pd.DataFrame | dd.DataFrame,
    tables: MarkovTables,
    policy: ReleasePolicy,
    window: int,
    npartitions: int,
    state_buckets: int | None = None,
    homes: Homes | None = None,
) -> pd.DataFrame | dd.DataFrame:
    """The view (pandas or Dask) with RBK^sv in its ``p__<value>`` columns (float64, rows sum
    to 1). Lazy on Dask: the join on the id (:func:`with_state`; into the state's
    ``state_buckets`` buckets when its partitions are them, else ``npartitions``), then
    :func:`with_revised_priors` per partition, the tables scattered once (a first release,
    whose state is an empty pandas frame: :func:`revised_view` per partition, no join). In
    process: :func:`revised_view` (a Dask ``state`` is collected first). ``homes``: where the
    state's persisted buckets lie (:func:`with_state`); when each bucket's join is pinned there,
    its revision runs in the same task (:func:`_revised_bucket`, persisted at once, the tables
    a future scattered once): the joined rows never wait in memory as a frame of their own,
    nor cross to a revision placed elsewhere. Same rows in the same partitions. Raises
    :class:`~dpriv.errors.InputError` for a QI value outside the class map (``classify``)."""
    if not is_dask(view):
        return revised_view(view, to_pandas(state), tables, policy, window)
    if isinstance(state, pd.DataFrame) and state.empty:  # a first release: BK^sv, partition by partition
        meta = revised_view(view._meta, state, tables, policy, window)
        return map_frame(revised_view, view, state, shared(tables, view), policy, window, meta=meta)
    if PIN_REVISION and is_dask(state) and _pins(homes, state_buckets):  # join + revision, one task a bucket
        cut = _in_buckets(view, state, policy, state_buckets)
        meta = with_revised_priors(cut.meta, tables, policy, window)
        args = (policy.id, shared(tables, view), policy, window)
        return _pinned(cut.view, homes, meta, _revised_bucket, *args)
    joined = with_state(view, state, policy, npartitions, state_buckets, homes)
    meta = with_revised_priors(joined._meta, tables, policy, window)
    return map_frame(with_revised_priors, joined, shared(tables, joined), policy, window, meta=meta)


def with_revised_priors(
    part: pd.DataFrame, tables: MarkovTables, policy: ReleasePolicy, window: int
) -> pd.DataFrame:
    """View rows left-joined with their state rows -> the view rows with RBK^sv in the
    ``p__<value>`` columns (E7; BK^sv for first-timers, whose state columns are NaN).
    Row-wise, so it runs per Dask partition."""
    pk = sum(pk_columns(window, policy), [])
    m = len(policy.sensitive_domain)
    lengths = part["n_post"].fillna(0).to_numpy(dtype=np.int64)
    hist = part[pk].to_numpy(dtype=float).reshape(len(part), window, m)
    hist = np.where(np.isnan(hist), 1.0 / m, hist)  # not nan_to_num: 10x slower (it also maps inf)
    cls = tables.classes.classify(part)
    rbk = revise(hist, lengths, cls, tables, tables.tables[0][cls, 0])
    out = part.drop(columns=[c for c in (*STATE, *pk, *policy.prior_columns) if c in part.columns])
    return out.assign(**{c: rbk[:, i] for i, c in enumerate(policy.prior_columns)})


def revised_priors(
    view: pd.DataFrame, state: pd.DataFrame, tables: MarkovTables, policy: ReleasePolicy, window: int
) -> np.ndarray:
    """RBK^sv (n, M) of the respondents of ``view``, in its row order (pandas)."""
    pos = _state_rows(view, state, policy)
    if pos is not None:
        return _revised_at(view, state, pos, tables, policy, window)
    joined = view.drop(columns=[c for c in view.columns if c in state.columns and c != policy.id])
    joined = joined.merge(state, on=policy.id, how="left")
    return with_revised_priors(joined, tables, policy, window)[policy.prior_columns].to_numpy()


def revised_view(
    view: pd.DataFrame, state: pd.DataFrame, tables: MarkovTables, policy: ReleasePolicy, window: int
) -> pd.DataFrame:
    """In process, :func:`with_state` then :func:`with_revised_priors` in one step: the view
    (RangeIndex) with the persistent group of its state row, if the state has them, and RBK^sv
    in the ``p__<value>`` columns (E7). The same frame, built from the state rows of the
    view's respondents only: no state column is copied into the view (a first release no
    longer fills 3 x M columns of NaN per tuple). Falls back to the join when the ids cannot
    be looked up (:func:`_state_rows`), the view holds a state column or the state holds
    columns other than the id, the counters, the persistent group and this window's."""
    pos = _state_rows(view, state, policy)
    pk = sum(pk_columns(window, policy), [])
    known = {policy.id, *STATE, PGROUP, *pk}  # a state of other columns: the join carries them
    shared_cols = any(c in state.columns for c in view.columns.drop(policy.id))
    if pos is None or shared_cols or set(state.columns) - known:
        return with_revised_priors(with_state(view, state, policy, 1), tables, policy, window)
    rbk = _revised_at(view, state, pos, tables, policy, window)
    out = view.drop(columns=[c for c in (*STATE, *pk, *policy.prior_columns) if c in view.columns])
    cols = {}
    if PGROUP in state.columns:  # persistent groups ride along, as the join gave them (Int64)
        cols[PGROUP] = pd.array(state[PGROUP], dtype="Int64").take(pos, allow_fill=True)
    cols.update({c: rbk[:, i] for i, c in enumerate(policy.prior_columns)})
    return out.reset_index(drop=True).assign(**cols)


def _state_rows(view: pd.DataFrame, state: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray | None:
    """Position (int64, -1 = none) of each view respondent's state row; None when the two
    id columns differ in dtype or the state's ids are not unique (then only a join is safe)."""
    ids = state[policy.id]
    if ids.dtype != view[policy.id].dtype:
        return None
    index = pd.Index(ids)
    return index.get_indexer(view[policy.id]) if index.is_unique else None


def background_priors(cls: np.ndarray, tables: MarkovTables) -> np.ndarray:
    """BK^sv (float64 (n, M), a fresh array) of QI classes ``cls`` (int, (n,)): the same floats
    as ``tables.tables[0][cls, 0]``, column-major, so that each value's column is one contiguous
    run, which a frame copies as one block."""
    return np.take(np.ascontiguousarray(tables.tables[0][:, 0].T), cls, axis=1).T


def _revised_at(
    view: pd.DataFrame,
    state: pd.DataFrame,
    pos: np.ndarray,
    tables: MarkovTables,
    policy: ReleasePolicy,
    window: int,
) -> np.ndarray:
    """RBK^sv (n, M) from the state rows at ``pos``: BK^sv for a first-timer, (E7) over her
    window for the others. :func:`dpriv.knowledge.revision.revise` returns the fallback
    row of a respondent without posteriors as it is and revises each row on its own, so
    revising only those with a window gives the bits of revising all."""
    m = len(policy.sensitive_domain)
    cls = tables.classes.classify(view)
    bk = background_priors(cls, tables)
    at = np.flatnonzero(pos >= 0)
    lengths = state["n_post"].iloc[pos[at]].fillna(0).to_numpy(np.int64)
    rows, src = at[lengths > 0], pos[at][lengths > 0]
    if not rows.size:  # bk is a fresh array (a fancy index of the table): no copy of (n, M) floats
        return np.asarray(bk, dtype=float)
    pk = sum(pk_columns(window, policy), [])
    hist = np.empty((rows.size, len(pk)))
    for j, col in enumerate(pk):  # only the rows needed, a column at a time (no whole-state copy)
        hist[:, j] = state[col].to_numpy(dtype=float)[src]
    hist = np.where(np.isnan(hist), 1.0 / m, hist).reshape(rows.size, window, m)
    out = np.asarray(bk, dtype=float)  # bk[rows] below is read (a copy) before out[rows] is written
    out[rows] = revise(hist, lengths[lengths > 0], cls[rows], tables, bk[rows])
    return out


def rbk_state(state: pd.DataFrame | dd.DataFrame) -> pd.DataFrame | dd.DataFrame:
    """The state columns that RBK reads (id, ``n_post`` as nullable Int64, the ``pk``
    columns), ready for the view's left join. Without ``last_group``: a first-timer's
    missing 63-bit label would turn that column into float64 in some partitions and not
    others, and the Arrow concat of the following shuffle then fails on labels > 2**53."""
    nullable = {"n_post": "Int64", **({PGROUP: "Int64"} if PGROUP in state.columns else {})}
    return state.drop(columns=["last_release", "last_group"]).astype(nullable)


def with_state(
    view: pd.DataFrame | dd.DataFrame,
    state: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    npartitions: int,
    state_buckets: int | None = None,
    homes: Homes | None = None,
) -> pd.DataFrame | dd.DataFrame:
    """The view left-joined with what RBK reads of the state (:func:`rbk_state`), on the id.

    In process: one pandas merge. On Dask: a hash join into ``npartitions`` partitions (the
    view and the state shuffled on the id, no third shuffle of the joined rows), each sorted
    by id. Which rows share a partition does not matter: RBK is computed row by row (the same
    bits in any batch, :func:`dpriv.knowledge.revision.revise`), and Generalize sorts by
    (Hilbert key, seeded id hash). A first release needs no join (:func:`revised`).
    ``state_buckets``: the number of buckets of a Dask state whose partitions are its buckets
    (:func:`dpriv.state.next_state`'s output, at least 2): then only the view moves, cut into
    those buckets (:func:`dpriv.state_buckets.by_bucket`), and each bucket is joined where it lies.
    ``homes`` (:func:`dpriv.state_homes.state_homes` of ``state`` and ``state_buckets``, on a
    client): each bucket's join is restricted loosely to the worker holding its state bucket and
    persisted at once (its Delayed tasks alone: a dataframe graph drops the restriction), so only
    the view's rows cross; the same rows in the same partitions (:func:`_pinned`)."""
    if not is_dask(view):  # the view's respondents only: the same join, not a copy of the state
        state = to_pandas(state)
        state = state[state[policy.id].isin(view[policy.id])]
        return view.merge(rbk_state(state), on=policy.id, how="left")
    if is_dask(state) and (state_buckets or 0) > 1:  # one bucket: the hash join keeps the view's parallelism
        cut = _in_buckets(view, state, policy, state_buckets)
        if _pins(homes, state_buckets):
            return _pinned(cut.view, homes, cut.meta, _join_bucket, policy.id)
        join = (_join_part, cut.view, cut.state, policy.id)
        return dd.map_partitions(*join, meta=cut.meta, clear_divisions=True)
    # the merge's partitions are its hash partitions of the id: no second shuffle (RBK is
    # computed row by row, the same bits whatever rows share a partition)
    joined = view.merge(rbk_state(state), on=policy.id, how="left", npartitions=npartitions, broadcast=False)
    return joined.map_partitions(_sorted_by, policy.id)


class _Buckets(NamedTuple):
    """A Dask view and what RBK reads of a state whose partitions are its buckets, both one
    partition per bucket (:func:`dpriv.state_buckets.by_bucket`), and the meta of their join."""

    view: dd.DataFrame
    state: dd.DataFrame
    meta: pd.DataFrame


def _in_buckets(view: dd.DataFrame, state: dd.DataFrame, policy: ReleasePolicy, buckets: int) -> _Buckets:
    right = by_bucket(rbk_state(state), policy.id, buckets, held=buckets)
    left = by_bucket(view, policy.id, buckets)
    return _Buckets(left, right, _join_part(left._meta, right._meta, policy.id))


def _pins(homes: Homes | None, state_buckets: int | None) -> bool:
    """Whether each of ``state_buckets`` (at least 2) buckets has a home to run its join on."""
    return homes is not None and (state_buckets or 0) > 1 and len(homes.sources) == state_buckets


def _pinned(
    left: dd.DataFrame, homes: Homes, meta: pd.DataFrame, kernel: Callable[..., pd.DataFrame], *args
) -> dd.DataFrame:
    """``kernel(view rows of bucket b of left, held state bucket b, *args)`` as one task per
    bucket restricted loosely to the worker holding that bucket, persisted now (its Delayed
    tasks alone: a dataframe graph drops the restriction): a frame over the futures."""
    task = dask.delayed(kernel, pure=True)
    parts = []
    for b, (view, state) in enumerate(zip(left.to_delayed(), homes.sources, strict=True)):
        with pinned(homes.worker(b)):
            parts.append(task(view, state, *args))
    return dd.from_delayed(list(dask.persist(*parts)), meta=meta, verify_meta=False)


def _revised_bucket(
    view: pd.DataFrame,
    state: pd.DataFrame,
    column: str,
    tables: MarkovTables,
    policy: ReleasePolicy,
    window: int,
) -> pd.DataFrame:
    """One bucket's join (:func:`_join_bucket`) then its revision (:func:`with_revised_priors`)."""
    return with_revised_priors(_join_bucket(view, state, column), tables, policy, window)


def _join_bucket(view: pd.DataFrame, state: pd.DataFrame, column: str) -> pd.DataFrame:
    """One bucket's join from the held state bucket itself (what RBK reads of it, then :func:`_join_part`)."""
    return _join_part(view, rbk_state(state), column)


def _sorted_by(part: pd.DataFrame, column: str) -> pd.DataFrame:
    return part.sort_values(column, kind="stable")


def _join_part(view: pd.DataFrame, state: pd.DataFrame, column: str) -> pd.DataFrame:
    """One bucket: its view rows left-joined with its state rows on ``column``, by id."""
    view, state = (f.reset_index(drop=True) for f in (view, state))
    return _sorted_by(view.merge(state, on=column, how="left"), column)

"""The ``pk`` step of a Dask release as one small graph (issue 13: fewer tasks, fewer bytes moved).

Per part of the regrouped membership (whole QI-groups, rows in (label, id) order), one task
(:func:`pk_part`) computes Ω once (:func:`dpriv.pk_step.posteriors_with_truth`), the defender's
tail row and the posteriors cut by the bucket of the id (:func:`dpriv.state_buckets.split_by_bucket`);
then one small task per (part, bucket) picks a piece, one task per bucket joins the state's rows
of that bucket with its pieces and advances them (:func:`merge_bucket`, the kernel of
:func:`dpriv.state.next_state`), one task per part picks its tail row and one concatenates them.
With P parts and B buckets: P + P B + B + P + 1 tasks (and B aliases where the frame of
the new state is read). On a cluster of 2 workers or more, a state persisted by the release
before has each bucket's merge (and, when the bucket count grows, the cut of its old rows)
restricted loosely to the worker holding its old bucket (:mod:`dpriv.state_homes`): the old
rows stay where they lie, the posteriors' pieces move.

Before, the same step was Dask DataFrame operations: the posteriors with their truth, the
posteriors without it, the tail rows, a bucket column and a ``set_index`` shuffle of the
posteriors on it, the state cut by bucket, then the join (``next_state``): 216 tasks at 10^6
tuples in 9 parts and 8 buckets, against 108 here (``benchmarks/bench_step_tasks.py``); the
bytes moved between workers are about the same (the posteriors of the buckets held elsewhere,
~100 MiB on 2 workers). The released bytes are the same: a bucket's posteriors are put in
(id) order by the join itself (:func:`dpriv.state.state_order`), whatever order its pieces
arrive in
(``tests/test_pk_graph.py`` compares both paths).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import dask
import dask.dataframe as dd
import pandas as pd

from dpriv._dispatch import is_dask, meta_of, to_dask
from dpriv.pk_step import posteriors_with_truth, tail_of_posteriors, without_truth
from dpriv.policy import ReleasePolicy
from dpriv.state import empty_state, merge_advance
from dpriv.state_buckets import by_bucket, split_by_bucket
from dpriv.state_homes import Homes, pinned, state_homes


class PkPart(NamedTuple):
    """What :func:`pk_part` gives for one part: ``pieces[b]`` the posteriors (no ``_s``) of
    bucket b, ``tail`` the part's row of :data:`dpriv.metrics.defender_tail.PART_COLUMNS`."""

    pieces: list[pd.DataFrame]
    tail: pd.DataFrame


class PkGraph(NamedTuple):
    """The pk step on Dask, not computed yet: ``buckets[b]`` the new state's bucket b (a Delayed
    pandas frame), ``tail`` the tail rows (a Delayed pandas frame, one row per part, in part
    order), ``meta`` the state's empty frame. Delayed only: persisted alone (Dask expressions
    mixed with Delayed in one persist are materialised first, with a warning)."""

    buckets: list[Any]
    tail: Any
    meta: pd.DataFrame

    def state(self, buckets: list[Any] | None = None) -> dd.DataFrame:
        """The new state as a Dask frame of ``buckets`` (default: :attr:`buckets`; pass them
        persisted), one partition per bucket, divisions unknown."""
        parts = self.buckets if buckets is None else buckets
        return dd.from_delayed(parts, meta=self.meta, verify_meta=False)


def pk_part(members: pd.DataFrame, policy: ReleasePolicy, nbuckets: int) -> PkPart:
    """Ω once for one part of whole QI-groups: the posteriors cut by bucket, and the tail row."""
    posts = posteriors_with_truth(members, policy)
    pieces = split_by_bucket(without_truth(posts), policy.id, nbuckets)
    return PkPart(pieces, tail_of_posteriors(posts, policy))


def piece(part: PkPart, bucket: int) -> pd.DataFrame:
    """Bucket ``bucket``'s posteriors of one part (a task of its own: only they move)."""
    return part.pieces[bucket]


def tail_row(part: PkPart) -> pd.DataFrame:
    """The part's tail row."""
    return part.tail


def tail_rows(rows: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts' tail rows, in part order, as one frame."""
    return pd.concat(rows, ignore_index=True)


def merge_bucket(
    state: pd.DataFrame, policy: ReleasePolicy, window: int, index: int, *pieces: pd.DataFrame
) -> pd.DataFrame:
    """One bucket of the new state: its state rows joined with its posteriors (``pieces``, in
    any order) and advanced; rows in id order."""
    posts = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0]
    return merge_advance(state, posts, policy, window, index)


class StateParts(NamedTuple):
    """The state's rows of each new bucket (``olds[b]``, a Delayed or a pandas frame) and, when
    they are persisted buckets on a cluster of 2 workers or more, where each lies (else None)."""

    olds: list[Any]
    homes: Homes | None


def _state_parts(state: Any, policy: ReleasePolicy, n: int, held: int | None) -> StateParts:
    """The state's rows of each of the ``n`` buckets: one Delayed per bucket (a Dask state cut
    by :func:`dpriv.state_buckets.by_bucket`, without moving a row when its partitions are its
    buckets; persisted buckets on a cluster: read or cut where each lies,
    :mod:`dpriv.state_homes`), or the state itself for every bucket when it has no rows (a
    first release)."""
    if not is_dask(state) and not len(state):  # in the dtypes a Dask state of it has (string ids)
        return StateParts([meta_of(to_dask(state, 1))] * n, None)
    if not is_dask(state):  # a state from an in-process release
        state = to_dask(state, 1)
    held = 1 if state.npartitions == 1 else held
    homes = state_homes(state, held) if held and n % held == 0 else None
    if homes is not None:
        return StateParts(homes.olds(policy.id, n), homes)
    return StateParts(by_bucket(state, policy.id, n, held=held).to_delayed(), None)


def pk_graph(
    members: dd.DataFrame,
    state: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    window: int,
    index: int,
    nbuckets: int,
    state_buckets: int | None = None,
) -> PkGraph:
    """The new state after release ``index`` and the defender's tail rows, from the regrouped
    membership ``members`` (Dask, whole QI-groups per partition, each sorted by (label, id))
    and the state before (``state_buckets`` as for :func:`dpriv.state.next_state`): the same
    rows in the same order, bucket after bucket, as ``next_state`` of the posteriors."""
    n = max(int(nbuckets), 1)
    parts = [dask.delayed(pk_part, pure=True)(p, policy, n) for p in members.to_delayed()]
    take = dask.delayed(piece, pure=True)
    olds, homes = _state_parts(state, policy, n, state_buckets)
    merge = dask.delayed(merge_bucket, pure=True)
    new = []
    for b in range(n):
        pieces = [take(p, b) for p in parts]  # not pinned: each piece where its part lies
        # the merge where its old rows lie (loosely): only the posteriors' pieces move
        with pinned(homes.worker(b) if homes else None):
            new.append(merge(olds[b], policy, window, index, *pieces))
    meta = empty_state(policy, window, meta_of(state)[policy.id].dtype)
    tails = dask.delayed(tail_rows, pure=True)([dask.delayed(tail_row, pure=True)(p) for p in parts])
    return PkGraph(new, tails, meta)

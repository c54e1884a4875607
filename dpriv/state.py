"""Per-respondent knowledge state (docs/algorithms.md §1.2, Algorithm 1 lines 6-10).

The respondent state between releases (the last ``W`` posteriors, their count, the release
and QI-group of the last one), PK^sv per QI-group (Ω-estimate, E14) and the state update
(RBK^sv from it, E7, is :mod:`dpriv.rbk`). Pandas kernels that run per Dask partition; the
release loop (:mod:`dpriv.release`) and the adversary (:mod:`dpriv.attack`) share them.
The one-shot priors of a single view are in :mod:`dpriv.priors` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, meta_of, to_dask
from dpriv.anonymity.persistent import PGROUP, PNEXT
from dpriv.knowledge.posterior import omega_posterior
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE
from dpriv.row_order import stable_positions
from dpriv.state_buckets import by_bucket, state_order
from dpriv.state_window import nan_block, unfilled_slots

STATE = ("n_post", "last_release", "last_group")


def pk_columns(window: int, policy: ReleasePolicy) -> list[list[str]]:
    """The state's window columns, ``pk<w>__<value>``, one list of M names per slot (oldest first)."""
    return [[f"pk{w}__{v}" for v in policy.sensitive_domain] for w in range(window)]


def post_columns(policy: ReleasePolicy) -> list[str]:
    """The state's posterior columns, ``post__<value>``, one per value of S (domain order)."""
    return [f"post__{v}" for v in policy.sensitive_domain]


def empty_state(policy: ReleasePolicy, window: int, id_dtype="int64") -> pd.DataFrame:
    """The respondent state before the first release: id (``id_dtype``, the history's),
    ``n_post`` (posteriors so far), ``last_release``, ``last_group`` (int64) and the last
    ``window`` posteriors ``pk<w>__<value>`` (float64, oldest first, NaN before the
    first), no rows."""
    cols = {policy.id: pd.Series(dtype=id_dtype), **{c: pd.Series(dtype="int64") for c in STATE}}
    if policy.persistent_groups:  # the persistent group (dpriv.anonymity.persistent), -1 = none
        cols[PGROUP] = pd.Series(dtype="int64")
    for names in pk_columns(window, policy):
        cols.update({c: pd.Series(dtype="float64") for c in names})
    return pd.DataFrame(cols)


def posterior_table(
    ids: np.ndarray | pd.api.extensions.ExtensionArray,
    labels: np.ndarray,
    posteriors: np.ndarray,
    policy: ReleasePolicy,
) -> pd.DataFrame:
    """Respondent id, ``_label`` (int64) and posterior ``post__<value>`` (float64) columns."""
    # nullable: an outer join with the state must not turn the 63-bit labels into float64
    cols = pd.DataFrame({policy.id: ids, LABEL: pd.array(np.asarray(labels, dtype=np.int64), dtype="Int64")})
    # the (n, M) posteriors as one float block as they are: M columns stacked anew cost a pass
    post = pd.DataFrame(np.asarray(posteriors, dtype=np.float64), columns=post_columns(policy), copy=False)
    return pd.concat([cols, post], axis=1)


def canonical_order(assigned: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """Positions (int64) of the rows of ``assigned`` in (QI-group label, id) order, stable: the
    group sums of Ω, hence their last bits, do not depend on how a shuffle ordered the rows.
    Only the two key columns are sorted (sorting the whole frame moved every column)."""
    return stable_positions(assigned, [LABEL, policy.id])


def group_posteriors(
    assigned: pd.DataFrame, policy: ReleasePolicy, order: np.ndarray | None = None
) -> pd.DataFrame:
    """PK^sv (Ω-estimate, E14) of the tuples of ``assigned``, which holds whole QI-groups, in
    :func:`canonical_order` (``order``: that order, if the caller has it already)."""
    order = canonical_order(assigned, policy) if order is None else order
    # rows already in that order (the release's parts, canonical_rows): no (n, 19) gather
    ordered = _identity(order)

    def taken(values):
        return values if ordered else values[order]

    labels = taken(assigned[LABEL].to_numpy())
    priors = taken(assigned[policy.prior_columns].to_numpy(dtype=float))
    post = omega_posterior(labels, taken(assigned[SCODE].to_numpy()), priors)
    # .array keeps the id's dtype (string ids stay string[pyarrow], as in the state's meta)
    ids = assigned[policy.id].array
    table = posterior_table(ids if ordered else ids.take(order), labels, post, policy)
    if PNEXT in assigned.columns:  # persistent groups: each one's group after this release
        table[PNEXT] = pd.array(taken(assigned[PNEXT].to_numpy(np.int64)), dtype="Int64")
    return table


def _identity(order: np.ndarray) -> bool:
    """Whether positions ``order`` (int64) are 0, 1, ..., n-1: taking them would copy the rows as they are."""
    return bool(len(order) == 0 or (order[0] == 0 and np.array_equal(order, np.arange(len(order)))))


def advance_state(merged: pd.DataFrame, policy: ReleasePolicy, window: int, index: int) -> pd.DataFrame:
    """State rows outer-joined with the posteriors of release ``index`` -> the new state:
    a respondent with a posterior shifts her window and appends it; the others (away, or
    suppressed) keep their row (§1.4 "Timing"). Sorted by id; runs per Dask partition."""
    frame = pd.DataFrame(_advanced(merged, policy, window, index))
    return frame.sort_values(policy.id, kind="stable").reset_index(drop=True)


def _advanced(merged: pd.DataFrame, policy: ReleasePolicy, window: int, index: int) -> dict:
    """:func:`advance_state`'s columns (name -> array), in ``merged``'s row order."""
    has = merged[LABEL].notna().to_numpy()
    cols = pk_columns(window, policy)

    def ints(col: str) -> np.ndarray:  # nullable Int64 in (see nullable_state), int64 out
        return merged[col].fillna(0).to_numpy(dtype=np.int64)

    out = {
        policy.id: merged[policy.id].array,
        "n_post": ints("n_post") + has,
        "last_release": np.where(has, index, ints("last_release")),
        "last_group": np.where(has, ints(LABEL), ints("last_group")),
    }
    if PGROUP in merged.columns:  # persistent groups: the new one, else kept (-1 = none)
        old = merged[PGROUP].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)
        new = merged[PNEXT].astype("Int64").fillna(-1).to_numpy(dtype=np.int64) if PNEXT in merged else old
        out[PGROUP] = np.where(has, new, old)
    for w in range(window):  # one frame built at once (a column at a time cost ~1 ms each)
        nxt = cols[w + 1] if w + 1 < window else post_columns(policy)
        was = merged[cols[w]].to_numpy(dtype=float)
        shifted = np.where(has[:, None], merged[nxt].to_numpy(dtype=float), was)
        out.update({old: shifted[:, i] for i, old in enumerate(cols[w])})
    return out


def update_state(
    state: pd.DataFrame,
    assigned: pd.DataFrame,
    posteriors: np.ndarray,
    policy: ReleasePolicy,
    window: int,
    index: int,
) -> pd.DataFrame:
    """Shift each kept respondent's window and append her posterior at release ``index``."""
    post = posterior_table(assigned[policy.id].to_numpy(), assigned[LABEL].to_numpy(), posteriors, policy)
    return advance_state(nullable_state(state).merge(post, on=policy.id, how="outer"), policy, window, index)


def merge_advance(
    state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy, window: int, index: int
) -> pd.DataFrame:
    """One bucket: its state rows joined with its posteriors and advanced
    (:func:`_next_state_pandas`, one bucket: rows in id order)."""
    state, posts = (f.reset_index(drop=True) for f in (state, posts))
    return _next_state_pandas(state, posts, policy, window, index, 1)


def _outer(state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """The outer join of state rows with posterior rows on the id (both re-indexed)."""
    state, posts = (f.reset_index(drop=True) for f in (state, posts))
    return state.merge(posts, on=policy.id, how="outer")


def _state_positions(state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray | None:
    """The state row (int64, -1: a first-timer) of each posterior's respondent, or None when
    the row copy of :func:`_next_state_pandas` could give other dtypes than the full outer
    join (ids of another dtype or not unique, state columns other than int64/float64): the
    caller merges then."""
    ints = {*STATE, PGROUP}
    plain = all(
        state[c].dtype == np.dtype("int64" if c in ints else "float64") for c in state.columns.drop(policy.id)
    )
    index = pd.Index(state[policy.id])
    if not plain or state[policy.id].dtype != posts[policy.id].dtype or not index.is_unique:
        return None
    return index.get_indexer(posts[policy.id])


def _moved(
    state: pd.DataFrame, posts: pd.DataFrame, pos: np.ndarray, policy: ReleasePolicy, window: int, index: int
) -> dict:
    """:func:`advance_state`'s columns for the respondents with a posterior (``posts``' rows;
    ``pos``: their state rows, -1 for a first-timer), read from the state rows directly instead
    of from an outer join: counters, release and group, then the window shifted by one slot
    (a float column's value is an array, or the name of the state column one slot newer whose
    rows ``pos`` it takes, NaN for a first-timer: :func:`_next_state_pandas` gathers it straight
    into its output)."""
    new, src = pos < 0, np.maximum(pos, 0)

    def old(col: str, default: int) -> np.ndarray:
        return np.where(new, default, state[col].to_numpy()[src] if len(state) else default)

    out = {
        policy.id: posts[policy.id].array,
        "n_post": old("n_post", 0) + 1,
        "last_release": np.full(len(posts), index, dtype=np.int64),
        "last_group": posts[LABEL].to_numpy(dtype=np.int64),
    }
    if PGROUP in state.columns:  # persistent groups: the new one (-1 = none)
        nxt = posts[PNEXT] if PNEXT in posts else pd.Series(old(PGROUP, -1))
        out[PGROUP] = nxt.astype("Int64").fillna(-1).to_numpy(dtype=np.int64)
    cols = pk_columns(window, policy)
    for w in range(window):
        newer = cols[w + 1] if w + 1 < window else None
        for i, c in enumerate(cols[w]):
            out[c] = newer[i] if newer else posts[f"post__{policy.sensitive_domain[i]}"].to_numpy(dtype=float)
    return out


def _block(values: np.ndarray, columns: list[str]) -> pd.DataFrame:
    """A frame of float64 columns held as one block, ``values`` (columns, rows) as it is: built
    from many arrays, a frame copies them all into its block (~1 s at 10^6 x 57)."""
    return pd.DataFrame(values.T, columns=columns, copy=False)


def _next_state_pandas(
    state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy, window: int, index: int, n: int
) -> pd.DataFrame:
    """:func:`next_state` in process, in O(|posts|) joins: only the respondents with a
    posterior are advanced (:func:`_moved`, their state rows found by id); the other rows are
    those :func:`advance_state` would rewrite unchanged (no posterior: counters, release,
    group and window kept), so they are copied column by column, in the advanced rows' dtypes
    (those of the full outer join). Ids are unique, so putting all the rows in (bucket, id)
    order gives the rows and order of the full join (``tests/test_next_state.py`` checks both
    against it). Each window column is written once, straight into the new state's float
    block: the window is most of the state's bytes (W x M float64 per respondent), and every
    extra pass over it was a visible share of a 10^6-tuple release (the slots no one has filled
    yet are not written at all: :mod:`dpriv.state_window`)."""
    # the posteriors in the state's (bucket, id) order first: every gather below then reads
    # its sources nearly in order (57 columns gathered at random positions were ~1 s at 10^6)
    posts = posts.take(state_order(posts[policy.id], n)).reset_index(drop=True)
    pos = _state_positions(state, posts, policy)
    touched = np.zeros(len(state), dtype=bool)
    if pos is None:  # dtypes the row copy cannot take: the outer join of the touched rows
        touched = state[policy.id].isin(posts[policy.id]).to_numpy()
        merged = _outer(nullable_state(state[touched]), posts, policy)
        moved, new = _advanced(merged, policy, window, index), None
    else:
        touched[pos[pos >= 0]] = True
        moved, new = _moved(state, posts, pos, policy, window, index), pos < 0
    kept = np.flatnonzero(~touched)
    moved_ids = pd.Series(moved.pop(policy.id))
    ids = pd.concat([state[policy.id].iloc[kept], moved_ids], ignore_index=True).astype(moved_ids.dtype)
    to = _targets(kept, state_order(ids, n), new)
    out = {policy.id: ids.array if to.in_order else ids.array.take(to.order)}
    floats = [c for c in moved if c not in (*STATE, PGROUP)]
    for col in (c for c in moved if c not in floats):  # the int64 counters
        both = np.concatenate([state[col].to_numpy(dtype=np.int64)[kept], moved[col]])
        out[col] = both if to.in_order else both[to.order]
    # the oldest slots no row fills (a first release: all but the newest): one shared NaN column
    empty = unfilled_slots(floats, state, moved, bool(len(kept)), bool(len(moved_ids)))
    block = _window_block(state, moved, floats[empty:], to, None if pos is None else np.maximum(pos, 0))
    nans = [nan_block(len(to.order), floats[:empty])] if empty else []
    return pd.concat([pd.DataFrame(out), *nans, _block(block, floats[empty:])], axis=1)


@dataclass(frozen=True)
class _Targets:
    """Where the new state's rows come from: the kept state rows (``kept``, copied unchanged)
    go to ``kept_to``, the advanced ones to ``moved_to`` (slices when every row stays where it
    is, as at a first release: no gather), ``firsts`` the first-timers' rows (None: unknown)."""

    order: np.ndarray
    in_order: bool
    kept: np.ndarray
    kept_to: slice | np.ndarray
    moved_to: slice | np.ndarray
    firsts: np.ndarray | None


def _targets(kept: np.ndarray, order: np.ndarray, new: np.ndarray | None) -> _Targets:
    """:class:`_Targets` of the rows (kept rows, then advanced ones) put in ``order``;
    ``new``: which advanced rows are first-timers (None: the outer join's path)."""
    in_order = bool(np.array_equal(order, np.arange(len(order))))
    to = np.empty_like(order)
    to[order] = np.arange(len(order))
    n_kept = len(kept)
    return _Targets(
        order=order,
        in_order=in_order,
        kept=kept,
        kept_to=slice(0, n_kept) if in_order else to[:n_kept],
        moved_to=slice(n_kept, None) if in_order else to[n_kept:],
        firsts=to[n_kept:][new] if new is not None else None,
    )


def _window_block(
    state: pd.DataFrame, moved: dict, columns: list[str], to: _Targets, src: np.ndarray | None
) -> np.ndarray:
    """The window ``columns`` of the new state as one float64 (columns, rows) block, each
    written once: kept rows from the state, advanced ones from ``moved`` (an array, or the name
    of the state column one slot newer, read at ``src``, NaN for a first-timer)."""
    block = np.empty((len(columns), len(to.order)))
    for row, col in zip(block, columns):
        row[to.kept_to] = state[col].to_numpy(dtype=float)[to.kept]
        value = moved[col]
        if not isinstance(value, str):
            row[to.moved_to] = value
        elif len(state):  # the state's column one slot newer; NaN for a first-timer
            row[to.moved_to] = state[value].to_numpy()[src]
            row[to.firsts] = np.nan
        else:
            row[to.moved_to] = np.nan
    return block


def next_state(
    state: pd.DataFrame | dd.DataFrame,
    posts: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    window: int,
    index: int,
    nbuckets: int,
    state_buckets: int | None = None,
) -> pd.DataFrame | dd.DataFrame:
    """The state after release ``index``: ``state`` (:func:`empty_state` columns) joined with
    the posteriors of the release (:func:`group_posteriors`) and advanced (:func:`advance_state`).

    Rows come bucket after bucket (:func:`dpriv.state_buckets.state_buckets` of the id, ``nbuckets`` buckets),
    sorted by id inside a bucket. Pandas in -> pandas out (in process: only the view's
    respondents are joined, :func:`_next_state_pandas`); Dask in -> a Dask frame with one
    partition per bucket (both sides range-partitioned on the bucket with fixed divisions,
    then joined partition by partition): the same rows in the same order. ``state_buckets``:
    the number of buckets of a Dask ``state`` whose partitions are its buckets (the previous
    release's new state): the state is then not shuffled when ``nbuckets`` is a multiple of
    it (:func:`by_bucket`), only the posteriors are.
    """
    n = max(int(nbuckets), 1)
    if not (is_dask(state) or is_dask(posts)):
        return _next_state_pandas(state, posts, policy, window, index, n)
    meta = empty_state(policy, window, meta_of(state)[policy.id].dtype)
    if not is_dask(state):  # a first release's empty state, or one from an in-process release
        state = to_dask(state, 1)
    held = 1 if state.npartitions == 1 else state_buckets  # one partition holds the one bucket of 1
    if not is_dask(posts):
        posts = to_dask(posts, 1)
    return dd.map_partitions(
        merge_advance,
        by_bucket(state, policy.id, n, held=held),
        by_bucket(posts, policy.id, n),
        policy,
        window,
        index,
        meta=meta,
        clear_divisions=True,
    )


def nullable_state(state: pd.DataFrame | dd.DataFrame) -> pd.DataFrame | dd.DataFrame:
    """The state with nullable Int64 counters and labels, ready for an outer join."""
    return state.astype(dict.fromkeys((*STATE, *([PGROUP] if PGROUP in state.columns else [])), "Int64"))


# the one-shot priors lived here: their names stay importable from dpriv.state
from dpriv.priors import (  # noqa: E402, F401
    DENSE_CLASSES,
    MIN_ROWS_PER_CLASS,
    PRIORS,
    PriorClasses,
    attach_priors,
    class_map,
    prior_classes,
)

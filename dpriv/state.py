"""Per-respondent knowledge state (docs/algorithms.md §1.2, Algorithm 1 lines 6-10).

The respondent state between releases (the last ``W`` posteriors, their count, the release
and QI-group of the last one), PK^sv per QI-group (Ω-estimate, E14) and the state update
(RBK^sv from it, E7, is :mod:`dpriv.rbk`). Pandas kernels that run per Dask partition; the
release loop (:mod:`dpriv.release`) and the adversary (:mod:`dpriv.attack`) share them.
The one-shot priors of a single view are in :mod:`dpriv.priors` (re-exported here).
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, meta_of
from dpriv.anonymity.persistent import PGROUP, PNEXT
from dpriv.knowledge.posterior import omega_posterior
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE

STATE = ("n_post", "last_release", "last_group")


def pk_columns(window: int, policy: ReleasePolicy) -> list[list[str]]:
    """The state's window columns, ``pk<w>__<value>``, one list of M names per slot (oldest first)."""
    return [[f"pk{w}__{v}" for v in policy.sensitive_domain] for w in range(window)]


def _post_columns(policy: ReleasePolicy) -> list[str]:
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
    cols = {policy.id: ids, LABEL: pd.array(np.asarray(labels, dtype=np.int64), dtype="Int64")}
    return pd.DataFrame({**cols, **{c: posteriors[:, i] for i, c in enumerate(_post_columns(policy))}})


def canonical_order(assigned: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """Positions (int64) of the rows of ``assigned`` in (QI-group label, id) order, stable: the
    group sums of Ω, hence their last bits, do not depend on how a shuffle ordered the rows.
    Only the two key columns are sorted (sorting the whole frame moved every column)."""
    keys = assigned[[LABEL, policy.id]].reset_index(drop=True)
    return keys.sort_values([LABEL, policy.id], kind="stable").index.to_numpy()


def group_posteriors(
    assigned: pd.DataFrame, policy: ReleasePolicy, order: np.ndarray | None = None
) -> pd.DataFrame:
    """PK^sv (Ω-estimate, E14) of the tuples of ``assigned``, which holds whole QI-groups, in
    :func:`canonical_order` (``order``: that order, if the caller has it already)."""
    order = canonical_order(assigned, policy) if order is None else order
    labels = assigned[LABEL].to_numpy()[order]
    priors = assigned[policy.prior_columns].to_numpy(dtype=float)[order]
    post = omega_posterior(labels, assigned[SCODE].to_numpy()[order], priors)
    # .array keeps the id's dtype (string ids stay string[pyarrow], as in the state's meta)
    table = posterior_table(assigned[policy.id].array.take(order), labels, post, policy)
    if PNEXT in assigned.columns:  # persistent groups: each one's group after this release
        table[PNEXT] = pd.array(assigned[PNEXT].to_numpy(np.int64)[order], dtype="Int64")
    return table


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
        nxt = cols[w + 1] if w + 1 < window else _post_columns(policy)
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


#: Private column of a state row's bucket (:func:`state_buckets`) while the state is re-cut.
BUCKET = "_bucket"


def state_buckets(ids: pd.Series | np.ndarray, nbuckets: int) -> np.ndarray:
    """The bucket (int64 in ``0..nbuckets-1``) of each respondent id: a seed-free hash of the
    id (:func:`dpriv._random.stable_hash`, the same for any dtype of the same values) modulo
    ``nbuckets``. The state is written bucket after bucket, each sorted by id, on both
    release paths (:func:`next_state`), so its bytes do not depend on the path taken."""
    from dpriv._random import stable_hash

    return (stable_hash(ids) % np.uint64(max(int(nbuckets), 1))).astype(np.int64)


def _with_bucket(part: pd.DataFrame, column: str, nbuckets: int) -> pd.DataFrame:
    return part.assign(**{BUCKET: state_buckets(part[column], nbuckets)})


def _merge_advance(
    state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy, window: int, index: int
) -> pd.DataFrame:
    """One bucket: its state rows outer-joined with its posteriors -> :func:`advance_state`."""
    return advance_state(_outer(state, posts, policy), policy, window, index)


def _outer(state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """The outer join of state rows with posterior rows on the id (both re-indexed)."""
    state, posts = (f.reset_index(drop=True) for f in (state, posts))
    return state.merge(posts, on=policy.id, how="outer")


def _joined_rows(
    state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy
) -> tuple[pd.DataFrame, np.ndarray] | None:
    """The rows of the outer join of ``nullable_state(state)`` with ``posts`` that hold a
    posterior (posts' columns, then the state's: nullable Int64 counters, NaN for a
    first-timer), built from the state's positions of the posts' ids, and those positions
    (-1: a first-timer); None when the join's dtypes could differ (ids of another dtype,
    non-unique, or state columns other than int64/float64): the caller merges then."""
    ints = {*STATE, PGROUP}
    others = state.columns.drop(policy.id)
    plain = all(state[c].dtype == np.dtype("int64" if c in ints else "float64") for c in others)
    index = pd.Index(state[policy.id])
    if not plain or state[policy.id].dtype != posts[policy.id].dtype or not index.is_unique:
        return None
    pos = index.get_indexer(posts[policy.id])
    new, src = pos < 0, np.maximum(pos, 0)
    cols = {c: posts[c].array for c in posts.columns}
    floats = [c for c in others if c not in ints]
    for c in others.drop(floats):
        v = state[c].to_numpy()[src] if len(state) else np.zeros(len(src), np.int64)
        cols[c] = pd.arrays.IntegerArray(np.where(new, 0, v), new)
    window = np.empty((len(floats), len(src)))
    if len(state):
        for row, c in zip(window, floats):
            np.take(state[c].to_numpy(), src, out=row)
    window[:, new] = np.nan  # first-timers (all rows when the state is empty)
    return pd.concat([pd.DataFrame(cols), _block(window, floats)], axis=1), pos


def _block(values: np.ndarray, columns: list[str]) -> pd.DataFrame:
    """A frame of float64 columns held as one block, ``values`` (columns, rows) as it is: built
    from many arrays, a frame copies them all into its block (~1 s at 10^6 x 57)."""
    return pd.DataFrame(values.T, columns=columns, copy=False)


def _next_state_pandas(
    state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy, window: int, index: int, n: int
) -> pd.DataFrame:
    """:func:`next_state` in process, the join in O(|posts|): only the respondents with a
    posterior are joined with their state rows (:func:`_joined_rows`) and advanced; the
    other rows are those :func:`advance_state` would rewrite unchanged (no posterior:
    counters, release, group and window kept), so they are copied column by column, in the
    advanced rows' dtypes (those of the full outer join). Ids are unique, so putting all the
    rows in (bucket, id) order gives the rows and order of the full join
    (``tests/test_next_state.py`` checks both against it)."""
    # the posteriors in the state's (bucket, id) order first: every gather below (a state row
    # per posterior, then all rows into that order) then reads its sources nearly in order
    # (57 columns gathered at random positions were ~1 s of a 10^6-tuple release)
    posts = posts.take(_state_order(posts[policy.id], n)).reset_index(drop=True)
    joined = _joined_rows(state, posts, policy)
    if joined is None:
        touched = state[policy.id].isin(posts[policy.id]).to_numpy()
        merged = _outer(nullable_state(state[touched]), posts, policy)
    else:
        merged, pos = joined
        touched = np.zeros(len(state), dtype=bool)
        touched[pos[pos >= 0]] = True
    moved = _advanced(merged, policy, window, index)  # unsorted: all rows are ordered below
    kept = np.flatnonzero(~touched)
    moved_ids = pd.Series(moved[policy.id])
    ids = pd.concat([state[policy.id].iloc[kept], moved_ids], ignore_index=True).astype(moved_ids.dtype)
    order = _state_order(ids, n)
    in_order = bool(np.array_equal(order, np.arange(len(order))))  # a first release: no gather
    out = {policy.id: ids.array if in_order else ids.array.take(order)}
    new = {c: np.asarray(v) for c, v in moved.items() if c != policy.id}  # int64, then float64
    floats = [c for c, v in new.items() if v.dtype == np.float64]
    window = np.empty((len(floats), len(order)))
    rows = iter(window)
    for col, values in new.items():
        parts = [state[col].to_numpy(dtype=values.dtype)[kept], values]
        if values.dtype == np.float64 and in_order:
            np.concatenate(parts, out=next(rows))
        elif values.dtype == np.float64:
            np.take(np.concatenate(parts), order, out=next(rows))
        else:
            both = np.concatenate(parts)
            out[col] = both if in_order else both[order]
    return pd.concat([pd.DataFrame(out), _block(window, floats)], axis=1)


def _state_order(ids: pd.Series, n: int) -> np.ndarray:
    """Positions (int64) of ``ids`` (unique) in the state's row order: bucket
    (:func:`state_buckets` of ``n``), then id."""
    by_id = ids.reset_index(drop=True).sort_values(kind="stable").index.to_numpy()
    return by_id[np.argsort(state_buckets(ids, n)[by_id], kind="stable")]


def next_state(
    state: pd.DataFrame | dd.DataFrame,
    posts: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    window: int,
    index: int,
    nbuckets: int,
) -> pd.DataFrame | dd.DataFrame:
    """The state after release ``index``: ``state`` (:func:`empty_state` columns) joined with
    the posteriors of the release (:func:`group_posteriors`) and advanced (:func:`advance_state`).

    Rows come bucket after bucket (:func:`state_buckets` of the id, ``nbuckets`` buckets),
    sorted by id inside a bucket. Pandas in -> pandas out (in process: only the view's
    respondents are joined, :func:`_next_state_pandas`); Dask in -> a Dask frame with one
    partition per bucket (both sides range-partitioned on the bucket with fixed divisions,
    then joined partition by partition): the same rows in the same order.
    """
    n = max(int(nbuckets), 1)
    if not (is_dask(state) or is_dask(posts)):
        return _next_state_pandas(state, posts, policy, window, index, n)
    divisions = (*range(n), n - 1)
    meta = empty_state(policy, window, meta_of(state)[policy.id].dtype)

    def cut(frame: dd.DataFrame) -> dd.DataFrame:
        keyed = frame.map_partitions(_with_bucket, policy.id, n, meta=_with_bucket(frame._meta, policy.id, n))
        return keyed.set_index(BUCKET, divisions=divisions)

    if not is_dask(state):
        state = dd.from_pandas(state, npartitions=1, sort=False)
    if not is_dask(posts):
        posts = dd.from_pandas(posts, npartitions=1, sort=False)
    return dd.map_partitions(
        _merge_advance,
        cut(nullable_state(state)),
        cut(posts),
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

"""JS-reduce grouping over Hilbert ranges (Algorithm 2): the scan and the repair.

:func:`first_pass` runs the greedy kernel of :mod:`dpriv.anonymity.generalize` on one
Hilbert range (carrying its open tail to the next range); :func:`repair` places the
leftovers of all ranges at once with the statistics of all groups. :func:`scan_range`,
:func:`range_stats` and :func:`repair_leftovers` are the same steps on pandas frames of
keyed rows (``_hkey``, ``_tie``, ``_s``, priors): pandas in, pandas out, so the Dask
dispatch (:mod:`dpriv.generalize`) and the in-process path call the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpriv.anonymity.generalize import CARRIED, UNGROUPED, Scan, attach_aside, entropies_kernel, greedy_scan
from dpriv.anonymity.group_stats import GroupStats, prior_columns
from dpriv.criteria import criteria_for
from dpriv.divergence import EQUAL, GROUNDS
from dpriv.hilbert.keys import HKEY, TIE, grouping_coords, in_key_order, key_ordered
from dpriv.kernel_args import kernel_input
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE, group_labels


def entropies(priors: np.ndarray, log_base: float = 2.0) -> np.ndarray:
    """Entropy of each row of ``priors`` (n, M) in units of ``log_base``: float64 (n,)."""
    return entropies_kernel(kernel_input(priors, np.float64), log_base)


@dataclass
class Params:
    """The (E9) thresholds and the repair settings of the greedy grouping; ``c`` the
    RBK-closeness bound (1.0: off, every group keeps a total variation of at most 1)."""

    k: int
    t: float
    j: float
    c: float = 1.0
    ground: int = EQUAL
    log_base: float = 2.0
    cap: int = 0
    wait: int = 0
    reach: int = 256


def _scan(order, s, priors, ent, view_counts, params: Params, group) -> Scan:
    """:func:`greedy_scan` over ``order`` with the thresholds of ``params``, new groups from 0."""
    return greedy_scan(
        order,
        s,
        priors,
        ent,
        view_counts,
        int(view_counts.sum()),
        params.k,
        params.t,
        params.j,
        params.c,
        params.ground,
        params.log_base,
        params.cap,
        params.wait,
        group,
        0,
        np.empty(len(s), np.int64),
    )


def first_pass(
    s: np.ndarray, priors: np.ndarray, view_counts: np.ndarray, params: Params, *, carry_tail: bool = False
) -> np.ndarray:
    """Algorithm 2's scan over one Hilbert range, with the cap (and optional deferral).

    Parameters
    ----------
    s : int64 (n,) sensitive codes in [0, M), in Hilbert order (key, then seeded tie-break)
    priors : float64 (n, M), each tuple's respondent prior (RBK^sv or BK^sv), rows sum to 1
    view_counts : int64 (M,), counts of S over the WHOLE original view (P_V of (E9))
    carry_tail : mark the tuples after the last closed group ``CARRIED`` (-2): the caller
        prepends them to the next Hilbert range, so that chained ranges scan exactly like
        the whole view (§2.2, "passing the open group to the next partition").

    Returns
    -------
    int64 (n,): local group number in [0, G), -1 for a tuple set aside (or the open tail
    when not carried), -2 for the carried tail.
    """
    s, priors, view_counts = _arrays(s, priors, view_counts)
    n = len(s)
    group = np.full(n, UNGROUPED, dtype=np.int64)
    if n == 0:
        return group
    ent = entropies(priors, params.log_base)
    scan = _scan(np.arange(n, dtype=np.int64), s, priors, ent, view_counts, params, group)
    if carry_tail:
        group[scan.last_close + 1 :] = CARRIED
    return group


def repair(
    stats: GroupStats,
    s: np.ndarray,
    priors: np.ndarray,
    coords: np.ndarray,
    pos: np.ndarray,
    view_counts: np.ndarray,
    params: Params,
) -> tuple[np.ndarray, GroupStats]:
    """Place the leftovers of the first pass (repairs 2 and 3 of the module doc).

    ``s`` (L,), ``priors`` (L, M), ``coords`` (L, m) and global Hilbert positions ``pos``
    (L,) of the leftovers, sorted by ``pos``. Returns the group of each leftover (an index
    into the returned stats, which append the new groups; -1 = suppressed) and the stats.
    """
    s, priors, view_counts = _arrays(s, priors, view_counts)
    coords, pos = kernel_input(coords, np.float64), kernel_input(pos, np.int64)
    ent = entropies(priors, params.log_base)
    view_size = int(view_counts.sum())
    assign = np.full(len(s), UNGROUPED, dtype=np.int64)
    p = params
    thresholds = (view_counts, view_size, p.t, p.j, p.c, p.ground, p.log_base, p.reach)
    if stats.n_groups:
        attach_aside(*stats.astuple(), s, priors, ent, coords, pos, assign, *thresholds)
    rest = np.flatnonzero(assign == UNGROUPED)
    new = np.full(len(s), UNGROUPED, dtype=np.int64)
    n_new = _scan(rest, s, priors, ent, view_counts, params, new).next_gid  # groups from 0
    if n_new:
        m = stats.counts.shape[1] if stats.n_groups else priors.shape[1]
        stats = (
            stats.concat(GroupStats.of(new, s, priors, ent, coords, pos, n_new, m))
            if stats.n_groups
            else GroupStats.of(new, s, priors, ent, coords, pos, n_new, m)
        )
        assign[new >= 0] = new[new >= 0] + (stats.n_groups - n_new)
        attach_aside(*stats.astuple(), s, priors, ent, coords, pos, assign, *thresholds)
    return assign, stats


def greedy_qi_groups(
    s: np.ndarray,
    priors: np.ndarray,
    view_counts: np.ndarray,
    params: Params,
    coords: np.ndarray | None = None,
) -> np.ndarray:
    """QI-groups of one whole view in Hilbert order: :func:`first_pass` then :func:`repair`.

    ``coords`` (n, m) are the QIs normalised to [0, 1] (default: the position). Returns the
    group number in [0, G) of each tuple, -1 for a suppressed tuple.
    """
    s, priors, view_counts = _arrays(s, priors, view_counts)
    n = len(s)
    coords = (np.arange(n, dtype=np.float64) / max(n - 1, 1))[:, None] if coords is None else coords
    coords = np.ascontiguousarray(coords, dtype=np.float64)
    group = first_pass(s, priors, view_counts, params)
    pos = np.arange(n, dtype=np.int64)
    n_groups = int(group.max()) + 1 if n else 0
    stats = GroupStats.of(
        group, s, priors, entropies(priors, params.log_base), coords, pos, n_groups, len(view_counts)
    )
    left = np.flatnonzero(group < 0)
    assign, _ = repair(stats, s[left], priors[left], coords[left], pos[left], view_counts, params)
    group[left] = assign
    return group


def _arrays(s, priors, view_counts):
    """The kernels' inputs read-only (one compiled signature: :mod:`dpriv.kernel_args`)."""
    return kernel_input(s, np.int64), kernel_input(priors, np.float64), kernel_input(view_counts, np.int64)


def params_of(policy: ReleasePolicy) -> Params:
    """The greedy's parameters: the thresholds of the criteria JS-reduce promises (k, t, j of
    :func:`dpriv.criteria.criteria_for`, decided in the numba kernel with the same exact
    arithmetic) and the policy's scan settings."""
    # numba cannot call the criterion classes: the kernel takes only their thresholds
    th = {c.name: c.threshold for c in criteria_for(policy, "jsreduce")}
    return Params(
        k=th["k"],
        t=th["t"],
        j=th["j"],
        c=th.get("rbk_closeness", 1.0),
        ground=GROUNDS[policy.emd_ground],
        log_base=policy.log_base,
        cap=cap_for(policy),
        wait=max(policy.defer_wait, 0),
        reach=policy.attach_reach,
    )


def cap_for(policy: ReleasePolicy) -> int:
    """Open-group cap of the greedy scan; policy.group_cap, else max(8k, 64) [proposed]."""
    return policy.group_cap or max(8 * policy.k, 64)


class RangeResult(NamedTuple):
    """A range kernel's output (a tuple: Dask's ``nout=2`` splits it)."""

    #: the range's rows with ``_label`` (a group label, or -1 for a leftover)
    rows: pd.DataFrame
    #: the rows to carry into the next range, without ``_label`` (empty for the last range)
    carry: pd.DataFrame


def scan_range(
    part: pd.DataFrame, carry: pd.DataFrame | None, policy: ReleasePolicy, view_counts: np.ndarray, last: bool
) -> RangeResult:
    """First pass over one Hilbert range, after the open tail ``carry`` of the previous one:
    the range's rows labelled and the open tail to carry into the next range."""
    if HKEY not in part.columns:
        part = part.rename_axis(HKEY).reset_index()
    if carry is not None and len(carry):
        part = pd.concat([carry, part], ignore_index=True)
    part = key_ordered(part)
    return labelled(part, scan_groups(part, policy, view_counts, last), policy)


def scan_groups(rows: pd.DataFrame, policy: ReleasePolicy, view_counts: np.ndarray, last: bool) -> np.ndarray:
    """:func:`first_pass` over keyed ``rows`` in (key, tie) order: int64 (n,) local groups,
    ``CARRIED`` for the open tail unless ``last``."""
    return first_pass(
        rows[SCODE].to_numpy(),
        rows[policy.prior_columns].to_numpy(dtype=np.float64),
        view_counts,
        params_of(policy),
        carry_tail=not last,
    )


def labelled(rows: pd.DataFrame, group: np.ndarray, policy: ReleasePolicy) -> RangeResult:
    """The rows with their ``_label`` (-1 for a leftover) and the carried rows, without it."""
    carried = group == CARRIED
    rows = rows.assign(**{LABEL: group_labels(rows[TIE].to_numpy(np.uint64), group, policy.seed)})
    return RangeResult(
        rows[~carried].reset_index(drop=True), rows[carried].drop(columns=LABEL).reset_index(drop=True)
    )


def range_stats(rows: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Per QI-group of ``rows`` (label >= 0): first (key, tie), then the arrays of
    :class:`GroupStats` flattened into columns; one row per group."""
    # the grouped rows in stable (key, tie) order, by position: only the columns read move
    label, key, tie = (rows[c].to_numpy() for c in (LABEL, HKEY, TIE))
    keep = np.flatnonzero(label >= 0)
    k, t = key[keep], tie[keep]
    order = keep if in_key_order(k, t) else keep[np.lexsort((t, k))]  # ranges come key-ordered
    labels, group = np.unique(label[order], return_inverse=True)
    st = GroupStats.of_columns(
        group,
        rows[SCODE].to_numpy()[order],
        prior_columns(rows, policy.prior_columns),  # read where they lie, not gathered
        order,
        grouping_coords(rows, policy)[order],
        np.arange(len(order)),
        len(labels),
        len(policy.sensitive_domain),
        policy.log_base,
    )
    first = order[st.pos]
    return pd.concat([pd.DataFrame({LABEL: labels, HKEY: key[first], TIE: tie[first]}), _flat(st)], axis=1)


_STAT_BLOCKS = ("counts", "sizes", "sum_p", "sum_h", "lo", "hi")


def _flat(st: GroupStats) -> pd.DataFrame:
    cols = {}
    for name in _STAT_BLOCKS:
        arr = getattr(st, name)
        if arr.ndim == 1:
            cols[name] = arr
        else:
            cols.update({f"{name}{i}": arr[:, i] for i in range(arr.shape[1])})
    return pd.DataFrame(cols)


def unflat_stats(frame: pd.DataFrame, pos: np.ndarray) -> GroupStats:
    """Inverse of :func:`_flat`: the :class:`GroupStats` of the ``counts``, ``sizes``, ``sum_p``,
    ``sum_h``, ``lo``, ``hi`` columns of ``frame`` (one row a group; a block of width W spelled
    ``<name>0 .. <name>W-1``), with ``pos`` (int, (G,)) their positions."""
    blocks = []
    for name in _STAT_BLOCKS:
        cols = [c for c in frame.columns if c == name or (c.startswith(name) and c[len(name) :].isdigit())]
        arr = frame[cols].to_numpy()
        blocks.append(np.array(arr[:, 0] if cols == [name] else arr, order="C"))  # writable
    blocks[0] = blocks[0].astype(np.int64)
    blocks[1] = blocks[1].astype(np.int64)
    return GroupStats(*blocks, pos.astype(np.int64))


def repair_leftovers(
    stats_frame: pd.DataFrame, leftovers: pd.DataFrame, policy: ReleasePolicy, view_counts: np.ndarray
) -> pd.DataFrame:
    """The repair over all ranges at once (client side): leftovers with their final
    ``_label`` (-1 = suppressed). Positions come from the global (key, tie) order."""
    keys = pd.concat([stats_frame[[HKEY, TIE]], leftovers[[HKEY, TIE]]], ignore_index=True)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.lexsort((keys[TIE].to_numpy(np.uint64), keys[HKEY].to_numpy(np.uint64)))] = np.arange(len(keys))
    g_pos, x_pos = rank[: len(stats_frame)], rank[len(stats_frame) :]
    order = np.argsort(x_pos, kind="stable")
    left = leftovers.iloc[order].reset_index(drop=True)
    stats = unflat_stats(stats_frame, g_pos) if len(stats_frame) else None
    m = len(policy.sensitive_domain)
    if stats is None:
        n_qi = len(policy.qi)
        stats = GroupStats(
            np.zeros((0, m), np.int64),
            np.zeros(0, np.int64),
            np.zeros((0, m)),
            np.zeros(0),
            np.zeros((0, n_qi)),
            np.zeros((0, n_qi)),
            np.zeros(0, np.int64),
        )
    n_old = stats.n_groups
    assign, _ = repair(
        stats,
        left[SCODE].to_numpy(),
        left[policy.prior_columns].to_numpy(dtype=np.float64),
        grouping_coords(left, policy),
        x_pos[order],
        view_counts,
        params_of(policy),
    )
    old_labels = stats_frame[LABEL].to_numpy()
    label = np.where(
        (assign >= 0) & (assign < n_old),
        old_labels[np.clip(assign, 0, max(n_old - 1, 0))] if n_old else -1,
        -1,
    )
    new = np.where(assign >= n_old, assign, -1)
    fresh = group_labels(left[TIE].to_numpy(np.uint64), new, policy.seed)
    label = np.where(new >= 0, fresh, label)
    return left.assign(**{LABEL: label})

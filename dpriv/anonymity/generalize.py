"""Generalize (Algorithm 2): greedy QI-groups along the Hilbert order under k, t and j.

The kernel works on one Hilbert range whose tuples are already sorted by (key, seeded
tie-break). It reads the literal algorithm (add the next tuple, close the open group as
soon as (E9) holds) and adds the repairs FINDINGS.md calls for, so that one outlier
cannot swallow the rest of the view:

1. *cap*: an open group that reaches ``cap`` tuples without meeting (E9) sets aside the
   member whose removal lowers the violation ``max(0, JS - j) + max(0, EMD - t)`` most;
2. *attach*: each set-aside tuple joins, among the ``reach`` groups nearest in Hilbert
   order, the one that still satisfies (E9) with it and whose QI box grows least;
3. *retry*: what is left is scanned again, in Hilbert order, by the same greedy, and
   attached again.

Optionally (``wait`` > 0) a tuple that would push the open group away from (E9) is
*deferred* and pulled into a later group that needs it (FINDINGS.md "defer").

Over Dask, :func:`first_pass` runs on each Hilbert range in a chain (each range carries
its open tail to the next), and :func:`repair` runs once over the leftovers of all ranges
with the statistics of all groups: the result is the same for any partitioning. What the
repair cannot place is suppressed.
EMD decisions use exact integer counts (:mod:`dpriv.anonymity.divergence`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from dpriv.anonymity.divergence import EQUAL, emd_num_den, emd_within, entropy, js_from_sums

UNGROUPED = -1
_TINY = np.finfo(np.float64).tiny
CARRIED = -2  # the open tail of a Hilbert range, scanned again with the next range
_PULL_SCAN = 32  # deferred tuples examined per step, most recent first


@njit(cache=True)
def _violation(counts, size, sum_p, sum_h, view_counts, view_size, t, j, ground, log_base):
    num, den = emd_num_den(counts, size, view_counts, view_size, ground)
    js = js_from_sums(sum_p, sum_h, size, log_base)
    v = 0.0
    if not emd_within(num, den, t):  # > 0 even where num / den rounds to t
        v += max(num / den - t, _TINY)
    if js > j:
        v += js - j
    return v


@njit(cache=True)
def _worsens(counts, u, sum_p, sum_h, x, s, priors, ent, view_counts, view_size, t, j, ground, log_base):
    """Would adding ``x`` (already counted in ``counts``) push the open group away from (E9)?

    t: the group violates t with ``x`` and ``x``'s value was not under-represented in the
    group; j: the group violates j with ``x`` and ``x`` raises its JS divergence.
    """
    v = s[x]
    num, den = emd_num_den(counts, u + 1, view_counts, view_size, ground)
    if not emd_within(num, den, t) and (counts[v] - 1) * view_size >= view_counts[v] * u:
        return True
    js1 = js_from_sums(sum_p + priors[x], sum_h + ent[x], u + 1, log_base)
    return js1 > j and js1 > js_from_sums(sum_p, sum_h, u, log_base)


@njit(cache=True)
def _greedy(
    order,
    s,
    priors,
    ent,
    view_counts,
    view_size,
    k,
    t,
    j,
    ground,
    log_base,
    cap,
    wait,
    group,
    next_gid,
    aside,
):
    """One greedy scan of ``order`` (positions); returns (next_gid, n_aside, last_close), the
    last the step at which the last group closed (-1: none).

    A tuple that would push the open group away from (E9) (:func:`_worsens`) is *deferred* (when ``wait`` >
    0): it waits in a queue, and after every step the most recent deferred tuples that lower
    the violation are pulled into the open group; a tuple that waited more than ``wait``
    steps is set aside for the retry pass.
    """
    m = priors.shape[1]
    n = len(order)
    members = np.empty(n, dtype=np.int64)
    counts = np.zeros(m, dtype=np.int64)
    sum_p = np.zeros(m)
    sum_h = 0.0
    u = 0
    n_aside = 0
    queue = np.empty(n, dtype=np.int64)  # deferred positions, -1 once pulled
    since = np.empty(n, dtype=np.int64)  # step at which each was deferred
    last_close = -1
    head = 0
    tail = 0
    for step in range(n):
        x = order[step]
        while head < tail and (queue[head] < 0 or step - since[head] > wait):
            if queue[head] >= 0:
                aside[n_aside] = queue[head]
                n_aside += 1
            head += 1
        v0 = (
            _violation(counts, u, sum_p, sum_h, view_counts, view_size, t, j, ground, log_base)
            if u > 0
            else np.inf
        )
        counts[s[x]] += 1
        v1 = _violation(
            counts, u + 1, sum_p + priors[x], sum_h + ent[x], view_counts, view_size, t, j, ground, log_base
        )
        if (
            wait > 0
            and u > 0
            and _worsens(
                counts, u, sum_p, sum_h, x, s, priors, ent, view_counts, view_size, t, j, ground, log_base
            )
        ):
            counts[s[x]] -= 1
            queue[tail] = x
            since[tail] = step
            tail += 1
        else:
            members[u] = x
            u += 1
            sum_p += priors[x]
            sum_h += ent[x]
            v0 = v1
        scanned = 0
        q = tail - 1
        while v0 > 0.0 and q >= head and scanned < _PULL_SCAN:
            y = queue[q]
            if y >= 0:
                scanned += 1
                counts[s[y]] += 1
                v1 = _violation(
                    counts,
                    u + 1,
                    sum_p + priors[y],
                    sum_h + ent[y],
                    view_counts,
                    view_size,
                    t,
                    j,
                    ground,
                    log_base,
                )
                if v1 < v0 and not _worsens(
                    counts, u, sum_p, sum_h, y, s, priors, ent, view_counts, view_size, t, j, ground, log_base
                ):
                    members[u] = y
                    u += 1
                    sum_p += priors[y]
                    sum_h += ent[y]
                    v0 = v1
                    queue[q] = -1
                else:
                    counts[s[y]] -= 1
            q -= 1
        if u >= k and v0 == 0.0:
            last_close = step
            for a in range(u):
                group[members[a]] = next_gid
            next_gid += 1
            u = 0
            counts[:] = 0
            sum_p[:] = 0.0
            sum_h = 0.0
        elif cap > 0 and u >= cap:
            best, best_v = 0, np.inf
            for a in range(u):
                y = members[a]
                counts[s[y]] -= 1
                v = _violation(
                    counts,
                    u - 1,
                    sum_p - priors[y],
                    sum_h - ent[y],
                    view_counts,
                    view_size,
                    t,
                    j,
                    ground,
                    log_base,
                )
                counts[s[y]] += 1
                if v < best_v:
                    best, best_v = a, v
            y = members[best]
            members[best] = members[u - 1]
            u -= 1
            counts[s[y]] -= 1
            sum_p -= priors[y]
            sum_h -= ent[y]
            aside[n_aside] = y
            n_aside += 1
    for q in range(head, tail):  # deferred tuples still waiting, then the open tail
        if queue[q] >= 0:
            aside[n_aside] = queue[q]
            n_aside += 1
    for a in range(u):
        aside[n_aside] = members[a]
        n_aside += 1
    return next_gid, n_aside, last_close


@njit(cache=True)
def _attach(
    counts,
    sizes,
    sum_p,
    sum_h,
    lo,
    hi,
    pos,
    s,
    priors,
    ent,
    coords,
    xpos,
    assign,
    view_counts,
    view_size,
    t,
    j,
    ground,
    log_base,
    reach,
):
    """Attach each unassigned leftover (``assign == -1``) to a group that still satisfies
    (E9) with it: among the ``reach`` groups nearest in Hilbert order (by the position of
    their first tuple), the one whose box on the normalised QIs grows least (E11); ties go
    to the nearest. Group statistics are updated in place."""
    n_groups = len(pos)
    by_pos = np.argsort(pos)
    spos = pos[by_pos]
    for x in range(len(s)):
        if assign[x] != UNGROUPED:
            continue
        right = np.searchsorted(spos, xpos[x])
        left = right - 1
        best, best_cost = -1, np.inf
        for _ in range(min(reach, n_groups)):
            if left < 0 and right >= n_groups:
                break
            if right >= n_groups or (left >= 0 and xpos[x] - spos[left] <= spos[right] - xpos[x]):
                g = by_pos[left]
                left -= 1
            else:
                g = by_pos[right]
                right += 1
            cost = (np.maximum(hi[g], coords[x]) - np.minimum(lo[g], coords[x]) - (hi[g] - lo[g])).sum()
            if cost >= best_cost:
                continue
            counts[g, s[x]] += 1
            v = _violation(
                counts[g],
                sizes[g] + 1,
                sum_p[g] + priors[x],
                sum_h[g] + ent[x],
                view_counts,
                view_size,
                t,
                j,
                ground,
                log_base,
            )
            counts[g, s[x]] -= 1
            if v == 0.0:
                best, best_cost = g, cost
                if cost == 0.0:
                    break
        if best >= 0:
            assign[x] = best
            counts[best, s[x]] += 1
            sizes[best] += 1
            sum_p[best] += priors[x]
            sum_h[best] += ent[x]
            lo[best] = np.minimum(lo[best], coords[x])
            hi[best] = np.maximum(hi[best], coords[x])


@njit(cache=True)
def _entropies(priors, log_base):
    out = np.empty(priors.shape[0])
    for i in range(priors.shape[0]):
        out[i] = entropy(priors[i], log_base)
    return out


def entropies(priors: np.ndarray, log_base: float = 2.0) -> np.ndarray:
    """Entropy of each row of ``priors`` (n, M) in units of ``log_base``: float64 (n,)."""
    return _entropies(np.ascontiguousarray(priors, dtype=np.float64), log_base)


@dataclass
class Params:
    """The (E9) thresholds and the repair settings of the greedy grouping."""

    k: int
    t: float
    j: float
    ground: int = EQUAL
    log_base: float = 2.0
    cap: int = 0
    wait: int = 0
    reach: int = 256


@dataclass
class GroupStats:
    """What the repair needs of each QI-group: counts (G, M) int64 of S, sizes (G,), sums of
    priors (G, M) and of their entropies (G,), box lo/hi (G, m) on normalised QIs, and the
    global Hilbert-order position (G,) of the group's first tuple."""

    counts: np.ndarray
    sizes: np.ndarray
    sum_p: np.ndarray
    sum_h: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    pos: np.ndarray

    @classmethod
    def of(cls, group, s, priors, ent, coords, pos, n_groups, m) -> GroupStats:
        """Statistics of groups ``0..n_groups-1`` of ``group`` (int64 (n,), -1 ignored)."""
        kept = group >= 0
        g, s, priors, ent, coords, pos = (
            group[kept],
            s[kept],
            priors[kept],
            ent[kept],
            coords[kept],
            pos[kept],
        )
        counts = np.bincount(g * m + s, minlength=n_groups * m).reshape(n_groups, m).astype(np.int64)
        sum_p = np.zeros((n_groups, priors.shape[1]))
        np.add.at(sum_p, g, priors)
        lo = np.full((n_groups, coords.shape[1]), np.inf)
        hi = np.full((n_groups, coords.shape[1]), -np.inf)
        np.minimum.at(lo, g, coords)
        np.maximum.at(hi, g, coords)
        first = np.full(n_groups, np.iinfo(np.int64).max)
        np.minimum.at(first, g, pos)
        return cls(counts, counts.sum(axis=1), sum_p, np.bincount(g, ent, n_groups), lo, hi, first)

    def concat(self, other: GroupStats) -> GroupStats:
        return GroupStats(*(np.concatenate([a, b]) for a, b in zip(self.astuple(), other.astuple())))

    def astuple(self) -> tuple:
        return (self.counts, self.sizes, self.sum_p, self.sum_h, self.lo, self.hi, self.pos)

    @property
    def n_groups(self) -> int:
        return len(self.pos)


def _scan(order, s, priors, ent, view_counts, params: Params, group):
    """:func:`_greedy` over ``order`` with the thresholds of ``params``, new groups from 0."""
    return _greedy(
        order,
        s,
        priors,
        ent,
        view_counts,
        int(view_counts.sum()),
        params.k,
        params.t,
        params.j,
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
    _, _, last_close = _scan(np.arange(n, dtype=np.int64), s, priors, ent, view_counts, params, group)
    if carry_tail:
        group[last_close + 1 :] = CARRIED
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
    coords = np.ascontiguousarray(coords, dtype=np.float64)
    ent = entropies(priors, params.log_base)
    view_size = int(view_counts.sum())
    assign = np.full(len(s), UNGROUPED, dtype=np.int64)
    thresholds = (view_counts, view_size, params.t, params.j, params.ground, params.log_base, params.reach)
    if stats.n_groups:
        _attach(*stats.astuple(), s, priors, ent, coords, pos, assign, *thresholds)
    rest = np.flatnonzero(assign == UNGROUPED)
    new = np.full(len(s), UNGROUPED, dtype=np.int64)
    n_new, _, _ = _scan(rest, s, priors, ent, view_counts, params, new)
    if n_new:
        m = stats.counts.shape[1] if stats.n_groups else priors.shape[1]
        stats = (
            stats.concat(GroupStats.of(new, s, priors, ent, coords, pos, n_new, m))
            if stats.n_groups
            else GroupStats.of(new, s, priors, ent, coords, pos, n_new, m)
        )
        assign[new >= 0] = new[new >= 0] + (stats.n_groups - n_new)
        _attach(*stats.astuple(), s, priors, ent, coords, pos, assign, *thresholds)
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
    return (
        np.ascontiguousarray(s, dtype=np.int64),
        np.ascontiguousarray(priors, dtype=np.float64),
        np.ascontiguousarray(view_counts, dtype=np.int64),
    )

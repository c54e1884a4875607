"""Generalize (Algorithm 2): greedy QI-groups along the Hilbert order under k, t and j.

The kernel works on one Hilbert range whose tuples are already sorted by (key, seeded
tie-break). It reads the literal algorithm (add the next tuple, close the open group as
soon as (E9) holds) and adds the repairs docs/findings.md calls for, so that one outlier
cannot swallow the rest of the view:

1. *cap*: an open group that reaches ``cap`` tuples without meeting (E9) sets aside the
   member whose removal lowers the violation ``max(0, JS - j) + max(0, EMD - t)`` most;
2. *attach*: each set-aside tuple joins, among the ``reach`` groups nearest in Hilbert
   order, the one that still satisfies (E9) with it and whose QI box grows least;
3. *retry*: what is left is scanned again, in Hilbert order, by the same greedy, and
   attached again.

Optionally (``wait`` > 0) a tuple that would push the open group away from (E9) is
*deferred* and pulled into a later group that needs it (docs/findings.md "defer").

Over Dask, :func:`first_pass` runs on each Hilbert range in a chain (each range carries
its open tail to the next), and :func:`repair` runs once over the leftovers of all ranges
with the statistics of all groups: the result is the same for any partitioning. What the
repair cannot place is suppressed.
EMD decisions use exact integer counts (:mod:`dpriv.divergence`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from dpriv.divergence import (
    emd_num_den,
    emd_within,
    entropy,
    js_from_sums,
    js_from_sums_with,
    tv_from_sums,
    tv_from_sums_with,
)

UNGROUPED = -1
_TINY = np.finfo(np.float64).tiny
CARRIED = -2  # the open tail of a Hilbert range, scanned again with the next range
_PULL_SCAN = 32  # deferred tuples examined per step, most recent first


@njit(cache=True)
def _violation(counts, size, sum_p, sum_h, view_counts, view_size, t, j, c, ground, log_base):
    """How far a group is from (E9) and RBK-closeness ``c`` (``c`` >= 1: off): 0 when it keeps them."""
    js = js_from_sums(sum_p, sum_h, size, log_base)
    tv = tv_from_sums(counts, sum_p, size) if c < 1.0 else 0.0
    return _violation_of(counts, size, js, tv, view_counts, view_size, t, j, c, ground)


@njit(cache=True)
def _violation_with(
    counts, size, sum_p, sign, extra, sum_h, view_counts, view_size, t, j, c, ground, log_base
):
    """:func:`_violation` with the prior sums ``sum_p + sign * extra`` (no array built)."""
    js = js_from_sums_with(sum_p, sign, extra, sum_h, size, log_base)
    tv = tv_from_sums_with(counts, sum_p, sign, extra, size) if c < 1.0 else 0.0
    return _violation_of(counts, size, js, tv, view_counts, view_size, t, j, c, ground)


@njit(cache=True)
def _violation_of(counts, size, js, tv, view_counts, view_size, t, j, c, ground):
    num, den = emd_num_den(counts, size, view_counts, view_size, ground)
    v = 0.0
    if not emd_within(num, den, t):  # > 0 even where num / den rounds to t
        v += max(num / den - t, _TINY)
    if js > j:
        v += js - j
    if tv > c:
        v += tv - c
    return v


@njit(cache=True)
def _worsens(counts, u, sum_p, sum_h, x, s, priors, ent, view_counts, view_size, t, j, c, ground, log_base):
    """Would adding ``x`` (already counted in ``counts``) push the open group away from (E9)?

    t: the group violates t with ``x`` and ``x``'s value was not under-represented in the
    group; j: the group violates j with ``x`` and ``x`` raises its JS divergence; c: the group
    breaks RBK-closeness with ``x`` and ``x`` raises its distance.
    """
    v = s[x]
    num, den = emd_num_den(counts, u + 1, view_counts, view_size, ground)
    if not emd_within(num, den, t) and (counts[v] - 1) * view_size >= view_counts[v] * u:
        return True
    js1 = js_from_sums_with(sum_p, 1.0, priors[x], sum_h + ent[x], u + 1, log_base)
    if js1 > j and js1 > js_from_sums(sum_p, sum_h, u, log_base):
        return True
    if c >= 1.0:
        return False
    tv1 = tv_from_sums_with(counts, sum_p, 1.0, priors[x], u + 1)
    if tv1 <= c:
        return False
    counts[v] -= 1
    tv0 = tv_from_sums(counts, sum_p, u)
    counts[v] += 1
    return tv1 > tv0


class Scan(NamedTuple):
    """:func:`greedy_scan`'s result (built inside the compiled kernel: numba returns it as this
    class): ``next_gid``, the group number after the last closed group (the number of groups
    closed, for a scan from 0); ``n_aside``, how many positions it wrote to ``aside``;
    ``last_close``, the step at which the last group closed (-1: none)."""

    next_gid: int
    n_aside: int
    last_close: int


@njit(cache=True)
def greedy_scan(
    order,
    s,
    priors,
    ent,
    view_counts,
    view_size,
    k,
    t,
    j,
    c,
    ground,
    log_base,
    cap,
    wait,
    group,
    next_gid,
    aside,
):
    """One greedy scan of ``order`` (positions): writes the group of each closed member into
    ``group`` (from ``next_gid`` on) and the positions set aside into ``aside``; returns a
    :class:`Scan`.

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
    u = np.int64(0)  # int64 from the start: no second compile of the callees for a literal 0
    n_aside = 0
    queue = np.empty(n, dtype=np.int64)  # deferred positions, -1 once pulled
    since = np.empty(n, dtype=np.int64)  # step at which each was deferred
    last_close = -1
    head = 0
    tail = 0
    v0 = np.inf  # the open group's violation, kept from the step before while it holds
    v0_known = False
    for step in range(n):
        x = order[step]
        while head < tail and (queue[head] < 0 or step - since[head] > wait):
            if queue[head] >= 0:
                aside[n_aside] = queue[head]
                n_aside += 1
            head += 1
        if u == 0:
            v0 = np.inf
        elif not v0_known:  # a step that adds x computes the next step's v0 as its v1, same bits
            v0 = _violation(counts, u, sum_p, sum_h, view_counts, view_size, t, j, c, ground, log_base)
        v0_known = True
        counts[s[x]] += 1
        v1 = _violation_with(
            counts, u + 1, sum_p, 1.0, priors[x], sum_h + ent[x], view_counts, view_size, t, j, c,
            ground, log_base,
        )  # fmt: skip
        if (
            wait > 0
            and u > 0
            and _worsens(
                counts, u, sum_p, sum_h, x, s, priors, ent, view_counts, view_size, t, j, c, ground, log_base
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
                v1 = _violation_with(
                    counts,
                    u + 1,
                    sum_p,
                    1.0,
                    priors[y],
                    sum_h + ent[y],
                    view_counts,
                    view_size,
                    t,
                    j,
                    c,
                    ground,
                    log_base,
                )
                if v1 < v0 and not _worsens(
                    counts, u, sum_p, sum_h, y, s, priors, ent, view_counts, view_size, t, j, c, ground,
                    log_base,
                ):  # fmt: skip
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
            u = np.int64(0)
            counts[:] = 0
            sum_p[:] = 0.0
            sum_h = 0.0
        elif cap > 0 and u >= cap:
            best, best_v = 0, np.inf
            for a in range(u):
                y = members[a]
                counts[s[y]] -= 1
                v = _violation_with(
                    counts,
                    u - 1,
                    sum_p,
                    -1.0,
                    priors[y],
                    sum_h - ent[y],
                    view_counts,
                    view_size,
                    t,
                    j,
                    c,
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
            v0_known = False
    for q in range(head, tail):  # deferred tuples still waiting, then the open tail
        if queue[q] >= 0:
            aside[n_aside] = queue[q]
            n_aside += 1
    for a in range(u):
        aside[n_aside] = members[a]
        n_aside += 1
    return Scan(next_gid, n_aside, last_close)


@njit(cache=True)
def attach_aside(
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
    c,
    ground,
    log_base,
    reach,
):
    """Attach each unassigned leftover (``assign == -1``) to a group that still satisfies
    (E9) with it (and RBK-closeness ``c`` when below 1): among the ``reach`` groups nearest
    in Hilbert order (by the position of their first tuple), the one whose box on the
    normalised QIs grows least (E11); ties go to the nearest. Group statistics are updated
    in place.

    Whether a group keeps t with one more tuple depends only on the group and the tuple's
    value: it is decided once per (group, value) and again for a group a leftover joins
    (:func:`_t_fits`), not once per candidate (most candidates fail on t: 6.1 million EMDs
    for the 49,000 leftovers of a 10^6-tuple view). The same decisions as checking t per
    candidate (tests/test_greedy_reference.py)."""
    n_groups = len(pos)
    by_pos = np.argsort(pos)
    spos = pos[by_pos]
    fits_t = np.empty(counts.shape, dtype=np.bool_)
    for g in range(n_groups):
        _t_fits(counts[g], sizes[g], view_counts, view_size, t, ground, fits_t[g])
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
            # (E9) holds iff t and j both hold: t first (a lookup), the logarithms only then
            if not fits_t[g, s[x]]:
                continue
            cost = _growth(lo[g], hi[g], coords[x])
            if cost >= best_cost:
                continue
            if js_from_sums_with(sum_p[g], 1.0, priors[x], sum_h[g] + ent[x], sizes[g] + 1, log_base) > j:
                continue
            if c < 1.0:
                counts[g, s[x]] += 1
                tv = tv_from_sums_with(counts[g], sum_p[g], 1.0, priors[x], sizes[g] + 1)
                counts[g, s[x]] -= 1
                if tv > c:
                    continue
            best, best_cost = g, cost
            if cost == 0.0:
                break
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
            _t_fits(counts[best], sizes[best], view_counts, view_size, t, ground, fits_t[best])


@njit(cache=True)
def _t_fits(counts, size, view_counts, view_size, t, ground, out):
    """``out[v]``: does the group of ``counts`` (M,) and ``size`` keep t with one more tuple
    of value ``v``? The exact integer EMD of :func:`dpriv.divergence.emd_num_den`, per value."""
    for v in range(counts.shape[0]):
        counts[v] += 1
        num, den = emd_num_den(counts, size + 1, view_counts, view_size, ground)
        counts[v] -= 1
        out[v] = emd_within(num, den, t)


@njit(cache=True)
def _growth(lo, hi, c):
    """How much the box ``[lo, hi]`` grows, summed over the QIs, to take in the point ``c``
    (E11's increase; the terms in the order of the former array expression, so the same bits)."""
    total = 0.0
    for d in range(c.shape[0]):
        total += max(hi[d], c[d]) - min(lo[d], c[d]) - (hi[d] - lo[d])
    return total


@njit(cache=True)
def entropies_kernel(priors, log_base):
    """Compiled: entropy of each row of float64 C-contiguous ``priors`` (n, M), units of ``log_base``:
    float64 (n,). Callers go through :func:`dpriv.anonymity.jsreduce.entropies`."""
    out = np.empty(priors.shape[0])
    for i in range(priors.shape[0]):
        out[i] = entropy(priors[i], log_base)
    return out

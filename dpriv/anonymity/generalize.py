"""Generalize (Algorithm 2): greedy QI-groups along the Hilbert order under k, t and j.

The kernel works on one Hilbert range whose tuples are already sorted by (key, seeded
tie-break). It reads the literal algorithm (add the next tuple, close the open group as
soon as (E9) holds) and adds the repairs FINDINGS.md calls for, so that one outlier
cannot swallow the rest of the view:

1. *cap*: an open group that reaches ``cap`` tuples without meeting (E9) sets aside the
   member whose removal lowers the violation ``max(0, JS - j) + max(0, EMD - t)`` most;
2. *retry*: set-aside tuples are scanned again, in Hilbert order, by the same greedy;
3. *attach*: each remaining tuple joins the group of its nearest grouped neighbour in
   Hilbert order (before or after it) when that group still satisfies (E9) with it.

What is still left (and the open tail) is returned as -1: the caller stitches the
leftovers of all ranges with the same kernel and suppresses what remains.
EMD decisions use exact integer counts (:mod:`dpriv.anonymity.divergence`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpriv.anonymity.divergence import emd_num_den, emd_within, entropy, js_from_sums

UNGROUPED = -1


@njit(cache=True)
def _violation(counts, size, sum_p, sum_h, view_counts, view_size, t, j, ground, log_base):
    num, den = emd_num_den(counts, size, view_counts, view_size, ground)
    js = js_from_sums(sum_p, sum_h, size, log_base)
    v = 0.0
    if not emd_within(num, den, t):
        v += num / den - t
    if js > j:
        v += js - j
    return v


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
    group,
    next_gid,
    aside,
):
    """One greedy scan of ``order`` (positions); returns (next_gid, n_aside)."""
    m = priors.shape[1]
    members = np.empty(len(order), dtype=np.int64)
    counts = np.zeros(m, dtype=np.int64)
    sum_p = np.zeros(m)
    sum_h = 0.0
    u = 0
    n_aside = 0
    for x in order:
        members[u] = x
        u += 1
        counts[s[x]] += 1
        sum_p += priors[x]
        sum_h += ent[x]
        if (
            u >= k
            and _violation(counts, u, sum_p, sum_h, view_counts, view_size, t, j, ground, log_base)
            == 0.0
        ):
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
    for a in range(u):  # the open tail joins the set-aside tuples
        aside[n_aside] = members[a]
        n_aside += 1
    return next_gid, n_aside


@njit(cache=True)
def _attach(s, priors, ent, view_counts, view_size, t, j, ground, log_base, group, n_groups):
    """Attach ungrouped positions to the group of a nearest grouped neighbour if (E9) holds."""
    n, m = priors.shape
    counts = np.zeros((n_groups, m), dtype=np.int64)
    sizes = np.zeros(n_groups, dtype=np.int64)
    sum_p = np.zeros((n_groups, m))
    sum_h = np.zeros(n_groups)
    for x in range(n):
        g = group[x]
        if g >= 0:
            counts[g, s[x]] += 1
            sizes[g] += 1
            sum_p[g] += priors[x]
            sum_h[g] += ent[x]
    prev = np.full(n, -1, dtype=np.int64)  # group of the nearest grouped position before x
    nxt = np.full(n, -1, dtype=np.int64)
    last = -1
    for x in range(n):
        prev[x] = last
        if group[x] >= 0:
            last = group[x]
    last = -1
    for x in range(n - 1, -1, -1):
        nxt[x] = last
        if group[x] >= 0:
            last = group[x]
    for x in range(n):
        if group[x] >= 0:
            continue
        for g in (prev[x], nxt[x]):
            if g < 0:
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
            if v == 0.0:
                group[x] = g
                sizes[g] += 1
                sum_p[g] += priors[x]
                sum_h[g] += ent[x]
                break
            counts[g, s[x]] -= 1


@njit(cache=True)
def _entropies(priors, log_base):
    out = np.empty(priors.shape[0])
    for i in range(priors.shape[0]):
        out[i] = entropy(priors[i], log_base)
    return out


def greedy_qi_groups(
    s: np.ndarray,
    priors: np.ndarray,
    view_counts: np.ndarray,
    *,
    k: int,
    t: float,
    j: float,
    ground: int,
    log_base: float = 2.0,
    cap: int = 0,
) -> np.ndarray:
    """QI-groups of one Hilbert range (Algorithm 2 with the module's repairs).

    Parameters
    ----------
    s : int64 array of shape (n,)
        Sensitive codes in [0, M), in Hilbert order (sorted by key, then seeded tie-break).
    priors : float64 array of shape (n, M)
        Each tuple's respondent prior (RBK^sv or BK^sv); rows sum to 1.
    view_counts : int64 array of shape (M,)
        Counts of S over the WHOLE original view (P_V of (E9)), not only this range.
    k, t, j : the (E9) thresholds; t on the EMD of ``ground`` (EQUAL/ORDERED), j in units
        of ``log_base``.
    cap : open-group size that triggers setting a member aside; 0 = never (literal reading).

    Returns
    -------
    int64 array of shape (n,): group number in [0, G) per tuple, -1 for a leftover.
    """
    s = np.ascontiguousarray(s, dtype=np.int64)
    priors = np.ascontiguousarray(priors, dtype=np.float64)
    view_counts = np.ascontiguousarray(view_counts, dtype=np.int64)
    n = len(s)
    group = np.full(n, UNGROUPED, dtype=np.int64)
    if n == 0:
        return group
    ent = _entropies(priors, log_base)
    view_size = int(view_counts.sum())
    aside = np.empty(n, dtype=np.int64)
    args = (s, priors, ent, view_counts, view_size, k, t, j, ground, log_base, cap, group)
    gid, n_aside = _greedy(np.arange(n, dtype=np.int64), *args, 0, aside)
    retry = np.sort(aside[:n_aside])
    gid, _ = _greedy(retry, *args, gid, np.empty(n, dtype=np.int64))
    if gid > 0:
        _attach(s, priors, ent, view_counts, view_size, t, j, ground, log_base, group, gid)
    return group

"""The median top-down split (:mod:`dpriv.anonymity.topdown`, ``cut = "median"`` without the
knowledge axis: the recommended policy's) one depth level at a time: the nodes of a level
are independent, so their sums, candidate cuts and choices are computed for all of them at
once (compiled loops over the level, one NumPy expression for all its JS values) instead of
a few dozen NumPy calls per node (issue 13: at 10^6 tuples, ~250 nodes per Hilbert range,
the Python work around them was about a third of the split's time; the level-by-level split
took 0.94x (NumPy 2) to 0.82x (NumPy 1.26) of the node-by-node time on the benchmark's ranges,
measured in alternated pairs on a loaded machine: most of what is left is compiled sums).

The same groups as :meth:`dpriv.anonymity.topdown_split.Split.groups`, bit for bit: every value
compared with a threshold comes from the same expression (JS stays NumPy's: its ``np.log`` is
not libm's on every machine, so a compiled JS could change a decision), the candidate cuts
and their sums are those of :func:`~dpriv.anonymity.topdown_sums.dim_prefix`, each node's
dimensions are ranked as there, and the groups are numbered in the order of the node-by-node
split (depth first, left-hand side first). A node's stable sort along each dimension is
handed down to its halves (the stable order of a subset is the subset of the stable order),
so only the roots are sorted.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpriv.anonymity.topdown_split import Split
from dpriv.anonymity.topdown_sums import cut_sizes, node_sums, prefix_sums
from dpriv.divergence import emd_num_den, emd_within, tv_from_sums


@njit(cache=True, nogil=True)
def _level_stats(rows, starts, s, p, x):  # pragma: no cover - compiled
    """:func:`node_sums` of each node ``rows[starts[i]:starts[i + 1]]``: counts int64 (N, M),
    prior sums float64 (N, M), spans float64 (N, d)."""
    n, m, d = len(starts) - 1, p.shape[1], x.shape[1]
    counts = np.zeros((n, m), np.int64)
    sum_p = np.zeros((n, m))
    span = np.zeros((n, d))
    for i in range(n):
        node_sums(rows[starts[i] : starts[i + 1]], s, p, x, counts[i], sum_p[i], span[i])
    return counts, sum_p, span


@njit(cache=True, nogil=True)
def _dims(span):  # pragma: no cover - compiled
    """The dimensions with a positive span, widest first (ties: the lower dimension), as
    ``[d for d in np.argsort(-span, kind="stable") if span[d] > 0]`` (NaN spans left out)."""
    keep = np.flatnonzero(span > 0)
    return keep[np.argsort(-span[keep], kind="mergesort")]


@njit(cache=True, nogil=True)
def _which_dims(span, rank):  # pragma: no cover - compiled
    """The dimensions of a node to take: all of :func:`_dims` (``rank`` -2), its ``rank``-th
    (>= 0; none past the last) or none (-1)."""
    dims = _dims(span)
    if rank == -2:
        return dims
    return dims[rank : rank + 1] if rank >= 0 else dims[:0]


@njit(cache=True, nogil=True)
def _level_cuts(rows, starts, orders, ranks, span, x, s, p, ent, k):  # pragma: no cover - compiled
    """The candidate cuts of the nodes along the dimensions :func:`_which_dims` gives for
    ``ranks`` (in that order): each boundary of :func:`cut_sizes` along it (``orders``: each
    node's stable order along every dimension, local positions). Returns the node int64 (C,),
    the dimension (C,), the size of the left-hand side ``b`` (C,), and the prefix sums of
    :func:`prefix_sums` at ``b`` (counts (C, M), priors (C, M), entropies (C,))."""
    n, m = len(starts) - 1, p.shape[1]
    found = np.empty(len(rows) * x.shape[1], np.int64)  # pass 1: every (node, dim)'s cut sizes
    nfound = np.zeros(n * x.shape[1] + 1, np.int64)
    j = 0
    for i in range(n):
        a, e = starts[i], starts[i + 1]
        for dim in _which_dims(span[i], ranks[i]):
            vals = np.empty(e - a)
            for q in range(e - a):
                vals[q] = x[rows[a + orders[dim, a + q]], dim]
            b = cut_sizes(vals, k)
            found[nfound[j] : nfound[j] + len(b)] = b
            nfound[j + 1] = nfound[j] + len(b)
            j += 1
    total = nfound[j]
    node, dims, size = np.empty(total, np.int64), np.empty(total, np.int64), found[:total].copy()
    cc, cp, ch = np.empty((total, m), np.int64), np.empty((total, m)), np.empty(total)
    j = 0  # pass 2: their prefix sums
    for i in range(n):
        a = starts[i]
        for dim in _which_dims(span[i], ranks[i]):
            q, r = nfound[j], nfound[j + 1]
            j += 1
            if r > q:
                b = size[q:r]
                o = np.empty(b[-1], rows.dtype)
                for z in range(b[-1]):
                    o[z] = rows[a + orders[dim, a + z]]
                rc, rp, rh = prefix_sums(o, s, p, ent, b)
                node[q:r], dims[q:r] = i, dim
                cc[q:r], cp[q:r], ch[q:r] = rc, rp, rh
    return node, dims, size, cc, cp, ch


@njit(cache=True, nogil=True)
def _before(score, off, best_score, best_off):  # pragma: no cover - compiled
    """``(score, off) < (best_score, best_off)`` as Python compares the tuples (NaN equal to
    nothing and less than nothing)."""
    if score == best_score:
        return off < best_off
    return score < best_score


@njit(cache=True, nogil=True)
def _sort_first(score, off, lo, hi):  # pragma: no cover - compiled
    """``lo + np.lexsort((off, score))[0]`` over ``lo:hi``: the first smallest score, then
    off, NaN scores last."""
    best = lo
    for c in range(lo + 1, hi):
        sb, sc = score[best], score[c]
        if sb != sb:  # a NaN score sorts after any number
            if sc == sc or off[c] < off[best]:
                best = c
        elif sc == sc and (sc < sb or (sc == sb and off[c] < off[best])):
            best = c
    return best


@njit(cache=True, nogil=True)
def _choose(n, valid, node, dims, off, ok, fits, score):  # pragma: no cover - compiled
    """The chosen candidate of each node (-1: none), as ``Split._cut`` chooses with
    ``cut = "median"``: a valid node takes, in its first dimension that has one, the cut
    closest to the median (``off``, stable) among those with no violation (``ok``) whose
    halves keep (E9) (``fits``); any other node the cut of least weighted violation
    ``score`` (ties: the smaller ``off``, then the earlier cut), the first dimension's on a
    tie. Candidates come grouped by node, then dimension."""
    chosen = np.full(n, -1, np.int64)
    c = 0
    while c < len(node):
        i = node[c]
        e = c
        while e < len(node) and node[e] == i:
            e += 1
        lo = c
        while lo < e:  # one dimension: lo:hi
            hi = lo
            while hi < e and dims[hi] == dims[lo]:
                hi += 1
            if valid[i]:
                if chosen[i] < 0:
                    cand = np.flatnonzero(ok[lo:hi]) + lo
                    for t in cand[np.argsort(off[cand], kind="mergesort")]:
                        if fits[t]:
                            chosen[i] = t
                            break
            else:
                t = _sort_first(score, off, lo, hi)
                if chosen[i] < 0 or _before(score[t], off[t], score[chosen[i]], off[chosen[i]]):
                    chosen[i] = t
            lo = hi
        c = e
    return chosen


@njit(cache=True, nogil=True)
def _level_split(rows, starts, orders, parent, dim, size):  # pragma: no cover - compiled
    """The halves of each node ``parent[c]`` cut after ``size[c]`` rows of its order along
    ``dim[c]`` (as :func:`~dpriv.anonymity.topdown_sums.split_rows`): rows (increasing), starts
    and every dimension's stable order of the next level, left-hand sides first."""
    d = orders.shape[0]
    total = 0
    for c in range(len(parent)):
        total += starts[parent[c] + 1] - starts[parent[c]]
    out = np.empty(total, rows.dtype)
    out_orders = np.empty((d, total), np.int64)
    out_starts = np.empty(2 * len(parent) + 1, np.int64)
    out_starts[0] = 0
    q = 0
    for c in range(len(parent)):
        a, e = starts[parent[c]], starts[parent[c] + 1]
        u = e - a
        left = np.zeros(u, np.bool_)
        for i in range(size[c]):
            left[orders[dim[c], a + i]] = True
        local = np.empty(u, np.int64)  # a row's position within its half
        nl = 0
        for i in range(u):
            local[i] = nl if left[i] else i - nl
            nl += left[i]
        w, z = q, q + nl  # the left-hand side's next slot, the right-hand side's
        for i in range(u):
            if left[i]:
                out[w] = rows[a + i]
                w += 1
            else:
                out[z] = rows[a + i]
                z += 1
        for g in range(d):
            w, z = q, q + nl
            for i in range(u):
                o = orders[g, a + i]
                if left[o]:
                    out_orders[g, w] = local[o]
                    w += 1
                else:
                    out_orders[g, z] = local[o]
                    z += 1
        out_starts[2 * c + 1], out_starts[2 * c + 2] = q + nl, q + u
        q += u
    return out, out_starts, out_orders


@njit(cache=True, nogil=True)
def _exact(counts, sum_p, u, view_counts, n_view, ground, k, t, c):  # pragma: no cover - compiled
    """(E9) of each set without its JS: ``u >= k``, EMD <= t on integers, TV <= c."""
    out = np.empty(len(u), np.bool_)
    for i in range(len(u)):
        num, den = emd_num_den(counts[i], u[i], view_counts, n_view, ground)
        out[i] = (
            u[i] >= k
            and emd_within(num, den, t)
            and not (c < 1.0 and tv_from_sums(counts[i], sum_p[i], u[i]) > c)
        )
    return out


def _holds(split: Split, counts: np.ndarray, sum_p: np.ndarray, sum_h: np.ndarray, u: np.ndarray):
    """(E9) of many sets, as ``split._holds`` decides each (the same JS row by row)."""
    ok = _exact(counts, sum_p, u, split.vc, split.n_view, split.ground, split.k, split.t, split.c)
    if ok.any():
        ok[ok] = split.js(sum_p[ok], sum_h[ok], u[ok].astype(np.float64)) <= split.j
    return ok


def median_groups(split: Split, roots: list[np.ndarray]) -> list[np.ndarray]:
    """The groups of ``split`` (a :class:`dpriv.anonymity.topdown_split.Split` with ``cut = "median"``
    and no knowledge axis) over the roots ``roots`` (positions, increasing), in the order of
    ``[g for root in roots for g in split.groups(root)]``, each its positions (increasing)."""
    rows = np.concatenate(roots).astype(np.int64, copy=False)
    starts = np.r_[0, np.cumsum([len(r) for r in roots])].astype(np.int64)
    orders = np.empty((split.x.shape[1], len(rows)), np.int64)  # stable order of each node along each dim
    for a, e in zip(starts[:-1], starts[1:]):
        for g in range(split.x.shape[1]):
            orders[g, a:e] = np.argsort(split.x[rows[a:e], g], kind="stable")
    ids, kids, kept, count = list(range(len(roots))), {}, {}, len(roots)
    while len(ids):
        u = np.diff(starts)
        counts, sum_p, span = _level_stats(rows, starts, split.s, split.p, split.x)
        # NumPy's pairwise sum of each node's entropies (its bits decide JS <= j)
        sum_h = np.array([float(split.ent[rows[a:e]].sum()) for a, e in zip(starts[:-1], starts[1:])])
        valid = _holds(split, counts, sum_p, sum_h, u)
        # Mondrian takes a valid node's next dimension only when the one before has no valid
        # cut: a round per rank; a node breaking (E9) weighs all its dimensions in round 0
        ranks = np.where(u >= 2 * split.k, np.where(valid, 0, -2), -1)
        chosen = np.full(len(u), -1, dtype=np.int64)
        cut_dim, cut_size = np.zeros(len(u), dtype=np.int64), np.zeros(len(u), dtype=np.int64)
        while (ranks != -1).any():
            pick, dims, size = _choices(split, rows, starts, orders, ranks, span, counts, sum_p, sum_h, valid)
            got = pick >= 0
            chosen[got], cut_dim[got], cut_size[got] = pick[got], dims[pick[got]], size[pick[got]]
            ranks = np.where((ranks >= 0) & ~got, ranks + 1, -1)
            ranks[ranks > (span > 0).sum(axis=1) - 1] = -1
        for i in np.flatnonzero(chosen < 0):  # leaves
            group = split.peel(
                rows[starts[i] : starts[i + 1]], (counts[i], sum_p[i], float(sum_h[i]), valid[i])
            )
            if len(group):
                kept[ids[i]] = group
        cut = np.flatnonzero(chosen >= 0)
        for i in cut:
            kids[ids[i]] = (count, count + 1)
            count += 2
        ids = [c for i in cut for c in kids[ids[i]]]
        rows, starts, orders = _level_split(rows, starts, orders, cut, cut_dim[cut], cut_size[cut])
    out, stack = [], list(range(len(roots)))[::-1]
    while stack:  # depth first, left-hand sides first: the node-by-node split's numbering
        nid = stack.pop()
        if nid in kids:
            stack.extend(kids[nid][::-1])
        elif nid in kept:
            out.append(kept[nid])
    return out


def _choices(split: Split, rows, starts, orders, ranks, span, counts, sum_p, sum_h, valid) -> tuple:
    """One round of :func:`median_groups`' choices: the chosen candidate of each node (-1:
    none) among those along :func:`_which_dims` of ``ranks``, and the candidates' dimensions
    and left-hand side sizes."""
    u = np.diff(starts)
    node, dims, size, cc, cp, ch = _level_cuts(
        rows, starts, orders, ranks, span, split.x, split.s, split.p, split.ent, split.k
    )
    bl, br = size.astype(np.float64), (u[node] - size).astype(np.float64)
    vl = split.violation(cc, cp, ch, bl)
    vr = split.violation(counts[node] - cc, sum_p[node] - cp, sum_h[node] - ch, br)
    ok = (vl == 0) & (vr == 0) & valid[node]
    fits = np.zeros(len(node), dtype=bool)
    w = np.flatnonzero(ok)
    if len(w):
        nw, bw = node[w], size[w]
        fits[w] = _holds(split, cc[w], cp[w], ch[w], bw) & _holds(
            split, counts[nw] - cc[w], sum_p[nw] - cp[w], sum_h[nw] - ch[w], u[nw] - bw
        )
    pick = _choose(len(u), valid, node, dims, np.abs(size - u[node] / 2), ok, fits, bl * vl + br * vr)
    return pick, dims, size

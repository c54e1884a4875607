"""Compiled sums of the top-down split (:mod:`dpriv.anonymity.topdown`): one call per node
and one per candidate dimension, instead of a dozen NumPy calls each (the split's time at
10^6 tuples was mostly the overhead of those calls around a few thousand nodes).

The split compares these sums with the (E9) thresholds, so each carries the bits of the
NumPy expression it replaces: sums add one row after the other in the stated order (as
``np.cumsum`` and ``ndarray.sum(axis=0)`` do along axis 0), the span is the exact
``max - min`` (NaN when the column holds a NaN, as NumPy's max propagates it).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def prefix_sums(rows, s, p, ent, b):  # pragma: no cover - compiled
    """Prefix sums of the tuples ``rows`` (integers (n,), positions into the arrays below, in that
    order) at each boundary of ``b`` (int64 (B,), sizes of the left-hand side, increasing, in
    ``1..n``), over a view's sensitive codes ``s`` int64 (N,) in ``0..M-1``, priors ``p``
    float64 (N, M) and prior entropies ``ent`` float64 (N,). Returns the sensitive counts int64
    (B, M), prior sums float64 (B, M) and entropy sums float64 (B,) of the first ``b[q]`` rows;
    shared by the top-down split's cuts along one dimension (:func:`dim_prefix`) and of a whole
    level (:mod:`dpriv.anonymity.topdown_levels`). Each sum adds one row after the other, as
    ``np.cumsum(..., axis=0)`` does, so the bits are those of the cumulative sums read at
    ``b - 1``; fused with the gather, without the (n, M) arrays (numpy's cumsum along axis 0
    of an (n, 19) array was ~40 % of a 10^6-tuple top-down split)."""
    m = p.shape[1]
    nb = len(b)
    cc = np.zeros((nb, m), np.int64)
    cp = np.zeros((nb, m))
    ch = np.zeros(nb)
    cnt = np.zeros(m, np.int64)
    acc = np.zeros(m)
    h = 0.0
    q = 0
    for i in range(len(rows)):
        if q == nb:
            break
        r = rows[i]
        cnt[s[r]] += 1
        for v in range(m):
            acc[v] += p[r, v]
        h += ent[r]
        if i + 1 == b[q]:
            cc[q] = cnt
            cp[q] = acc
            ch[q] = h
            q += 1
    return cc, cp, ch


@njit(cache=True, nogil=True)
def node_stats(idx, s, p, x):  # pragma: no cover - compiled
    """One pass over the rows ``idx`` of a node: sensitive counts int64 (M,) (``np.bincount``),
    prior sums float64 (M,) (``p[idx].sum(axis=0)``, rows added in ``idx`` order), the
    coordinates float64 (d, u) (``x[idx].T``, contiguous per dimension) and the spans float64
    (d,) (``x[idx].max(axis=0) - x[idx].min(axis=0)``; NaN for a column holding a NaN)."""
    m, d, u = p.shape[1], x.shape[1], len(idx)
    counts = np.zeros(m, np.int64)
    acc = np.zeros(m)
    span = np.empty(d)
    node_sums(idx, s, p, x, counts, acc, span)
    xt = np.empty((d, u))
    for i in range(u):
        for c in range(d):
            xt[c, i] = x[idx[i], c]
    return counts, acc, xt, span


@njit(cache=True, nogil=True)
def node_sums(idx, s, p, x, counts, acc, span):  # pragma: no cover - compiled
    """:func:`node_stats` without the coordinates, into ``counts`` (zeros), ``acc`` (zeros)
    and ``span``."""
    m, d, u = p.shape[1], x.shape[1], len(idx)
    lo = np.full(d, np.inf)
    hi = np.full(d, -np.inf)
    nan = np.zeros(d, np.bool_)
    for i in range(u):
        r = idx[i]
        counts[s[r]] += 1
        for v in range(m):
            acc[v] += p[r, v]
        for c in range(d):
            val = x[r, c]
            if val != val:
                nan[c] = True
            else:
                lo[c] = min(lo[c], val)
                hi[c] = max(hi[c], val)
    for c in range(d):
        span[c] = np.nan if nan[c] else (hi[c] - lo[c] if u else np.nan)


@njit(cache=True, nogil=True)
def dim_prefix(vals, o, idx, s, p, ent, k):  # pragma: no cover - compiled
    """The candidate cuts of a node along one dimension: ``vals`` float64 (u,) the node's
    coordinates, aligned with its rows ``idx``, and ``o`` their stable order
    (``np.argsort(vals, kind="stable")``, NumPy's: faster than a compiled merge sort).
    Returns the boundaries ``b`` int64 (B,) (sizes of the left-hand side where the sorted
    value changes, ``k <= b <= u - k``) and the prefix sums of :func:`prefix_sums` of
    ``idx[o]`` at ``b``."""
    b = cut_sizes(vals[o], k)
    cc, cp, ch = prefix_sums(idx[o[: b[-1]]] if len(b) else idx[:0], s, p, ent, b)
    return b, cc, cp, ch


@njit(cache=True, nogil=True)
def cut_sizes(ordered, k):  # pragma: no cover - compiled
    """The sizes ``b`` int64 (B,) of the left-hand side where the sorted values ``ordered``
    (float64 (u,)) change, ``k <= b <= u - k`` (``b >= 1``): a dimension's candidate cuts."""
    u = len(ordered)
    b = np.empty(max(u - 1, 0), np.int64)
    nb = 0
    for i in range(max(k, 1), min(u - k, u - 1) + 1):
        if ordered[i] != ordered[i - 1]:
            b[nb] = i
            nb += 1
    return b[:nb]


@njit(cache=True, nogil=True)
def split_rows(idx, o, bb):  # pragma: no cover - compiled
    """The halves of a node cut after ``bb`` rows of the order ``o``: ``np.sort(idx[o[:bb]])``
    and ``np.sort(idx[o[bb:]])`` for rows ``idx`` in increasing order (one pass, no sort)."""
    left = np.zeros(len(idx), np.bool_)
    for i in range(bb):
        left[o[i]] = True
    lhs = np.empty(bb, idx.dtype)
    rhs = np.empty(len(idx) - bb, idx.dtype)
    a = c = 0
    for i in range(len(idx)):
        if left[i]:
            lhs[a] = idx[i]
            a += 1
        else:
            rhs[c] = idx[i]
            c += 1
    return lhs, rhs

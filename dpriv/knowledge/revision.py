"""Knowledge revision RBK^sv (docs/algorithms.md §1.4, equations (E5)-(E7)).

For a respondent with L past posteriors and an order-n BK^seq, with ``n' = min(n, L)``::

    RBK_s = Σ_{λ ∈ D[S]^n', λ feasible} BK^seq(λ)_s · Π_l PK_{L-n'+l}(λ_l)  /  Σ_{λ feasible} Π_l PK(λ_l)

(E7), where a context λ is *feasible* when its row of ``tables[n']`` is not all zero (the
"feasible histories only" rule, docs/findings.md pitfall 1). Where the feasible weight is 0, or
L = 0, the result is the respondent's BK^sv (``fallback``). Short histories (L < n) use the
lower-order tables (pitfall 2), exactly like :meth:`MarkovTables.predict`.

Two equivalent kernels:

* dense: the outer product of the last n' posteriors (M^n' entries) times the table
  (a matmul per knowledge class), O(M^(n'+1)) per respondent;
* sparse: a posterior is supported on the values of its QI-group only, so only the
  K_1 · ... · K_n' contexts built from the nonzero entries are enumerated (a numba loop,
  one table row read per context), O(Π K_l · M) per respondent. Measured with M = 19,
  n' = 3, 5,000 respondents, 3-6 nonzeros: ~9x faster than dense
  (``python -m dpriv.knowledge._bench_revision``).

``method="auto"`` is the sparse kernel: both sum the same products in the same context order
(the same bits), and the enumeration never visits more contexts than the dense loop; it was
1.2-1.6x faster on the 5,000 revised respondents of release 24 of a 24-view IE history of
the paper setting (12 nonzeros per posterior on average; ``benchmarks/bench_ie_history.py``).
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np

from dpriv.errors import InputError
from dpriv.knowledge.tables import MarkovTables

#: Max number of float64 elements of one intermediate block (bounds memory, ~64 MB).
_BLOCK_ELEMS = 8_000_000


def _as_tables(knowledge) -> MarkovTables:
    if isinstance(knowledge, MarkovTables):
        return knowledge
    if hasattr(knowledge, "as_tables"):
        return knowledge.as_tables()
    raise InputError(
        f"knowledge must be MarkovTables or a SequentialKnowledge, got {type(knowledge).__name__}"
    )


def feasible_contexts(knowledge: MarkovTables) -> list[np.ndarray]:
    """Feasibility masks of every order: ``out[L]`` bool (n_classes, M**L), True where the
    row of ``tables[L]`` is not all zero."""
    return [np.any(t != 0, axis=2) for t in knowledge.tables]


def _validate(history, lengths, cls, knowledge, fallback):
    history = np.asarray(history, dtype=np.float64)
    if history.ndim != 3:
        raise InputError(f"history must have shape (n, W, M), got {history.shape}")
    n, w, m = history.shape
    if m != knowledge.n_values:
        raise InputError(
            f"history has {m} sensitive values but the knowledge tables have "
            f"{knowledge.n_values} ({knowledge.values}); use tables mined on the policy's domain"
        )
    lengths = np.asarray(lengths)
    cls = np.asarray(cls)
    fallback = np.asarray(fallback, dtype=np.float64)
    if lengths.shape != (n,) or cls.shape != (n,):
        raise InputError(f"lengths and cls must have shape ({n},), got {lengths.shape} and {cls.shape}")
    if fallback.shape != (n, m):
        raise InputError(f"fallback (BK^sv) must have shape ({n}, {m}), got {fallback.shape}")
    lengths = lengths.astype(np.int64)
    cls = cls.astype(np.int64)
    if n and lengths.min() < 0:
        raise InputError("history lengths must be >= 0")
    if n and (cls.min() < 0 or cls.max() >= knowledge.classes.n_classes):
        raise InputError(
            f"knowledge classes must lie in 0..{knowledge.classes.n_classes - 1}; got "
            f"[{cls.min()}, {cls.max()}]: classify respondents with the tables' ClassMap"
        )
    nprime = np.minimum(lengths, knowledge.order)
    if n and nprime.max() > w:
        raise InputError(
            f"history keeps only W={w} posteriors but order-{knowledge.order} revision of a "
            f"respondent with {lengths.max()} past releases needs {nprime.max()}: keep at least "
            f"min(order, length) posteriors per respondent"
        )
    return history, lengths, cls, fallback, nprime


def _dense_block(post: list[np.ndarray], cls: np.ndarray, table: np.ndarray, feas: np.ndarray):
    """Numerator (b, M) and feasible weight (b,) by the dense outer-product contraction."""
    b = cls.shape[0]
    joint = np.ones((b, 1))
    for p in post:  # oldest first -> base-M code oldest first, matches C-order reshape
        joint = (joint[:, :, None] * p[:, None, :]).reshape(b, -1)
    return _dense_kernel(joint, np.asarray(cls, dtype=np.int64), table, feas)


@numba.njit(cache=True, nogil=True)
def _dense_kernel(joint, cls, table, feas):  # pragma: no cover - compiled
    """``joint[i] @ table[cls[i]]`` and ``joint[i] @ feas[cls[i]]`` row by row, contexts in
    order: each row's sums are the same bits whatever rows share its batch (a BLAS product
    blocks by the batch's shape, so the last bits of a respondent's RBK depended on which
    respondents were revised with her: a Dask partition or the whole view in process).
    A zero weight adds nothing, so it is skipped."""
    b, n_ctx = joint.shape
    m = table.shape[2]
    num = np.zeros((b, m))
    weight = np.zeros(b)
    for i in range(b):
        c = cls[i]
        for k in range(n_ctx):
            v = joint[i, k]
            if v != 0.0:
                weight[i] += v * feas[c, k]
                for s in range(m):
                    num[i, s] += v * table[c, k, s]
    return num, weight


@numba.njit(cache=True, nogil=True)
def _sparse_kernel(post, cls, table2d, feas, n_ctx):  # pragma: no cover - compiled
    """Numba loop of the sparse path: per respondent, enumerate the contexts made of the
    nonzero entries of the ``L`` posteriors (odometer, oldest posterior most significant:
    the contexts in the dense kernel's order), skip infeasible ones (``feas``, bool per table
    row). The weight of a context is the product ``((1 * p_1) * p_2) * ...`` in that order and
    each sum runs over the contexts in that order, so the result has the same bits as
    :func:`_dense_kernel`; the products of the leading posteriors are kept per level and only
    the levels the odometer moved are recomputed, and the last level is a plain loop over
    its nonzero entries (the odometer's per-context bookkeeping was most of the time)."""
    b, L, m = post.shape
    num = np.zeros((b, m))
    weight = np.zeros(b)
    pos = np.zeros(L, np.int64)
    idx = np.zeros((L, m), np.int64)
    cnt = np.zeros(L, np.int64)
    wpre = np.ones(L + 1)  # wpre[l]: product of the first l chosen entries
    cpre = np.zeros(L + 1, np.int64)  # cpre[l]: base-M code of the first l chosen values
    acc = np.zeros(m)
    for r in range(b):
        empty = False
        for lv in range(L):
            c = 0
            for v in range(m):
                if post[r, lv, v] != 0.0:
                    idx[lv, c] = v
                    c += 1
            cnt[lv] = c
            pos[lv] = 0
            if c == 0:
                empty = True
        if empty:
            continue
        base = cls[r] * n_ctx
        acc[:] = 0.0
        wsum = 0.0
        if L == 0:  # one context, the empty one
            if feas[base]:
                wsum = 1.0
                for j in range(m):
                    acc[j] += table2d[base, j]
            weight[r] = wsum
            for j in range(m):
                num[r, j] = acc[j]
            continue
        last = L - 1  # the odometer runs over the leading levels, a plain loop over the last
        start = 0
        while True:
            for lv in range(start, last):
                v = idx[lv, pos[lv]]
                cpre[lv + 1] = cpre[lv] * m + v
                wpre[lv + 1] = wpre[lv] * post[r, lv, v]
            head, wl = base + cpre[last] * m, wpre[last]
            for q in range(cnt[last]):
                v = idx[last, q]
                row = head + v
                if feas[row]:
                    w = wl * post[r, last, v]
                    wsum += w
                    for j in range(m):
                        acc[j] += w * table2d[row, j]
            lv = last - 1
            while lv >= 0:
                pos[lv] += 1
                if pos[lv] < cnt[lv]:
                    break
                pos[lv] = 0
                lv -= 1
            if lv < 0:
                break
            start = lv
        weight[r] = wsum
        for j in range(m):
            num[r, j] = acc[j]
    return num, weight


def _sparse_block(post: list[np.ndarray], cls: np.ndarray, table: np.ndarray, feas=None):
    """Same as :func:`_dense_block` (same bits), enumerating only the nonzero posterior entries."""
    m = table.shape[2]
    stacked = np.ascontiguousarray(np.stack(post, axis=1)) if post else np.zeros((len(cls), 0, m))
    t2 = np.ascontiguousarray(table.reshape(-1, m))
    feasible = np.any(t2 != 0, axis=1) if feas is None else np.asarray(feas, dtype=bool).reshape(-1)
    return _sparse_kernel(stacked, np.ascontiguousarray(cls, dtype=np.int64), t2, feasible, m ** len(post))


def revise(
    history: np.ndarray,
    lengths: np.ndarray,
    cls: np.ndarray,
    knowledge: MarkovTables,
    fallback: np.ndarray,
    method: Literal["auto", "dense", "sparse"] = "auto",
) -> np.ndarray:
    """Revised prior RBK^sv (E7) of many respondents, feasible histories only.

    Parameters
    ----------
    history : ndarray of float64, shape (n, W, M)
        Each respondent's last W posteriors PK^sv, oldest first, left-padded (any values)
        where the respondent has fewer than W; rows of the real entries sum to 1.
    lengths : ndarray of int, shape (n,)
        Number of real posteriors of each respondent (L; may exceed W, only the last
        ``min(order, L)`` are read, which must be <= W).
    cls : ndarray of int, shape (n,)
        Knowledge class of each respondent, in ``0..knowledge.classes.n_classes - 1``.
    knowledge : MarkovTables
        BK^seq tables (or any object with ``as_tables()``, e.g. a SequentialKnowledge);
        ``n = knowledge.order``; ``tables[n']`` is used for ``n' = min(n, L)``.
    fallback : ndarray of float64, shape (n, M)
        BK^sv of each respondent, returned where L = 0 or where no feasible history has
        positive weight (or the result is not finite).
    method : {"auto", "dense", "sparse"}
        Contraction kernel; all give the same result up to float rounding.

    Returns
    -------
    ndarray of float64, shape (n, M)
        RBK^sv of each respondent; rows sum to 1.

    Raises
    ------
    InputError
        On mismatched shapes, classes outside the table, or a window W shorter than
        ``min(order, L)``.
    """
    knowledge = _as_tables(knowledge)
    if method not in ("auto", "dense", "sparse"):
        raise InputError(f"method must be 'auto', 'dense' or 'sparse', got {method!r}")
    history, lengths, cls, fallback, nprime = _validate(history, lengths, cls, knowledge, fallback)
    n, w, m = history.shape
    out = fallback.copy()
    for order in np.unique(nprime[lengths > 0]):
        order = int(order)
        rows = np.flatnonzero((nprime == order) & (lengths > 0))
        table = knowledge.tables[order]
        posts = history[rows][:, w - order :, :] if order else history[rows][:, :0, :]
        # auto: the enumeration visits at most the dense kernel's contexts, with the same bits
        sparse = np.full(rows.size, method != "dense")
        for use_sparse in (True, False):
            sel = np.flatnonzero(sparse == use_sparse)
            if sel.size:
                out[rows[sel]] = _revise_rows(
                    out[rows[sel]], posts[sel], cls[rows[sel]], table, order, use_sparse
                )
    return out


def _revise_rows(fallback, posts, cls, table, order: int, use_sparse: bool) -> np.ndarray:
    """(E7) for rows that all use one kernel, in blocks; ``fallback`` where undefined."""
    m = table.shape[2]
    out = fallback.copy()
    if use_sparse:
        kernel, feas, step = _sparse_block, None, max(len(cls), 1)
    else:
        kernel = _dense_block
        feas = np.any(table != 0, axis=2).astype(np.float64)
        step = max(1, _BLOCK_ELEMS // (2 * m**order))
    for lo in range(0, len(cls), step):
        blk = slice(lo, lo + step)
        num, weight = kernel([posts[blk, pos, :] for pos in range(order)], cls[blk], table, feas)
        with np.errstate(divide="ignore", invalid="ignore"):
            res = num / weight[:, None]
            tot = res.sum(axis=1)
            res = res / tot[:, None]
        ok = (weight > 0) & np.isfinite(tot) & (tot > 0) & np.isfinite(res).all(axis=1)
        out[np.arange(lo, lo + len(num))[ok]] = res[ok]
    return out

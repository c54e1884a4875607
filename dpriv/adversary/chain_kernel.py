"""The chain pass of the exact deductions in compiled code (issue 12 tooling, performance;
:mod:`dpriv.adversary.deductions`, docs/algorithms.md §1.1).

For each respondent whose masks changed, :func:`chain_pass` runs the forward-backward over sets
of context states along her released history that ``deduce`` specifies (module doc there) and
narrows the allowed values of her tuples in place:

* forward, tuple by tuple: ``pre`` (states before the exam) = the states ``lo .. hi`` hidden
  steps (successors under the tuple's own support) after the previous tuple's ``post``, or after
  the empty context; ``post`` = the states an exam with an allowed result leads to from ``pre``;
* backward, from her last tuple: ``back`` = the states after the exam from which the rest of
  her released history is still possible (all states after the last tuple; only dead ends after
  an exam the presence channel marked as her last): some allowed result of the next tuple (as
  narrowed already), from a state ``lo .. hi`` hidden steps after (predecessors under this tuple's
  support), leads into the next tuple's ``back``; the tuple keeps the results of an edge from
  ``pre`` into ``back``.

Respondents are independent, so 64 of them go through at once, one bit each of a machine word
(state sets are (S,) uint64 arrays per position along the histories: bit ``i`` is the ``i``-th
respondent of the block, her ``p``-th tuple at position ``p``); every edge operation is a
bitwise AND/OR on words. Respondents of similar history length share a block. These are the
dense sets of the vectorised NumPy pass it replaces (bit-packed per release, session 44), so the
allowed values are the same to the last bit (tests/test_deductions_kernel.py checks the whole
fixed point against a plain one in Python).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["chain_pass"]

ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _step(x, lo_hi, edges, src, dst, out, fwd, tmp):  # pragma: no cover - compiled
    """``out`` := the union over ``j`` of the states ``j`` hidden steps from ``x`` (successors when
    ``fwd``, else predecessors), for the bits of ``lo_hi[j]`` (words, one per ``j``); ``edges``
    (E,) words: the bits whose support allows each edge."""
    n_states = x.size
    for s in range(n_states):
        out[s] = x[s] & lo_hi[0]
    cur = x.copy()
    for j in range(1, lo_hi.size):
        tmp[:] = 0
        for e in range(src.size):
            if fwd:
                tmp[dst[e]] |= cur[src[e]] & edges[e]
            else:
                tmp[src[e]] |= cur[dst[e]] & edges[e]
        cur[:] = tmp
        for s in range(n_states):
            out[s] |= cur[s] & lo_hi[j]


@numba.njit(cache=True, nogil=True)
def _windows(tup, lo, hi, valid):  # pragma: no cover - compiled
    """Words ``lo_hi[j]``: the bits (tuples ``tup``, -1: none) with ``lo <= j <= hi`` hidden steps."""
    top = 0
    for i in range(tup.size):
        if tup[i] >= 0:
            top = max(top, hi[tup[i]])
    out = np.zeros(top + 1, np.uint64)
    for i in range(tup.size):
        t = tup[i]
        if t >= 0:
            for j in range(lo[t], hi[t] + 1):
                out[j] |= np.uint64(1) << np.uint64(i)
    return out & valid


@numba.njit(cache=True, nogil=True)
def chain_pass(
    hist, hstart, todo, lo, hi, exited, pat, allowed, changed, src, value, dst, edge_ok, dead
):  # pragma: no cover - compiled  # fmt: skip
    """One chain pass (module doc) over the respondents ``r`` with ``todo[r]``.

    ``hist[hstart[r]:hstart[r + 1]]``: her tuples in release order (int64); ``lo``/``hi`` (int64,
    (n,)): the hidden steps before each tuple; ``exited`` (bool, (n,)): marked as her last exam;
    ``pat`` (int64, (n,)): the tuple's support pattern; ``allowed`` (bool (n, M)) is narrowed in
    place and ``changed[t]`` set where it was. The model (:class:`ChainSupport`): edges
    ``src``/``value``/``dst`` (int64, (E,)), ``edge_ok`` bool (P, E), ``dead`` bool (P, S)."""
    n_states, m, n_edges, n_pat = dead.shape[1], allowed.shape[1], src.size, edge_ok.shape[0]
    rows = np.flatnonzero(todo)
    length = hstart[rows + 1] - hstart[rows]
    rows = rows[np.argsort(length, kind="mergesort")]  # similar lengths share a block
    longest = length.max() if rows.size else 0
    pre = np.zeros((longest, n_states), np.uint64)
    post = np.zeros((longest, n_states), np.uint64)
    back = np.zeros((longest, n_states), np.uint64)
    ok = np.zeros((longest, m), np.uint64)  # bits whose tuple allows each value
    ea = np.zeros((longest, n_edges), np.uint64)  # bits whose support allows each edge
    valid = np.zeros(longest, np.uint64)
    tup = np.full((longest, 64), -1, np.int64)
    by_pat = np.zeros(n_pat, np.uint64)
    x = np.zeros(n_states, np.uint64)
    y = np.zeros(n_states, np.uint64)
    b = np.zeros(n_states, np.uint64)
    tmp = np.zeros(n_states, np.uint64)
    kept = np.zeros(m, np.uint64)
    for first in range(0, rows.size, 64):
        block = rows[first : first + 64]
        size = 0
        for r in block:
            size = max(size, hstart[r + 1] - hstart[r])
        ok[:size] = 0
        valid[:size] = 0
        tup[:size] = -1
        for i in range(block.size):
            r, bit = block[i], np.uint64(1) << np.uint64(i)
            for p in range(hstart[r + 1] - hstart[r]):
                t = hist[hstart[r] + p]
                tup[p, i] = t
                valid[p] |= bit
                for v in range(m):
                    if allowed[t, v]:
                        ok[p, v] |= bit
        for p in range(size):
            by_pat[:] = 0
            for i in range(block.size):
                if tup[p, i] >= 0:
                    by_pat[pat[tup[p, i]]] |= np.uint64(1) << np.uint64(i)
            for e in range(n_edges):
                w = np.uint64(0)
                for k in range(n_pat):
                    if edge_ok[k, e]:
                        w |= by_pat[k]
                ea[p, e] = w
        for p in range(size):  # forward
            if p == 0:
                x[:] = 0
                x[0] = valid[0]
            else:
                x[:] = post[p - 1] & valid[p]
            _step(x, _windows(tup[p], lo, hi, valid[p]), ea[p], src, dst, pre[p], True, tmp)
            post[p] = 0
            for e in range(n_edges):
                post[p, dst[e]] |= pre[p, src[e]] & ok[p, value[e]] & ea[p, e]
        for p in range(size - 1, -1, -1):  # backward
            b[:] = ALL
            for i in range(block.size):
                t = tup[p, i]
                if t >= 0 and exited[t]:
                    clear = ~(np.uint64(1) << np.uint64(i))
                    for s in range(n_states):
                        if not dead[pat[t], s]:
                            b[s] &= clear
            if p + 1 < size and valid[p + 1]:
                has = valid[p + 1]
                y[:] = 0
                for e in range(n_edges):
                    y[src[e]] |= ok[p + 1, value[e]] & back[p + 1, dst[e]] & ea[p + 1, e]
                _step(y, _windows(tup[p + 1], lo, hi, has), ea[p], src, dst, x, False, tmp)
                for s in range(n_states):
                    b[s] &= x[s] | ~has
            back[p] = b
            kept[:] = 0
            for e in range(n_edges):
                kept[value[e]] |= pre[p, src[e]] & b[dst[e]] & ea[p, e]
            for v in range(m):
                ok[p, v] &= kept[v]
            for i in range(block.size):
                t = tup[p, i]
                if t < 0:
                    continue
                for v in range(m):
                    if allowed[t, v] and not (kept[v] >> np.uint64(i)) & np.uint64(1):
                        allowed[t, v] = False
                        changed[t] = True

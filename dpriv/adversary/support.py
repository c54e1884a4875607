"""The exact model's support as a graph over context states
(the model part of :mod:`dpriv.adversary.deductions`; docs/algorithms.md §1.1 "Exact deductions").

:func:`chain_support` turns :class:`~dpriv.knowledge.tables.MarkovTables` into the chain's
feasible states (the last <= ``order`` results) and allowed moves; the compiled chain pass
(:mod:`dpriv.adversary.chain_kernel`) propagates sets of states along them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpriv.knowledge.tables import MarkovTables

__all__ = ["ChainSupport", "chain_support", "same_moves"]


# --------------------------------------------------------------------------------------
# The model's support as a graph over context states
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChainSupport:
    """Support of a :class:`MarkovTables` chain as a graph over its reachable contexts.

    Attributes
    ----------
    contexts : tuple of tuple of int
        State ``k`` -> its context (last <= order values, oldest first); state 0 is ``()``,
        before the first exam.
    src, value, dst : int64 arrays of shape (E,)
        Edges: from context state ``src`` an exam with result ``value`` leads to ``dst``
        (an edge exists if some class allows it).
    edge_allowed : bool array of shape (n_support, E)
        Which edges each support pattern allows (classes with identical support share one).
    class_support : int64 array of shape (n_classes,)
        Support pattern of each knowledge class.
    dead_end : bool array of shape (n_support, S)
        States without an allowed successor (after a terminal result), per pattern.
    exit_value : bool array of shape (M,)
        Exit (terminal) values: every move with this result ends in a dead end
        (``deceased``, ``discharged`` in the medical model).
    """

    contexts: tuple[tuple[int, ...], ...]
    src: np.ndarray
    value: np.ndarray
    dst: np.ndarray
    edge_allowed: np.ndarray
    class_support: np.ndarray
    dead_end: np.ndarray
    n_values: int
    exit_value: np.ndarray

    @property
    def n_states(self) -> int:
        return len(self.contexts)


def chain_support(tables: MarkovTables) -> ChainSupport:
    """Reachable context states and allowed moves of ``tables`` (breadth first from ``()``).

    A context of length L < order is read in ``tables[L]`` (the dedicated short-history
    tables), a full one in ``tables[order]``; ``p > 0`` in some class makes an edge.
    About 0.1 s for the medical model (294 states, 818 edges).
    """
    m, order = tables.n_values, tables.order
    states: dict[tuple[int, ...], int] = {(): 0}
    frontier: list[tuple[int, ...]] = [()]
    src, val, dst, allow = [], [], [], []
    while frontier:
        new: list[tuple[int, ...]] = []
        by_len: dict[int, list[tuple[int, ...]]] = {}
        for ctx in frontier:
            by_len.setdefault(len(ctx), []).append(ctx)
        for length, ctxs in by_len.items():
            arr = np.array(ctxs, dtype=np.int64).reshape(len(ctxs), length)
            codes = tables.context_index(arr) if length else np.zeros(len(ctxs), np.int64)
            rows = tables.tables[length][:, codes, :] > 0  # (C, F, M)
            for f, v in zip(*np.nonzero(rows.any(axis=0))):
                ctx = ctxs[f]
                nxt = (ctx + (int(v),))[-order:] if order else ()
                if nxt not in states:
                    states[nxt] = len(states)
                    new.append(nxt)
                src.append(states[ctx])
                val.append(int(v))
                dst.append(states[nxt])
                allow.append(rows[:, f, v])
        frontier = new
    edge_allowed_c = np.array(allow, dtype=bool).T.reshape(tables.classes.n_classes, len(src))
    patterns, class_support = np.unique(edge_allowed_c, axis=0, return_inverse=True)
    src_a = np.array(src, dtype=np.int64)
    n = len(states)
    dead = np.ones((patterns.shape[0], n), dtype=bool)
    for p in range(patterns.shape[0]):
        dead[p, src_a[patterns[p]]] = False
    return ChainSupport(
        contexts=tuple(states),
        src=src_a,
        value=np.array(val, dtype=np.int64),
        dst=np.array(dst, dtype=np.int64),
        edge_allowed=patterns,
        class_support=np.asarray(class_support, dtype=np.int64).ravel(),
        dead_end=dead,
        n_values=m,
        exit_value=_exit_values(m, np.array(val, np.int64), np.array(dst, np.int64), patterns, dead),
    )


def _exit_values(
    m: int, value: np.ndarray, dst: np.ndarray, patterns: np.ndarray, dead: np.ndarray
) -> np.ndarray:
    """Values whose every allowed move (in any support pattern) lands in a dead end."""
    leads_on = np.zeros(m, dtype=bool)
    seen = np.zeros(m, dtype=bool)
    for p in range(patterns.shape[0]):
        e = patterns[p]
        np.logical_or.at(seen, value[e], True)
        np.logical_or.at(leads_on, value[e], ~dead[p, dst[e]])
    return seen & ~leads_on


def same_moves(a: ChainSupport, a_cls: np.ndarray, b: ChainSupport, b_cls: np.ndarray) -> bool:
    """Whether tuples of knowledge classes ``a_cls`` (int64, (n,)) under support ``a`` have the
    states, moves and exit values that the same tuples of classes ``b_cls`` have under ``b``: all
    that :func:`dpriv.adversary.deductions.deduce` reads of the model, so deductions about them
    under ``a`` are those under ``b``. Exact (False may still be the same support, e.g. listed in
    another order); O(n + pairs of patterns x E)."""
    graph = a.contexts == b.contexts and all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in ("src", "value", "dst", "exit_value")
    )
    if not graph or a_cls.shape != b_cls.shape:
        return False
    if not a_cls.size:
        return True
    # a tuple's dead ends follow from its allowed edges and ``src``: its edge row is the rest
    pairs = np.unique(np.stack([a.class_support[a_cls], b.class_support[b_cls]]), axis=1)
    return bool(np.array_equal(a.edge_allowed[pairs[0]], b.edge_allowed[pairs[1]]))

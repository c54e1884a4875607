"""Which edges of a bipartite assignment problem lie in some complete assignment.

Left nodes (tuples, respondents) must each take exactly one right node (a value of a group,
a QI-group); right node ``k`` must be taken exactly ``capacity[k]`` times. An edge can carry
the assignment in some solution iff it carries it in the one max flow we find, or its two
ends lie in one strongly connected component of the residual graph (an alternating cycle
moves the assignment onto it): the Dulmage–Mendelsohn decomposition, here with capacities.
One max flow and one SCC pass for the whole problem, however many disjoint blocks (groups)
it holds; no per-edge re-solve. :func:`group_feasibility` is the problem of a release's
QI-groups and their published counts (the exact deductions, :mod:`dpriv.adversary.deductions`),
solved group by group on the value nodes in compiled code (:mod:`dpriv.adversary.assign_kernel`:
the same feasible pairs in 1.4 ms of CPU against 8-10 ms for the sparse max flow on a release of
5,000 tuples, measured on the 24 releases of two 24 x 5,000 ledgers).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, maximum_flow

from dpriv.adversary.assign_kernel import group_values
from dpriv.errors import InputError

__all__ = ["feasible_edges", "group_feasibility", "max_assigned", "max_flow_edges", "transported"]


class NoAssignment(InputError):
    """The candidate sets admit no complete assignment: the model's zeros contradict the
    published counts."""


def feasible_edges(left: np.ndarray, right: np.ndarray, n_left: int, capacity: np.ndarray) -> np.ndarray:
    """Edges (``left[e]``, ``right[e]``) that some complete assignment uses.

    Parameters
    ----------
    left, right : int arrays of shape (E,)
        Candidate edges, left nodes in ``0 .. n_left - 1``, right nodes in
        ``0 .. len(capacity) - 1``; no duplicate pair.
    n_left : int
        Number of left nodes; each must be assigned exactly once.
    capacity : int array of shape (K,)
        How many left nodes each right node takes; ``capacity.sum() == n_left``.

    Returns
    -------
    ndarray of bool, shape (E,)

    Raises
    ------
    InputError
        No complete assignment exists (the candidate sets contradict the capacities).
    """
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    capacity = np.asarray(capacity, dtype=np.int64)
    k = capacity.size
    if int(capacity.sum()) != n_left:
        raise InputError(f"capacities sum to {int(capacity.sum())}, expected {n_left} (one per left node)")
    if n_left == 0:
        return np.zeros(left.size, dtype=bool)
    res, ln, rn = _flow(left, right, n_left, capacity)
    if int(res.flow_value) != n_left:
        raise NoAssignment(no_assignment(int(res.flow_value), n_left))
    used = np.asarray(res.flow[ln, rn]).ravel() > 0
    # residual graph without source and sink (both lie on no cycle once every source and
    # sink edge is saturated): unused edge left -> right, used edge right -> left
    a = np.where(used, rn, ln) - 1
    b = np.where(used, ln, rn) - 1
    res_graph = csr32((np.ones(a.size, np.int8), (a, b)), n_left + k)
    _, label = connected_components(res_graph, directed=True, connection="strong")
    return used | (label[ln - 1] == label[rn - 1])


def no_assignment(placed: int, n_left: int) -> str:
    """The message of :class:`NoAssignment`: ``placed`` of ``n_left`` left nodes fit at most."""
    return (
        f"no complete assignment: {placed} of {n_left} left nodes can be placed; "
        "the candidate sets contradict the published counts (wrong model or wrong releases?)"
    )


def max_assigned(left: np.ndarray, right: np.ndarray, n_left: int, capacity: np.ndarray) -> int:
    """How many left nodes one assignment places at most (each on one right node of its edges,
    right node ``k`` taking at most ``capacity[k]``): the max flow. Arguments as
    :func:`feasible_edges`, but the capacities may sum to anything."""
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    if n_left == 0 or left.size == 0:
        return 0
    return int(_flow(left, right, n_left, np.asarray(capacity, dtype=np.int64))[0].flow_value)


def transported(
    supply: np.ndarray, demand: np.ndarray, tail: np.ndarray, head: np.ndarray, cap: np.ndarray
) -> int:
    """The max flow of a transportation problem: source -> supply node i (``supply[i]``) ->
    demand node j (``cap[e]`` on each edge ``tail[e] -> head[e]``, no duplicate pair) -> sink
    (``demand[j]``); int arrays, Dinic's."""
    supply, demand, cap = (np.asarray(v, dtype=np.int64) for v in (supply, demand, cap))
    n_i, n_j = supply.size, demand.size
    sink = 1 + n_i + n_j
    rows = np.concatenate([np.zeros(n_i, np.int64), 1 + np.asarray(tail, np.int64), 1 + n_i + np.arange(n_j)])
    cols = np.concatenate([1 + np.arange(n_i), 1 + n_i + np.asarray(head, np.int64), np.full(n_j, sink)])
    caps = np.concatenate([supply, cap, demand])
    keep = caps > 0
    if not keep.any():
        return 0
    graph = csr32((caps[keep].astype(np.int32), (rows[keep], cols[keep])), sink + 1)
    return int(maximum_flow(graph, 0, sink, method="dinic").flow_value)


def max_flow_edges(left: np.ndarray, right: np.ndarray, n_left: int, capacity: np.ndarray) -> np.ndarray:
    """Which edges one assignment of :func:`max_assigned`'s size uses (bool, shape (E,)).
    Arguments as :func:`max_assigned`."""
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    if n_left == 0 or left.size == 0:
        return np.zeros(left.size, dtype=bool)
    res, ln, rn = _flow(left, right, n_left, np.asarray(capacity, dtype=np.int64))
    return np.asarray(res.flow[ln, rn]).ravel() > 0


def _flow(left: np.ndarray, right: np.ndarray, n_left: int, capacity: np.ndarray):
    """The max flow source -> left (1) -> right (1 per edge) -> sink (capacity), Dinic's; with
    the left and right node numbers of the edges in its graph."""
    src, sink = 0, 1 + n_left + capacity.size
    ln, rn = 1 + left, 1 + n_left + right
    full = np.flatnonzero(capacity > 0)
    rows = np.concatenate([np.zeros(n_left, np.int64), ln, 1 + n_left + full])
    cols = np.concatenate([1 + np.arange(n_left), rn, np.full(full.size, sink)])
    caps = np.concatenate([np.ones(n_left + left.size, np.int64), capacity[full]]).astype(np.int32)
    graph = csr32((caps, (rows, cols)), sink + 1)
    return maximum_flow(graph, src, sink, method="dinic"), ln, rn


def csr32(data: tuple, n: int) -> sp.csr_array:
    """An (n, n) CSR graph with int32 indices: csgraph's compiled routines take only those, and
    scipy before 1.14 keeps the COO input's int64 (maximum_flow then raises, and
    connected_components silently ignores the error and returns wrong labels)."""
    graph = sp.csr_array(data, shape=(n, n))
    graph.indices, graph.indptr = graph.indices.astype(np.int32), graph.indptr.astype(np.int32)
    return graph


def group_feasibility(group: np.ndarray, counts: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Values each member can hold in some assignment of her group's published multiset.

    Parameters
    ----------
    group : int array of shape (n,)
        QI-group of each tuple, ``0 .. G - 1``.
    counts : int array of shape (G, M)
        Published value counts of each group (``counts[g].sum()`` = size of group ``g``).
    allowed : bool array of shape (n, M)
        Values each tuple may still hold.

    Returns
    -------
    bool array of shape (n, M)
        ``allowed`` restricted to the values ``s`` for which some assignment (each member one
        value of her allowed set, value ``s`` of group ``g`` used exactly ``counts[g, s]``
        times) gives that member an ``s``: :func:`feasible_edges` of that problem, bit for bit,
        computed per group (:func:`dpriv.adversary.assign_kernel.group_values`).

    Raises
    ------
    InputError
        Group sizes that differ from the counts; :class:`NoAssignment` (one) when no
        assignment exists (the allowed sets contradict the counts), with the size of the
        largest one as :func:`feasible_edges` says it.
    """
    group = np.asarray(group, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n, m = allowed.shape
    sizes = np.bincount(group, minlength=counts.shape[0])
    if sizes.tolist() != counts.sum(axis=1).tolist():
        raise InputError("group sizes differ from the published counts")
    out = np.zeros((n, m), dtype=bool)
    start = np.concatenate([[0], np.cumsum(sizes)])
    members = np.argsort(group, kind="stable")
    placed = group_values(
        start, members, np.ascontiguousarray(counts), np.ascontiguousarray(allowed, bool), out
    )
    if placed != n:
        raise NoAssignment(no_assignment(placed, n))
    return out

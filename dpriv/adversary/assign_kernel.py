"""Which values each member of a QI-group can hold in some assignment of the group's published
multiset, group by group in compiled code (the group-count pass of the exact deductions,
:func:`dpriv.adversary._assign.group_feasibility`; issue 12 tooling, performance).

The problem of one group is :func:`dpriv.adversary._assign.feasible_edges`' (members on the
left, each taking one value; value ``s`` taken exactly ``counts[g, s]`` times), solved here on
its M value nodes rather than as one sparse max flow over every group of a release:

* a complete assignment by augmenting paths. From a member not yet placed, a breadth-first search
  over values: her candidate values first, then from value ``v`` to value ``w`` when some member
  placed on ``v`` could move to ``w`` (``moves[v, w]`` counts them); the first value with room
  ends the path, and each member on it moves one step along. A member with no augmenting path
  now never gets one later (the path argument of bipartite matching, with each value copied
  ``counts[g, s]`` times), so one search per member gives the largest assignment: its size is
  the max flow, whatever the order of the members;
* the feasible pairs (Dulmage-Mendelsohn, as ``feasible_edges``): member ``b`` placed on ``a``
  can hold ``s`` iff ``s == a`` or an alternating cycle runs through the pair: in the residual
  graph, ``b -> s`` then back into ``b`` only through ``a``, i.e. ``s`` reaches ``a`` in the
  value graph above (``moves``). One transitive closure over the group's values.

The set of feasible pairs does not depend on which complete assignment was found, so the result
is ``feasible_edges``' to the last bit (tests/test_deductions.py checks both against every
permutation of small groups). Cost per group: O(members x M) to build, O(M^2 + path x members)
per augmenting search (few: most members find room among their own candidates), O(K^3) closure
over its K values.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["group_values"]


@numba.njit(cache=True, nogil=True)
def group_values(start, members, counts, allowed, out):  # pragma: no cover - compiled
    """Write into ``out`` (bool (n, M), all False on entry) the values each member can hold in
    some complete assignment of her group; return how many members the largest assignment
    places (``n`` when one exists).

    ``members[start[g]:start[g + 1]]``: the rows of group ``g`` (int64); ``counts`` int64 (G, M);
    ``allowed`` bool (n, M), each row's candidate values (a value with count 0 is none)."""
    n_groups, m = counts.shape
    placed_all = 0
    for g in range(n_groups):
        lo, hi = start[g], start[g + 1]
        k = hi - lo
        cap = counts[g]
        load = np.zeros(m, np.int64)
        on = np.full(k, -1, np.int64)
        moves = np.zeros((m, m), np.int64)  # moves[v, w]: members placed on v with w a candidate
        parent = np.empty(m, np.int64)
        queue = np.empty(m, np.int64)
        placed = 0
        for a in range(k):
            u = members[lo + a]
            parent[:] = -2  # -2: not reached; -1: one of u's own candidates
            head, tail = 0, 0
            for s in range(m):
                if allowed[u, s] and cap[s] > 0:
                    parent[s] = -1
                    queue[tail] = s
                    tail += 1
            room = -1
            while head < tail:
                v = queue[head]
                head += 1
                if load[v] < cap[v]:
                    room = v
                    break
                for w in range(m):
                    if parent[w] == -2 and moves[v, w] > 0:
                        parent[w] = v
                        queue[tail] = w
                        tail += 1
            if room < 0:
                continue
            load[room] += 1
            w = room
            while parent[w] != -1:  # shift one member from parent[w] onto w, back to u's value
                v = parent[w]
                for b in range(k):
                    x = members[lo + b]
                    if on[b] == v and allowed[x, w] and cap[w] > 0:
                        break
                on[b] = w
                for s in range(m):
                    if allowed[x, s] and cap[s] > 0:
                        moves[v, s] -= 1
                        moves[w, s] += 1
                w = v
            on[a] = w
            for s in range(m):
                if allowed[u, s] and cap[s] > 0:
                    moves[w, s] += 1
            placed += 1
        placed_all += placed
        if placed < k:
            continue  # no complete assignment: the caller raises
        # reach[v, w]: v reaches w in the value graph (Warshall over the group's values only)
        present = np.flatnonzero(cap > 0)
        reach = moves > 0
        for v in present:
            reach[v, v] = True
        for x in present:
            for v in present:
                if reach[v, x]:
                    for w in present:
                        if reach[x, w]:
                            reach[v, w] = True
        for a in range(k):
            u = members[lo + a]
            for s in range(m):
                if allowed[u, s] and cap[s] > 0 and reach[s, on[a]]:
                    out[u, s] = True
    return placed_all

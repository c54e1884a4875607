"""Does the original view fit the released boxes? The verifier's check without the membership.

``dpriv verify --original`` reads a released file, which carries no respondent ids: which
tuple of the original went to which QI-group is not known. The release is still only what
docs/released-format.md promises ("every member lies in [min, max]", in the value set, under
the hierarchy node) if SOME assignment of the original's tuples fits it: each released tuple
is a distinct tuple of the original with the same sensitive value and QIs inside its group's
box, and the original's other tuples are the suppressed ones. That is a bipartite assignment
with capacities: the original's tuples on one side, the (QI-group, sensitive value) pairs of
the release (capacity: how often the group releases the value) and "suppressed" (capacity:
the tuples the release leaves out) on the other; one max flow decides it exactly
(:func:`dpriv.adversary._assign.max_flow_edges`). A group whose box holds fewer tuples of a value
than it releases is named first (the cheap, common case of an edited or narrowed box or a
duplicated row); else the groups that together release more tuples of a value than their boxes
hold (:func:`_crowded`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.adversary._assign import max_flow_edges
from dpriv.anonymity.format_check import listed, named
from dpriv.anonymity.membership import exact_numbers
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP, split_value_sets
from dpriv.validate import codes

#: What the coverage problems mean and what to do.
WHY = (
    "every released tuple must be a tuple of the original inside its group's box, with its own "
    "sensitive value (docs/released-format.md): a box or a value of the release was changed, a row "
    "duplicated or added, or --original is not the view the release was made from"
)
#: The sorted candidates of :func:`_edges` are used while they number at most this fraction of
#: the (tuples x QI-groups) cells (a candidate costs a few gathers, a cell a few vector ops:
#: measured on Adult, 30,162 tuples in 1,527 groups, whose wide age boxes favour the matrix).
SORTED_FACTOR = 8
#: Cells of the (tuples x QI-groups) containment matrix computed at once (bounds the memory).
CHUNK_CELLS = 1 << 22


def coverage_problems(released: pd.DataFrame, original: pd.DataFrame, policy: ReleasePolicy) -> list[str]:
    """Problems when no assignment of the original's tuples fits the released boxes (module doc).

    Parameters
    ----------
    released : DataFrame, the generalized released view (``qi_group``, ``<q>_min``/``<q>_max``
        of each numeric QI as numbers, dates as days; a value set or hierarchy node per
        categorical QI; the sensitive column), one row per released tuple.
    original : DataFrame, the original view it was made from (the QIs and the sensitive
        column, as :func:`dpriv.inputs.prepared` leaves them), one row per tuple.
    policy : the resolved policy (domains of the categorical QIs and of S).

    Returns
    -------
    list of str
        Empty when an assignment exists, or when the format or counts are already wrong (the
        other checks report those: a missing column, a value outside its domain, more
        released tuples than the original holds).
    """
    if any(c not in released.columns for c in (GROUP, policy.sensitive)) or policy.sensitive not in original:
        return []
    n, n_rel, m = len(original), len(released), len(policy.sensitive_domain)
    if n_rel == 0 or n == 0:
        return []
    s_rel = codes(released[policy.sensitive], policy.sensitive_domain)
    s_orig = codes(original[policy.sensitive], policy.sensitive_domain)
    if (s_rel < 0).any() or (s_orig < 0).any():
        return []
    labels, g = np.unique(released[GROUP].to_numpy(), return_inverse=True)
    pairs, capacity = np.unique(g.astype(np.int64) * m + s_rel, return_counts=True)
    boxes = _boxes(released.iloc[np.unique(g, return_index=True)[1]], original, policy)
    if boxes is None:
        return []
    left, right = _edges(boxes, s_orig, pairs, m, len(labels))
    held = np.bincount(right, minlength=pairs.size)
    short = np.flatnonzero(held < capacity)
    if short.size:
        dom, by_group = policy.sensitive_domain, {}
        for i, p in zip(short, pairs[short]):
            by_group.setdefault(p // m, []).append(f"{as_python(dom[p % m])!r} ({held[i]} < {capacity[i]})")
        lines = [
            f"QI-group {as_python(labels[gi])!r}: its box holds fewer tuples of the original than the "
            f"group releases with {policy.sensitive} = {', '.join(vals[:3])}{' ...' if len(vals) > 3 else ''}"
            for gi, vals in by_group.items()
        ]
        return [*listed("", lines), WHY]
    # Every released tuple a distinct tuple of the original; the original's other tuples are
    # the suppressed ones (any tuple may be one), so this alone decides whether all fit.
    used = max_flow_edges(left, right, n, capacity)
    placed = int(used.sum())
    if placed == n_rel:
        return []
    spare = n - n_rel
    head = (
        [
            f"no assignment of the original's {n} tuples fits the released QI-groups: at most "
            f"{placed + spare} can be placed inside a box with their own {policy.sensitive} or among "
            f"the {spare} suppressed"
        ]
        if spare >= 0
        else []  # more released tuples than the original holds: dpriv.view_check says so
    )
    lines = [
        f"QI-groups {named(labels[gs])} release {released_n} tuples with {policy.sensitive} = "
        f"{as_python(policy.sensitive_domain[v])!r} between them; their boxes hold {held_n} tuple(s) "
        "of the original with that value"
        for gs, v, released_n, held_n in _crowded(left, right, used, n, pairs, capacity, m)
    ]
    return [*head, *listed("", lines), WHY]


def _crowded(
    left: np.ndarray,
    right: np.ndarray,
    used: np.ndarray,
    n: int,
    pairs: np.ndarray,
    capacity: np.ndarray,
    m: int,
) -> list[tuple[np.ndarray, int, int, int]]:
    """The QI-groups that together release more tuples of a value than their boxes hold (each
    (group, value) pair fits alone: the per-group check passed): from the (group, value) pairs
    a max assignment ``used`` leaves short, every tuple of the original they could take and
    the pair each of those took. Each connected set is one value's (a tuple has one value):
    (group indices, value code, tuples released, tuples of the original in their boxes)."""
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    from dpriv.adversary._assign import _csr32  # int32 indices: csgraph on old scipy needs them

    p = pairs.size
    short = np.flatnonzero(np.bincount(right[used], minlength=p) < capacity)
    took = np.full(n, -1, dtype=np.int64)
    took[left[used]] = right[used]
    matched = np.flatnonzero(took >= 0)
    # nodes: pairs 0..p-1, tuples p..p+n-1, a root p+n before the short pairs
    src = np.concatenate([right, p + matched, np.full(short.size, p + n)])
    dst = np.concatenate([p + left, took[matched], short])
    graph = _csr32((np.ones(src.size, dtype=np.int8), (src, dst)), p + n + 1)
    reached = np.zeros(p + n + 1, dtype=bool)
    reached[breadth_first_order(graph, p + n, directed=True, return_predecessors=False)] = True
    keep = reached[src] & (src != p + n)
    sub = _csr32((np.ones(int(keep.sum()), dtype=np.int8), (src[keep], dst[keep])), p + n + 1)
    _, label = connected_components(sub, directed=True, connection="weak")
    out = []
    for lab in np.unique(label[short]):
        inside = np.flatnonzero(reached & (label == lab))
        ps, ts = inside[inside < p], inside[(inside >= p) & (inside < p + n)]
        out.append((np.unique(pairs[ps] // m), int(pairs[ps[0]] % m), int(capacity[ps].sum()), ts.size))
    return out


def _boxes(first: pd.DataFrame, original: pd.DataFrame, policy: ReleasePolicy) -> list | None:
    """Per QI, what each group's box admits: ``("range", x, lo, hi)`` for a numeric QI (the
    original's values and the groups' bounds), ``("set", codes, member)`` for a categorical
    one (the original's domain codes and a bool (G, L) matrix); None when a column is absent
    or unreadable (the format checks name it)."""
    out = []
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            cols = [f"{q}_min", f"{q}_max"]
            if q not in original.columns or any(c not in first.columns for c in cols):
                return None
            x, lo, hi = (exact_numbers(v) for v in (original[q], first[cols[0]], first[cols[1]]))
            if any(v.dtype.kind not in "iuf" for v in (x, lo, hi)):
                return None
            if not x.dtype == lo.dtype == hi.dtype:  # compared in one type (ints exactly when all are)
                x, lo, hi = (v.astype(np.float64) for v in (x, lo, hi))
            out.append(("range", x, lo, hi))
        else:
            if q not in original.columns or q not in first.columns:
                return None
            dom = policy.domains[q]
            index = {str(v): i for i, v in enumerate(dom)}
            h = policy.hierarchy(q)
            cells = first[q].astype(str)
            sets = [_leaves(h, c) for c in cells] if h is not None else split_value_sets(cells).tolist()
            member = np.zeros((len(first), len(dom)), dtype=bool)
            for gi, values in enumerate(sets):
                member[gi, [index[v] for v in map(str, values) if v in index]] = True
            out.append(("set", codes(original[q], dom), member))
    return out


def _leaves(h, node: str) -> tuple[str, ...]:
    """The leaves under a released hierarchy node; none for a name the tree does not have."""
    try:
        return h.leaves_under(node)
    except KeyError:
        return ()


def _edges(boxes: list, s_orig: np.ndarray, pairs: np.ndarray, m: int, n_groups: int):
    """Edges (tuple of the original, index into ``pairs``): the tuple lies in the group's box
    and the group releases the tuple's own sensitive value. With a numeric QI the candidates
    of each (group, value) pair come from one sort of the original by (value, that QI) and two
    binary searches per pair (the QI whose boxes are narrowest), then the other QIs filter
    them: O(n log n + candidates), not O(n x groups); without one, or with more than an eighth
    of n x groups candidates (wide boxes), in chunks of the (tuples x groups) matrix."""
    ranges = [b for b in boxes if b[0] == "range"]
    if not ranges:
        return _dense_edges(boxes, s_orig, pairs, m, n_groups)
    key = min(ranges, key=lambda b: float(np.mean(b[3] - b[2])) / (float(np.ptp(b[1])) or 1.0))
    gp, sp = pairs // m, pairs % m
    values, rank = np.unique(key[1], return_inverse=True)  # ranks: exact whatever the dtype
    comp = s_orig.astype(np.int64) * (values.size + 1) + rank.ravel()
    order = np.argsort(comp, kind="stable")
    comp = comp[order]
    base = sp * (values.size + 1)
    start = np.searchsorted(comp, base + np.searchsorted(values, key[2][gp], "left"), "left")
    stop = np.searchsorted(comp, base + np.searchsorted(values, key[3][gp], "right"), "left")
    length = np.maximum(stop - start, 0)
    if int(length.sum()) * SORTED_FACTOR > s_orig.size * n_groups:  # wide boxes: the matrix is cheaper
        return _dense_edges(boxes, s_orig, pairs, m, n_groups)
    right = np.repeat(np.arange(pairs.size), length)
    offset = np.arange(right.size) - np.repeat(np.cumsum(length) - length, length)
    left = order[start[right] + offset]
    keep, g = np.ones(left.size, dtype=bool), gp[right]
    for box in boxes:
        if box[0] == "range":
            keep &= (box[2][g] <= box[1][left]) & (box[1][left] <= box[3][g])
        else:
            c = box[1][left]
            keep &= (c >= 0) & box[2][g, np.maximum(c, 0)]
    return left[keep], right[keep]


def _dense_edges(boxes: list, s_orig: np.ndarray, pairs: np.ndarray, m: int, n_groups: int):
    """:func:`_edges` through the (tuples x groups) containment matrix, in chunks of tuples
    (no numeric QI to sort on, or boxes so wide that most pairs are candidates)."""
    n = s_orig.size
    has = np.zeros((n_groups, m), dtype=bool)
    has[pairs // m, pairs % m] = True
    step = max(1, CHUNK_CELLS // max(n_groups, 1))
    lefts, rights = [], []
    for a in range(0, n, step):
        sl = slice(a, min(n, a + step))
        inside = has[:, s_orig[sl]].T.copy()
        for box in boxes:
            if box[0] == "range":
                x = box[1][sl, None]
                inside &= (box[2][None, :] <= x) & (x <= box[3][None, :])
            else:
                c = box[1][sl]
                inside &= np.where(c[:, None] >= 0, box[2][:, np.maximum(c, 0)].T, False)
        r, gi = np.nonzero(inside)
        lefts.append(r + a)
        rights.append(np.searchsorted(pairs, gi * m + s_orig[r + a]))
    return np.concatenate(lefts), np.concatenate(rights)

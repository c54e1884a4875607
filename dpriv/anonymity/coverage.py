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
(:func:`dpriv.adversary._assign.feasible_edges`). A group whose box holds fewer tuples of a
value than it releases is named first (the cheap, common case of an edited or narrowed box or a
duplicated row); else the groups that together release more tuples of a value than their boxes
hold (:func:`_crowded`).

A box is also tight (its bounds are values of its members, its value set their values, its
hierarchy node their lowest common node), which a widened box is not: for each bound, each
value of a set and each node, some complete assignment must give the group a member there
(the edges some complete assignment uses come from the same max flow and one pass of
strongly connected components). Each is
checked on its own (one member may not give all of a group's bounds at once): necessary, not
sufficient.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.adversary._assign import NoAssignment, feasible_edges, max_flow_edges
from dpriv.anonymity.format_check import listed, named
from dpriv.anonymity.membership import exact_numbers
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP, split_value_sets
from dpriv.validate import codes

#: What the coverage problems mean and what to do.
WHY = (
    "every released tuple must be a tuple of the original inside its group's box, with its own "
    "sensitive value (docs/released-format.md): a box or a value of the release was changed, a row "
    "duplicated or added, or the original is not the view the release was made from"
)
#: Why a box wider than its candidates is wrong.
WHY_TIGHT = (
    "a box is tight: its bounds are values of its members, its value set their values, its "
    "hierarchy node their lowest common node (docs/released-format.md): a box was widened after "
    "the release, or the original is not the view the release was made from"
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
        Empty when an assignment exists and every box is tight, or when the format is already
        wrong (the other checks report it: a missing column, a value outside its domain).
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
    first = released.iloc[np.unique(g, return_index=True)[1]]  # one row per group: its box
    boxes = _boxes(first, original, policy)
    if boxes is None:
        return []
    left, right = _edges(boxes, s_orig, pairs, m, len(labels))
    lines = _short(np.bincount(right, minlength=pairs.size), capacity, pairs, m, policy)
    if lines:
        return [*listed("", [f"QI-group {as_python(labels[gi])!r}: {what}" for gi, what in lines]), WHY]
    spare = n - n_rel  # the suppressed tuples: any tuple of the original may be one
    if spare >= 0:
        left_all, right_all = (
            np.concatenate([left, np.arange(n)]),
            np.concatenate([right, np.full(n, pairs.size)]),
        )
        try:
            used = feasible_edges(left_all, right_all, n, np.append(capacity, spare))
        except NoAssignment:
            used = None
        if used is not None:
            member = used & (right_all < pairs.size)
            lines = _loose(boxes, first, policy, left_all[member], pairs[right_all[member]] // m)
            named_lines = [f"QI-group {as_python(labels[gi])!r}: {what}" for gi, what in lines]
            return [*listed("", named_lines), WHY_TIGHT] if lines else []
    return _unplaced(left, right, n, n_rel, labels, pairs, capacity, m, policy)


def _unplaced(
    left, right, n: int, n_rel: int, labels, pairs, capacity, m: int, policy: ReleasePolicy
) -> list:
    """Problems when no assignment places every released tuple on a distinct tuple of the
    original (the original's other tuples being the suppressed ones): how many can be, and the
    QI-groups that together release more tuples of a value than their boxes hold."""
    used = max_flow_edges(left, right, n, capacity)
    placed, spare = int(used.sum()), n - n_rel
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


def _short(held: np.ndarray, capacity: np.ndarray, pairs: np.ndarray, m: int, policy: ReleasePolicy) -> list:
    """(group index, what) of each group whose box holds fewer tuples of a value than it
    releases (``held`` of each (group, value) pair in ``pairs``, ``capacity`` released)."""
    dom, by_group = policy.sensitive_domain, {}
    for i in np.flatnonzero(held < capacity):
        p = pairs[i]
        by_group.setdefault(p // m, []).append(f"{as_python(dom[p % m])!r} ({held[i]} < {capacity[i]})")
    return [
        (gi, f"its box holds fewer tuples of the original than the group releases with "
             f"{policy.sensitive} = {', '.join(vals[:3])}{' ...' if len(vals) > 3 else ''}")
        for gi, vals in by_group.items()
    ]  # fmt: skip


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

    from dpriv.adversary._assign import csr32  # int32 indices: csgraph on old scipy needs them

    p = pairs.size
    short = np.flatnonzero(np.bincount(right[used], minlength=p) < capacity)
    took = np.full(n, -1, dtype=np.int64)
    took[left[used]] = right[used]
    matched = np.flatnonzero(took >= 0)
    # nodes: pairs 0..p-1, tuples p..p+n-1, a root p+n before the short pairs
    src = np.concatenate([right, p + matched, np.full(short.size, p + n)])
    dst = np.concatenate([p + left, took[matched], short])
    graph = csr32((np.ones(src.size, dtype=np.int8), (src, dst)), p + n + 1)
    reached = np.zeros(p + n + 1, dtype=bool)
    reached[breadth_first_order(graph, p + n, directed=True, return_predecessors=False)] = True
    keep = reached[src] & (src != p + n)
    sub = csr32((np.ones(int(keep.sum()), dtype=np.int8), (src[keep], dst[keep])), p + n + 1)
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


def _loose(boxes: list, first: pd.DataFrame, policy: ReleasePolicy, left: np.ndarray, g: np.ndarray):
    """(group index, what) of each box wider than its candidates (module doc): the candidate
    edges ``left`` (tuples) -> ``g`` (their groups), every group holding at least one."""
    out = []
    for q, box in zip(policy.qi, boxes):
        if box[0] == "range":
            out += _loose_range(q, box, left, g, policy.kinds.get(q) == "date")
        elif policy.hierarchy(q) is None:
            out += _loose_set(q, box, left, g, policy.domains[q])
        else:
            out += _loose_node(q, box, left, g, policy, first[q])
    return sorted(out, key=lambda item: item[0])


def _loose_range(q: str, box: tuple, left: np.ndarray, g: np.ndarray, date: bool) -> list:
    """Bounds that no candidate of the group reaches."""
    x, lo, hi = box[1][left], box[2], box[3]
    low, high = hi.copy(), lo.copy()
    np.minimum.at(low, g, x)
    np.maximum.at(high, g, x)
    return [
        (
            gi,
            f"no assignment gives it a member with {q} = {_shown(bound[gi], date)} (its {q}_{side})",
        )
        for bound, reached, side in ((lo, low, "min"), (hi, high, "max"))
        for gi in np.flatnonzero(reached != bound)
    ]


def _loose_set(q: str, box: tuple, left: np.ndarray, g: np.ndarray, dom: list) -> list:
    """Values of a group's set that no candidate of the group has."""
    c = box[1][left]
    seen = np.zeros_like(box[2])
    seen[g[c >= 0], c[c >= 0]] = True
    extra = box[2] & ~seen
    return [
        (gi, f"no assignment gives it a member with {q} = "
             f"{', '.join(repr(as_python(dom[i])) for i in np.flatnonzero(extra[gi]))} (in its value set)")
        for gi in np.flatnonzero(extra.any(axis=1))
    ]  # fmt: skip


def _loose_node(q: str, box: tuple, left: np.ndarray, g: np.ndarray, policy: ReleasePolicy, cells) -> list:
    """Hierarchy nodes above the lowest common node of the group's candidates (leaves in tree
    order: the lowest common node of the first and the last one spans them all)."""
    h, n_groups = policy.hierarchy(q), len(cells)
    position = {leaf: i for i, leaf in enumerate(h.leaves)}
    c = box[1][left]
    p = np.array([position.get(str(v), -1) for v in policy.domains[q]], dtype=np.int64)[np.maximum(c, 0)]
    known = (c >= 0) & (p >= 0)
    first_leaf, last_leaf = np.full(n_groups, len(h.leaves)), np.full(n_groups, -1)
    np.minimum.at(first_leaf, g[known], p[known])
    np.maximum.at(last_leaf, g[known], p[known])
    have = last_leaf >= 0
    lowest = np.full(n_groups, -1)
    lowest[have] = h.lowest_common(first_leaf[have], last_leaf[have])
    node = np.array([h.node_index.get(str(v), -1) for v in cells])
    return [
        (gi, f"{q} is released as {cells.iloc[gi]!r}, but every assignment of the original gives it "
             f"members under {h.names[lowest[gi]]!r}")
        for gi in np.flatnonzero(have & (lowest != node))
    ]  # fmt: skip


def _shown(value, date: bool):
    """A bound for a message: a date QI's day number as its date."""
    value = as_python(value)
    return (pd.Timestamp(0) + pd.Timedelta(days=int(value))).date().isoformat() if date else value


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

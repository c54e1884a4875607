"""Top-down JS-reduce grouping: a Mondrian-style split under k, t and j (issue 12, direction 1).

Where the greedy scan (:mod:`dpriv.anonymity.jsreduce`) grows groups along the Hilbert order
(overlapping, often large boxes), this grouping cuts boxes of the QI space (plus, with
``policy.prior_key``, the expected rank of S under each tuple's prior RBK^sv, as one more
dimension) into non-overlapping halves, Mondrian-like (docs/algorithms.md §4.4), and stops where
no cut keeps both halves valid under (E9): ``|Q| >= k``, ``EMD(P_Q, P_V) <= t`` against the
WHOLE view and ``JS(RBK of Q) <= j`` (E8). The thresholds are those of
:func:`dpriv.criteria.criteria_for` (the one table of criteria); EMD is decided exactly on
integer counts (:meth:`~dpriv.criteria.TCloseness.holds_counts`), JS with
:func:`~dpriv.divergence.js_from_sums`.

A node (a set of tuples, a box)

* that satisfies (E9) is cut, with ``cut = "median"`` (Mondrian, the default), at the boundary
  between distinct values closest to the median of its widest dimension (normalised span; the
  next widest if none works) whose two halves both satisfy (E9); with ``cut = "slack"``, among
  all boundaries of all dimensions whose two halves satisfy (E9), at the one whose halves have
  the most slack under (E9): the smallest size-weighted load ``(|L| l(L) + |R| l(R)) / |Q|``,
  ``l = max(JS / j, EMD / t)`` (a threshold of 0 counts 0; ties: closest to the median, then
  the widest dimension), so that the halves can be cut further (issue 12, direction 2; with
  ``pc`` the principal knowledge axis is a candidate too); with ``cut = "box"``, among the same
  cuts, at the one with the smallest size-weighted box of the halves ``|L| s(L) + |R| s(R)``,
  ``s`` the summed span of the split coordinates (ties as for ``"slack"``: a greedy step on
  the semiperimeter (E11) itself); with ``cut = "slack-widest"``, in Mondrian's dimension (the
  widest with a valid cut), at the position with the most slack among those leaving at least a
  quarter of the node on each side (any position if none does); with ``cut = "gini"``, among
  the same cuts as ``"slack"``, at the one whose halves are purest in S, the smallest
  size-weighted Gini impurity ``|L| (1 - sum f_L^2) + |R| (1 - sum f_R^2)`` (the split rule of
  classification trees, as in workload-aware Mondrian; a greedy step on the grouping's part of
  the gain (E10), docs/algorithms.md §2.4); with no such cut it becomes one QI-group;
* that breaks (E9) (JS is not monotone under merge, so a large box usually does) must be cut:
  among all boundaries of all dimensions leaving ``>= k`` tuples on each side, the one with the
  smallest size-weighted violation ``|L| v(L) + |R| v(R)``, ``v = max(0, JS - j) +
  max(0, EMD - t)`` (ties: closest to the median, then the widest dimension); with no such
  boundary (fewer than 2k tuples) it sheds, one at a time, the member whose removal lowers the
  violation most until (E9) holds; the shed members (or all, if fewer than k remain) are
  *leftovers*.

With ``policy.rbk_closeness`` set, "(E9)" above also asks RBK-closeness of every set: its
sensitive distribution within that total variation of the mean of its members' priors (a term
``max(0, TV - c)`` in the violation, ``TV / c`` in the load; docs/algorithms.md).

Leftovers go to the same repair as the scan's (attach to a nearby group that keeps (E9), scan
the rest greedily, attach again, suppress what remains), so every kept group satisfies (E9).

Partition independence: the roots are *blocks*, the sub-cubes of the Hilbert curve at
``policy.topdown_level`` (the key's leading ``level * d`` bits, d the key dimensions; level 0
= the whole view). A Hilbert range processes its complete blocks and carries the last one
(possibly cut by the range boundary) to the next range, like the scan's open tail; so the
groups depend only on the view, never on the number of partitions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.anonymity.jsreduce import entropies
from dpriv.anonymity.topdown_levels import median_groups
from dpriv.anonymity.topdown_sums import dim_prefix, node_stats, split_rows
from dpriv.divergence import ORDERED, emd_num_den, emd_within, tv_from_sums
from dpriv.hilbert.keys import grouping_coords, is_anatomy
from dpriv.policy import ReleasePolicy

UNGROUPED = -1
_PEEL_MAX = 8  # an uncut node breaking (E9) sheds members only up to this many k


class Split:
    """The data of one root (block) and the (E9) thresholds; :meth:`groups` runs the split node by
    node, :func:`dpriv.anonymity.topdown_levels.median_groups` one depth level at a time with
    :meth:`js`, :meth:`violation` and :meth:`peel` (one expression each: the same bits on both
    paths).

    Attributes: ``x`` float64 (n, d) split coordinates, ``s`` int64 (n,) sensitive codes in
    [0, M), ``p`` float64 (n, M) priors, ``ent`` float64 (n,) each prior's entropy, ``vc`` int64
    (M,) the view's sensitive counts (``n_view`` their sum), ``k``, ``t``, ``j``, ``c``,
    ``ground``, ``log_base`` the (E9) thresholds."""

    def __init__(
        self, x, s, priors, view_counts, *, k, t, j, ground, log_base, pc=False, cut="median", c=1.0
    ):
        self.x = np.ascontiguousarray(x, dtype=np.float64)
        self.s = np.ascontiguousarray(s, dtype=np.int64)
        self.p = np.ascontiguousarray(priors, dtype=np.float64)
        self.ent = entropies(self.p, log_base)  # each row's entropy alone
        self.vc = np.ascontiguousarray(view_counts, dtype=np.int64)
        self.n_view = int(self.vc.sum())
        self.pv = self.vc / max(self.n_view, 1)
        self.m = len(self.vc)
        self.k, self.t, self.j, self.ground, self.log_base = k, t, j, ground, log_base
        self.log_e_base = np.log(log_base)
        self.c = c  # RBK-closeness; 1.0: off (every set is within a total variation of 1)
        self.pc, self.cut = pc, cut
        self.pc_valid = cut in ("slack", "gini")  # the knowledge axis is a candidate for valid boxes too

    # -- (E9) on one candidate set ----------------------------------------------------------
    def js(self, sum_p: np.ndarray, sum_h: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Equal-weight JS (E8), float64 (r,) >= 0 in units of ``log_base``, of ``r`` sets given
        their prior sums float64 (r, M), entropy sums float64 (r,) and sizes float64 (r,) > 0."""
        q = sum_p / u[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0).sum(axis=1) / np.log(self.log_base)
        return np.maximum(h - sum_h / u, 0.0)

    def _emd(self, counts: np.ndarray, u: np.ndarray) -> np.ndarray:
        """EMD (E18 / E19) of sets with sensitive counts (c, M) to the view: float, for ranking."""
        r = counts / u[:, None] - self.pv
        if self.ground == ORDERED:
            return np.abs(np.cumsum(r, axis=1)).sum(axis=1) / max(self.m - 1, 1)
        return 0.5 * np.abs(r).sum(axis=1)

    def _tv(self, counts: np.ndarray, sum_p: np.ndarray, u: np.ndarray) -> np.ndarray:
        """RBK-closeness distance of sets (float, for ranking); zeros when it is off."""
        if self.c >= 1.0:
            return np.zeros(len(u))
        return 0.5 * np.abs(counts - sum_p).sum(axis=1) / u

    def violation(
        self, counts: np.ndarray, sum_p: np.ndarray, sum_h: np.ndarray, u: np.ndarray
    ) -> np.ndarray:
        """``max(0, JS - j) + max(0, EMD - t) + max(0, TV - c)``, float64 (r,) >= 0 (0: within
        every threshold, as floats: :meth:`_holds` decides (E9) exactly), of ``r`` sets given their
        sensitive counts int64 (r, M), prior sums float64 (r, M), entropy sums float64 (r,) and
        sizes float64 (r,) > 0."""
        return (
            np.maximum(self.js(sum_p, sum_h, u) - self.j, 0.0)
            + np.maximum(self._emd(counts, u) - self.t, 0.0)
            + np.maximum(self._tv(counts, sum_p, u) - self.c, 0.0)
        )

    def _load(self, counts, sum_p, sum_h, u):
        """``max(JS / j, EMD / t, TV / c)`` of sets (a threshold of 0 counts 0): 1 at the bound."""
        js = self.js(sum_p, sum_h, u) / self.j if self.j > 0 else np.zeros(len(u))
        load = np.maximum(js, self._emd(counts, u) / self.t if self.t > 0 else 0.0)
        return np.maximum(load, self._tv(counts, sum_p, u) / self.c) if 0 < self.c < 1.0 else load

    def _holds(self, counts: np.ndarray, sum_p: np.ndarray, sum_h: float, u: int) -> bool:
        """(E9) exactly as the scan decides it: k, EMD on integers, JS <= j."""
        if u < self.k:
            return False
        num, den = emd_num_den(counts, u, self.vc, self.n_view, self.ground)
        if not emd_within(num, den, self.t):
            return False
        if self.c < 1.0 and tv_from_sums(counts, sum_p, u) > self.c:
            return False
        return bool(self._js_one(sum_p, sum_h, float(u)) <= self.j)

    def _js_one(self, sum_p: np.ndarray, sum_h: float, u: float) -> float:
        """:meth:`js` of one set, with its bits (the same operations on the row alone, the same
        pairwise sum along it), without the (1, M) arrays: ~900 calls per 10^6-tuple range."""
        q = sum_p / u
        pos = q > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(pos, q * np.log(np.where(pos, q, 1.0)), 0.0).sum() / self.log_e_base
        return np.maximum(h - sum_h / u, 0.0)

    def _principal(self, idx: np.ndarray) -> np.ndarray:
        """Projection of the node's priors, in Hellinger coordinates sqrt(p), on their first
        principal axis (sign fixed so that the largest loading is positive): a knowledge
        direction along which to cut a node that breaks j."""
        h = np.sqrt(self.p[idx])
        h = h - h.mean(axis=0)
        _, vecs = np.linalg.eigh(h.T @ h)
        axis = vecs[:, -1]
        axis = axis if axis[np.argmax(np.abs(axis))] > 0 else -axis
        return np.round(h @ axis, 12)

    # -- one node ---------------------------------------------------------------------------
    def _node(self, idx: np.ndarray) -> tuple:
        """Node ``idx`` (positions, increasing): its sensitive counts int64 (M,), prior sums
        float64 (M,), entropy sum, whether it satisfies (E9), its coordinates (d, u) and spans (d,)."""
        counts, sum_p, xt, span = node_stats(idx, self.s, self.p, self.x)
        sum_h = float(self.ent[idx].sum())  # NumPy's pairwise sum: its bits decide JS <= j
        return counts, sum_p, sum_h, self._holds(counts, sum_p, sum_h, len(idx)), xt, span

    def _cut(self, idx: np.ndarray, node: tuple) -> tuple[np.ndarray, np.ndarray] | None:
        """The halves of the chosen cut of node ``idx`` (positions, increasing), or None."""
        u, k = len(idx), self.k
        if u < 2 * k:
            return None
        counts, sum_p, sum_h, valid, xt, span = node
        dims = [xt[d] for d in np.argsort(-span, kind="stable") if span[d] > 0]
        if self.pc and (self.pc_valid or not valid):
            dims.append(self._principal(idx))
        best, best_key = None, None
        for col in dims:
            o = np.argsort(col, kind="stable")
            b, cc, cp, ch = dim_prefix(col, o, idx, self.s, self.p, self.ent, k)  # b: sizes of the LHS
            if not len(b):
                continue
            bl, br = b.astype(np.float64), (u - b).astype(np.float64)
            vl = self.violation(cc, cp, ch, bl)
            vr = self.violation(counts - cc, sum_p - cp, sum_h - ch, br)
            off = np.abs(b - u / 2)
            if valid and self.cut != "median":
                ok = np.flatnonzero((vl == 0) & (vr == 0))
                if self.cut == "slack-widest":  # the middle half, if it has a valid cut
                    mid = ok[np.minimum(b[ok], u - b[ok]) >= u / 4]
                    ok = mid if len(mid) else ok
                if self.cut == "box":
                    so = np.ascontiguousarray(xt.T[o])  # the layout of x[idx][o]: same sums
                    load = bl * _spans(so, b) + br * _spans(so[::-1], u - b)
                elif self.cut == "gini":
                    load = _impurity(cc, bl) + _impurity(counts - cc, br)
                else:
                    load = bl * self._load(cc, cp, ch, bl)
                    load += br * self._load(counts - cc, sum_p - cp, sum_h - ch, br)
                for c in ok[np.lexsort((off[ok], load[ok]))]:  # the best of this dimension
                    bb = int(b[c])
                    if best_key is not None and (load[c], off[c]) >= best_key:
                        break  # an earlier (wider) dimension has a cut with as much slack
                    if self._holds(cc[c], cp[c], float(ch[c]), bb) and self._holds(
                        counts - cc[c], sum_p - cp[c], sum_h - float(ch[c]), u - bb
                    ):
                        best_key, best = (load[c], off[c]), split_rows(idx, o, bb)
                        break
                if best is not None and self.cut == "slack-widest":
                    return best  # Mondrian's dimension: the widest with a valid cut
                continue
            if valid:
                for c in np.flatnonzero((vl == 0) & (vr == 0))[
                    np.argsort(off[(vl == 0) & (vr == 0)], kind="stable")
                ]:
                    bb = int(b[c])
                    if self._holds(cc[c], cp[c], float(ch[c]), bb) and self._holds(
                        counts - cc[c], sum_p - cp[c], sum_h - float(ch[c]), u - bb
                    ):
                        return split_rows(idx, o, bb)
                continue  # Mondrian: the next widest dimension
            score = bl * vl + br * vr
            c = int(np.lexsort((off, score))[0])
            key = (score[c], off[c])
            if best_key is None or key < best_key:
                best_key, best = key, split_rows(idx, o, b[c])
        return best

    def groups(self, root: np.ndarray) -> list[np.ndarray]:
        """The QI-groups of the root ``root`` (positions, increasing), in their numbering
        order (LHS first), each its positions (increasing); the rest are leftovers."""
        stack, out = [root], []
        while stack:
            idx = stack.pop()
            node = self._node(idx)
            halves = self._cut(idx, node)
            if halves is not None:
                stack.append(halves[1])
                stack.append(halves[0])
                continue
            kept = self.peel(idx, node)
            if len(kept):
                out.append(kept)
        return out

    def peel(self, idx: np.ndarray, node: tuple) -> np.ndarray:
        """The members of an uncut node ``idx`` (positions int64, increasing; ``node``: its
        :meth:`_node` tuple, of which the counts, prior sums, entropy sum and validity are read)
        that form a group, positions int64 (increasing): all of them when (E9) holds; else,
        for a node of at most ``_PEEL_MAX * k`` tuples, the rest after taking out, one at a
        time, the member whose removal lowers the violation most, until (E9) holds (the
        removed ones are leftovers for the repair); empty when that fails before k."""
        counts, sum_p, sum_h, valid = node[:4]
        if valid:
            return idx
        if len(idx) > _PEEL_MAX * self.k:
            return idx[:0]
        while len(idx) > self.k:
            u = np.full(len(idx), len(idx) - 1, dtype=np.float64)
            onehot = np.eye(self.m, dtype=np.int64)[self.s[idx]]
            v = self.violation(counts - onehot, sum_p - self.p[idx], sum_h - self.ent[idx], u)
            out = int(np.argmin(v))
            x = idx[out]
            idx = np.delete(idx, out)
            counts, sum_p, sum_h = counts - onehot[out], sum_p - self.p[x], sum_h - float(self.ent[x])
            if self._holds(counts, sum_p, sum_h, len(idx)):
                return idx
        return idx[:0]


def _impurity(counts: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Size-weighted Gini impurity of S, ``|Q| (1 - sum_s f_Q(s)^2)``, of sets with sensitive
    counts int64 (c, M) and sizes float64 (c,): the sum over a release's groups is
    ``N (1 - B)``, B the mean frequency of a tuple's own value in its group, the part of the
    gain (E10) the grouping decides (docs/algorithms.md §2.4)."""
    c = counts.astype(np.float64)
    return u - (c * c).sum(axis=1) / u


def _spans(xs: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Summed span over the dimensions of the first ``b`` rows of ``xs`` (n, d), per ``b``."""
    return (np.maximum.accumulate(xs, axis=0) - np.minimum.accumulate(xs, axis=0))[b - 1].sum(axis=1)


def topdown_groups(
    x: np.ndarray,
    s: np.ndarray,
    priors: np.ndarray,
    view_counts: np.ndarray,
    *,
    k: int,
    t: float,
    j: float,
    ground: int = 0,
    log_base: float = 2.0,
    blocks: np.ndarray | None = None,
    pc: bool = False,
    cut: str = "median",
    c: float = 1.0,
) -> np.ndarray:
    """Top-down QI-groups of ``n`` tuples (module doc).

    Parameters
    ----------
    x : float (n, d), the split coordinates (QIs scaled to [0, 1]; optionally the prior rank)
    s : int (n,), sensitive codes in [0, M)
    priors : float (n, M), each tuple's RBK^sv (rows sum to 1)
    view_counts : int (M,), counts of S over the WHOLE original view (P_V of (E9))
    k, t, j, ground, log_base : the (E9) thresholds (``ground``: ``EQUAL`` or ``ORDERED``)
    blocks : int (n,), the root each tuple belongs to (default: one root); groups never
        cross blocks.
    pc : a node that breaks (E9) may also be cut along the first principal axis of its
        priors in Hellinger coordinates (a knowledge cut; the halves' boxes may overlap); with
        ``cut = "slack"`` a node that satisfies (E9) may be cut along it too.
    cut : how a node that satisfies (E9) is cut: ``"median"`` (Mondrian), ``"slack"``, ``"box"``,
        ``"slack-widest"`` or ``"gini"`` (module doc).
    c : RBK-closeness, in [0, 1]: every group also keeps its sensitive distribution within this
        total variation of the mean of its members' priors (1.0, the default: off).

    Returns
    -------
    int64 (n,): group number in [0, G) (blocks in order of first appearance), -1 for a
    leftover (a tuple the split could not place in a group satisfying (E9)).
    """
    split = Split(
        x, s, priors, view_counts, k=k, t=t, j=j, ground=ground, log_base=log_base, pc=pc, cut=cut, c=c
    )
    n = len(split.s)
    out = np.full(n, UNGROUPED, dtype=np.int64)
    if n == 0:
        return out
    if blocks is None:
        roots = [np.arange(n, dtype=np.int64)]
    else:  # each block's positions (increasing), blocks in order of first appearance
        order = np.argsort(np.asarray(blocks), kind="stable")
        sb = np.asarray(blocks)[order]
        ends = np.flatnonzero(sb[1:] != sb[:-1]) + 1
        roots = sorted(np.split(order, ends), key=lambda rows: rows[0])
    if cut == "median" and not pc:  # the recommended policy's: one depth level at a time
        groups = median_groups(split, roots)
    else:
        groups = [kept for root in roots for kept in split.groups(root)]
    for g, kept in enumerate(groups):
        out[kept] = g
    return out


def split_coords(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """The split dimensions of keyed rows: the QIs on [0, 1] and, with ``prior_key``, the
    expected rank of S under the prior (the same summary the Hilbert key uses)."""
    x = grouping_coords(part, policy)
    if policy.prior_key and not is_anatomy(policy):
        prior = part[policy.prior_columns].to_numpy(dtype=np.float64)
        m = prior.shape[1]
        rank = prior @ np.linspace(0.0, 1.0, m) if m > 1 else np.zeros(len(part))
        x = np.column_stack([x, rank])
    return x

"""One root (block) of the top-down JS-reduce grouping (:mod:`dpriv.anonymity.topdown`, whose module
doc gives the rules): its data, the (E9) thresholds and the node-by-node split
(:meth:`Split.groups`). :mod:`dpriv.anonymity.topdown_levels` runs the median split one depth
level at a time with the same expressions (:meth:`Split.js`, :meth:`Split.violation`,
:meth:`Split.peel`), so both paths give the same bits; both import it from here (it lived in
:mod:`dpriv.anonymity.topdown`, which imports the level split: an import loop).
"""

from __future__ import annotations

import numpy as np

from dpriv.anonymity.jsreduce import entropies
from dpriv.anonymity.topdown_sums import dim_prefix, node_stats, split_rows
from dpriv.divergence import ORDERED, emd_num_den, emd_within, tv_from_sums
from dpriv.kernel_args import kernel_input

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
        # read-only, as the kernels take them (one compiled signature: dpriv.kernel_args)
        self.x = kernel_input(x, np.float64)
        self.s = kernel_input(s, np.int64)
        self.p = kernel_input(priors, np.float64)
        self.ent = entropies(self.p, log_base)  # each row's entropy alone
        self.vc = kernel_input(view_counts, np.int64)
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

"""What the repair knows of each QI-group (:class:`GroupStats`), from one compiled pass.

The repair of Algorithm 2 places a leftover into a group where (E9) still holds, so it needs
each group's sensitive counts, the sums of its members' priors and of their entropies, its box
on the normalised QIs and where it starts in Hilbert order. :func:`_group_sums` adds the rows
one after the other, as ``np.add.at`` would, so the sums have its bits, and it reads the priors
as columns ((M, n), a column a row) in a given row order: the greedy's rows as they lie (a
transposed view of its (n, M) matrix, no copy), or a Hilbert range's rows in key order straight
from the frame's columns (:func:`prior_columns`, :meth:`GroupStats.of_columns`: pandas
interleaving the 19 prior columns of a fragmented frame and gathering them in key order cost two
full copies of the priors; range_stats took 1.13-1.34 s at 10^6 tuples in process with them,
0.82-0.92 s without, docs/scaling.md, session 20).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numba import njit

from dpriv.divergence import entropy


@njit(cache=True, nogil=True)
def _group_sums(g, order, cols, coords, pos, n_groups, log_base):  # pragma: no cover - compiled
    """Per group of ``g`` (int64 (n,), the group of the i-th row, in ``0..n_groups-1``): sums
    of the priors of row ``order[i]`` (``cols``: (M, n'), a column a row, any layout) (G, M),
    box lo/hi of ``coords[i]`` (G, d) and smallest ``pos[i]`` (G,); with ``log_base`` > 0 also
    each row's entropy (n,) in its units, by :func:`dpriv.divergence.entropy` over the row's
    values (else an empty array). The rows are added in ``i`` order, one after the other, as
    ``np.add.at`` adds them, so the sums have its bits (``np.add.at`` on (n, 19) priors was
    most of the repair's statistics at 10^6)."""
    m, d = cols.shape[0], coords.shape[1]
    sum_p = np.zeros((n_groups, m))
    lo = np.full((n_groups, d), np.inf)
    hi = np.full((n_groups, d), -np.inf)
    first = np.full(n_groups, np.iinfo(np.int64).max)
    ent = np.empty(len(g) if log_base > 0 else 0)
    row = np.empty(m)
    for i in range(len(g)):
        c, r = g[i], order[i]
        for v in range(m):
            row[v] = cols[v, r]
            sum_p[c, v] += row[v]
        if log_base > 0:
            ent[i] = entropy(row, log_base)
        for q in range(d):
            x = coords[i, q]
            if x < lo[c, q] or x != x:  # np.minimum.at: NaN wins
                lo[c, q] = x
            if x > hi[c, q] or x != x:
                hi[c, q] = x
        first[c] = min(first[c], pos[i])
    return sum_p, lo, hi, first, ent


def prior_columns(rows: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The ``columns`` of ``rows`` as one float64 (M, n) C-contiguous array, a column a row."""
    out = np.empty((len(columns), len(rows)))
    for v, c in enumerate(columns):
        out[v] = rows[c].to_numpy(dtype=np.float64)
    return out


@dataclass
class GroupStats:
    """What the repair needs of each QI-group: counts (G, M) int64 of S, sizes (G,), sums of
    priors (G, M) and of their entropies (G,), box lo/hi (G, m) on normalised QIs, and the
    global Hilbert-order position (G,) of the group's first tuple."""

    counts: np.ndarray
    sizes: np.ndarray
    sum_p: np.ndarray
    sum_h: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    pos: np.ndarray

    @classmethod
    def of(cls, group, s, priors, ent, coords, pos, n_groups, m) -> GroupStats:
        """Statistics of groups ``0..n_groups-1`` of ``group`` (int64 (n,), -1 ignored);
        ``priors`` (n, M) and their entropies ``ent`` (n,) row by row."""
        kept = group >= 0
        if not kept.all():  # (when every group is >= 0 the priors are not copied)
            g, s, priors, ent, coords, pos = (a[kept] for a in (group, s, priors, ent, coords, pos))
        else:
            g = group
        cols = np.ascontiguousarray(priors, dtype=np.float64).T  # (M, n), a view: no copy
        sums = cls._sums(g, np.arange(len(g)), cols, coords, pos, n_groups, 0.0)
        return cls._made(g, s, m, ent, *sums[:4])

    @classmethod
    def of_columns(cls, group, s, cols, order, coords, pos, n_groups, m, log_base) -> GroupStats:
        """:meth:`of` for the rows ``order`` of the (M, n) prior columns ``cols``, ``group``,
        ``s``, ``coords`` and ``pos`` already in that order and every group >= 0, the entropies
        computed in the same pass (units of ``log_base``): the same bits without gathering the
        priors."""
        sum_p, lo, hi, first, ent = cls._sums(group, order, cols, coords, pos, n_groups, log_base)
        return cls._made(group, s, m, ent, sum_p, lo, hi, first)

    @staticmethod
    def _sums(g, order, cols, coords, pos, n_groups, log_base) -> tuple:
        as_int = {"dtype": np.int64, "copy": False}
        return _group_sums(
            g.astype(**as_int),
            order.astype(**as_int),
            cols,
            np.ascontiguousarray(coords, dtype=np.float64),
            pos.astype(**as_int),
            n_groups,
            log_base,
        )

    @classmethod
    def _made(cls, g, s, m, ent, sum_p, lo, hi, first) -> GroupStats:
        """The statistics from the compiled sums, with the S counts and the entropy sums."""
        n_groups = len(first)
        counts = np.bincount(g * m + s, minlength=n_groups * m).reshape(n_groups, m).astype(np.int64)
        return cls(counts, counts.sum(axis=1), sum_p, np.bincount(g, ent, n_groups), lo, hi, first)

    def concat(self, other: GroupStats) -> GroupStats:
        return GroupStats(*(np.concatenate([a, b]) for a, b in zip(self.astuple(), other.astuple())))

    def astuple(self) -> tuple:
        return (self.counts, self.sizes, self.sum_p, self.sum_h, self.lo, self.hi, self.pos)

    @property
    def n_groups(self) -> int:
        return len(self.pos)

"""KPR (E21, E22), exact arithmetic: the statistics of ``U`` and the bin of every value
computed exactly (issue 15), so that a value on a bin edge falls in the bin above it.

Value model: an integer column is its integers (also beyond 2**53). A float column whose
unique originals are all decimals of at most 15 significant digits (the usual case: data
written in decimal) is a decimal column: each float stands for the shortest decimal that
reads back as it (``0.1`` is 1/10, not the binary 0.1000000000000000055...). Otherwise
(computed floats such as 1/3) each float stands for its exact binary value.

With ``s = sqrt(var)`` possibly irrational, (E22) is evaluated as
``floor(t + sqrt(W))`` with ``t = (y - min) / step`` rational and
``W = (padding * s / step)**2`` rational, compared exactly through squares.

Hot path: the float64 estimate of ``(y - min) / step + sqrt(W)`` is exact for every value
whose estimate is farther from an integer (and from ``hi``) than its error bound; only the
other (unique) values -- those on or within ~1e-11 of an edge -- are recomputed with
:class:`fractions.Fraction`. Source: docs/algorithms.md §5.2 step 5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: Sentinel bin of a numeric value below ``lo`` (E22). Regular bins are ``0, 1, 2, ...``.
BELOW = -1.0


#: Sentinel bin of a numeric value above ``hi`` (E22).
ABOVE = -2.0


#: Sentinel bin of a missing value (NaN / NA): missing is its own level (§5.3).
MISSING = -3.0


#: Sentinel bin of every non-missing value of a variable that has no non-missing value in
#: ``U`` (so no bin grid exists); such values can never match an original of ``U``.
NO_BINS = -4.0

#: Floats with at most this many significant decimal digits are decimals (DBL_DIG: two
#: distinct such decimals are distinct doubles, so the decimal of a float is unique).
MAX_DIGITS = 15
_TOL = 2.0**-46  # error bound factor of the float estimate (~60x the worst rounding)
_BIG = 2.0**50  # estimates beyond this are always recomputed exactly


def decimal_scale(y: np.ndarray) -> int | None:
    """Smallest ``D`` in ``0..15`` such that every finite float64 of ``y`` (shape (k,)) is
    the double nearest to an integer ``X`` over ``10**D`` with ``|X| < 10**15``; ``None``
    when there is none (not all values are short decimals). Empty ``y`` gives 0."""
    y = np.asarray(y, dtype=np.float64)

    def fits(v: np.ndarray, d: int) -> bool:
        p = 10.0**d
        for k in range(0, len(v), 1 << 18):  # by chunks: bounded temporaries
            c = v[k : k + (1 << 18)]
            with np.errstate(over="ignore", invalid="ignore"):
                x = np.rint(c * p)
                if not ((np.abs(x) < 1e15) & (x / p == c)).all():
                    return False
        return True

    head = y[:1024]  # a scale failing on the first values fails on all: skip the full pass
    for d in range(MAX_DIGITS + 1):
        if fits(head, d) and fits(y, d):
            return d
    return None


def _isum(a: np.ndarray) -> int:
    """Exact sum of int64 values below 2**45 in magnitude: int64 sums of chunks of 2**17
    (below 2**62), then Python ints."""
    if len(a) == 0:
        return 0
    return sum(np.add.reduceat(a, np.arange(0, len(a), 1 << 17)).tolist())


def int_sums(v: np.ndarray) -> tuple[int, int, int, int]:
    """Exact ``(sum, sum of squares, min, max)`` of a non-empty int64/uint64 array as Python
    ints, vectorised: 22-bit limbs whose pairwise products (< 2**44) are exact in int64."""
    mask = 0x3FFFFF
    if v.dtype.kind == "u":
        u = v.astype(np.uint64)
        top = (u >> np.uint64(44)).astype(np.int64)
        mid = ((u >> np.uint64(22)) & np.uint64(mask)).astype(np.int64)
        low = (u & np.uint64(mask)).astype(np.int64)
    else:
        s = v.astype(np.int64)
        top, mid, low = s >> 44, (s >> 22) & mask, s & mask  # top signed, |top| <= 2**19
    limbs, shifts = (top, mid, low), (44, 22, 0)
    total = sum(_isum(limb) << sh for limb, sh in zip(limbs, shifts, strict=True))
    sq = 0
    for i in range(3):
        for j in range(i, 3):
            sq += (_isum(limbs[i] * limbs[j]) * (1 if i == j else 2)) << (shifts[i] + shifts[j])
    return total, sq, int(v.min()), int(v.max())


@dataclass(frozen=True)
class ExactGrid:
    """Exact bin grid of one numeric variable (E22) and its float64 image for the hot path.

    ``vmin``, ``vmax``, ``step`` are rationals (``step == 0``: one bin, exact equality);
    ``w`` is ``(padding * std / step)**2`` (so ``lo = vmin - sqrt(w) * step``);
    ``n_bins`` the exact number of regular bins; ``decimal`` whether floats stand for their
    shortest decimal (else their binary value).
    """

    vmin: Fraction
    vmax: Fraction
    step: Fraction
    w: Fraction
    n_bins: int
    decimal: bool

    @staticmethod
    def build(
        vmin: Fraction, vmax: Fraction, step: Fraction, pad_std_sq: Fraction, decimal: bool
    ) -> ExactGrid:
        """``pad_std_sq`` is ``(padding * std)**2`` (rational: padding**2 * var)."""
        if step == 0:
            return ExactGrid(vmin, vmax, step, Fraction(0), 1, decimal)
        w = pad_std_sq / (step * step)
        r = (vmax - vmin) / step
        n_bins = max(1, -floor_add_sqrt(-r, 4 * w, -1))  # ceil(r + 2 sqrt(w))
        return ExactGrid(vmin, vmax, step, w, n_bins, decimal)

    def index(self, y: Fraction) -> float:
        """Exact (E22) bin of one value: 0..n_bins-1 or BELOW / ABOVE (float)."""
        if self.step == 0:
            return BELOW if y < self.vmin else ABOVE if y > self.vmax else 0.0
        m = floor_add_sqrt((y - self.vmin) / self.step, self.w, 1)
        if m < 0:
            return BELOW
        u = (y - self.vmax) / self.step
        if u > 0 and u * u > self.w:
            return ABOVE
        return float(min(m, self.n_bins - 1))


def floor_add_sqrt(t: Fraction, w: Fraction, sign: int) -> int:
    """``floor(t + sign * sqrt(w))`` exactly, for rationals ``t`` and ``w >= 0``."""
    k = 64
    root = Fraction(math.isqrt(w.numerator * 4**k // w.denominator), 2**k)  # sqrt(w) - 2**-64 .. sqrt(w)
    m = math.floor(t + sign * root)

    def le(c: int) -> bool:  # c <= t + sign * sqrt(w)
        d = c - t
        return (d <= 0 or d * d <= w) if sign > 0 else (d <= 0 and d * d >= w)

    while not le(m):
        m -= 1
    while le(m + 1):
        m += 1
    return m


def exact_value(v, decimal: bool) -> Fraction:
    """The number a stored value stands for (module docstring): ints exactly, floats as
    their shortest decimal (``decimal``) or their binary value."""
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    return Fraction(repr(float(v))) if decimal else Fraction(float(v))


def exact_bins(y: np.ndarray, grid: ExactGrid) -> np.ndarray:
    """(E22) bin index of every value of ``y`` (int or float64, shape (k,), no NaN), exact;
    float64 of shape (k,) with :data:`BELOW` / :data:`ABOVE` sentinels. Vectorised float
    estimate, exact recomputation of the unique values near an edge (module docstring)."""
    yf = np.asarray(y, dtype=np.float64)
    out = np.empty(len(yf), dtype=np.float64)
    if grid.step == 0:
        lo, hi = float(grid.vmin), float(grid.vmax)
        out[:] = np.where(yf < lo, BELOW, np.where(yf > hi, ABOVE, 0.0))
        amb = (yf == lo) | (yf == hi) | (np.abs(yf) >= 2.0**53)
    else:
        vmin, vmax, step = float(grid.vmin), float(grid.vmax), float(grid.step)
        c = math.sqrt(float(grid.w))
        with np.errstate(invalid="ignore", over="ignore"):
            # in place, same operations in the same order as the formulas in the comments
            r = yf - vmin  # r = (yf - vmin) / step + c
            r /= step
            r += c
            u = yf - vmax  # u = (yf - vmax) / step - c
            u /= step
            u -= c
            tol = np.abs(yf)  # tol = ((|yf| + |vmin| + |vmax|) / step + |r| + c + 1) * _TOL
            tol += abs(vmin)
            tol += abs(vmax)
            tol /= step
            tol += np.abs(r)
            tol += c
            tol += 1.0
            tol *= _TOL
            f = np.floor(r)
            d = r - f  # ambiguous: within tol of an edge, or of hi, or too large
            amb = d <= tol
            np.subtract(f + 1.0, r, out=d)
            amb |= d <= tol
            np.abs(u, out=d)
            amb |= d <= tol
            np.abs(r, out=d)
            amb |= d >= _BIG
        fin = np.isfinite(yf)
        amb &= fin
        np.minimum(f, float(grid.n_bins - 1), out=out)
        out[u > 0] = ABOVE
        out[r < 0] = BELOW
        if not fin.all():
            out[np.isposinf(yf)] = ABOVE
            out[np.isneginf(yf)] = BELOW
    if amb.any():
        pos = np.flatnonzero(amb)
        vals = np.asarray(y)[pos]
        uniq, inv = np.unique(vals, return_inverse=True)
        exact = np.array([grid.index(exact_value(v, grid.decimal)) for v in uniq.tolist()], dtype=np.float64)
        out[pos] = exact[inv.reshape(-1)]
    return out

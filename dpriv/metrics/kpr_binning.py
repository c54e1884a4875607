"""KPR (E21, E22), binning: the bin grid of a numeric known variable from exact,
partition-independent statistics of the unique originals, and the bin of every value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from dpriv.metrics.exact_sums import ExactSum, add_exact, exact_sum, to_fraction
from dpriv.metrics.kpr_exact import (  # the sentinels are re-exported: the binning's vocabulary
    ABOVE,
    BELOW,
    MISSING,
    NO_BINS,
    ExactGrid,
    decimal_scale,
    exact_bins,
    int_sums,
)


@dataclass(frozen=True)
class BinSpec:
    """Bin grid of one numeric known variable (E22), as reported in :class:`KPRResult`.

    Attributes
    ----------
    lo, hi : float
        ``min - padding * sigma`` and ``max + padding * sigma`` over the non-missing values
        of the variable in ``U``; NaN when there is no such value.
    step : float
        Bin width ``tolerance * |mean|``; ``tolerance * (max - min)`` when the mean is 0;
        0.0 when that is 0 too (then one bin: exact equality). NaN when no bins exist.
    n_bins : int
        Number of regular bins ``max(1, ceil((hi - lo) / step))``, exact (may be
        astronomically large: bins are never materialised); 1 when ``step == 0``; 0 when
        no bins exist.
    mean, std : float
        Mean and standard deviation (``ddof`` of the call) of the non-missing values in
        ``U``; the std is 0.0 when there are not more than ``ddof`` values.
    count : int
        Number of non-missing values of the variable in ``U``.
    """

    lo: float
    hi: float
    step: float
    n_bins: int
    mean: float
    std: float
    count: int


def _exact_sum_of_squares(values: np.ndarray) -> ExactSum:
    """Exact ``sum(values**2)`` of finite float64 values (error-free TwoProduct).

    Each value is scaled to its mantissa ``f`` in ``[0.5, 1)`` so that ``f*f`` neither
    overflows nor underflows; ``f*f = p + err`` exactly with ``p = fl(f*f)`` and ``err``
    from Veltkamp's split; both parts are then summed exactly with exponent ``2 * exp``.
    """
    f, exp = np.frexp(np.asarray(values, dtype=np.float64))
    c = 134217729.0 * f  # 2**27 + 1
    fh = c - (c - f)
    fl = f - fh
    p = f * f
    err = ((fh * fh - p) + 2.0 * fh * fl) + fl * fl
    e2 = 2 * exp.astype(np.int64)
    return add_exact(exact_sum(p, e2), exact_sum(err, e2))


_DecStats = tuple[Fraction, Fraction, Fraction | None, Fraction | None]  # sum, sum sq, min, max


def _merge_dec(a: _DecStats | None, b: _DecStats | None) -> _DecStats | None:
    if a is None or b is None:
        return None
    lo = [v for v in (a[2], b[2]) if v is not None]
    hi = [v for v in (a[3], b[3]) if v is not None]
    return (a[0] + b[0], a[1] + b[1], min(lo) if lo else None, max(hi) if hi else None)


@dataclass
class _VarStats:
    """Mergeable partial statistics of one numeric variable (non-missing values only).

    ``total``/``total_sq``/``vmin``/``vmax``: of the float64 values (binary-exact sums);
    ``dec``: exact (sum, sum of squares, min, max) of the values as integers or short
    decimals (:mod:`dpriv.metrics.kpr_exact`), ``None`` when some value is neither.
    """

    count: int = 0
    n_inf: int = 0
    total: ExactSum = (0, 0)
    total_sq: ExactSum = (0, 0)
    vmin: float = math.inf
    vmax: float = -math.inf
    dec: _DecStats | None = (Fraction(0), Fraction(0), None, None)

    def merge(self, other: _VarStats) -> _VarStats:
        return _VarStats(
            self.count + other.count,
            self.n_inf + other.n_inf,
            add_exact(self.total, other.total),
            add_exact(self.total_sq, other.total_sq),
            min(self.vmin, other.vmin),
            max(self.vmax, other.vmax),
            _merge_dec(self.dec, other.dec),
        )


@dataclass
class Partial:
    """Partial statistics of ``U`` over a partition: one entry per numeric variable."""

    stats: list[_VarStats]

    def merge(self, other: Partial) -> Partial:
        return Partial([a.merge(b) for a, b in zip(self.stats, other.stats, strict=True)])


@dataclass(frozen=True)
class Grid:
    """Internal bin grid of one numeric variable, or ``None`` in :class:`Specs` when no
    non-missing value exists in ``U``."""

    lo: float
    hi: float
    step: float
    n_bins: float  # float: may exceed int64
    exact: ExactGrid | None = None  # the exact grid (None only in Dask meta dummies)


@dataclass(frozen=True)
class Specs:
    """Bin grids of the numeric variables (in known order) + the problems found."""

    grids: tuple[Grid | None, ...]
    reports: tuple[BinSpec, ...]
    errors: tuple[str, ...]


def bin_index(y: np.ndarray, lo: float, hi: float, step: float, n_bins: float) -> np.ndarray:
    """Bin index of numeric values by (E22); float64 array of the shape of ``y``.

    ``floor((y - lo) / step)`` for ``lo <= y <= hi`` (left-closed bins, the last one
    extended to include ``hi``: an index ``>= n_bins`` is mapped to ``n_bins - 1``),
    :data:`BELOW` for ``y < lo``, :data:`ABOVE` for ``y > hi``, :data:`MISSING` for NaN.
    ``step == 0`` means a single bin (index 0). Bin edges are never materialised, so a
    huge ``(hi - lo) / step`` costs nothing. The indices are float64 (exact integers up to
    2**53; beyond, still the same float for the same input in both tables).

    Parameters
    ----------
    y : ndarray of float64, shape (k,)
    lo, hi : float
        Finite, ``lo <= hi``.
    step : float
        ``>= 0``.
    n_bins : float
        ``max(1, ceil((hi - lo) / step))``, 1 when ``step == 0``.
    """
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if step > 0:
            idx = np.minimum(np.floor((y - lo) / step), n_bins - 1.0)
        else:
            idx = np.zeros_like(y)
        out = np.where(y < lo, BELOW, np.where(y > hi, ABOVE, idx))
    out[np.isnan(y)] = MISSING
    return out


def bin_values(raw: np.ndarray, miss: np.ndarray, grid: Grid | None) -> np.ndarray:
    """(E22) bin of each value of one numeric variable: float64 of shape (k,).

    ``raw``: int64/uint64/float64 values, shape (k,) (the value under a missing flag is
    ignored); ``miss``: bool, shape (k,). Regular bins ``0..n_bins-1``, :data:`BELOW`,
    :data:`ABOVE`, :data:`MISSING`, and :data:`NO_BINS` for every non-missing value when
    the variable has no grid (no non-missing value in ``U``).
    """
    if grid is None:
        b = np.full(len(raw), NO_BINS)
    elif grid.exact is not None:
        b = exact_bins(raw, grid.exact)  # exact (E22), issue 15
    else:
        b = bin_index(raw.astype(np.float64), grid.lo, grid.hi, grid.step, grid.n_bins)
    b[miss] = MISSING
    return b


#: Values per chunk of the exact sums (bounded temporaries; exact sums add up exactly).
STATS_CHUNK = 1 << 18


def _chunked(fn, y: np.ndarray) -> ExactSum:
    total: ExactSum = (0, 0)
    for k in range(0, len(y), STATS_CHUNK):
        total = add_exact(total, fn(y[k : k + STATS_CHUNK]))
    return total


def _chunked_int_sums(v: np.ndarray, scale: float | None = None) -> tuple[int, int, int, int]:
    """:func:`int_sums` of ``v`` (non-empty), or of ``rint(v * scale)`` as int64, by chunks."""
    s1 = s2 = 0
    lo = hi = None
    for k in range(0, len(v), STATS_CHUNK):
        c = v[k : k + STATS_CHUNK]
        if scale is not None:
            c = np.rint(c * scale).astype(np.int64)
        a, b, clo, chi = int_sums(c)
        s1, s2 = s1 + a, s2 + b
        lo = clo if lo is None else min(lo, clo)
        hi = chi if hi is None else max(hi, chi)
    return s1, s2, lo, hi  # type: ignore[return-value]


def var_stats(raw: np.ndarray, *, binary: bool = True) -> _VarStats:
    """Partial statistics of one numeric variable over its non-missing values ``raw``
    (int64/uint64 or float64, shape (k,)). ``binary=False`` skips the binary-exact sums
    of a float column whose values are all short decimals (their decimal sums are used);
    only a caller that merges nothing else may skip them (the pandas path)."""
    if raw.dtype.kind in "iu":  # exact integers (also beyond 2**53)
        if len(raw) == 0:
            return _VarStats()
        s1, s2, lo, hi = _chunked_int_sums(raw)
        return _VarStats(len(raw), 0, vmin=float(lo), vmax=float(hi), dec=(s1, s2, lo, hi))
    y = raw.astype(np.float64, copy=False)
    inf = np.isinf(y)
    n_inf = int(inf.sum())
    if n_inf:
        y = y[~inf]
    if len(y) == 0:
        return _VarStats(n_inf=n_inf)
    d = decimal_scale(y)
    dec = None
    if d is not None:
        x1, x2, xlo, xhi = _chunked_int_sums(y, 10.0**d)
        p = 10**d
        dec = (Fraction(x1, p), Fraction(x2, p * p), Fraction(xlo, p), Fraction(xhi, p))
    exact_binary = binary or dec is None
    return _VarStats(
        count=len(y),
        n_inf=n_inf,
        total=_chunked(exact_sum, y) if exact_binary else (0, 0),
        total_sq=_chunked(_exact_sum_of_squares, y) if exact_binary else (0, 0),
        vmin=float(y.min()),
        vmax=float(y.max()),
        dec=dec,
    )


def merge_partials(parts: pd.Series | Sequence[Partial]) -> Partial:
    """The :class:`Partial` of the union of the partitions of ``parts`` (at least one)."""
    it = iter(list(parts))
    acc = next(it)
    for p in it:
        acc = acc.merge(p)
    return acc


def finalize_specs(
    parts: pd.Series | Sequence[Partial],
    names: Sequence[str],
    tolerance: float,
    padding: float,
    ddof: int,
) -> Specs:
    """Bin grids (§5.2 step 4, §5.3) from the merged exact statistics of ``U``."""
    total = merge_partials(parts)
    grids: list[Grid | None] = []
    reports: list[BinSpec] = []
    errors: list[str] = []
    nan = math.nan
    for name, st in zip(names, total.stats, strict=True):
        if st.n_inf:
            errors.append(
                f"known variable {name!r} has {st.n_inf} infinite value(s) among the unique "
                "original records; replace them by NaN (a level of its own) or finite values"
            )
        if st.count == 0:
            grids.append(None)
            reports.append(BinSpec(nan, nan, nan, 0, nan, nan, 0))
            continue
        n = st.count
        if st.dec is not None:  # integers / short decimals: exact decimal statistics
            s1, s2, qmin, qmax = (Fraction(v) for v in st.dec)  # type: ignore[arg-type]
        else:  # other floats: their exact binary values
            s1, s2 = to_fraction(st.total), to_fraction(st.total_sq)
            qmin, qmax = Fraction(st.vmin), Fraction(st.vmax)
        mean_q = s1 / n
        mean = float(mean_q)
        if n - ddof > 0:
            var_q = (s2 - s1 * s1 / n) / (n - ddof)  # exact sum of squared deviations / (n - ddof)
            try:
                var = float(var_q)
            except OverflowError:
                var = math.inf
            std = math.sqrt(var)
        else:
            var_q = Fraction(0)
            std = 0.0  # not more than ddof values: no observed spread [proposed]
        with np.errstate(over="ignore"):
            lo = st.vmin - padding * std
            hi = st.vmax + padding * std
            step = tolerance * abs(mean)
            if step == 0.0:  # mean 0 (or underflow): 5 % of the range of U [proposed]
                step = tolerance * (st.vmax - st.vmin)
        if not all(math.isfinite(v) for v in (std, lo, hi, step)):
            errors.append(
                f"known variable {name!r}: values too large in magnitude to bin "
                f"(min {st.vmin!r}, max {st.vmax!r}, std {std!r}); rescale the column "
                "in both tables (e.g. change its unit)"
            )
            grids.append(None)
            reports.append(BinSpec(lo, hi, step, 0, mean, std, n))
            continue
        # the exact grid (issue 15): tolerance and padding as the decimals they are written as
        tol_q, pad_q = Fraction(repr(float(tolerance))), Fraction(repr(float(padding)))
        step_q = tol_q * abs(mean_q)
        if step_q == 0:
            step_q = tol_q * (qmax - qmin)
        exact = ExactGrid.build(qmin, qmax, step_q, pad_q * pad_q * var_q, st.dec is not None)
        n_bins = exact.n_bins
        grids.append(Grid(lo, hi, step, float(n_bins), exact))
        reports.append(BinSpec(lo, hi, step, n_bins, mean, std, n))
    return Specs(tuple(grids), tuple(reports), tuple(errors))

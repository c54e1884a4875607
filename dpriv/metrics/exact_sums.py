"""Exact sums of float64 values: order-free, so partial sums computed per Dask partition
add up to the same bits as one sum in process.

A sum is an :data:`ExactSum` ``(numerator, exponent)``, the value ``numerator * 2**exponent``
(Python integers: no rounding at all); :func:`ratio` rounds a quotient once, correctly.
The KPR bin statistics (:mod:`dpriv.metrics.kpr_binning`) and the per-part utility sums
(:mod:`dpriv.metrics.utility`) use them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

ExactSum = tuple[int, int]  # (numerator, exponent): value = numerator * 2**exponent


def exact_sum(values: np.ndarray, extra_exp: np.ndarray | int = 0) -> ExactSum:
    """Exact sum of ``values * 2**extra_exp`` (finite float64, shape (k,)).

    Every float64 is ``M * 2**E`` with an integer ``|M| < 2**53``; the mantissas are summed
    in int64 per exponent (split in 26-bit halves so no overflow below 2**36 terms) and the
    few per-exponent totals are combined as Python integers.
    """
    values = np.asarray(values, dtype=np.float64)
    extra = np.broadcast_to(np.asarray(extra_exp, dtype=np.int64), values.shape)
    keep = values != 0.0
    if not keep.any():
        return (0, 0)
    values, extra = values[keep], extra[keep]
    mant, exp = np.frexp(values)
    m = (mant * 9007199254740992.0).astype(np.int64)  # * 2**53, exact
    e = exp.astype(np.int64) + extra - 53
    order = np.argsort(e.astype(np.int16), kind="stable")  # |e| < 2**12: int16 radix sort
    es = e[order]
    ms = m[order]
    high = ms >> 26  # arithmetic shift: ms = high * 2**26 + low, 0 <= low < 2**26
    low = ms - (high << 26)
    starts = np.flatnonzero(np.concatenate(([True], es[1:] != es[:-1])))
    s_high = np.add.reduceat(high, starts)
    s_low = np.add.reduceat(low, starts)
    e0 = int(es[0])
    total = 0
    for sh, sl, eg in zip(s_high.tolist(), s_low.tolist(), es[starts].tolist(), strict=True):
        total += ((sh << 26) + sl) << (eg - e0)
    return (total, e0)


def add_exact(a: ExactSum, b: ExactSum) -> ExactSum:
    if a[0] == 0:
        return b
    if b[0] == 0:
        return a
    e = min(a[1], b[1])
    return ((a[0] << (a[1] - e)) + (b[0] << (b[1] - e)), e)


def to_fraction(a: ExactSum) -> Fraction:
    num, e = a
    return Fraction(num << e) if e >= 0 else Fraction(num, 1 << -e)


def ratio(total: ExactSum | Fraction | int, denominator: ExactSum | Fraction | int) -> float:
    """``total / denominator`` (a non-zero denominator) rounded once to the nearest float64."""
    as_q = [to_fraction(v) if isinstance(v, tuple) else Fraction(v) for v in (total, denominator)]
    return float(as_q[0] / as_q[1])

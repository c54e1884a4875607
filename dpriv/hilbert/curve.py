"""Integer grid and Hilbert index of quasi-identifier vectors (docs/algorithms.md §2.2).

Algorithm 2 (Generalize) sorts the tuples of a view by the Hilbert index of their
quasi-identifier (QI) vector. This module provides the three steps:

* :func:`grid_coords` / :func:`grid_codes` put one numeric / categorical QI on the integer
  grid ``[0, 2**bits)`` using the *policy* domain, so keys are stable across releases;
* :func:`default_bits` chooses the number of bits per dimension ``p``;
* :func:`hilbert_index` computes the Hilbert distance of each grid point with Skilling's
  algorithm (J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707, 2004),
  compiled with numba, bit-identical to
  ``hilbertcurve.hilbertcurve.HilbertCurve(bits, m).distances_from_points(coords)``
  (package ``hilbertcurve`` v2.x) for the same column (dimension) order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numba import njit

from dpriv.errors import InputError, PolicyError

__all__ = ["default_bits", "grid_codes", "grid_coords", "hilbert_index"]

#: Largest number of bits per dimension the grid functions accept: above 52 bits a float64
#: cannot represent every grid point, so the rounding would no longer be exact.
MAX_GRID_BITS = 52

#: Cap on :func:`default_bits` (docs/algorithms.md §2.2, [proposed]).
DEFAULT_BITS_CAP = 16


# --------------------------------------------------------------------------------------------
# Hilbert index
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _hilbert_kernel(points, bits):  # pragma: no cover - compiled by numba
    """Skilling's AxesToTranspose + transpose-to-integer, one row at a time.

    ``points`` is a C-contiguous (n, m) uint64 array, only read. The steps and their order
    follow ``HilbertCurve.distance_from_point`` of ``hilbertcurve`` 2.x exactly; every
    constant is a uint64 so numba never mixes signed and unsigned integers.
    """
    n, m = points.shape
    out = np.empty(n, dtype=np.uint64)
    x = np.empty(m, dtype=np.uint64)
    zero = np.uint64(0)
    one = np.uint64(1)
    top = one << np.uint64(bits - 1)  # M = 2**(bits-1)
    for r in range(n):
        for i in range(m):
            x[i] = points[r, i]
        # Inverse undo excess work
        q = top
        while q > one:
            p = q - one
            for i in range(m):
                # Branchless form of: if x[i] & q: x[0] ^= p (invert)
                # else: exchange the low bits of x[0] and x[i]. (For i == 0 the exchange
                # is a no-op, t == 0.) Random data make the branch unpredictable.
                s = zero - np.uint64((x[i] & q) != zero)  # all ones if bit set, else 0
                t = (x[0] ^ x[i]) & p & ~s
                x[0] ^= (p & s) ^ t
                x[i] ^= t
            q >>= one
        # Gray encode
        for i in range(1, m):
            x[i] ^= x[i - 1]
        t = zero
        q = top
        while q > one:
            if x[m - 1] & q:
                t ^= q - one
            q >>= one
        for i in range(m):
            x[i] ^= t
        # Transpose -> integer: bit b of every axis, most significant bit first,
        # axis 0 first within a bit level.
        h = zero
        for b in range(bits - 1, -1, -1):
            sb = np.uint64(b)
            for i in range(m):
                h = (h << one) | ((x[i] >> sb) & one)
        out[r] = h
    return out


def hilbert_index(coords: np.ndarray, bits: int) -> np.ndarray:
    """Hilbert distance of each grid point (Skilling 2004).

    Parameters
    ----------
    coords : numpy.ndarray, shape (n, m), any integer dtype
        One row per tuple, one column per QI (dimension), already on the integer grid,
        every value in ``[0, 2**bits)``. Use :func:`grid_coords` / :func:`grid_codes` to
        put raw values on the grid. The array is never modified.
    bits : int
        Bits per dimension ``p`` (``>= 1``), with ``bits * m <= 64`` so that a distance
        fits in a uint64.

    Returns
    -------
    numpy.ndarray, shape (n,), dtype uint64
        Distance of each point along the Hilbert curve of order ``bits`` in ``m``
        dimensions, in ``[0, 2**(bits*m))``. Bit-identical to
        ``hilbertcurve.hilbertcurve.HilbertCurve(bits, m).distances_from_points(coords)``
        (``hilbertcurve`` 2.x) with the same column order. ``n == 0`` gives an empty
        array.

    Raises
    ------
    dpriv.errors.InputError
        If ``coords`` is not 2-D or has no column, ``bits < 1`` or ``bits * m > 64``,
        the dtype is not integer (floats must be put on the grid with
        :func:`grid_coords` first), or a value is negative or ``>= 2**bits``.

    Notes
    -----
    docs/algorithms.md §2.2 "Grid and Hilbert index"; J. Skilling, "Programming the Hilbert
    curve", AIP Conference Proceedings 707 (2004) 381-387 (AxesToTranspose, then the
    transposed bits are interleaved, axis 0 most significant within each bit level).
    """
    arr = np.asarray(coords)
    if arr.ndim != 2:
        raise InputError(
            f"coords must be a 2-D array of shape (n, m) (one column per QI), got "
            f"{arr.ndim}-D with shape {arr.shape}; reshape it, e.g. values.reshape(-1, 1) "
            f"for a single QI"
        )
    n, m = arr.shape
    if m < 1:
        raise InputError("coords has no column: give at least one QI (m >= 1)")
    if isinstance(bits, bool) or not isinstance(bits, int | np.integer):
        raise InputError(f"bits must be an integer, got {bits!r}")
    bits = int(bits)
    if bits < 1:
        raise InputError(f"bits must be >= 1, got {bits}; use default_bits() to choose it")
    if bits * m > 64:
        raise InputError(
            f"bits * m = {bits} * {m} = {bits * m} > 64: the Hilbert distance would not fit "
            f"in a uint64; lower bits to at most {64 // m} (default_bits() does this)"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputError(
            f"coords must have an integer dtype, got {arr.dtype}; put numeric values on the "
            f"grid explicitly with grid_coords(values, low, high, bits) and categorical "
            f"codes with grid_codes(codes, n_levels, bits)"
        )
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    if np.issubdtype(arr.dtype, np.signedinteger):
        lo = int(arr.min())
        if lo < 0:
            raise InputError(
                f"coords contains a negative value ({lo}); grid coordinates must lie in "
                f"[0, 2**bits) = [0, {2**bits}); use grid_coords / grid_codes"
            )
    hi = int(arr.max())
    if hi >= 1 << bits:
        raise InputError(
            f"coords contains {hi} >= 2**bits = {2**bits}; grid coordinates must lie in "
            f"[0, {2**bits}); raise bits or rescale with grid_coords / grid_codes"
        )
    # A copy unless arr is already C-contiguous uint64; the kernel only reads it anyway.
    pts = np.ascontiguousarray(arr, dtype=np.uint64)
    return _hilbert_kernel(pts, bits)


# --------------------------------------------------------------------------------------------
# Grid
# --------------------------------------------------------------------------------------------
def _check_grid_bits(bits: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int | np.integer):
        raise InputError(f"bits must be an integer, got {bits!r}")
    bits = int(bits)
    if not 1 <= bits <= MAX_GRID_BITS:
        raise InputError(
            f"bits must be in [1, {MAX_GRID_BITS}] for the grid (float64 precision), got "
            f"{bits}; use default_bits() to choose it"
        )
    return bits


def grid_coords(values: np.ndarray, low: float, high: float, bits: int) -> np.ndarray:
    """Put the values of ONE numeric QI on the integer grid ``[0, 2**bits)``.

    ``g = rint((v - low) / (high - low) * (2**bits - 1))``, so ``low -> 0`` and
    ``high -> 2**bits - 1``.

    Parameters
    ----------
    values : numpy.ndarray, shape (n,), numeric (integer or float) dtype
        The QI values; never modified. Every value must lie in ``[low, high]``.
    low, high : float
        The QI domain taken from the **policy** (not from the view), so that keys are
        stable across releases; finite, ``low <= high``.
    bits : int
        Bits per dimension, in ``[1, 52]`` (float64 represents every grid point exactly).

    Returns
    -------
    numpy.ndarray, shape (n,), dtype uint64
        Grid coordinates in ``[0, 2**bits - 1]``. Halves are rounded to even
        (``numpy.rint``): e.g. 15.5 -> 16 but 14.5 -> 14. If ``high == low`` (degenerate
        domain) every coordinate is 0 and nothing is divided by zero.

    Raises
    ------
    dpriv.errors.InputError
        If ``values`` is not 1-D or not numeric, contains NaN (a missing value must never
        be mapped to key 0: impute or drop it first), or a value outside ``[low, high]``;
        or if ``bits`` is out of range.
    dpriv.errors.PolicyError
        If ``low`` or ``high`` is not finite or ``low > high``.

    Notes
    -----
    docs/algorithms.md §2.2 "Grid and Hilbert index" (numeric QI, [proposed]).
    """
    bits = _check_grid_bits(bits)
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(
            f"values must be a 1-D array (one QI), got shape {arr.shape}; call grid_coords once per QI column"
        )
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise InputError(
            f"values must have a numeric dtype, got {arr.dtype}; for a categorical QI use "
            f"grid_codes(codes, n_levels, bits)"
        )
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"domain bounds must be numbers, got low={low!r}, high={high!r}") from exc
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise PolicyError(
            f"invalid domain [low, high] = [{low}, {high}]: bounds must be finite with "
            f"low <= high; fix the QI domain in the policy"
        )
    v = arr.astype(np.float64)  # always a copy: the caller's array is never touched
    if np.isnan(v).any():
        raise InputError(
            f"values contain {int(np.isnan(v).sum())} NaN (missing) value(s); a missing value "
            f"must never be mapped to a grid key: impute or drop those rows first"
        )
    outside = (v < lo) | (v > hi)
    if outside.any():
        raise InputError(
            f"{int(outside.sum())} value(s) outside the domain [{low}, {high}] (min "
            f"{v.min()}, max {v.max()}); widen the domain in the policy or clean the data"
        )
    if hi == lo:
        return np.zeros(arr.shape[0], dtype=np.uint64)
    # v - lo <= hi - lo and the quotient is <= 1 in floating point too (rounding is
    # monotone), so the product never exceeds 2**bits - 1, exactly representable.
    g = np.rint((v - lo) / (hi - lo) * float(2**bits - 1))
    return g.astype(np.uint64)


def grid_codes(codes: np.ndarray, n_levels: int, bits: int) -> np.ndarray:
    """Put the codes of ONE categorical QI on the integer grid ``[0, 2**bits)``.

    The code ``r`` is the rank of the value in the policy's value order (hierarchy leaf
    order when a hierarchy exists). It is scaled as a numeric QI on the domain
    ``[0, n_levels - 1]``: ``g = rint(r / (n_levels - 1) * (2**bits - 1))``; ``g = 0`` for
    every code when ``n_levels == 1``.

    Parameters
    ----------
    codes : numpy.ndarray, shape (n,), integer dtype
        Ranks in ``[0, n_levels)``; never modified. A negative code (e.g. pandas' ``-1``
        for a missing category) is refused.
    n_levels : int
        Number of values of the QI in the policy (``>= 1``).
    bits : int
        Bits per dimension, in ``[1, 52]``.

    Returns
    -------
    numpy.ndarray, shape (n,), dtype uint64
        Grid coordinates in ``[0, 2**bits - 1]``; halves are rounded to even
        (``numpy.rint``), as in :func:`grid_coords`.

    Raises
    ------
    dpriv.errors.InputError
        If ``codes`` is not a 1-D integer array, or a code is outside ``[0, n_levels)``;
        or ``bits`` is out of range.
    dpriv.errors.PolicyError
        If ``n_levels < 1``.

    Notes
    -----
    docs/algorithms.md §2.2 "Grid and Hilbert index" (categorical QI, [proposed]).
    """
    bits = _check_grid_bits(bits)
    if isinstance(n_levels, bool) or not isinstance(n_levels, int | np.integer):
        raise PolicyError(f"n_levels must be an integer, got {n_levels!r}")
    n_levels = int(n_levels)
    if n_levels < 1:
        raise PolicyError(f"n_levels must be >= 1, got {n_levels}; the QI has no value")
    arr = np.asarray(codes)
    if arr.ndim != 1:
        raise InputError(
            f"codes must be a 1-D array (one QI), got shape {arr.shape}; call grid_codes once per QI column"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputError(
            f"codes must be integer ranks, got dtype {arr.dtype}; map each category to its "
            f"rank in the policy's value order first (e.g. pandas Categorical .codes)"
        )
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0:
            raise InputError(
                f"codes contain a negative value ({lo}); -1 usually marks a missing or "
                f"unknown category: impute or drop those rows, or add the value to the policy"
            )
        if hi >= n_levels:
            raise InputError(
                f"codes contain {hi} >= n_levels = {n_levels}; codes must lie in "
                f"[0, {n_levels}): add the value to the policy's value order"
            )
    return grid_coords(arr, 0, n_levels - 1, bits)


def default_bits(domain_sizes: Sequence[int]) -> int:
    """Bits per dimension for the Hilbert grid of ``m`` QIs.

    ``p = max(1, ceil(log2(max(domain_sizes))))``, capped at 16 and at ``floor(64 / m)``
    so that ``p * m <= 64`` (the index fits in a uint64).

    Parameters
    ----------
    domain_sizes : sequence of int, length m >= 1
        Number of distinct values of each QI's policy domain (each ``>= 1``).

    Returns
    -------
    int
        ``p`` in ``[1, 16]``. E.g. ``(30, 2, 30) -> 5`` (the paper's data).

    Raises
    ------
    dpriv.errors.PolicyError
        If ``domain_sizes`` is empty, holds a non-integer or a size ``< 1``, or has more
        than 64 entries (no grid of at least 1 bit per QI fits in 64 bits).

    Notes
    -----
    docs/algorithms.md §2.2 "Grid and Hilbert index" (bits per dimension, [proposed]).
    """
    sizes = list(domain_sizes)
    m = len(sizes)
    if m == 0:
        raise PolicyError("domain_sizes is empty: give the domain size of at least one QI")
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 1:
            raise PolicyError(f"every domain size must be an integer >= 1, got {s!r} in {sizes}")
    if m > 64:
        raise PolicyError(
            f"{m} QIs: at most 64 fit in a 64-bit Hilbert index with 1 bit each; "
            f"reduce the number of quasi-identifiers"
        )
    p = max(1, (int(max(sizes)) - 1).bit_length())  # ceil(log2(max size)), exact
    return min(p, DEFAULT_BITS_CAP, 64 // m)

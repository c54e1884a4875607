"""Stable multi-column row orders of a frame, the same as pandas' ``sort_values(columns,
kind="stable")``, without the sort when the rows are in that order already.

A release sorts large frames several times by integer keys: the Hilbert (key, tie), the
membership's (label, id) in the verification and again in the pk step, the new state's
(bucket, id). A frame whose integer keys are already in order is handed back as it is (one
O(n) comparison, no copy); any other goes to pandas. (NumPy's ``lexsort`` on the raw keys
was measured instead of pandas' sort at 10^6 rows: 0.92x and 1.08x of its time on the
Hilbert and the released-row sorts, within the noise, so pandas keeps the sorting.) The
Hilbert ranges are the exception (:func:`key_tie_positions`): they come out of the shuffle
sorted by key alone, a few hundred rows per key, so only the ties within each key's run are
sorted, by a compiled loop (a third of the time of either sort of both columns).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numba import njit

from dpriv.kernel_args import read_only


def in_order(keys: Sequence[np.ndarray]) -> bool:
    """Whether rows with the key arrays ``keys`` (most significant first, each (n,)) are in
    non-decreasing lexicographic order."""
    n = len(keys[0]) if len(keys) else 0
    if n < 2:
        return True
    after, tied = np.zeros(n - 1, dtype=bool), np.ones(n - 1, dtype=bool)
    for key in keys:
        after |= tied & (key[1:] > key[:-1])
        tied &= key[1:] == key[:-1]
    return bool((after | tied).all())


def _integer_keys(frame: pd.DataFrame, columns: Sequence[str]) -> list[np.ndarray] | None:
    """The key columns as NumPy integer arrays, or None when one is not of a NumPy integer
    dtype (nullable, float, string or object columns: only pandas' sort decides those)."""
    keys = []
    for c in columns:
        dtype = frame[c].dtype
        if not (isinstance(dtype, np.dtype) and dtype.kind in "iu"):
            return None
        keys.append(frame[c].to_numpy())
    return keys


def stable_positions(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Positions (int64, (n,)) of the rows of ``frame`` in stable ``columns`` order: the
    positions ``frame.reset_index(drop=True).sort_values(columns, kind="stable").index`` gives."""
    keys = _integer_keys(frame, columns)
    if keys is not None and in_order(keys):
        return np.arange(len(frame), dtype=np.int64)
    ranked = frame[list(columns)].reset_index(drop=True)
    return ranked.sort_values(list(columns), kind="stable").index.to_numpy(np.int64)


def stably_sorted(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``frame.sort_values(columns, kind="stable")``: the same rows, index and dtypes; ``frame``
    itself when it is already in that order (integer keys)."""
    keys = _integer_keys(frame, columns)
    if keys is not None and in_order(keys):
        return frame
    return frame.sort_values(list(columns), kind="stable")


@njit(cache=True, nogil=True)
def _ties_within_runs(key, tie):  # pragma: no cover - compiled
    """Positions of rows whose ``key`` is non-decreasing in stable (key, tie) order: each run of
    equal keys sorted by tie (mergesort, stable), the runs where they are."""
    n = len(key)
    out = np.arange(n)
    a = 0
    while a < n:
        b = a + 1
        while b < n and key[b] == key[a]:
            b += 1
        if b - a > 1:
            out[a:b] = np.argsort(tie[a:b], kind="mergesort") + a
        a = b
    return out


def key_tie_positions(key: np.ndarray, tie: np.ndarray) -> np.ndarray | None:
    """Positions (int64 (n,)) of rows with uint64 ``key`` and ``tie`` (n,) in stable (key, tie)
    order, the permutation ``np.lexsort((tie, key))`` gives; None when they are in that order.

    Ranges come out of the shuffle sorted by key alone, with a few hundred rows per key at 10^6
    tuples: only the ties within each run of a key are then sorted (compiled), ~3x faster
    than a sort of both columns."""
    key, tie = read_only(np.asarray(key, dtype=np.uint64)), read_only(np.asarray(tie, dtype=np.uint64))
    if in_order([key, tie]):
        return None
    if in_order([key]):
        return _ties_within_runs(key, tie).astype(np.int64, copy=False)
    return np.lexsort((tie, key)).astype(np.int64, copy=False)


#: Most distinct values of a key whose stable sort runs on uint16 (NumPy's radix sort).
RADIX_KEYS = 2**16


def increasing_positions(values: np.ndarray) -> np.ndarray | None:
    """Positions (int64, (n,)) of the integer ``values`` in increasing order, or None when two
    are equal. For distinct values every sort gives this one order, so NumPy's default sort
    (vectorized where the CPU allows; ~2 ms for 125,000 ids against ~12 ms for pandas' stable
    one) serves; with ties only a stable sort keeps the order of the rows."""
    order = np.argsort(values)
    ranked = values[order]
    return order.astype(np.int64, copy=False) if bool((ranked[1:] > ranked[:-1]).all()) else None


def then_by(first: np.ndarray, key: np.ndarray, n_keys: int) -> np.ndarray:
    """``first`` (positions (n,)) put in stable order of ``key[first]``: ``key`` integers in
    ``[0, n_keys)``, the more significant key of a two-key sort whose less significant one
    ``first`` already sorts. Keys that fit 16 bits sort as uint16: NumPy's stable sort of
    them is a radix sort, of int64 a merge sort; both give the same order. Returns int64."""
    ranks = key[first].astype(np.uint16 if n_keys <= RADIX_KEYS else np.int64)
    return first[np.argsort(ranks, kind="stable")].astype(np.int64, copy=False)

"""KPR (E21, E22), integer codes: every known variable of both tables as small integers on a
shared domain, profiles as one int64 key per record (mixed radix), uniqueness by
``np.bincount``. The kernel of the pandas path and of every partition of the Dask path.

Codes (missing is a level of its own, §5.3):

* categorical: ``1 + i`` for the ``i``-th label of a domain shared by the two tables; the
  label of a value is ``str(value)`` (category dtype: the label of the category, never its
  code), so ``"M"`` of a category column equals ``"M"`` of an object column and ``True``
  of a bool column equals ``"True"`` of an object column (docs/algorithms.md §5.2 step 6). Only
  the distinct values are turned into strings, except in object columns whose distinct
  values mix types that compare equal with different labels (``1``/``1.0``/``True``,
  ``0.0``/``-0.0``), where every value is.
* numeric, raw (uniqueness of the original profiles, §5.2 step 3): ``1 + i`` for the
  ``i``-th distinct value (``pd.factorize``: ``-0.0 == 0.0``, NaN missing).
* categorical and raw numeric: 0 is missing;
* numeric, binned (E22): ``bin + 4`` with the float sentinels of
  :mod:`dpriv.metrics.kpr_binning`: no bins (-4) -> 0, missing (-3) -> 1, above (-2) -> 2,
  below (-1) -> 3, regular bin ``b`` -> ``b + 4``.

A profile key is ``sum_i code_i * prod_{j > i} card_j``; when the product of the
cardinalities would pass 2**62 the running key is renumbered (``pd.factorize``) first, so
keys never overflow and two records share a key exactly when they share the profile.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from dpriv.errors import InputError

#: Largest product of cardinalities kept in one int64 key before renumbering.
MAX_CARD = 1 << 62

#: Offset of the binned codes: the smallest sentinel (NO_BINS = -4) becomes 0 (module doc).
BIN_OFFSET = 4

#: Rows per chunk of the binning (bounded temporaries: memory O(chunk), not O(n)).
CHUNK = 1 << 16


# --------------------------------------------------------------------------------------
# categorical: labels and the shared domain
# --------------------------------------------------------------------------------------


def _str_labels(values: np.ndarray) -> np.ndarray:
    """``str`` of each value (object array in, object array of str out, same shape)."""
    return pd.Series(values, dtype=object).astype("str").to_numpy(dtype=object)


def local_codes(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of a categorical column on its own distinct labels.

    Returns ``(codes, labels)``: ``codes`` int array of shape (n,), ``-1`` for a missing
    value, else an index into ``labels`` (object array of ``str``, possibly with repeats:
    two categories may share a label; :func:`shared_domain` merges them).
    """
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        return codes, _str_labels(np.asarray(s.cat.categories, dtype=object))
    if ptypes.is_object_dtype(s.dtype):
        values = s.to_numpy(dtype=object)
        mask = s.isna().to_numpy(dtype=bool)
        try:
            codes, uniques = pd.factorize(values)
        except TypeError:  # unhashable cells: lists or arrays (a Parquet list column)
            raise InputError(
                f"kpr: known variable {s.name!r} holds lists or arrays, not one value per cell; give "
                "each record one value (e.g. the first of the list, or the list joined as text)"
            ) from None
        if not np.array_equal(codes < 0, mask):
            codes = np.where(mask, -1, codes)  # a missing value factorize did not see as one
        non_str = {type(u) for u in uniques.tolist() if not isinstance(u, str)}
        if non_str and not (len(non_str) == 1 and non_str <= {int, bool}):
            # values that compare equal with different labels (1 / 1.0 / True, 0.0 / -0.0):
            # label every value, then number the labels
            labels = _str_labels(np.where(mask, "", values))
            codes, uniques = pd.factorize(labels)
            codes = np.where(mask, -1, codes)
            return codes, np.asarray(uniques, dtype=object)
        return codes, _str_labels(np.asarray(uniques, dtype=object))
    codes, uniques = pd.factorize(s)  # bool, boolean, string dtypes: NA -> -1
    return np.asarray(codes), _str_labels(np.asarray(uniques, dtype=object))


def shared_domain(labels: Iterable[np.ndarray]) -> np.ndarray:
    """The sorted distinct labels of several label arrays (object array of str)."""
    parts = [np.asarray(lab, dtype=object) for lab in labels]
    allv = np.concatenate(parts) if parts else np.array([], dtype=object)
    return np.asarray(sorted(set(allv.tolist())), dtype=object)


def to_domain(codes: np.ndarray, labels: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Local codes (``-1`` missing) onto ``domain``: int64 of shape (n,), 0 missing, 1 + the
    position of the label in ``domain`` otherwise (every label must be in it)."""
    pos = pd.Index(domain).get_indexer(labels) if len(labels) else np.zeros(0, dtype=np.int64)
    lut = np.append(np.where(pos < 0, -1, pos + 1).astype(np.int64), 0)  # code -1 -> last entry: 0
    out = lut[codes]
    if len(out) and out.min() < 0:
        raise AssertionError("kpr: a label outside the shared domain")  # internal invariant
    return out


def categorical_codes(so: pd.Series, ss: pd.Series) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes of one categorical variable in the original and synthetic tables on their
    shared domain: ``(codes_o, codes_s, cardinality)`` (codes int64, 0 = missing)."""
    co, lo = local_codes(so)
    cs, ls = local_codes(ss)
    domain = shared_domain([lo, ls])
    return to_domain(co, lo, domain), to_domain(cs, ls, domain), len(domain) + 1


# --------------------------------------------------------------------------------------
# numeric: raw values and codes
# --------------------------------------------------------------------------------------


def numeric_values(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Values of a numeric column and its missing mask, both of shape (n,).

    NumPy integer dtypes as they are; nullable / Arrow integers as int64 (uint64 when
    unsigned) with missing set to 0; other numeric dtypes as float64 with missing NaN.
    """
    dt = s.dtype
    if isinstance(dt, np.dtype) and dt.kind in "iu":
        return s.to_numpy(), np.zeros(len(s), dtype=bool)
    if ptypes.is_integer_dtype(dt):
        mask = s.isna().to_numpy(dtype=bool)
        target = np.uint64 if ptypes.is_unsigned_integer_dtype(dt) else np.int64
        return s.to_numpy(dtype=target, na_value=0), mask
    vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
    return vals, np.isnan(vals)


def raw_numeric_codes(s: pd.Series) -> tuple[np.ndarray, int, int]:
    """Codes of the raw values of a numeric column: ``(codes, cardinality, n_distinct)``;
    codes int64 of shape (n,), 0 missing, ``1 + i`` the ``i``-th distinct value
    (``-0.0`` and ``0.0`` are one value); ``n_distinct`` counts the non-missing values."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu" and len(s):
        v = s.to_numpy()
        lo, hi = int(v.min()), int(v.max())
        if hi - lo <= 2 * len(v) + (1 << 16):  # a small range: the offset is the code, no hashing
            wide = np.uint64 if v.dtype.kind == "u" else np.int64  # no wrap-around in int8/16/32
            off = (v.astype(wide) - wide(lo)).astype(np.int64)
            n_distinct = int(np.count_nonzero(np.bincount(off, minlength=hi - lo + 1)))
            off += 1
            return off, hi - lo + 2, n_distinct
    codes, uniques = pd.factorize(s if not isinstance(s.dtype, np.dtype) else s.to_numpy())
    codes = np.asarray(codes, dtype=np.int64) + 1
    return codes, len(uniques) + 1, len(uniques)


# --------------------------------------------------------------------------------------
# profiles: mixed-radix keys
# --------------------------------------------------------------------------------------


def renumber(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes ``0..m-1`` of an int64 key (order of first appearance) and ``m``."""
    codes, uniques = pd.factorize(key)
    return np.asarray(codes, dtype=np.int64), len(uniques)


def combine(key: np.ndarray | None, card: int, codes: np.ndarray, card_i: int) -> tuple[np.ndarray, int]:
    """Append one variable to a profile key: ``key * card_i + codes`` (int64), renumbering
    ``key`` first if the product of the cardinalities would pass 2**62."""
    codes = np.asarray(codes, dtype=np.int64)
    if key is None:
        return codes, card_i
    if card * card_i >= MAX_CARD:
        key, card = renumber(key)
    key = key * card_i
    key += codes
    return key, card * card_i


def profile_key(codes: Sequence[np.ndarray], cards: Sequence[int]) -> tuple[np.ndarray, int]:
    """The profile key of records given the codes of each variable: ``(key, cardinality)``."""
    key: np.ndarray | None = None
    card = 1
    for c, k in zip(codes, cards, strict=True):
        key, card = combine(key, card, c, k)
    assert key is not None
    return key, card


def dense(key: np.ndarray, card: int) -> tuple[np.ndarray, int]:
    """``key`` itself when ``card`` is small enough for ``np.bincount`` (at most twice the
    number of records, plus 2**16), else renumbered."""
    if card <= 2 * len(key) + (1 << 16):
        return key, card
    return renumber(key)


def unique_rows(codes: Sequence[np.ndarray], cards: Sequence[int]) -> np.ndarray:
    """Boolean mask of the records whose profile occurs exactly once, shape (n,)."""
    key, card = dense(*profile_key(codes, cards))
    counts = np.bincount(key, minlength=card)
    return counts[key] == 1


def match_counts(key_u: np.ndarray, key_s: np.ndarray, card: int) -> tuple[int, int]:
    """``(|B1|, |S|)`` of (E21) from the binned profile keys of ``U`` and of the avatars:
    the avatar profiles that occur once, and the records of ``U`` whose profile is one."""
    if card <= 2 * len(key_s) + (1 << 16):
        counts = np.bincount(key_s, minlength=card)
        return int((counts == 1).sum()), int((counts[key_u] == 1).sum())
    codes, uniques = pd.factorize(key_s)
    counts = np.bincount(codes, minlength=len(uniques))
    pos = pd.Index(uniques).get_indexer(key_u)
    hit = pos >= 0
    return int((counts == 1).sum()), int((counts[pos[hit]] == 1).sum())

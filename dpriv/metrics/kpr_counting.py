"""KPR (E21), counting: known-variable profiles encoded as integer keys, and the distinct
values of each variable per partition (tree-reduced), for the uniqueness counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from dpriv.metrics.kpr_validation import _LOW_CARDINALITY


def _key_names(n_known: int) -> list[str]:
    return [c for i in range(n_known) for c in (f"k{i}", f"m{i}")]


def _labels(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Value labels of a categorical column as (str array, missing mask); shape (n,).

    Category dtype: the *labels* of the codes (``str(label)``), never the codes; other
    dtypes: ``str(value)``. The same conversion for both tables, so ``"M"`` of a category
    column equals ``"M"`` of an object/str column, and ``True`` of a bool column equals
    ``True`` of an object column.
    """
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        mask = codes < 0
        cats = pd.Series(np.asarray(s.cat.categories, dtype=object), dtype=object)
        labels = cats.astype("str").to_numpy(dtype=object)
        if len(labels) == 0:
            return np.full(len(s), "", dtype=object), mask
        out = labels[np.where(mask, 0, codes)]
        out[mask] = ""
        return out, mask
    mask = s.isna().to_numpy(dtype=bool)
    if ptypes.is_string_dtype(s.dtype) and not ptypes.is_object_dtype(s.dtype):
        return s.to_numpy(dtype=object, na_value=""), mask
    vals = pd.Series(s.to_numpy(dtype=object), dtype=object).where(~mask, "")
    return vals.astype("str").to_numpy(dtype=object), mask


def _encode_raw(part: pd.DataFrame, known: Sequence[str], numeric: Sequence[bool]) -> pd.DataFrame:
    """Raw known-variable profile of each record, without NaN in the keys.

    Returns a DataFrame of shape (n, 2 * len(known)): for variable ``i``, ``k{i}`` holds the
    value (numeric: its own integer dtype or float64 with missing set to 0; categorical:
    the ``str`` label, missing set to ``""``) and ``m{i}`` (bool) the missing flag, so
    that a missing value is a level of its own and no groupby ever drops it.
    """
    cols: dict[str, Any] = {}
    for i, (name, num) in enumerate(zip(known, numeric, strict=True)):
        s = part[name]
        if num:
            dt = s.dtype
            if isinstance(dt, np.dtype) and dt.kind in "iu":
                vals = s.to_numpy()
                mask = np.zeros(len(s), dtype=bool)
            elif ptypes.is_integer_dtype(dt):  # nullable Int64 / UInt64 / pyarrow ints
                mask = s.isna().to_numpy(dtype=bool)
                target = np.uint64 if ptypes.is_unsigned_integer_dtype(dt) else np.int64
                vals = s.to_numpy(dtype=target, na_value=0)
            else:
                vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
                mask = np.isnan(vals)
                vals = np.where(mask, 0.0, vals) + 0.0  # + 0.0 maps -0.0 to 0.0
            cols[f"k{i}"] = vals
        else:
            vals, mask = _labels(s)
            cols[f"k{i}"] = pd.array(vals, dtype="str")
        cols[f"m{i}"] = mask
    return pd.DataFrame(cols, index=pd.RangeIndex(len(part)))


@dataclass
class _Distinct:
    """Up to 11 distinct non-missing values per numeric column (float64 arrays)."""

    values: list[np.ndarray]


def _distinct_chunk(part: pd.DataFrame, names: Sequence[str]) -> _Distinct:
    """Bounded low-cardinality probe of one partition (§5.2 step 2 warning)."""
    out = []
    for name in names:
        v = pd.unique(part[name].to_numpy(dtype=np.float64, na_value=np.nan))
        v = v[~np.isnan(v)]
        out.append(v[: _LOW_CARDINALITY + 1])
    return _Distinct(out)


def _distinct_merge(parts: pd.Series | Sequence[_Distinct]) -> _Distinct:
    parts = list(parts)
    out = []
    for j in range(len(parts[0].values)):
        u = np.unique(np.concatenate([p.values[j] for p in parts]))
        out.append(u[: _LOW_CARDINALITY + 1])
    return _Distinct(out)

"""The previous KPR pandas path (before issue 13), frozen as a test reference.

Every categorical value turned into its ``str`` label and the profiles grouped by pandas on
those strings (``duplicated`` for ``U``, one ``groupby(...).sum()`` for ``B1`` and ``S``);
the exact statistics and bins of :mod:`dpriv.metrics.kpr_binning` / ``kpr_exact``. Slow but
simple: tests/test_kpr_codes.py checks that the integer-code kernels give the same counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from dpriv.metrics.kpr_binning import (
    MISSING,
    NO_BINS,
    Partial,
    Specs,
    bin_index,
    finalize_specs,
    var_stats,
)
from dpriv.metrics.kpr_exact import exact_bins


def _labels(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
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
    cols: dict[str, Any] = {}
    for i, (name, num) in enumerate(zip(known, numeric, strict=True)):
        s = part[name]
        if num:
            dt = s.dtype
            if isinstance(dt, np.dtype) and dt.kind in "iu":
                vals = s.to_numpy()
                mask = np.zeros(len(s), dtype=bool)
            elif ptypes.is_integer_dtype(dt):
                mask = s.isna().to_numpy(dtype=bool)
                target = np.uint64 if ptypes.is_unsigned_integer_dtype(dt) else np.int64
                vals = s.to_numpy(dtype=target, na_value=0)
            else:
                vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
                mask = np.isnan(vals)
                vals = np.where(mask, 0.0, vals) + 0.0
            cols[f"k{i}"] = vals
        else:
            vals, mask = _labels(s)
            cols[f"k{i}"] = pd.array(vals, dtype="str")
        cols[f"m{i}"] = mask
    return pd.DataFrame(cols, index=pd.RangeIndex(len(part)))


def _bin_frame(keys: pd.DataFrame, numeric: Sequence[bool], specs: Specs, origin: int) -> pd.DataFrame:
    cols: dict[str, Any] = {}
    j = 0
    for i, num in enumerate(numeric):
        if num:
            grid = specs.grids[j]
            j += 1
            raw = keys[f"k{i}"].to_numpy()
            miss = keys[f"m{i}"].to_numpy(dtype=bool)
            if grid is None:
                b = np.full(len(raw), NO_BINS)
            elif grid.exact is not None:
                b = exact_bins(raw, grid.exact)
            else:
                b = bin_index(raw.astype(np.float64), grid.lo, grid.hi, grid.step, grid.n_bins)
            b[miss] = MISSING
            cols[f"k{i}"] = b
        else:
            cols[f"k{i}"] = keys[f"k{i}"].array
            cols[f"m{i}"] = keys[f"m{i}"].to_numpy(dtype=bool)
    n = len(keys)
    cols["_o"] = np.full(n, 1 if origin == 0 else 0, dtype=np.int64)
    cols["_a"] = np.full(n, 1 if origin == 1 else 0, dtype=np.int64)
    return pd.DataFrame(cols, index=pd.RangeIndex(n))


def _stats_chunk(u: pd.DataFrame, numeric: Sequence[bool]) -> Partial:
    out = []
    for i, num in enumerate(numeric):
        if num:
            out.append(var_stats(u[f"k{i}"].to_numpy()[~u[f"m{i}"].to_numpy(dtype=bool)]))
    return Partial(out)


def reference_counts(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    known: Sequence[str],
    numeric: Sequence[bool],
    tolerance: float = 0.05,
    padding: float = 0.1,
    ddof: int = 1,
) -> tuple[int, int, int, Specs]:
    """``(|U|, |B1|, |S|, specs)`` by the previous pandas path."""
    enc_o = _encode_raw(original, known, numeric)
    enc_s = _encode_raw(synthetic, known, numeric)
    keys = [c for i in range(len(known)) for c in (f"k{i}", f"m{i}")]
    u = enc_o[~enc_o.duplicated(keys, keep=False)]
    names = [k for k, nm in zip(known, numeric, strict=True) if nm]
    specs = finalize_specs([_stats_chunk(u, numeric)], names, tolerance, padding, ddof)
    both = pd.concat(
        [_bin_frame(u, numeric, specs, 0), _bin_frame(enc_s, numeric, specs, 1)], ignore_index=True
    )
    bkeys = [c for i, num in enumerate(numeric) for c in ((f"k{i}",) if num else (f"k{i}", f"m{i}"))]
    agg = both.groupby(bkeys, sort=False)[["_o", "_a"]].sum()
    b1 = agg["_a"].to_numpy() == 1
    return len(u), int(b1.sum()), int(agg["_o"].to_numpy()[b1].sum()), specs

"""The yardstick of ``bench_kpr.py``: KPR (docs/algorithms.md §5, E21/E22) in plain pandas.

What a data scientist would write from the formula in an afternoon: ``duplicated`` for the
unique originals ``U``, pandas ``mean``/``std``/``min``/``max`` (float64) for the bin grid,
``np.floor`` for the bins with the three sentinels (below, above, missing), a
``groupby(...).size()`` for the unique avatar profiles ``B1`` and a ``merge`` for the
semi-join. Categorical variables are compared by value (both tables carry the same
categories in the benchmark, so the merge compares labels). No exact arithmetic: on data
where no value lies within float rounding of a bin edge it gives dpriv's figures; the
benchmark checks that it does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd


def peer_kpr(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    known: Sequence[str],
    *,
    tolerance: float = 0.05,
    padding: float = 0.1,
    ddof: int = 1,
) -> dict[str, float | int]:
    """KPR in percent and ``|U|``, ``|B1|``, ``|S|`` (keys ``kpr``, ``U``, ``B1``, ``S``)."""
    known = list(known)
    n = len(original)
    o = original[known]
    u = o[~o.duplicated(keep=False)]
    numeric = [
        c for c in known if pd.api.types.is_numeric_dtype(o[c]) and not pd.api.types.is_bool_dtype(o[c])
    ]
    grids = {}
    for c in numeric:
        x = u[c].astype("float64")
        mean, std, mn, mx = x.mean(), x.std(ddof=ddof), x.min(), x.max()
        std = 0.0 if math.isnan(std) else std
        lo, hi = mn - padding * std, mx + padding * std
        step = tolerance * abs(mean) or tolerance * (mx - mn)
        n_bins = max(1, math.ceil((hi - lo) / step)) if step else 1
        grids[c] = (lo, hi, step, n_bins)

    def binned(df: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for c in known:
            if c not in grids:
                out[c] = df[c]
                continue
            lo, hi, step, n_bins = grids[c]
            y = df[c].to_numpy(dtype="float64", na_value=np.nan)
            idx = np.minimum(np.floor((y - lo) / step), n_bins - 1) if step else np.zeros_like(y)
            idx = np.where(y < lo, -1.0, np.where(y > hi, -2.0, idx))
            idx[np.isnan(y)] = -3.0
            out[c] = idx
        return pd.DataFrame(out)

    bs = binned(synthetic).groupby(known, dropna=False, observed=True).size()
    b1 = bs[bs == 1].index.to_frame(index=False)
    matched = len(binned(u).merge(b1, on=known, how="inner"))
    return {"kpr": 100.0 * (1.0 - matched / n), "U": len(u), "B1": len(b1), "S": matched}

"""KPR of a release (docs/algorithms.md §5, E21): draw microdata inside the released intervals
and ask how many original tuples an attacker who knows the QIs can single out in it."""

from __future__ import annotations

import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv._random import keyed
from dpriv.metrics.kpr import kpr
from dpriv.policy import ReleasePolicy
from dpriv.released import ORDER, category_items


def _uniform(keys: np.ndarray, seed: int, column: int) -> np.ndarray:
    """float64 in [0, 1) per row and QI column from a seeded hash of its uint64 key."""
    with np.errstate(over="ignore"):
        base = keys * np.uint64(0x9E3779B97F4A7C15) + np.uint64(column)
    return (keyed(base, seed, "draw") >> np.uint64(11)).astype(np.float64) * 2.0**-53


def draw_microdata(released: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """One synthetic tuple per released row: a seeded uniform draw in ``[<qi>_min, <qi>_max]``
    for a numeric QI (float64), a uniform pick from the value set for a categorical QI.

    The draw of a row is a function of the seed and of its private ``_order`` key when the
    frame has one (the release loop's frames: the draw is then the same for any Dask
    partitioning), else of its position. Returns a frame with the policy's QI columns
    (shape (len(released), m)), on ``released``'s index.
    """
    if ORDER in released.columns:
        keys = released[ORDER].to_numpy(np.uint64)
    else:
        keys = np.arange(len(released), dtype=np.uint64)
    out = {}
    for i, q in enumerate(policy.qi):
        u = _uniform(keys, policy.seed, i)
        if policy.kind(q) == "numeric":
            lo, hi = released[f"{q}_min"].to_numpy(float), released[f"{q}_max"].to_numpy(float)
            out[q] = lo + (hi - lo) * u
        else:
            sets = category_items(released[q], q, policy)
            pick = (u * sets.str.len().to_numpy()).astype(int)
            values = [s[i] for s, i in zip(sets, pick)]
            out[q] = pd.Series(values, dtype=object).map({str(v): v for v in policy.domains[q]}).to_numpy()
    return pd.DataFrame(out, index=released.index)


def _known(original: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame | dd.DataFrame:
    """The known variables of the original view: its QIs, numeric ones as float64 (e.g. category)."""
    return original[list(policy.qi)].astype(dict.fromkeys(policy.numeric_qi, "float64"))


def reference_kpr(original: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> float | None:
    """KPR (percent, E21) of the original view against itself, known variables = the QIs:
    the value a release's KPR is read against (the report's reference line).

    An attacker who matches the original tuples themselves still fails on every respondent
    whose QI profile is shared (not unique, U of E21) or whose binned profile (E22) is shared
    with another one, so this is usually well above 0 (81.1 % on WBCD with three cytology
    scores known); a release's KPR between it and 100 is what the generalization adds. Same
    known-variable frame as
    :func:`release_kpr`; pandas or Dask. Returns None for an empty view.
    """
    with warnings.catch_warnings():  # integer-coded QIs, as in release_kpr
        warnings.simplefilter("ignore")
        known = _known(original, policy)
        if not is_dask(known) and len(known) == 0:
            return None
        return kpr(known, known, list(policy.qi)).kpr


def release_kpr(
    released: pd.DataFrame | dd.DataFrame,
    original: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    n_rows: int | None = None,
) -> float | None:
    """KPR (percent, E21) of microdata drawn from ``released`` against the original view,
    known variables = the QIs; None for an empty release. Pandas or Dask (per partition).
    ``n_rows``: the number of rows of ``released`` when known (a Dask release's is otherwise
    counted, one more compute)."""
    with warnings.catch_warnings():  # integer-coded QIs (gender 1/2) trigger the <= 10 levels hint
        warnings.simplefilter("ignore")
        known = _known(original, policy)
        if is_dask(released):
            if (len(released.index) if n_rows is None else n_rows) == 0:  # row counts, not a draw
                return None
            meta = draw_microdata(released._meta, policy)
            micro = released.map_partitions(draw_microdata, policy, meta=meta)
        else:
            if len(released) == 0:
                return None
            micro = draw_microdata(released, policy)
        return kpr(known, micro, list(policy.qi)).kpr

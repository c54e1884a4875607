"""KPR of a release (ALGORITHMS.md §5, E21): draw microdata inside the released intervals
and ask how many original tuples an attacker who knows the QIs can single out in it."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from dpriv.metrics.kpr import kpr
from dpriv.policy import ReleasePolicy


def draw_microdata(released: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """One synthetic tuple per released row: a seeded uniform draw in ``[<qi>_min, <qi>_max]``
    for a numeric QI (float64), a uniform pick from the value set for a categorical QI.

    Returns a frame with the policy's QI columns (shape (len(released), m)); the same
    released view and seed give the same draw.
    """
    rng = np.random.default_rng([policy.seed, 4])
    out = {}
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            lo, hi = released[f"{q}_min"].to_numpy(float), released[f"{q}_max"].to_numpy(float)
            out[q] = lo + (hi - lo) * rng.random(len(released))
        else:
            sets = released[q].astype(str).str.strip("{}").str.split(",")
            pick = (rng.random(len(released)) * sets.str.len().to_numpy()).astype(int)
            values = [s[i] for s, i in zip(sets, pick)]
            out[q] = pd.Series(values, dtype=object).map({str(v): v for v in policy.domains[q]})
    return pd.DataFrame(out)


def release_kpr(released: pd.DataFrame, original: pd.DataFrame, policy: ReleasePolicy) -> float | None:
    """KPR (percent, E21) of microdata drawn from ``released`` against the original view,
    known variables = the QIs; None for an empty release."""
    if len(released) == 0:
        return None
    with warnings.catch_warnings():  # integer-coded QIs (gender 1/2) trigger the <= 10 levels hint
        warnings.simplefilter("ignore")
        known = original[policy.qi].astype(dict.fromkeys(policy.numeric_qi, "float64"))  # e.g. a category
        return kpr(known, draw_microdata(released, policy), list(policy.qi)).kpr

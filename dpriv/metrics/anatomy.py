"""Utility of an Anatomy release (issue 12, direction 3) and the QI-S association of any release.

An Anatomy release publishes exact QIs, so its average semiperimeter (E11), NCP and GCP (E24)
of the kept tuples are 0 by construction: honest, but not its utility loss. What it gives up
is the link between a tuple's QIs and its sensitive value inside a group. Two measures say
how much, and both are defined for a generalized view too, so formats compare on them:

* ``association_loss`` (:func:`association_loss_table`): mean over released tuples of the
  total variation between the tuple's true value and its group's published distribution of
  S, ``1 - P_Q(s)`` averaged; 0 = every group holds one value (the association is kept),
  ``association_loss_view`` = the same with the whole view as one group (nothing kept);
* ``group_qi_span``: the average semiperimeter (E11) of the groups' QI boxes (min..max of
  each numeric QI over the members, normalised by the domain; (distinct values - 1) /
  (levels - 1) of a categorical QI), i.e. how far apart in QI space the respondents are whose
  sensitive values are pooled. For a generalized view it equals ``average_semiperimeter``.

Pandas or Dask frames; only per-group tables (one row per group, or per (group, value))
reach the client.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from dpriv._dispatch import to_pandas
from dpriv.anatomy import COUNT
from dpriv.metrics.kpr import kpr
from dpriv.metrics.utility import GroupSums, average_class_size, discernibility, gcp, suppression_rate
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP


def association_loss_table(table: pd.DataFrame) -> float | None:
    """``1 - sum_g sum_s c_gs^2 / n_g / N`` from a table of (``qi_group``, ``count``) rows,
    one per (group, value) (an Anatomy sensitive table, or a generalized view's counts);
    in [0, 1 - 1/M]; None for no tuple."""
    c = table[COUNT].to_numpy(dtype=np.float64)
    n = c.sum()
    if n == 0:
        return None
    n_g = table.groupby(GROUP)[COUNT].transform("sum").to_numpy(dtype=np.float64)
    return float(1.0 - (c * c / n_g).sum() / n)


def view_association_loss(view_counts: np.ndarray) -> float | None:
    """:func:`association_loss_table` of the whole view as one group: ``1 - sum_s p_s^2``."""
    vc = np.asarray(view_counts, dtype=np.float64)
    n = vc.sum()
    return None if n == 0 else float(1.0 - ((vc / n) ** 2).sum())


def association_per_group(released: Any, policy: ReleasePolicy) -> np.ndarray:
    """``sum_s c_gs^2 / n_g`` of each QI-group of a generalized view (float64, one per group,
    in no particular order; pandas or Dask): the per-value counts stay on the workers, only
    one row per group (``n_g``, ``sum_s c_gs^2``) is computed. A pandas frame is counted in one
    pass over integer codes (:func:`pair_association`), not a two-key groupby of its texts."""
    if isinstance(released, pd.DataFrame):
        return pair_association(released[GROUP], released[policy.sensitive])
    counts = released[[GROUP, policy.sensitive]].groupby([GROUP, policy.sensitive]).size()
    frame = counts.rename(COUNT).reset_index()
    frame = frame.assign(c2=frame[COUNT] * frame[COUNT])
    per_group = to_pandas(frame.groupby(GROUP).agg(n=(COUNT, "sum"), c2=("c2", "sum")))
    return per_group["c2"].to_numpy(dtype=np.float64) / per_group["n"].to_numpy(dtype=np.float64)


def pair_association(groups: pd.Series, values: pd.Series) -> np.ndarray:
    """``sum_s c_gs^2 / n_g`` (float64, one per group that has a value, in no particular order)
    of the (group, value) pairs of two equal-length columns; a pair with a missing key is left
    out, as a groupby leaves it. Both keys are factorized once and the pairs counted from one
    sorted int64 key, summed as integers: the same per-group figures as the groupby's, in
    another order, which the exact sum of :class:`GroupSums` does not see."""
    g = pd.factorize(groups)[0]
    s, distinct = pd.factorize(values)
    keep = (g >= 0) & (s >= 0)
    width = max(len(distinct), 1)  # key = g * width + s < len(values) ** 2: no overflow below 3e9 rows
    pairs, counts = np.unique(g[keep].astype(np.int64) * width + s[keep], return_counts=True)
    if not len(pairs):
        return np.zeros(0, dtype=np.float64)
    owner = pairs // width  # sorted: each group's pairs are one run
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    counts = counts.astype(np.int64)  # integer sums, converted once, as the groupby's
    n, c2 = np.add.reduceat(counts, starts), np.add.reduceat(counts * counts, starts)
    return c2.astype(np.float64) / n.astype(np.float64)


def released_association_loss(released: Any, policy: ReleasePolicy) -> float | None:
    """:func:`association_loss_table` of a generalized view (pandas or Dask) without gathering
    its (group, value) counts (:func:`association_per_group`); the sum exact, rounded once."""
    n = len(released.index)
    return (
        GroupSums(n_released=int(n))
        .with_association(association_per_group(released, policy))
        .association_loss()
    )


def group_qi_span(qi_table: Any, policy: ReleasePolicy) -> pd.DataFrame:
    """One row per group of an Anatomy QI table (pandas or Dask): ``size`` and ``ncp``, the
    semiperimeter (E11) of the box of the group's exact QIs. Dask aggregates on the workers;
    only per-group rows (and distinct (group, level) pairs) reach the client."""
    frame = qi_table[[GROUP, *policy.qi]]
    agg: dict[str, tuple[str, str]] = {"size": (GROUP, "size")}
    for q in policy.numeric_qi:
        agg[f"{q}__lo"] = (q, "min")
        agg[f"{q}__hi"] = (q, "max")
    g = to_pandas(frame.groupby(GROUP).agg(**agg)).sort_index()
    out = pd.DataFrame({"size": g["size"].to_numpy(dtype=np.int64)}, index=g.index)
    ncp = np.zeros(len(g))
    for q in policy.numeric_qi:
        lo, hi = policy.domains[q]
        width = float(hi) - float(lo)
        if width > 0:
            ncp += (g[f"{q}__hi"].to_numpy(float) - g[f"{q}__lo"].to_numpy(float)) / width
    for q in policy.categorical_qi:
        d = len(policy.domains[q])
        pairs = to_pandas(frame[[GROUP, q]].drop_duplicates())
        distinct = pairs.groupby(GROUP).size().reindex(g.index).to_numpy(dtype=np.float64)
        if d > 1:
            ncp += (distinct - 1.0) / (d - 1)
    out["ncp"] = ncp
    return out


def anatomy_utility(
    qi_table: Any,
    sensitive: pd.DataFrame,
    original: Any,
    policy: ReleasePolicy,
    n_original: int,
    view_counts: np.ndarray,
) -> dict[str, Any]:
    """The ``metrics.json`` utility keys of an Anatomy release (the keys of
    :func:`dpriv.metrics.utility.utility_metrics`, with the exact QIs' semiperimeter, NCP and
    GCP of kept tuples 0) plus ``association_loss``, ``association_loss_view`` and
    ``group_qi_span`` (module doc) and ``kpr``: the KPR (E21) of the exact QIs against the
    original view's (the QI table IS the microdata; no draw)."""
    sizes = sensitive.groupby(GROUP)[COUNT].sum().to_numpy(dtype=np.int64)
    n_released, m = int(sizes.sum()), len(policy.qi)
    groups = pd.DataFrame({"size": sizes, "ncp": np.zeros(len(sizes))})
    spans = group_qi_span(qi_table, policy)
    out = {
        "n_original": int(n_original),
        "n_released": n_released,
        "n_suppressed": int(n_original) - n_released,
        "n_groups": len(sizes),
        "m": m,
        "suppression_rate": suppression_rate(n_released, int(n_original)),
        "min_group_size": int(sizes.min()) if len(sizes) else None,
        "largest_group": int(sizes.max()) if len(sizes) else None,
        "average_semiperimeter": 0.0 if len(sizes) else None,
        "gcp": gcp(groups, int(n_original), m, include_suppressed=True),
        "gcp_kept": gcp(groups, int(n_original), m, include_suppressed=False),
        "discernibility": discernibility(sizes, int(n_original)),
        "c_avg": average_class_size(sizes, policy.k),
        "association_loss": association_loss_table(sensitive),
        "association_loss_view": view_association_loss(view_counts),
        "group_qi_span": float(spans["ncp"].mean()) if len(spans) else None,
    }
    with warnings.catch_warnings():  # integer-coded QIs (gender 1/2): as release_kpr does
        warnings.simplefilter("ignore")
        known = original[list(policy.qi)].astype(dict.fromkeys(policy.numeric_qi, "float64"))
        micro = qi_table[list(policy.qi)].astype(dict.fromkeys(policy.numeric_qi, "float64"))
        out["kpr"] = kpr(known, micro, list(policy.qi)).kpr if n_released else None
    return out

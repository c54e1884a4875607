"""The per-group statistics the two guards read (:mod:`dpriv.exit_guard`,
:mod:`dpriv.posterior_guard`): size, sensitive counts and numeric QI box of every QI-group of a
membership, combined exactly over its parts (integer counts, min/max), and the cost of joining
two groups (the semiperimeter of the union of their boxes)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, map_frame
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE

__all__ = ["boxes", "group_stats", "union_cost"]


def _partial_stats(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Per label of one part: size, counts ``c<s>`` per sensitive code, numeric QI min/max."""
    m = len(policy.sensitive_domain)
    lab = part[LABEL].to_numpy(np.int64)
    uniq, inv = np.unique(lab, return_inverse=True)
    out = {LABEL: uniq, "size": np.bincount(inv, minlength=len(uniq)).astype(np.int64)}
    cnt = np.zeros((len(uniq), m), dtype=np.int64)
    np.add.at(cnt, (inv, part[SCODE].to_numpy(np.int64)), 1)
    for s in range(m):
        out[f"c{s}"] = cnt[:, s]
    for q in policy.numeric_qi:
        v = part[q].to_numpy(np.float64)
        lo = np.full(len(uniq), np.inf)
        hi = np.full(len(uniq), -np.inf)
        np.minimum.at(lo, inv, v)
        np.maximum.at(hi, inv, v)
        out[f"lo_{q}"], out[f"hi_{q}"] = lo, hi
    return pd.DataFrame(out)


def group_stats(assigned, policy: ReleasePolicy) -> pd.DataFrame:
    """Per-group statistics (sorted by label), combined over the parts: exact (ints, min/max)."""
    meta = _partial_stats(assigned._meta, policy) if is_dask(assigned) else None
    parts = map_frame(_partial_stats, assigned, policy, meta=meta)
    parts = parts.compute() if is_dask(parts) else parts
    agg = {
        c: ("min" if c.startswith("lo_") else "max" if c.startswith("hi_") else "sum")
        for c in parts
        if c != LABEL
    }
    return parts.groupby(LABEL, sort=True).agg(agg).reset_index()


class Boxes(NamedTuple):
    """The groups' numeric QI boxes, ``lo`` and ``hi`` (float64, (G, d), d numeric QIs in the
    policy's order), and the QI domains' ``span`` (float64, (d,), at least 1)."""

    lo: np.ndarray
    hi: np.ndarray
    span: np.ndarray


def boxes(stats: pd.DataFrame, policy: ReleasePolicy) -> Boxes:
    """The :class:`Boxes` of the groups of ``stats`` (one row per group: ``lo_<q>``, ``hi_<q>``)."""
    nq = policy.numeric_qi
    lo = stats[[f"lo_{q}" for q in nq]].to_numpy(np.float64).reshape(len(stats), len(nq))
    hi = stats[[f"hi_{q}" for q in nq]].to_numpy(np.float64).reshape(len(stats), len(nq))
    span = np.array([max(float(policy.domains[q][1]) - float(policy.domains[q][0]), 1.0) for q in nq])
    return Boxes(lo, hi, span)


def union_cost(lo: np.ndarray, hi: np.ndarray, g: int, h: np.ndarray, span: np.ndarray) -> np.ndarray:
    """Semiperimeter (normalised by the domains) of the union of box ``g`` with each of ``h``."""
    if lo.shape[1] == 0:
        return np.zeros(len(h))
    return ((np.maximum(hi[g], hi[h]) - np.minimum(lo[g], lo[h])) / span).sum(axis=1)

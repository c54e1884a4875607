"""Key of a row on the Hilbert curve and the Hilbert ranges (docs/algorithms.md §2.2).

The grid bits per QI of a policy, the uint64 key of every row (its QIs on the grid of the
policy domains, optionally the expected rank of S under its prior), the QIs scaled to
[0, 1], and the divisions that cut a key-sorted view into contiguous Hilbert ranges.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv._random import keyed, stable_hash
from dpriv.errors import InputError
from dpriv.hilbert.curve import DEFAULT_BITS_CAP, grid_codes, grid_coords, hilbert_index
from dpriv.policy import ReleasePolicy
from dpriv.released import SCODE
from dpriv.validate import codes

HKEY, TIE = "_hkey", "_tie"


def knowledge_coords(prior: np.ndarray) -> np.ndarray:
    """Two coordinates in [0, 1] of each row of ``prior`` (float64 (n, M), rows sum to 1):
    the expected rank of S, ``mu = sum_s P(s) r(s)`` with ``r(s) = rank / (M - 1)``, and twice
    its standard deviation ``2 sqrt(sum_s P(s) (r(s) - mu)^2)`` (<= 1 on [0, 1]). Respondents
    close in both hold similar revised knowledge (RBK^sv), so a group of them has a small JS
    (E8). Returns float64 (n, 2); a one-value domain gives zeros."""
    prior = np.asarray(prior, dtype=np.float64)
    m = prior.shape[1]
    if m < 2:
        return np.zeros((len(prior), 2))
    r = np.linspace(0.0, 1.0, m)
    mu = prior @ r
    var = np.maximum(prior @ (r * r) - mu * mu, 0.0)
    return np.column_stack([np.clip(mu, 0.0, 1.0), np.clip(2.0 * np.sqrt(var), 0.0, 1.0)])


def is_anatomy(policy: ReleasePolicy) -> bool:
    """Whether groups are formed in knowledge space (``release_format = "anatomy"``)."""
    return policy.release_format == "anatomy"


def key_dims(policy: ReleasePolicy) -> int:
    """Dimensions of the Hilbert key: 2 knowledge coordinates for Anatomy, else the QIs
    (plus one with ``prior_key``)."""
    return 2 if is_anatomy(policy) else len(policy.qi) + int(policy.prior_key)


def _priors(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    missing = [c for c in policy.prior_columns if c not in part.columns]
    if missing:
        raise InputError(
            f"release_format = 'anatomy' orders tuples by their prior (RBK^sv) but columns "
            f"{missing[:3]} are missing; attach priors first (dpriv.state.attach_priors)"
        )
    return part[policy.prior_columns].to_numpy(dtype=np.float64)


def grouping_coords(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """The space in which groups are kept compact, float64 (n, d) in [0, 1]: the QIs
    (:func:`unit_coords`) for a generalized release, the knowledge coordinates of each
    tuple's prior (:func:`knowledge_coords`) for Anatomy, whose QIs are released exactly."""
    return knowledge_coords(_priors(part, policy)) if is_anatomy(policy) else unit_coords(part, policy)


def hilbert_keys(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """uint64 Hilbert key of every row: its QIs on the grid of the policy domains (stable
    across releases) and, with ``policy.prior_key`` and prior columns present, the expected
    rank of S under its prior, ``sum_s P(s) rank(s) / (M - 1)`` in [0, 1]. For
    ``release_format = "anatomy"`` the key ignores the QIs: it is the Hilbert index of the
    two :func:`knowledge_coords` of the prior (the order in which Anatomy groups are cut)."""
    bits = grid_bits(policy)
    if is_anatomy(policy):
        kc = knowledge_coords(_priors(part, policy))
        coords = np.column_stack([grid_coords(kc[:, i], 0.0, 1.0, bits) for i in range(2)])
        return hilbert_index(coords.astype(np.uint64), bits)
    cols = []
    if policy.prior_key and all(c in part.columns for c in policy.prior_columns):
        prior = part[policy.prior_columns].to_numpy(dtype=float)
        rank = prior @ np.linspace(0.0, 1.0, prior.shape[1]) if prior.shape[1] > 1 else np.zeros(len(part))
        cols.append(grid_coords(np.clip(rank, 0.0, 1.0), 0.0, 1.0, bits))
    for q in policy.qi:
        dom = policy.domains[q]
        if policy.kind(q) == "numeric":
            cols.append(grid_coords(part[q].to_numpy(dtype=float), dom[0], dom[1], bits))
        else:
            cols.append(grid_codes(codes(part[q], dom), len(dom), bits))
    coords = np.column_stack(cols) if cols else np.zeros((len(part), 0), dtype=np.uint64)
    return hilbert_index(coords.astype(np.uint64), bits)


def unit_coords(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """QIs scaled to [0, 1] by their policy domains (categorical: rank), float64 (n, m)."""
    cols = []
    for q in policy.qi:
        dom = policy.domains[q]
        if policy.kind(q) == "numeric":
            x, lo, hi = part[q].to_numpy(dtype=float), dom[0], dom[1]
        else:
            x, lo, hi = codes(part[q], dom).astype(float), 0, len(dom) - 1
        cols.append((x - lo) / (hi - lo) if hi > lo else np.zeros(len(part)))
    return np.column_stack(cols) if cols else np.zeros((len(part), 0))


def add_keys(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """``part`` plus ``_hkey`` (uint64), ``_tie`` (uint64, seeded) and ``_s`` (int64 code)."""
    return part.assign(
        **{
            HKEY: hilbert_keys(part, policy),
            TIE: keyed(stable_hash(part[policy.id]), policy.seed, "tie"),
            SCODE: codes(part[policy.sensitive], policy.sensitive_domain),
        }
    )


def split_ranges(frame: pd.DataFrame, divisions: tuple) -> list[pd.DataFrame]:
    """Hilbert ranges of a key-sorted pandas frame, as set_index(divisions=...) would cut them."""
    inner = np.asarray(divisions[1:-1], dtype=np.uint64)
    cuts = np.searchsorted(frame[HKEY].to_numpy(), inner, side="left")
    return [frame.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])]


def pandas_divisions(keys: np.ndarray, npartitions: int) -> tuple:
    """Divisions of ``npartitions`` Hilbert ranges from exact key quantiles (pandas path)."""
    q = np.quantile(np.sort(keys), np.linspace(0, 1, npartitions + 1), method="lower")
    return tuple(int(v) for v in np.unique(q.astype(np.uint64)))


def balanced_divisions(histogram: pd.Series, npartitions: int) -> tuple:
    """Divisions of at most ``npartitions`` Hilbert ranges of nearly equal size from the
    exact key histogram (key -> count); dask's approximate quantiles left 3-4.5x imbalance."""
    hist = histogram.sort_index()
    keys, cum = hist.index.to_numpy(np.uint64), np.cumsum(hist.to_numpy())
    targets = cum[-1] * np.arange(1, npartitions) / npartitions
    inner = keys[np.minimum(np.searchsorted(cum, targets, side="right"), len(keys) - 1)]
    cuts = [int(k) for k in np.unique(inner) if keys[0] < k]
    return (int(keys[0]), *cuts, int(keys[-1]))


def even_divisions(n: int) -> tuple:
    """Divisions of ``n`` equal ranges of uint64 (the shuffle key is uniform on it)."""
    inner = sorted({int(x) for x in np.linspace(0, 2**64 - 1, n + 1, dtype=np.float64)[1:-1]})
    return (0, *[min(x, 2**64 - 2) for x in inner], 2**64 - 1)


def grid_bits(policy: ReleasePolicy) -> int:
    """Bits per QI on the Hilbert grid of ``policy`` (docs/algorithms.md §2.2): ``hilbert_bits``
    when set, else ``ceil(log2)`` of the largest QI domain, capped at 16 and at
    ``64 // (m + prior_key)`` so the key fits in a uint64."""
    if policy.hilbert_bits is not None:
        return policy.hilbert_bits
    if is_anatomy(policy):
        return DEFAULT_BITS_CAP
    sizes = []
    for q in policy.qi:
        dom = policy.domains[q]
        sizes.append(int(dom[1] - dom[0]) + 1 if policy.kind(q) == "numeric" else len(dom))
    p = max(1, int(np.ceil(np.log2(max(max(sizes), 2)))))
    return min(p, DEFAULT_BITS_CAP, 64 // (len(policy.qi) + policy.prior_key))


def keyed_meta(meta: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    return meta.assign(
        **{
            HKEY: pd.Series(dtype="uint64"),
            TIE: pd.Series(dtype="uint64"),
            SCODE: pd.Series(dtype="int64"),
        }
    )

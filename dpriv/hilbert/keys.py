"""Key of a row on the Hilbert curve and the Hilbert ranges (docs/algorithms.md §2.2).

The grid bits per QI of a policy, the uint64 key of every row (its QIs on the grid of the
policy domains, optionally the expected rank of S under its prior), the QIs scaled to
[0, 1], and the divisions that cut a key-sorted view into contiguous Hilbert ranges.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpriv._random import keyed, stable_hash
from dpriv.errors import InputError
from dpriv.hilbert.curve import DEFAULT_BITS_CAP, grid_codes, grid_coords, hilbert_index
from dpriv.policy import ReleasePolicy
from dpriv.released import SCODE
from dpriv.row_order import key_tie_positions
from dpriv.validate import codes

HKEY, TIE = "_hkey", "_tie"


def knowledge_coords(prior: np.ndarray) -> np.ndarray:
    """Hellinger coordinates ``sqrt(P(s))`` of each row of ``prior`` (float64 (n, M), rows sum
    to 1): float64 (n, M) in [0, 1]. Euclidean distance in them is sqrt(2) times the Hellinger
    distance of the priors; a group whose box in them is small holds similar revised knowledge
    (RBK^sv), hence a small JS (E8). The repair attaches a leftover where this box grows least."""
    return np.sqrt(np.clip(np.asarray(prior, dtype=np.float64), 0.0, 1.0))


def knowledge_keys(prior: np.ndarray) -> np.ndarray:
    """uint64 sort key of each prior (float64 (n, M)) in 32 bits: the most likely value, its
    probability, the second most likely value and its probability, most significant first
    (``ceil(log2 M)`` bits per value, the rest split between the two probabilities). Sorting by
    it puts respondents who expect the same values with similar confidence next to each other,
    whatever their QIs: the order in which Anatomy groups are cut. Ties of the probabilities go
    to the lower value; M = 1 gives 0."""
    prior = np.asarray(prior, dtype=np.float64)
    n, m = prior.shape
    if m < 2 or n == 0:
        return np.zeros(n, dtype=np.uint64)
    vbits = int(np.ceil(np.log2(m)))
    pbits1 = (32 - 2 * vbits) // 2
    pbits2 = 32 - 2 * vbits - pbits1
    top2 = np.argsort(-prior, axis=1, kind="stable")[:, :2]
    rows = np.arange(n)
    p1, p2 = prior[rows, top2[:, 0]], prior[rows, top2[:, 1]]

    def q(p, bits):
        return np.minimum((np.clip(p, 0.0, 1.0) * (1 << bits)).astype(np.uint64), np.uint64((1 << bits) - 1))

    key = top2[:, 0].astype(np.uint64) << np.uint64(32 - vbits)
    key |= q(p1, pbits1) << np.uint64(32 - vbits - pbits1)
    key |= top2[:, 1].astype(np.uint64) << np.uint64(pbits2)
    return key | q(p2, pbits2)


def is_anatomy(policy: ReleasePolicy) -> bool:
    """Whether groups are formed in knowledge space (``release_format = "anatomy"``)."""
    return policy.release_format == "anatomy"


def key_dims(policy: ReleasePolicy) -> int:
    """Dimensions of the Hilbert key: the QIs (plus one with ``prior_key``); an Anatomy key
    (:func:`knowledge_keys`, 32 bits) counts as 2 dimensions of 16 bits (top-down blocks)."""
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
    tuple's prior (:func:`knowledge_coords`, (n, M)) for Anatomy, whose QIs are released exactly."""
    return knowledge_coords(_priors(part, policy)) if is_anatomy(policy) else unit_coords(part, policy)


def hilbert_keys(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """uint64 Hilbert key of every row: its QIs on the grid of the policy domains (stable
    across releases) and, with ``policy.prior_key`` and prior columns present, the expected
    rank of S under its prior, ``sum_s P(s) rank(s) / (M - 1)`` in [0, 1]. For
    ``release_format = "anatomy"`` the key ignores the QIs: it is :func:`knowledge_keys` of
    the prior (the order in which Anatomy groups are cut)."""
    if is_anatomy(policy):
        return knowledge_keys(_priors(part, policy))
    bits = grid_bits(policy)
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


def in_key_order(key: np.ndarray, tie: np.ndarray) -> bool:
    """Whether rows with Hilbert ``key`` and ``tie`` (uint64 (n,) each) are in (key, tie) order."""
    return bool(np.all((key[1:] > key[:-1]) | ((key[1:] == key[:-1]) & (tie[1:] >= tie[:-1]))))


def key_ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (``_hkey`` and ``_tie`` columns) in stable (key, tie) order with a fresh
    RangeIndex: the same rows as ``sort_values([HKEY, TIE], kind="stable")``, without moving a
    frame that is already in that order (the pandas path hands on key-sorted ranges; a sort of
    10^6 rows of ~30 columns moves ~0.2 GB)."""
    pos = key_tie_positions(frame[HKEY].to_numpy(np.uint64), frame[TIE].to_numpy(np.uint64))
    # a take of the stable sort's permutation: sort_values' rows, blocks and dtypes
    return frame.reset_index(drop=True) if pos is None else frame.take(pos).reset_index(drop=True)


def split_ranges(frame: pd.DataFrame, divisions: tuple) -> list[pd.DataFrame]:
    """Hilbert ranges of a key-sorted pandas frame, as set_index(divisions=...) would cut them."""
    inner = np.asarray(divisions[1:-1], dtype=np.uint64)
    cuts = np.searchsorted(frame[HKEY].to_numpy(), inner, side="left")
    return [frame.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])]


def pandas_divisions(keys: np.ndarray, npartitions: int) -> tuple:
    """Divisions of ``npartitions`` Hilbert ranges from exact key quantiles (pandas path);
    one empty range for no keys (a view whose every tuple the release gate withheld)."""
    if not len(keys):
        return (0, 0)
    q = np.quantile(np.sort(keys), np.linspace(0, 1, npartitions + 1), method="lower")
    return tuple(int(v) for v in np.unique(q.astype(np.uint64)))


class BalanceTargets(NamedTuple):
    """:func:`balance_targets`' result: the sorted ``keys`` (uint64, (K,)) of a key histogram,
    their cumulative counts ``cum`` (int64, (K,)) and the ``targets`` (float64,
    (npartitions - 1,)), the row counts at which balanced ranges would be cut."""

    keys: np.ndarray
    cum: np.ndarray
    targets: np.ndarray


def balance_targets(histogram: pd.Series, npartitions: int) -> BalanceTargets:
    """The :class:`BalanceTargets` of the key histogram ``histogram`` (key -> count) cut into
    ``npartitions`` ranges."""
    hist = histogram.sort_index()
    keys, cum = hist.index.to_numpy(np.uint64), np.cumsum(hist.to_numpy())
    n = max(int(npartitions), 1)
    return BalanceTargets(keys, cum, cum[-1] * np.arange(1, n) / n)


def balanced_divisions(histogram: pd.Series, npartitions: int) -> tuple:
    """Divisions of at most ``npartitions`` Hilbert ranges of nearly equal size from the
    exact key histogram (key -> count); dask's approximate quantiles left 3-4.5x imbalance."""
    keys, cum, targets = balance_targets(histogram, npartitions)
    inner = keys[np.minimum(np.searchsorted(cum, targets, side="right"), len(keys) - 1)]
    cuts = [int(k) for k in np.unique(inner) if keys[0] < k]
    return (int(keys[0]), *cuts, int(keys[-1]))


def grid_bits(policy: ReleasePolicy) -> int:
    """Bits per QI on the Hilbert grid of ``policy`` (docs/algorithms.md §2.2): ``hilbert_bits``
    when set, else ``ceil(log2)`` of the largest QI domain, capped at 16 and at
    ``64 // (m + prior_key)`` so the key fits in a uint64."""
    if is_anatomy(policy):
        return 16  # the 32-bit knowledge key as 2 x 16 bits (top-down blocks)
    if policy.hilbert_bits is not None:
        return policy.hilbert_bits
    sizes = []
    for q in policy.qi:
        dom = policy.domains[q]
        if policy.kind(q) != "numeric":
            sizes.append(len(dom))
            continue
        span = dom[1] - dom[0]  # Python numbers: a span beyond int64 or float64 (1e308 - -1e308) is fine
        sizes.append(int(span) + 1 if math.isfinite(span) else math.inf)
    largest = max(max(sizes), 2)
    # math.log2 takes integers of any size (np.log2 fails beyond 2**64); an infinite span: the cap
    p = max(1, math.ceil(math.log2(largest))) if math.isfinite(largest) else DEFAULT_BITS_CAP
    return min(p, DEFAULT_BITS_CAP, 64 // (len(policy.qi) + policy.prior_key))


def keyed_meta(meta: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    return meta.assign(
        **{
            HKEY: pd.Series(dtype="uint64"),
            TIE: pd.Series(dtype="uint64"),
            SCODE: pd.Series(dtype="int64"),
        }
    )

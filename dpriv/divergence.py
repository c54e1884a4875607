"""Distances between distributions over D[S]: JS divergence (E8) and EMD (E18, E19).

EMD is computed *exactly* from integer counts: for a group with counts ``m`` (size ``g``)
and a view with counts ``n_v`` (size ``N``), ``EMD = num / den`` with

* equal ground distance (E18): ``num = sum_i |m_i N - n_i g|``, ``den = 2 g N``;
* ordered ground distance (E19): ``num = sum_i |sum_{l<=i} (m_l N - n_l g)|``, ``den = (M-1) g N``.

The test ``num <= t * den`` is the one the grouping and the verifier both use, so a
boundary case such as ordered EMD((1/2,1/2,0), (1/3,1/3,1/3)) = 0.25 is accepted at
t = 0.25 by both (float arithmetic on the distributions gives 0.25000000000000006).

JS (E8) uses equal weights and entropies in ``log_base`` (bits by default). The grouping
keeps the running sums of Section 1.5 (``sum_p``, ``sum_h``); :func:`js_from_sums` turns
them into the divergence. The same prior sums give the RBK-closeness distance
(:func:`tv_from_sums`): the total variation between a group's sensitive distribution and the
mean of its members' priors.
"""

from __future__ import annotations

import numpy as np
from numba import njit

EQUAL, ORDERED = 0, 1
GROUNDS = {"equal": EQUAL, "ordered": ORDERED}

#: Absolute tolerance (bits) of the verifier's JS check: summation order differs between
#: the grouping's running sums and the verifier's fresh sums (about 1e-15 apart).
JS_TOLERANCE = 1e-9
#: The same for the RBK-closeness distance (:func:`tv_from_sums`), a fraction in [0, 1].
TV_TOLERANCE = 1e-9


@njit(cache=True)
def emd_num_den(group_counts, group_size, view_counts, view_size, ground):
    """Exact EMD of one group as an integer fraction ``(num, den)`` (E18 / E19).

    Parameters
    ----------
    group_counts, view_counts : int64 arrays of shape (M,)
    group_size, view_size : int, the sums of the two count vectors (> 0)
    ground : int, ``EQUAL`` or ``ORDERED``
    """
    m = group_counts.shape[0]
    num = 0
    cum = 0
    for i in range(m):
        r = group_counts[i] * view_size - view_counts[i] * group_size
        if ground == ORDERED:
            cum += r
            num += abs(cum)
        else:
            num += abs(r)
    if ground == ORDERED:
        den = (m - 1) * group_size * view_size
    else:
        den = 2 * group_size * view_size
    if den == 0:  # a one-value domain: every group equals the view
        return 0, 1
    return num, den


@njit(cache=True)
def emd_within(num, den, t):
    """True when the EMD ``num / den`` is at most ``t`` (inclusive, (E9))."""
    return num <= t * den


@njit(cache=True)
def entropy(p, log_base):
    """Shannon entropy of one distribution, ``0 log 0 = 0``, in units of ``log_base``."""
    h = 0.0
    for x in p:
        if x > 0.0:
            h -= x * np.log(x)
    return h / np.log(log_base)


@njit(cache=True)
def js_from_sums(sum_p, sum_h, u, log_base):
    """JS divergence of ``u`` equally weighted distributions from their running sums.

    ``sum_p`` is the sum of the distributions (shape (M,)), ``sum_h`` the sum of their
    entropies (Section 1.5, incremental form of (E8)). Clipped at 0 against rounding.
    """
    return js_from_sums_with(sum_p, 0.0, sum_p, sum_h, u, log_base)  # + 0.0 * p: p itself


@njit(cache=True)
def js_from_sums_with(sum_p, sign, extra, sum_h, u, log_base):
    """:func:`js_from_sums` of ``sum_p + sign * extra`` (``sign`` = 1.0, -1.0 or 0.0), without
    building that array: the kernels call it once per candidate tuple, where an allocation
    costs more than the sum. Bit for bit the value of the array form (``a + (-1.0) * b`` is
    ``a - b`` in IEEE arithmetic, ``a + 0.0 * b`` is ``a`` for the finite, non-negative sums
    here, and the terms are added in :func:`entropy`'s order)."""
    if u <= 1:
        return 0.0
    h = 0.0
    for i in range(sum_p.shape[0]):
        x = (sum_p[i] + sign * extra[i]) / u
        if x > 0.0:
            h -= x * np.log(x)
    js = h / np.log(log_base) - sum_h / u
    return js if js > 0.0 else 0.0


@njit(cache=True)
def tv_from_sums(counts, sum_p, u):
    """Total-variation distance ``1/2 sum_s |counts_s / u - sum_p_s / u|`` between the
    sensitive distribution of a group of ``u`` tuples (int counts (M,)) and the mean of its
    members' priors (their sum ``sum_p`` (M,), each prior summing to 1): in [0, 1], 0 when
    the group holds each value as often as its members' priors expect (docs/algorithms.md,
    "RBK-closeness"). 0 for an empty group."""
    return tv_from_sums_with(counts, sum_p, 0.0, sum_p, u)


@njit(cache=True)
def tv_from_sums_with(counts, sum_p, sign, extra, u):
    """:func:`tv_from_sums` with the prior sums ``sum_p + sign * extra`` (no array built; the
    same bits as the array form, as for :func:`js_from_sums_with`)."""
    if u <= 0:
        return 0.0
    d = 0.0
    for i in range(sum_p.shape[0]):
        d += abs(counts[i] - (sum_p[i] + sign * extra[i]))
    return 0.5 * d / u


def emd(p: np.ndarray, q: np.ndarray, ground: str = "equal") -> float:
    """EMD between two distributions of shape (M,) (float arithmetic; E18 / E19).

    For decisions against a threshold use the exact :func:`emd_num_den` on counts.
    """
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    r = p - q
    if GROUNDS[ground] == ORDERED:
        return float(np.abs(np.cumsum(r)).sum() / max(len(r) - 1, 1))
    return float(np.abs(r).sum() / 2)


def js_divergence(dists: np.ndarray, weights: np.ndarray | None = None, log_base: float = 2.0) -> float:
    """Jensen-Shannon divergence of a set of distributions (E8).

    Parameters
    ----------
    dists : float array of shape (u, M), rows summing to 1
    weights : float array of shape (u,) summing to 1; equal weights when omitted (JS-reduce)
    log_base : base of the logarithm; 2 gives bits, ``0 <= JS <= min(log2 u, log2 M)``

    Returns
    -------
    float, the divergence in units of ``log_base`` (0 for a single distribution).
    """
    dists = np.asarray(dists, dtype=float)
    u = dists.shape[0]
    w = np.full(u, 1.0 / u) if weights is None else np.asarray(weights, dtype=float)
    h = np.array([entropy(row, log_base) for row in dists])
    return max(0.0, float(entropy(w @ dists, log_base) - w @ h))


def group_js(dists: np.ndarray, log_base: float = 2.0) -> float:
    """Equal-weight JS of one QI-group's priors through the same sums as the grouping."""
    dists = np.ascontiguousarray(dists, dtype=float)
    h = sum(entropy(row, log_base) for row in dists)
    return js_from_sums(dists.sum(axis=0), h, dists.shape[0], log_base)


def js_rows(p: np.ndarray, q: np.ndarray, log_base: float = 2.0) -> np.ndarray:
    """JS_(1/2,1/2) between the rows of ``p`` and ``q`` (both (n, M)): float64 (n,) (E8, E15
    with no smoothing)."""

    def h(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(x > 0, x * np.log(x), 0.0).sum(axis=1) / np.log(log_base)

    return np.maximum(h((p + q) / 2) - (h(p) + h(q)) / 2, 0.0)

"""Tail risk next to the mean adversary gain (issue 11, docs/algorithms.md §2.4 (E10)).

The mean gain (E10) hides the worst-off respondents; :func:`tail_risk` reports, for one
release (and one as-of release for the retrospective adversary), how many tuples the
adversary pins with confidence >= ``threshold`` (0.9), how often those claims are right, the
largest posterior on a true value, and the number of certain deductions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dpriv.errors import InputError

#: Posterior at or above which a claim counts as confident.
CONFIDENT = 0.9

#: Columns of :meth:`TailRisk.as_row` after ``adversary_gain`` (CSV order).
TAIL_COLUMNS = ("confident_share", "confident_precision", "n_confident", "max_posterior", "n_certain")


@dataclass(frozen=True)
class TailRisk:
    """Mean gain and tail risk of one attacked release.

    Attributes
    ----------
    n_tuples : int
        Released tuples scored (N).
    adversary_gain : float
        (E10): mean of ``PK(true) - m_Q(true)/|Q|``, signed, in [-1, 1]; NaN when N = 0.
    n_confident : int
        Tuples whose largest posterior is >= the threshold (confident claims, right or wrong).
    confident_share : float
        Tuples whose posterior on the TRUE value is >= the threshold, divided by N, in [0, 1];
        NaN when N = 0.
    confident_precision : float
        Share of the confident claims that name the true value, in [0, 1]; NaN without claims.
    max_posterior : float
        Largest posterior on a true value, in [0, 1]; NaN when N = 0.
    n_certain : int or None
        Tuples whose mask of possible values holds a single value (certain deductions); None
        when no mask was given.
    """

    n_tuples: int
    adversary_gain: float
    n_confident: int
    confident_share: float
    confident_precision: float
    max_posterior: float
    n_certain: int | None

    def as_row(self) -> dict:
        """The fields as a dict (CSV row)."""
        return asdict(self)


def tail_risk(
    posteriors: np.ndarray,
    truth: np.ndarray,
    baseline: np.ndarray,
    allowed: np.ndarray | None = None,
    *,
    threshold: float = CONFIDENT,
) -> TailRisk:
    """Mean gain (E10) and tail metrics of one release.

    Parameters
    ----------
    posteriors : ndarray of float64, shape (n, M)
        The adversary's posterior of each tuple (rows sum to 1).
    truth : ndarray of int, shape (n,)
        True sensitive code of each tuple, in ``0 .. M-1``.
    baseline : ndarray of float64, shape (n,) or (n, M)
        The frequency-only baseline ``m_Q(s)/|Q|`` of each tuple: its value on the truth (n,),
        or the whole row (n, M) (e.g. :meth:`ObservedRelease.frequencies`).
    allowed : ndarray of bool, shape (n, M), optional
        Values each tuple may still hold (exact deductions); gives :attr:`TailRisk.n_certain`.
    threshold : float in (0.5, 1]
        Confidence threshold (default 0.9); above 1/2 a claim names one value.

    Returns
    -------
    TailRisk

    Raises
    ------
    InputError
        Mismatched shapes, codes outside ``0 .. M-1`` or a threshold outside (0.5, 1].
    """
    post = np.asarray(posteriors, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.int64)
    n = truth.size
    if post.ndim != 2 or post.shape[0] != n:
        raise InputError(f"posteriors must have shape (n, M) with n = {n}, got {post.shape}")
    if n and (truth.min() < 0 or truth.max() >= post.shape[1]):
        raise InputError(f"true codes must lie in 0..{post.shape[1] - 1}")
    if not 0.5 < threshold <= 1.0:
        raise InputError(f"threshold must be in (0.5, 1], got {threshold!r}")
    base = np.asarray(baseline, dtype=np.float64)
    if base.shape == post.shape:
        base = base[np.arange(n), truth]
    if base.shape != (n,):
        raise InputError(f"baseline must have shape ({n},) or {post.shape}, got {base.shape}")
    n_certain = None
    if allowed is not None:
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != post.shape:
            raise InputError(f"allowed must have shape {post.shape}, got {allowed.shape}")
        n_certain = int((allowed.sum(axis=1) == 1).sum())
    if n == 0:
        nan = float("nan")
        return TailRisk(0, nan, 0, nan, nan, nan, n_certain)
    on_truth = post[np.arange(n), truth]
    n_confident = count_confident(post, threshold)
    n_right = int((on_truth >= threshold).sum())
    return TailRisk(
        n_tuples=n,
        adversary_gain=float((on_truth - base).mean()),
        n_confident=n_confident,
        confident_share=n_right / n,
        confident_precision=n_right / n_confident if n_confident else float("nan"),
        max_posterior=float(on_truth.max()),
        n_certain=n_certain,
    )


def count_confident(post: np.ndarray, threshold: float = CONFIDENT) -> int:
    """Rows of ``post`` (float64, (n, M)) whose largest value is >= ``threshold`` (a row holding
    a NaN has a NaN maximum: never), as ``(post.max(axis=1) >= threshold).sum()``."""
    if not post.flags.c_contiguous:  # column-major (pandas < 3 copies a block so): maxima by column
        return int((post.max(axis=1) >= threshold).sum())
    # row-major: one pass over the flat (n * M) values; the reduction over M values per row was
    # most of the defender's tail at 10^6 (issue 13, pk step)
    hits = np.flatnonzero(post.ravel() >= threshold) // post.shape[1]  # rows, sorted, one per hit
    rows = hits[np.r_[True, hits[1:] != hits[:-1]]] if hits.size else hits
    return int(np.count_nonzero(~np.isnan(post[rows]).any(axis=1)))


def histogram_gain(priors: np.ndarray, s_true: np.ndarray) -> float:
    """The mean gain (E10) the same adversary would have had, with the same priors, had the
    release been one QI-group (its sensitive histogram only; ``--method histogram``).

    ``priors``: float64 (N, M), the adversary's prior of each released tuple (RBK^sv);
    ``s_true``: int (N,), its true codes in ``0..M-1``. One Ω step (E14) over all N tuples,
    minus the release's frequency of each true value; NaN when N = 0. No deduction masks: it is
    the part of the gain the adversary's own knowledge gives beyond the counts
    (docs/results/histogram-reference-24x5000/).
    """
    from dpriv.adversary.groups import gain_terms
    from dpriv.knowledge.posterior import omega_posterior

    s_true = np.asarray(s_true, dtype=np.int64)
    n = len(s_true)
    if n == 0:
        return float("nan")
    one = np.zeros(n, dtype=np.int64)
    post = omega_posterior(one, s_true, priors)
    freq = np.bincount(s_true)[s_true] / n
    return float(gain_terms(one, post, s_true, freq, np.asarray(priors)).mean())  # equal priors: 0.0

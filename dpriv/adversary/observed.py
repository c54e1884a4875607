"""What an adversary observes of one release (docs/algorithms.md §1.1), plus the truth for scoring."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ObservedRelease:
    """One committed release as the adversary of §1.1 sees it (membership known).

    Attributes
    ----------
    index : int
        Release number, 1-based.
    respondent : ndarray, shape (n,)
        Respondent id of each released (kept) tuple (int64, float64 or text: only compared
        for equality); the adversary knows the members of every
        QI-group (§1.1 (ii)).
    group : ndarray of int64, shape (n,)
        QI-group of each tuple, 0 .. n_groups - 1.
    counts : ndarray of int64, shape (n_groups, M)
        Released multiset of sensitive values of each group, M = |D[S]| in domain order.
    cls : ndarray of int64, shape (n,)
        Knowledge class of each respondent (from her QIs), the row selector of BK^sv/BK^seq.
    truth : ndarray of int64, shape (n,)
        True sensitive code of each tuple: for scoring only, never an input to inference.
    n_suppressed : int
        Tuples of V_i left out of V*_i (published with the release).
    """

    index: int
    respondent: np.ndarray
    group: np.ndarray
    counts: np.ndarray
    cls: np.ndarray
    truth: np.ndarray
    n_suppressed: int

    @property
    def n_groups(self) -> int:
        return int(self.counts.shape[0])

    def frequencies(self) -> np.ndarray:
        """m_Q(s) / |Q| of each tuple's group, shape (n, M): the frequency-only baseline of (E10)."""
        sizes = self.counts.sum(axis=1, keepdims=True)
        return (self.counts / sizes)[self.group]

"""The summary of one view that validation hands to the release: its size, its sensitive
counts and its two digests (:class:`ViewSummary`).

:func:`counts_and_digest` is the per-part kernel (one row per pandas part, summed by
:func:`summary_of`), so one view (:func:`dpriv.validate.validate_view`) and every view of a
history in one pass (:func:`dpriv.input_checks.history_summaries`) share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv.digests import view_digests
from dpriv.domain_codes import codes
from dpriv.policy import ReleasePolicy


@dataclass(frozen=True)
class ViewSummary:
    """What validation learned about a view: its size, its sensitive counts (M,) int64,
    ``content``, a 64-bit digest of all its rows (:func:`dpriv.digests.content_digest`; private) and
    ``input_sha``, its public fingerprint (:func:`dpriv.digests.input_fingerprint`, 16 hex digits)."""

    n_rows: int
    s_counts: np.ndarray
    content: int = 0
    input_sha: str = ""


def sensitive_counts(part: pd.DataFrame, policy: ReleasePolicy, c: np.ndarray | None = None) -> np.ndarray:
    """Count of each sensitive value of ``part`` in domain order, (M,) int64 (``c``: the
    sensitive codes, when the caller has them)."""
    c = codes(part[policy.sensitive], policy.sensitive_domain) if c is None else c
    return np.bincount(c[c >= 0], minlength=len(policy.sensitive_domain)).astype(np.int64)


def counts_and_digest(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """One row: the sensitive counts of ``part`` (columns 0..M-1) and its two digests (Python
    ints, object columns): summed over the parts of a view by :func:`summary_of`. The sensitive
    codes are found once, for the counts and both digests."""
    c = codes(part[policy.sensitive], policy.sensitive_domain)
    out = pd.DataFrame([sensitive_counts(part, policy, c)])
    content, fingerprint = view_digests(part, policy, c)
    return out.assign(digest=pd.Series([content], dtype=object), input=pd.Series([fingerprint], dtype=object))


def counts_meta(policy: ReleasePolicy) -> pd.DataFrame:
    """The empty frame of :func:`counts_and_digest` (a Dask meta)."""
    return counts_and_digest(pd.DataFrame(columns=[policy.id, *policy.qi, policy.sensitive]), policy).iloc[:0]


def summary_of(counts: pd.DataFrame, n: int) -> ViewSummary:
    """The :class:`ViewSummary` of a view of ``n`` rows from the :func:`counts_and_digest` rows
    of its parts."""
    s_counts = counts.drop(columns=["digest", "input"]).sum(axis=0).to_numpy(dtype=np.int64)
    content, fingerprint = (sum(int(d) for d in counts[c]) for c in ("digest", "input"))
    return ViewSummary(n, s_counts, content % 2**64, format(fingerprint % 2**64, "016x"))

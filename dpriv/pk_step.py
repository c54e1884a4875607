"""The kernels of the release's ``pk`` step: the Ω posteriors computed once per part.

The pk step needs, per part of whole QI-groups (the membership regrouped by label), the
defender's PK^sv (Ω-estimate, E14: :func:`dpriv.state.group_posteriors`) twice: for the new
respondent state (:func:`dpriv.state.next_state`) and, scored against the true values, for
the tail risk in ``metrics.json`` (:mod:`dpriv.metrics.defender_tail`). Earlier both were
computed from the membership, so Ω ran twice per part; here :func:`posteriors_with_truth`
computes it once and carries the true code along, and both consumers read that one table
(on Dask the same task output feeds both). The numbers are the same to the last bit
(``tests/test_pk_step.py``: equal to :func:`dpriv.metrics.defender_tail.tail_part`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.adversary.tail import CONFIDENT
from dpriv.errors import InputError
from dpriv.metrics.defender_tail import PART_COLUMNS
from dpriv.policy import ReleasePolicy
from dpriv.released import SCODE
from dpriv.state import canonical_order, group_posteriors


def posteriors_with_truth(assigned: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """:func:`dpriv.state.group_posteriors` of ``assigned`` (whole QI-groups, with ``_label``,
    ``_s`` and the RBK prior columns) plus ``_s`` (int64), the true sensitive code of each row
    in the same (label, id) order."""
    order = canonical_order(assigned, policy)  # one sort for both
    posts = group_posteriors(assigned, policy, order)
    posts[SCODE] = assigned[SCODE].to_numpy(dtype=np.int64)[order]  # the fresh table: no copy of it
    return posts


def without_truth(posts: pd.DataFrame) -> pd.DataFrame:
    """The posterior table without ``_s`` (what the state update reads)."""
    return posts.drop(columns=[SCODE])


def tail_of_posteriors(posts: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """One row of :data:`dpriv.metrics.defender_tail.PART_COLUMNS` (int64 counts,
    float64 ``max_posterior``, NaN for no row) from a :func:`posteriors_with_truth` part: the
    same numbers as :func:`dpriv.metrics.defender_tail.tail_part` of the membership it came from
    (the counts and the largest posterior on the truth of :func:`dpriv.adversary.tail.tail_risk`).
    InputError for a true code outside the domain."""
    truth = posts[SCODE].to_numpy(dtype=np.int64)
    post = posts[[f"post__{v}" for v in policy.sensitive_domain]].to_numpy(dtype=float)  # (n, M)
    (n, m), values = post.shape, [0, 0, float("nan")]
    if n and (truth.min() < 0 or truth.max() >= m):
        raise InputError(f"true codes must lie in 0..{m - 1}")
    if n:
        on_truth = post[np.arange(n), truth]
        values = [_n_confident(post), int((on_truth >= CONFIDENT).sum()), float(on_truth.max())]
    row = {c: [v] for c, v in zip(PART_COLUMNS, [n, *values])}
    return pd.DataFrame(row).astype({c: "float64" if c == "max_posterior" else "int64" for c in PART_COLUMNS})


def _n_confident(post: np.ndarray) -> int:
    """Rows of ``post`` (float64, (n, M)) whose largest value is >= the threshold (a row
    holding a NaN has a NaN maximum: never), as ``(post.max(axis=1) >= CONFIDENT).sum()``."""
    if not post.flags.c_contiguous:  # column-major (pandas < 3 copies the block): maxima run by column
        return int((post.max(axis=1) >= CONFIDENT).sum())
    # row-major (the pk table's block): one pass over the flat (n * M) values; a reduction over
    # M = 19 values per row was most of this kernel's time at 10^6
    hits = np.flatnonzero(post.ravel() >= CONFIDENT) // post.shape[1]  # rows, sorted, one per hit
    rows = hits[np.r_[True, hits[1:] != hits[:-1]]] if hits.size else hits
    return int(np.count_nonzero(~np.isnan(post[rows]).any(axis=1)))

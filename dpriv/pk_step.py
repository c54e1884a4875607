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

from dpriv.adversary.tail import CONFIDENT, tail_risk
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
    float64 ``max_posterior``) from a :func:`posteriors_with_truth` part: the same numbers as
    :func:`dpriv.metrics.defender_tail.tail_part` of the membership it came from."""
    truth = posts[SCODE].to_numpy(dtype=np.int64)
    post = posts[[f"post__{v}" for v in policy.sensitive_domain]].to_numpy(dtype=float)
    risk = tail_risk(post, truth, np.zeros(truth.size), threshold=CONFIDENT)
    n_right = int(round(risk.confident_share * risk.n_tuples)) if risk.n_tuples else 0
    row = dict(zip(PART_COLUMNS, ([risk.n_tuples], [risk.n_confident], [n_right], [risk.max_posterior])))
    return pd.DataFrame(row).astype({c: "float64" if c == "max_posterior" else "int64" for c in PART_COLUMNS})

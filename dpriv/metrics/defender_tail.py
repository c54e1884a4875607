"""Tail risk of the defender's own posteriors, for ``metrics.json`` (issue 11, item 3).

The release loop computes, per QI-group, the defender's PK^sv (the Ω-estimate, E14, of
:func:`dpriv.state.group_posteriors`) for its own state. Scored against the true values,
those posteriors say how confident an adversary with the defender's knowledge and the
membership would be: per release, ``n_confident`` (tuples whose largest posterior is
>= 0.9), ``confident_share`` (tuples whose posterior on the TRUE value is >= 0.9, per kept
tuple), ``confident_precision`` (share of the confident claims that name the true value)
and ``max_posterior`` (largest posterior on a true value); definitions of
:func:`dpriv.adversary.tail.tail_risk`, which scores each Dask partition (whole QI-groups).
Only four numbers per partition reach the client; the released view is not touched.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.adversary.tail import CONFIDENT, tail_risk
from dpriv.metrics.record import DefenderTail
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE
from dpriv.state import group_posteriors

#: Per-partition counts (int64 but ``max_posterior``, float64; NaN for an empty partition).
PART_COLUMNS = ("n_tuples", "n_confident", "n_right", "max_posterior")


def tail_part(assigned: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """One row of :data:`PART_COLUMNS` for one partition of whole QI-groups.

    ``assigned`` holds the tuples with their ``_label``, true code ``_s`` and RBK prior
    columns; the posteriors are :func:`dpriv.state.group_posteriors` of it (the defender's
    PK, recomputed here: the same function on the same rows gives the same numbers). The
    baseline of the gain is not needed here (zeros are passed).
    """
    posts = group_posteriors(assigned, policy)
    asg = assigned.sort_values([LABEL, policy.id], kind="stable")  # group_posteriors' row order
    truth = asg[SCODE].to_numpy(dtype=np.int64)
    post = posts[[f"post__{v}" for v in policy.sensitive_domain]].to_numpy(dtype=float)
    risk = tail_risk(post, truth, np.zeros(truth.size), threshold=CONFIDENT)
    n_right = int(round(risk.confident_share * risk.n_tuples)) if risk.n_tuples else 0
    return pd.DataFrame(
        {
            "n_tuples": [risk.n_tuples],
            "n_confident": [risk.n_confident],
            "n_right": [n_right],
            "max_posterior": [risk.max_posterior],
        }
    ).astype({"n_tuples": "int64", "n_confident": "int64", "n_right": "int64", "max_posterior": "float64"})


def tail_meta() -> pd.DataFrame:
    """Empty frame with the dtypes of :func:`tail_part` (Dask ``meta``)."""
    return pd.DataFrame(
        {c: pd.Series(dtype="float64" if c == "max_posterior" else "int64") for c in PART_COLUMNS}
    )


def combine_tail(parts: pd.DataFrame) -> DefenderTail:
    """The release's tail (:data:`dpriv.metrics.record.TAIL_KEYS` in ``metrics.json``) from
    the per-partition rows; ``None`` for an undefined value (no kept tuple, no confident
    claim), so that ``metrics.json`` stays valid JSON."""
    n = int(parts["n_tuples"].sum())
    n_conf = int(parts["n_confident"].sum())
    n_right = int(parts["n_right"].sum())
    top = parts["max_posterior"].max() if n else None
    return DefenderTail(
        confident_share=n_right / n if n else None,
        confident_precision=n_right / n_conf if n_conf else None,
        n_confident=n_conf,
        max_posterior=None if top is None or pd.isna(top) else float(top),
    )

"""One committed release as the adversary reads it (:class:`ReadRelease`): its group members,
their true and released sensitive codes and the released counts per group, cross-checked
against the released view and the original view (:func:`members_of`; the ledger's state or
the state a release is about to commit, :mod:`dpriv.gate`). Moved out of
:mod:`dpriv.attack_input` (reading a whole ledger for an attack), which still gives these names.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from dpriv.errors import InputError, LedgerError
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP
from dpriv.validate import codes


class ReadRelease(NamedTuple):
    """One committed release as read from the ledger and the history.

    Attributes
    ----------
    index : int, the release number i
    view : DataFrame, the original view V_i (every respondent of time i, kept or suppressed)
    members : DataFrame, the kept respondents (policy id, ``last_group`` and the view's
        columns), sorted by group
    s_true : int64 ndarray (n,), their true sensitive codes (policy domain order)
    s_released : int64 ndarray (n,), the released codes aligned group by group on ``members``
    counts : int64 ndarray (G, M), the released value counts per group (labels sorted)
    released : DataFrame, the released view V*_i as stored in the ledger (for an Anatomy
        release its QI table, whose sensitive table gave ``counts``)
    """

    index: int
    view: pd.DataFrame
    members: pd.DataFrame
    s_true: np.ndarray
    s_released: np.ndarray
    counts: np.ndarray
    released: pd.DataFrame


def group_counts(groups: np.ndarray, s: np.ndarray, labels: np.ndarray, m: int) -> np.ndarray:
    """(G, M) int64 counts of each value per label of ``labels`` (sorted unique)."""
    gi = np.searchsorted(labels, groups)
    return np.bincount(gi * m + s, minlength=labels.size * m).reshape(labels.size, m)


class Members(NamedTuple):
    """The kept respondents of one release and their values (:func:`members_of`): the fields
    of :class:`ReadRelease` of the same names (``members`` sorted by group, ``s_true``,
    ``s_released`` aligned on them, the same multiset per group, and the per-group ``counts``)."""

    members: pd.DataFrame
    s_true: np.ndarray
    s_released: np.ndarray
    counts: np.ndarray


def _same_id_kind(ledger_ids: pd.Series, history_ids: pd.Series, index: int, name: str) -> None:
    """InputError when the history's ids are text and the ledger's numbers (or the reverse):
    pandas refuses to match them (``merge on int64 and string``)."""
    numeric = [pd.api.types.is_numeric_dtype(c.dtype) for c in (ledger_ids, history_ids)]
    if numeric[0] != numeric[1]:
        kinds = ["numbers" if n else "text" for n in numeric]
        raise InputError(
            f"the ids ({name!r}) of view {index} of the history are {kinds[1]}, those the ledger "
            f"released are {kinds[0]}: give the history as it was released (e.g. read the CSV "
            "with the same column types)"
        )


def members_of(
    state: pd.DataFrame, index: int, view: pd.DataFrame, released: pd.DataFrame, policy: ReleasePolicy
) -> Members:
    """The group members of release ``index`` (:class:`Members`) from the respondent state after
    it (the ledger's, or the one a release is about to commit: :mod:`dpriv.gate`), the original
    ``view`` and the ``released`` values. InputError/LedgerError when the state, the released
    view and the view disagree."""
    m = len(policy.sensitive_domain)
    missing = [c for c in (policy.id, "last_release", "last_group") if c not in state.columns]
    if missing:
        raise LedgerError(f"state of release {index} lacks column(s) {missing}: not a dpriv ledger state")
    mem = state.loc[state["last_release"].to_numpy() == index, [policy.id, "last_group"]]
    _same_id_kind(mem[policy.id], view[policy.id], index, policy.id)
    mem = mem.merge(view, on=policy.id, how="left", validate="one_to_one", indicator=True)
    if (mem["_merge"] != "both").any():
        rid = mem.loc[mem["_merge"] != "both", policy.id].tolist()[0]
        raise InputError(
            f"respondent {rid!r} is in release {index} of the ledger but not in view {index} of "
            "the history: give the history that was released"
        )
    mem = mem.drop(columns="_merge").sort_values("last_group", kind="stable").reset_index(drop=True)
    groups = mem["last_group"].to_numpy(dtype=np.int64)
    s_true = codes(mem[policy.sensitive], policy.sensitive_domain)

    for col in (GROUP, policy.sensitive):
        if col not in released.columns:
            raise LedgerError(f"released view {index} lacks column {col!r}")
    rel = released[[GROUP, policy.sensitive]].sort_values(GROUP, kind="stable")
    r_groups = rel[GROUP].to_numpy(dtype=np.int64)
    r_s = codes(rel[policy.sensitive], policy.sensitive_domain)
    labels = np.unique(r_groups)
    if (r_s < 0).any() or (s_true < 0).any() or not np.array_equal(labels, np.unique(groups)):
        raise InputError(
            f"release {index}: the released view, the ledger state and the history disagree "
            f"(groups or sensitive values); give the history and policy that were released{_edited(index)}"
        )
    r_counts = group_counts(r_groups, r_s, labels, m)
    t_counts = group_counts(groups, s_true, labels, m)
    if not np.array_equal(r_counts, t_counts):  # counts only: a log must not tie ids to true values
        n_groups = int((r_counts != t_counts).any(axis=1).sum())
        n_tuples = int(np.maximum(t_counts - r_counts, 0).sum())  # members whose value was not published
        raise InputError(
            f"release {index}: the true values of the history do not match the released groups "
            f"({n_groups} of {len(labels)} QI-groups differ: {n_tuples} of the release's {len(groups)} "
            f"tuples hold a {policy.sensitive} value in view {index} of the history that their group "
            f"did not publish); give the history that was released{_edited(index)}"
        )
    # both sorted by group with equal group sizes: the released values line up group by group
    return Members(mem, s_true, r_s, r_counts)


def _edited(index: int) -> str:
    """The other cause of a mismatch: the ledger's release edited after it was written."""
    return (
        f" (if it is, release {index} of the ledger may have been edited after it was written: "
        f"dpriv verify --ledger LEDGER --view {index} --history HISTORY checks it)"
    )

"""Independent check of an Anatomy release (docs/released-format.md, "Anatomy").

Like :mod:`dpriv.anonymity.verify` it never calls the grouping code: it re-derives every
QI-group from the two published tables. The QI table must hold ``qi_group`` and the exact
QIs (nothing else: no id, no ``_`` column), values inside the policy domains; the sensitive
table ``qi_group``, the sensitive column and ``count`` (integers >= 1, one row per (group,
value), values of D[S]). Each group must have as many QI rows as its counts sum to. The
sensitive table expanded to one (group, value) row per tuple then goes through the same group
checks as a generalized view (:func:`dpriv.anonymity.verify.check_groups`: k, t of (E9),
released counts not above the view's, and with the private membership ``assigned``: sizes,
the published counts equal to the members' values, JS (E8) <= j). With ``assigned`` the QI
rows of each group must also be exactly its members' QIs (as a multiset).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.anatomy import COUNT, expand_sensitive, qi_columns, sensitive_columns
from dpriv.anonymity.format_check import column_problems, named
from dpriv.anonymity.membership import exact_numbers
from dpriv.anonymity.verify import VerificationReport, as_pandas, check_groups, checked_view_counts
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP, LABEL
from dpriv.validate import codes


def _qi_values(qi_table: pd.DataFrame, policy: ReleasePolicy) -> list[str]:
    """Exact QI values inside their domains (numeric: a number in [min, max])."""
    problems = []
    for q in policy.qi:
        if q not in qi_table.columns:
            continue
        dom = policy.domains[q]
        if policy.kind(q) == "numeric":
            x = exact_numbers(qi_table[q])
            bad = pd.isna(x) | (x < dom[0]) | (x > dom[1])
            if np.asarray(bad).any():
                first = qi_table[q].to_numpy()[np.asarray(bad)][:5].tolist()
                problems.append(
                    f"QI table: {int(np.asarray(bad).sum())} values of numeric QI {q!r} are missing "
                    f"or outside its domain {dom}, e.g. {first}"
                )
        else:
            bad = codes(qi_table[q], dom) < 0
            if bad.any():
                first = pd.unique(qi_table[q].to_numpy()[bad])[:5].tolist()
                problems.append(f"QI table: values {first} of categorical QI {q!r} are not among its levels")
    return problems


def _counts(sensitive: pd.DataFrame, policy: ReleasePolicy) -> list[str]:
    problems = []
    if COUNT not in sensitive.columns or GROUP not in sensitive.columns:
        return problems
    c = sensitive[COUNT]
    if not pd.api.types.is_integer_dtype(c.dtype) or (c.to_numpy() < 1).any():
        problems.append(f"sensitive table: column {COUNT!r} must hold integers >= 1")
    if policy.sensitive in sensitive.columns:
        dup = sensitive.duplicated([GROUP, policy.sensitive])
        if dup.any():
            problems.append(
                f"sensitive table: QI-groups {named(sensitive.loc[dup, GROUP].unique())} list a "
                "sensitive value twice (one row per group and value)"
            )
    return problems


def _sizes(qi_table: pd.DataFrame, sensitive: pd.DataFrame) -> list[str]:
    """QI rows per group equal to the group's counts; the same groups in both tables."""
    rows = qi_table.groupby(GROUP).size()
    counted = sensitive.groupby(GROUP)[COUNT].sum()
    both = pd.concat({"qi": rows, "s": counted}, axis=1).fillna(0).astype(np.int64)
    bad = both.index[both["qi"] != both["s"]]
    if not len(bad):
        return []
    g = bad[0]
    return [
        f"QI-groups {named(bad)}: QI rows and sensitive counts differ (group {as_python(g)!r}: "
        f"{both.at[g, 'qi']} QI rows, counts summing to {both.at[g, 's']})"
    ]


def _members_qis(qi_table: pd.DataFrame, assigned: pd.DataFrame, policy: ReleasePolicy) -> list[str]:
    """Each group's QI rows are exactly its members' QIs (multiset, exact comparison)."""
    if LABEL not in assigned.columns or any(q not in assigned.columns for q in policy.qi):
        return []  # check_assigned names the missing columns

    def keyed(frame: pd.DataFrame, label: str) -> pd.Series:
        cols = {"g": frame[label].to_numpy(dtype=np.int64)}
        for q in policy.qi:
            cols[q] = (
                exact_numbers(frame[q]).astype(object)
                if policy.kind(q) == "numeric"
                else frame[q].astype(str).to_numpy(dtype=object)
            )
        return pd.DataFrame(cols).value_counts()

    pub, priv = keyed(qi_table, GROUP), keyed(assigned, LABEL)
    both = pd.concat({"pub": pub, "priv": priv}, axis=1).fillna(0)
    bad = both.index[both["pub"] != both["priv"]].get_level_values("g").unique()
    if not len(bad):
        return []
    return [f"QI-groups {named(bad)}: the published QI rows are not the QIs of the group's tuples"]


def verify_anatomy(
    qi_table: pd.DataFrame,
    sensitive: pd.DataFrame,
    policy: ReleasePolicy,
    *,
    view_counts: np.ndarray | None = None,
    original: pd.DataFrame | None = None,
    assigned: pd.DataFrame | None = None,
    method: str = "jsreduce",
) -> VerificationReport:
    """Check an Anatomy release (QI table + sensitive table) against (E9) and its format.

    Parameters
    ----------
    qi_table : the published QI table (pandas, or Dask which is materialised): ``qi_group``
        and the exact QIs, one row per released tuple.
    sensitive : the published sensitive table: ``qi_group``, the sensitive column, ``count``.
    policy, view_counts, original, assigned, method : as for
        :func:`dpriv.anonymity.verify.verify_release` (``view_counts`` int64 (M,): counts of
        S over the whole original view; ``assigned``: the private membership, ``_label``,
        QIs, sensitive value or ``_s``, ``p__<value>`` priors).

    Returns
    -------
    VerificationReport
        ``ok`` iff no problem: format of both tables, QI values in their domains, counts
        >= 1 and unique per (group, value), QI rows per group = counts, each group with
        ``|Q| >= k`` and ``EMD <= t`` (exact), released counts <= the view's; with
        ``assigned``: the same groups, each group's counts equal to its members' values, its
        QI rows equal to its members' QIs, ``JS <= j + JS_TOLERANCE``.

    Raises
    ------
    InputError
        neither ``view_counts`` nor ``original``; ``view_counts`` of the wrong shape.
    PolicyError
        the policy has no sensitive domain or no levels for a categorical QI.
    """
    if policy.sensitive not in policy.domains or not policy.is_resolved():
        raise PolicyError(f"no domain for {policy.sensitive!r} or a QI; resolve the policy first")
    qi_table, sensitive = as_pandas(qi_table), as_pandas(sensitive)
    assigned = None if assigned is None else as_pandas(assigned)
    counted = checked_view_counts(view_counts, original, policy)
    problems = counted.problems
    for frame, expected, what in ((qi_table, qi_columns(policy), "QI table"),
                                  (sensitive, sensitive_columns(policy), "sensitive table")):  # fmt: skip
        cols = [str(c) for c in frame.columns]
        problems += column_problems(cols, expected, policy, "Anatomy format", f"{what}: ")
    problems += _qi_values(qi_table, policy)
    problems += _counts(sensitive, policy)
    for name, frame in (("QI table", qi_table), ("sensitive table", sensitive)):
        if GROUP in frame.columns and frame[GROUP].isna().any():
            problems.append(f"{name}: column {GROUP!r} has missing labels")
    complete = GROUP in qi_table.columns and COUNT in sensitive.columns and GROUP in sensitive.columns
    if complete and not problems:
        problems += _sizes(qi_table, sensitive)
    if assigned is not None and complete:
        problems += _members_qis(qi_table, assigned, policy)
    if not complete or policy.sensitive not in sensitive.columns:
        return VerificationReport(pd.DataFrame(), None, None, None, None, False, problems, len(qi_table), 0)
    return check_groups(
        expand_sensitive(sensitive, policy), policy, counted.counts, problems, [], assigned, method
    )

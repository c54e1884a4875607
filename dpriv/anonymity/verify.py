"""Independent check of a released view: k, l, t and j of (E9), and the released format.

This module never calls the grouping code (:mod:`dpriv.anonymity.jsreduce`,
:mod:`dpriv.generalize`). It re-derives every QI-group from the released view itself and
shares only the distance arithmetic of :mod:`dpriv.divergence` and the criteria of
:mod:`dpriv.criteria`:

* EMD (E18 equal / E19 ordered ground) as the exact integer fraction of
  :func:`~dpriv.divergence.emd_num_den`, decided by
  :func:`~dpriv.divergence.emd_within` (``num <= t * den``), so a boundary case
  such as ordered EMD = 0.25 at ``t = 0.25`` is decided exactly as the grouping decides it;
* JS (E8, equal weights, ``policy.log_base``) through
  :func:`~dpriv.divergence.entropy` and
  :func:`~dpriv.divergence.js_from_sums`, compared with ``j + JS_TOLERANCE``
  (the summation order differs from the grouping's running sums).

Per-group statistics are vectorised: one ``bincount`` over (group, sensitive code) gives
the (G, M) count matrix; a numba loop over groups turns it into EMD fractions, and another
sums the priors of group-sorted tuples for JS. No Python loop runs per group or per tuple.

The format checked is docs/released-format.md: ``qi_group``; ``<qi>_min``/``<qi>_max``
(numeric, the true min/max of the group) per numeric QI; ``<qi>`` holding the value set
string ``{a,b}`` per categorical QI; the sensitive column; nothing else (no id, no column
starting with ``_``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dpriv.anonymity.format_check import MAX_LISTED, format_problems
from dpriv.anonymity.membership import check_assigned
from dpriv.criteria import JSBound, KAnonymity, RBKCloseness, TCloseness, criteria_for, group_statistics
from dpriv.errors import InputError, PolicyError, VerificationError
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP
from dpriv.rows import rows_named
from dpriv.validate import codes


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------
@dataclass
class VerificationReport:
    """Outcome of :func:`verify_release`.

    Attributes
    ----------
    groups : per-group DataFrame (see :func:`group_statistics`) plus ``js`` (float64, NaN
        without ``assigned``), ``holds_k``, ``holds_t`` (bool) and ``holds_j`` (nullable
        boolean, <NA> without ``assigned``).
    k_achieved : smallest group size (int), None for an empty release.
    l_achieved : smallest number of distinct sensitive values in a group (int) or None.
    t_achieved : largest EMD to the view distribution (float in [0, 1]) or None.
    j_achieved : largest JS of a group's priors (float, units of ``log_base``); None
        without ``assigned`` or for an empty release.
    ok : True when no problem was found (every group meets (E9), the format is right).
    problems : human-readable problems, each naming the group/column and the constraint.
    n_rows, n_groups : released tuples and QI-groups.
    rbk_achieved : largest RBK-closeness distance of a group (total variation in [0, 1]) when
        the policy sets ``rbk_closeness`` and ``assigned`` is given, else None.
    """

    groups: pd.DataFrame
    k_achieved: int | None
    l_achieved: int | None
    t_achieved: float | None
    j_achieved: float | None
    ok: bool
    problems: list[str] = field(default_factory=list)
    n_rows: int = 0
    n_groups: int = 0
    rbk_achieved: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary for ``metrics.json`` (plain Python types, no per-group table)."""
        return {
            "ok": bool(self.ok),
            "k_achieved": self.k_achieved,
            "l_achieved": self.l_achieved,
            "t_achieved": self.t_achieved,
            "j_achieved": self.j_achieved,
            **({} if self.rbk_achieved is None else {"rbk_closeness_achieved": self.rbk_achieved}),
            "n_rows": int(self.n_rows),
            "n_groups": int(self.n_groups),
            "problems": list(self.problems),
        }

    def __repr__(self) -> str:
        """The verdict first (``ok``, ``problems``), then the figures, and the per-group table
        by its shape only (``report.groups`` shows it): printed in a notebook, the whole table
        came first and the verdict at its end, easy to miss."""
        figures = (
            "n_rows",
            "n_groups",
            "k_achieved",
            "l_achieved",
            "t_achieved",
            "j_achieved",
            "rbk_achieved",
        )
        shape = f"<DataFrame: {len(self.groups)} rows x {len(self.groups.columns)} columns>"
        fields = [f"ok={self.ok!r}", f"problems={self.problems!r}"]
        fields += [f"{name}={getattr(self, name)!r}" for name in figures] + [f"groups={shape}"]
        return f"VerificationReport({', '.join(fields)})"

    def raise_if_failed(self) -> None:
        """Raise :class:`~dpriv.errors.VerificationError` listing the problems, if any."""
        if not self.ok:
            raise VerificationError("the released view fails verification:\n  " + "\n  ".join(self.problems))


def as_pandas(frame):
    """Materialise a Dask frame (the verifier works on one in-memory released view)."""
    compute = getattr(frame, "compute", None)
    return frame if isinstance(frame, pd.DataFrame) or compute is None else compute()


class ViewCounts(NamedTuple):
    """:func:`checked_view_counts`'s result: the int64 (M,) ``counts`` of S over the original
    view, in the order of ``policy.sensitive_domain``, and the ``problems`` found (text lines of
    :class:`VerificationReport`)."""

    counts: np.ndarray
    problems: list[str]


def checked_view_counts(view_counts, original, policy: ReleasePolicy) -> ViewCounts:
    """The counts of S over the original view (``view_counts``, else counted in ``original``)
    and the problems found comparing both (:class:`ViewCounts`). Raises InputError: neither
    given, or ``view_counts`` not of shape (M,)."""
    domain = policy.sensitive_domain
    problems: list[str] = []
    from_original = None
    if original is not None:
        original = as_pandas(original[[policy.sensitive]])
        c = codes(original[policy.sensitive], domain)
        if (c < 0).any():
            problems.append(
                f"original view: sensitive column {policy.sensitive!r} has "
                f"{int((c < 0).sum())} values outside its domain"
            )
        from_original = np.bincount(c[c >= 0], minlength=len(domain)).astype(np.int64)
    if view_counts is None:
        if from_original is None:
            raise InputError(
                "verify_release needs the distribution of S over the original view: "
                "pass view_counts or original"
            )
        return ViewCounts(from_original, problems)
    vc = np.asarray(view_counts, dtype=np.int64)
    if vc.shape != (len(domain),):
        raise InputError(f"view_counts has shape {vc.shape}; expected ({len(domain)},)")
    if from_original is not None and not np.array_equal(vc, from_original):
        problems.append(
            f"view_counts {vc.tolist()} differ from the counts of the original view {from_original.tolist()}"
        )
    return ViewCounts(vc, problems)


def verify_release(
    released: pd.DataFrame,
    policy: ReleasePolicy,
    *,
    view_counts: np.ndarray | None = None,
    original: pd.DataFrame | None = None,
    assigned: pd.DataFrame | None = None,
    method: str = "jsreduce",
) -> VerificationReport:
    """Check a released view against (E9) and the released format of docs/released-format.md.

    Parameters
    ----------
    released : the public view V*_i (pandas, or Dask which is materialised), in the
        columns of docs/released-format.md.
    policy : resolved ReleasePolicy (sensitive domain D[S] and categorical QI levels known);
        ``k``, ``t`` (with ``emd_ground``), ``j`` (with ``log_base``) are the thresholds.
    view_counts : int64 array of shape (M,), counts of S over the whole ORIGINAL view V_i
        (before suppression), in the order of ``policy.sensitive_domain``.
    original : the original view V_i; gives ``view_counts`` when those are not passed (and
        is checked against them when both are).
    assigned : the private membership of the kept tuples (``Generalized.assigned``): the
        ``_label`` group label, the QI values, the sensitive column (or ``_s`` code) and
        the ``p__<value>`` prior columns. Enables the JS check (E8) and the membership checks.
    method : the release method; the criteria it promises (:data:`dpriv.criteria.GUARANTEES`:
        k, t and j for ``"jsreduce"``) are the ones whose failures are problems.

    Returns
    -------
    VerificationReport
        ``ok`` is True iff no problem was found. Checks: columns exactly the released
        format (no id, no ``_`` column); one interval / value set per group; numeric
        bounds with min <= max; value sets of declared levels; each group with
        ``|Q| >= k`` and ``EMD(P_Q, P_V) <= t`` (exact, inclusive, (E9)); released counts
        of each sensitive value not above the view's; with ``assigned``: equal group
        sizes and sensitive counts, every kept tuple inside its group's interval / value
        set (and bounds tight), and ``JS <= j + JS_TOLERANCE``. An empty release is ok
        with all achieved values None.

    Raises
    ------
    InputError
        neither ``view_counts`` nor ``original``; ``view_counts`` of the wrong shape.
    PolicyError
        the policy has no sensitive domain or no levels for a categorical QI.
    """
    if policy.sensitive not in policy.domains:
        raise PolicyError(f"no domain for the sensitive column {policy.sensitive!r}; resolve the policy")
    released = as_pandas(released)
    assigned = None if assigned is None else as_pandas(assigned)
    counted = checked_view_counts(view_counts, original, policy)
    fmt, usable = format_problems(released, policy)
    problems = counted.problems + fmt
    return check_groups(released, policy, counted.counts, problems, usable, assigned, method)


def check_groups(
    released: pd.DataFrame,
    policy: ReleasePolicy,
    vc: np.ndarray,
    problems: list[str],
    usable: list[str],
    assigned: pd.DataFrame | None,
    method: str,
) -> VerificationReport:
    """The group checks of :func:`verify_release` on released (``qi_group``, S) rows, after
    the format checks (whose ``problems`` and usable generalized QI columns are given):
    released counts against the view's ``vc`` (int64 (M,)), k, t (and l, B-t per
    ``method``) per group, and with ``assigned`` the membership and JS (E8) checks. Also
    the group half of :func:`dpriv.anonymity.verify_anatomy.verify_anatomy`."""
    domain = policy.sensitive_domain
    if policy.sensitive not in released.columns:
        return VerificationReport(pd.DataFrame(), None, None, None, None, False, problems, len(released), 0)

    s = codes(released[policy.sensitive], domain)
    if (s < 0).any():  # a sensitive value is never printed: the rows are named by their place
        problems.append(
            f"sensitive column {policy.sensitive!r} holds values outside the sensitive domain "
            f"{list(map(as_python, domain[:8]))}{'...' if len(domain) > 8 else ''} in the released view "
            f"({rows_named(released, s < 0, whole=False)}; the values are not printed): correct those "
            f"rows, or give the policy the release was made with ([domains] {policy.sensitive}); those "
            "rows are left out of the statistics"
        )
        released = released[s >= 0]
        s = s[s >= 0]
    rel_counts = np.bincount(s, minlength=len(domain))
    problems += over_released(rel_counts, vc, domain)
    if vc.sum() == 0:
        problems.append("the original view has no tuple: no distribution to compare with")
        vc = np.ones(len(domain), dtype=np.int64)

    group_column = GROUP if GROUP in released.columns and not released[GROUP].isna().any() else None
    qi_cols = usable if group_column is None else []
    stats = group_statistics(
        released, qi_cols, policy.sensitive, domain, vc, policy.emd_ground, group_column=group_column
    )
    stats["js"] = np.nan
    stats["rbk_tv"] = np.nan
    stats["holds_k"] = KAnonymity(policy.k).holds(stats)
    stats["holds_t"] = TCloseness(policy.t, policy.emd_ground).holds(stats)
    stats["holds_j"] = pd.array([pd.NA] * len(stats), dtype="boolean")
    j_achieved = rbk_achieved = None
    holds = {"k": stats["holds_k"].to_numpy(), "t": stats["holds_t"].to_numpy()}
    if assigned is not None and group_column is not None:
        more, divergences = check_assigned(released, assigned, policy, stats, usable)
        problems += more
        if divergences is not None:
            stats["js"] = divergences["js"].to_numpy(dtype=float)
            stats["rbk_tv"] = divergences["rbk_tv"].to_numpy(dtype=float)
            holds["j"] = JSBound(policy.j, policy.log_base).holds(stats)
            stats["holds_j"] = pd.array(holds["j"], dtype="boolean")
            j_achieved = _largest(stats["js"])
            if policy.rbk_closeness is not None:
                holds["rbk_closeness"] = RBKCloseness(policy.rbk_closeness).holds(stats)
                rbk_achieved = _largest(stats["rbk_tv"])
    elif assigned is not None:
        problems.append(f"assigned given but the release has no usable {GROUP!r} column to match it")

    for crit in criteria_for(policy, method):
        if crit.needs == {"priors"} and crit.name not in holds:
            continue  # no priors: the JS bound and RBK-closeness are not checked
        bad = np.flatnonzero(~(holds[crit.name] if crit.name in holds else crit.holds(stats)))
        rows = stats.iloc[bad[:MAX_LISTED]].to_dict("records")
        problems += [crit.problem(as_python(r[GROUP]), r) for r in rows]
        if len(bad) > MAX_LISTED:
            problems.append(f"... and {len(bad) - MAX_LISTED} more QI-groups that fail {crit.name}")
    empty = len(stats) == 0
    return VerificationReport(
        groups=stats,
        k_achieved=None if empty else int(stats["size"].min()),
        l_achieved=None if empty else int(stats["l"].min()),
        t_achieved=None if empty else float(stats["emd"].max()),
        j_achieved=None if empty else j_achieved,
        ok=not problems,
        problems=problems,
        n_rows=int(len(released)),
        n_groups=int(len(stats)),
        rbk_achieved=rbk_achieved,
    )


def over_released(released_counts: np.ndarray, view_counts: np.ndarray, domain: list) -> list[str]:
    """The problem (one line, or none) of the sensitive values a release holds more often than
    the original view: each value as ``'c' (13 > 12)``, released > view counts."""
    over = np.flatnonzero(released_counts > view_counts)
    if not over.size:
        return []
    rel, view = released_counts, view_counts
    shown = ", ".join(f"{as_python(domain[i])!r} ({int(rel[i])} > {int(view[i])})" for i in over[:MAX_LISTED])
    more = f" and {over.size - MAX_LISTED} more" if over.size > MAX_LISTED else ""
    return [
        f"sensitive value(s) {shown}{more} are released more often than the original view holds them: a "
        "released row was duplicated or added, or the counts are not those of the view it was made from"
    ]


def _largest(values: pd.Series) -> float | None:
    """The largest value that is not NaN, None when there is none."""
    return float(np.nanmax(values)) if values.notna().any() else None


def combine_reports(
    parts: list[VerificationReport], released_counts: np.ndarray, view_counts: np.ndarray, domain: list
) -> VerificationReport:
    """One report for a release verified in parts that each hold whole QI-groups (the
    release loop checks Dask partitions this way). Its ``groups`` table is empty: the
    per-group tables stay with the parts (only their summaries reach the client).

    ``parts``: the parts' reports, each verified against the whole view's ``view_counts``;
    ``released_counts`` (int64, shape (M,)): the released count of each sensitive value
    summed over the parts, checked here against ``view_counts`` (a part alone cannot).
    Achieved values: smallest k and l, largest t, j and RBK-closeness distance over the parts
    that have groups.
    """
    problems = [p for part in parts for p in part.problems]
    problems += over_released(np.asarray(released_counts), np.asarray(view_counts), domain)

    def pick(key: str, fn):
        vals = [getattr(part, key) for part in parts if getattr(part, key) is not None]
        return fn(vals) if vals else None

    return VerificationReport(
        groups=pd.DataFrame(),
        k_achieved=pick("k_achieved", min),
        l_achieved=pick("l_achieved", min),
        t_achieved=pick("t_achieved", max),
        j_achieved=pick("j_achieved", max),
        ok=not problems and all(part.ok for part in parts),
        problems=problems,
        n_rows=sum(part.n_rows for part in parts),
        n_groups=sum(part.n_groups for part in parts),
        rbk_achieved=pick("rbk_achieved", max),
    )

"""Independent check of a released view: k, l, t and j of (E9), and the released format.

This module never calls the grouping code (:mod:`dpriv.anonymity.generalize`,
:mod:`dpriv.anonymize`). It re-derives every QI-group from the released view itself and
shares only the distance arithmetic of :mod:`dpriv.anonymity.divergence`:

* EMD (E18 equal / E19 ordered ground) as the exact integer fraction of
  :func:`~dpriv.anonymity.divergence.emd_num_den`, decided by
  :func:`~dpriv.anonymity.divergence.emd_within` (``num <= t * den``), so a boundary case
  such as ordered EMD = 0.25 at ``t = 0.25`` is decided exactly as the grouping decides it;
* JS (E8, equal weights, ``policy.log_base``) through
  :func:`~dpriv.anonymity.divergence.entropy` and
  :func:`~dpriv.anonymity.divergence.js_from_sums`, compared with ``j + JS_TOLERANCE``
  (the summation order differs from the grouping's running sums).

Per-group statistics are vectorised: one ``bincount`` over (group, sensitive code) gives
the (G, M) count matrix; a numba loop over groups turns it into EMD fractions, and another
sums the priors of group-sorted tuples for JS. No Python loop runs per group or per tuple.

The format checked is DESIGN.md "Released view": ``qi_group``; ``<qi>_min``/``<qi>_max``
(numeric, the true min/max of the group) per numeric QI; ``<qi>`` holding the value set
string ``{a,b}`` per categorical QI; the sensitive column; nothing else (no id, no column
starting with ``_``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from dpriv.anonymity.divergence import (
    GROUNDS,
    JS_TOLERANCE,
    emd_num_den,
    emd_within,
    entropy,
    js_from_sums,
)
from dpriv.errors import PolicyError, VerificationError
from dpriv.policy import ReleasePolicy
from dpriv.validate import codes

GROUP = "qi_group"
LABEL = "_label"  # private group label of the kept tuples (``Generalized.assigned``)
MAX_LISTED = 20  # groups named per kind of problem; the rest are counted


# --------------------------------------------------------------------------------------
# numba kernels (loops over groups, calling the shared divergence arithmetic)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _emd_all(counts, view_counts, view_size, ground):
    """EMD fraction of every group: counts (G, M) int64 -> num (G,), den (G,) int64."""
    g = counts.shape[0]
    num = np.empty(g, dtype=np.int64)
    den = np.empty(g, dtype=np.int64)
    for i in range(g):
        size = 0
        for c in counts[i]:
            size += c
        num[i], den[i] = emd_num_den(counts[i], size, view_counts, view_size, ground)
    return num, den


@njit(cache=True)
def _within_all(num, den, t):
    """``emd_within`` for every group: bool (G,)."""
    out = np.empty(num.shape[0], dtype=np.bool_)
    for i in range(num.shape[0]):
        out[i] = emd_within(num[i], den[i], t)
    return out


@njit(cache=True)
def _js_all(priors, starts, log_base):
    """Equal-weight JS (E8) of each segment ``priors[starts[g]:starts[g+1]]`` (group-sorted)."""
    g = starts.shape[0] - 1
    m = priors.shape[1]
    out = np.empty(g, dtype=np.float64)
    for i in range(g):
        sum_p = np.zeros(m)
        sum_h = 0.0
        for x in range(starts[i], starts[i + 1]):
            sum_p += priors[x]
            sum_h += entropy(priors[x], log_base)
        out[i] = js_from_sums(sum_p, sum_h, starts[i + 1] - starts[i], log_base)
    return out


# --------------------------------------------------------------------------------------
# per-group statistics
# --------------------------------------------------------------------------------------
def group_statistics(
    released: pd.DataFrame,
    qi_columns: list[str],
    sensitive: str,
    domain: list,
    view_counts: np.ndarray,
    ground: str,
    group_column: str | None = GROUP,
) -> pd.DataFrame:
    """Size, distinct l and EMD to the view distribution of every QI-group of a release.

    Parameters
    ----------
    released : pandas DataFrame, one row per released tuple.
    qi_columns : the generalized QI columns of ``released``; used to form the groups when
        ``group_column`` is None (a group = one tuple of generalized QI values, as in any
        generalized table, e.g. pyCANON's fixtures), and copied into the result then.
    sensitive : name of the sensitive column.
    domain : D[S], the M sensitive values in order (the order matters for the ordered ground).
    view_counts : int64 array of shape (M,), counts of S over the whole original view
        (P_V of (E9), computed before suppression); non-negative, positive sum N.
    ground : ``"equal"`` (E18) or ``"ordered"`` (E19, rank distance ``|i-j|/(M-1)``).
    group_column : column holding the QI-group label; None groups by ``qi_columns``.

    Returns
    -------
    pandas DataFrame with one row per group, sorted by group:
    ``qi_group`` (the label; 0..G-1 in sorted QI-tuple order when ``group_column`` is None,
    followed then by the ``qi_columns`` values), ``size`` (int64, |Q|), ``l`` (int64, number
    of distinct sensitive values, §4.2), ``emd_num``/``emd_den`` (int64, exact EMD
    fraction) and ``emd`` (float64 in [0, 1], ``emd_num / emd_den``).

    Raises
    ------
    ValueError
        ``view_counts`` not of shape (M,) / negative / summing to 0, an unknown ``ground``,
        a sensitive value outside ``domain``, a missing group label.
    """
    m = len(domain)
    vc = np.ascontiguousarray(view_counts, dtype=np.int64)
    if vc.shape != (m,):
        raise ValueError(f"view_counts has shape {vc.shape}; expected ({m},), one count per domain value")
    if (vc < 0).any() or vc.sum() == 0:
        raise ValueError(f"view_counts must be non-negative with a positive sum, got {vc.tolist()}")
    if ground not in GROUNDS:
        raise ValueError(f"unknown EMD ground {ground!r}; expected one of {sorted(GROUNDS)}")
    s = codes(released[sensitive], domain)
    if (s < 0).any():
        bad = pd.unique(released[sensitive].to_numpy()[s < 0])[:5].tolist()
        raise ValueError(f"sensitive column {sensitive!r} holds values outside its domain: {bad}")

    if group_column is not None:
        gid, labels = pd.factorize(released[group_column], sort=True)
        if (gid < 0).any():
            raise ValueError(f"group column {group_column!r} has missing labels")
        keys = pd.DataFrame({GROUP: labels})
    elif len(qi_columns) == 0 or len(released) == 0:
        gid = np.zeros(len(released), dtype=np.int64)
        keys = pd.DataFrame({GROUP: np.arange(min(len(released), 1), dtype=np.int64)})
        for q in qi_columns:
            keys[q] = released[q].iloc[:1].to_numpy()
    else:
        grouped = released.groupby(list(qi_columns), sort=True, dropna=False, observed=True)
        gid = grouped.ngroup().to_numpy()
        keys = grouped.size().reset_index()[list(qi_columns)]
        keys.insert(0, GROUP, np.arange(len(keys), dtype=np.int64))

    n_groups = len(keys)
    flat = np.asarray(gid, dtype=np.int64) * m + s
    counts = np.bincount(flat, minlength=n_groups * m).astype(np.int64).reshape(n_groups, m)
    num, den = _emd_all(counts, vc, int(vc.sum()), GROUNDS[ground])
    out = keys.reset_index(drop=True)
    out["size"] = counts.sum(axis=1)
    out["l"] = (counts > 0).sum(axis=1).astype(np.int64)
    out["emd_num"] = num
    out["emd_den"] = den
    out["emd"] = num / np.maximum(den, 1)
    return out


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary for ``metrics.json`` (plain Python types, no per-group table)."""
        return {
            "ok": bool(self.ok),
            "k_achieved": self.k_achieved,
            "l_achieved": self.l_achieved,
            "t_achieved": self.t_achieved,
            "j_achieved": self.j_achieved,
            "n_rows": int(self.n_rows),
            "n_groups": int(self.n_groups),
            "problems": list(self.problems),
        }

    def raise_if_failed(self) -> None:
        """Raise :class:`~dpriv.errors.VerificationError` listing the problems, if any."""
        if not self.ok:
            raise VerificationError("the released view fails verification:\n  " + "\n  ".join(self.problems))


def expected_columns(policy: ReleasePolicy) -> list[str]:
    """Columns of a released view for ``policy``, in DESIGN.md order."""
    cols = [GROUP]
    for q in policy.qi:
        cols += [f"{q}_min", f"{q}_max"] if policy.kind(q) == "numeric" else [q]
    return [*cols, policy.sensitive]


def _listed(prefix: str, items: list[str]) -> list[str]:
    """Cap a list of per-group problems at MAX_LISTED lines, counting the rest."""
    if len(items) > MAX_LISTED:
        return [prefix + x for x in items[:MAX_LISTED]] + [f"{prefix}... and {len(items) - MAX_LISTED} more"]
    return [prefix + x for x in items]


def _names(labels) -> str:
    labels = list(labels)
    head = ", ".join(repr(_py(x)) for x in labels[:MAX_LISTED])
    return head + (f" and {len(labels) - MAX_LISTED} more" if len(labels) > MAX_LISTED else "")


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _as_pandas(frame):
    """Materialise a Dask frame (the verifier works on one in-memory released view)."""
    compute = getattr(frame, "compute", None)
    return frame if isinstance(frame, pd.DataFrame) or compute is None else compute()


def _check_format(released: pd.DataFrame, policy: ReleasePolicy) -> tuple[list[str], list[str]]:
    """Problems of the released columns and values; also the usable generalized QI columns."""
    problems: list[str] = []
    expected = expected_columns(policy)
    cols = list(released.columns)
    if policy.id in cols:
        problems.append(f"column {policy.id!r}: the respondent id must never be released")
    private = [c for c in cols if str(c).startswith("_")]
    if private:
        problems.append(f"columns {private}: private columns (starting with '_') must not be released")
    extra = [c for c in cols if c not in expected and c != policy.id and c not in private]
    if extra:
        problems.append(f"columns {extra} are not part of the released format {expected}")
    missing = [c for c in expected if c not in cols]
    if missing:
        problems.append(f"columns {missing} of the released format are missing")
    usable: list[str] = []
    has_group = GROUP in cols
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            lo, hi = f"{q}_min", f"{q}_max"
            if lo not in cols or hi not in cols:
                continue
            bad = [
                c
                for c in (lo, hi)
                if not (
                    pd.api.types.is_numeric_dtype(released[c]) and not pd.api.types.is_bool_dtype(released[c])
                )
            ]
            if bad:
                problems.append(f"columns {bad}: interval bounds of numeric QI {q!r} must be numeric")
                continue
            nan = released[lo].isna() | released[hi].isna()
            if nan.any():
                problems.append(f"QI {q!r}: {int(nan.sum())} rows have a missing interval bound")
            inverted = (released[lo] > released[hi]).to_numpy()
            if inverted.any():
                where = released.loc[inverted, GROUP].unique() if has_group else []
                problems.append(
                    f"QI {q!r}: {int(inverted.sum())} rows have {lo} > {hi}"
                    + (f" (QI-groups {_names(where)})" if has_group else "")
                )
            usable += [lo, hi]
        else:
            if q not in cols:
                continue
            if q not in policy.domains:
                raise PolicyError(f"categorical QI {q!r} has no domain; resolve the policy first")
            names = {str(v) for v in policy.domains[q]}
            sets = pd.Series(pd.unique(released[q].to_numpy()), dtype=object)
            text = sets.astype(str)
            shaped = sets.notna() & text.str.startswith("{") & text.str.endswith("}") & (text.str.len() > 2)
            items = text[shaped].str.slice(1, -1).str.split(",").explode()
            wrong = set(text[~shaped]) | set(text[np.unique(items.index[~items.isin(names)])])
            if wrong:
                problems.append(
                    f"QI {q!r}: values {sorted(wrong)[:5]} are not value sets "
                    f"'{{a,b}}' of its levels {list(names)[:8]}"
                )
            usable.append(q)
    if has_group and len(released):
        if released[GROUP].isna().any():
            problems.append(f"column {GROUP!r} has missing labels")
        elif usable:
            spread = released.groupby(GROUP, sort=True)[usable].nunique(dropna=False)
            for c in usable:
                bad = spread.index[spread[c].to_numpy() > 1]
                if len(bad):
                    problems.append(
                        f"QI-groups {_names(bad)}: column {c!r} is not the same on all "
                        "rows of the group (one interval / value set per group)"
                    )
    return problems, usable


def _view_counts(view_counts, original, policy: ReleasePolicy) -> tuple[np.ndarray, list[str]]:
    domain = policy.sensitive_domain
    problems: list[str] = []
    from_original = None
    if original is not None:
        original = _as_pandas(original[[policy.sensitive]])
        c = codes(original[policy.sensitive], domain)
        if (c < 0).any():
            problems.append(
                f"original view: sensitive column {policy.sensitive!r} has "
                f"{int((c < 0).sum())} values outside its domain"
            )
        from_original = np.bincount(c[c >= 0], minlength=len(domain)).astype(np.int64)
    if view_counts is None:
        if from_original is None:
            raise ValueError(
                "verify_release needs the distribution of S over the original view: "
                "pass view_counts or original"
            )
        return from_original, problems
    vc = np.asarray(view_counts, dtype=np.int64)
    if from_original is not None and not np.array_equal(vc, from_original):
        problems.append(
            f"view_counts {vc.tolist()} differ from the counts of the original view {from_original.tolist()}"
        )
    return vc, problems


def _check_assigned(
    released: pd.DataFrame,
    assigned: pd.DataFrame,
    policy: ReleasePolicy,
    stats: pd.DataFrame,
    usable: list[str],
) -> tuple[list[str], pd.Series | None]:
    """Membership checks against the private frame; returns problems and JS per group label."""
    problems: list[str] = []
    need = [LABEL, *policy.qi, *policy.prior_columns]
    absent = [c for c in need if c not in assigned.columns]
    if absent:
        return [f"assigned: columns {absent} are missing (need {LABEL}, the QIs and the priors)"], None
    labels = assigned[LABEL]
    rel_labels = released[GROUP]
    if labels.dtype != rel_labels.dtype:  # e.g. int labels vs labels read back as text
        labels, rel_labels = labels.astype(str), rel_labels.astype(str)
        stats_labels = stats[GROUP].astype(str)
    else:
        stats_labels = stats[GROUP]

    # sizes and sensitive counts per group must match the released ones
    s_priv = (
        codes(assigned[policy.sensitive], policy.sensitive_domain)
        if policy.sensitive in assigned.columns
        else assigned["_s"].to_numpy()
    )
    priv = pd.DataFrame({"g": labels.to_numpy(), "s": s_priv})
    pub = pd.DataFrame(
        {"g": rel_labels.to_numpy(), "s": codes(released[policy.sensitive], policy.sensitive_domain)}
    )
    size_priv = priv.groupby("g").size()
    size_pub = pub.groupby("g").size()
    sizes = pd.concat({"pub": size_pub, "priv": size_priv}, axis=1).fillna(0).astype(np.int64)
    bad = sizes.index[sizes["pub"] != sizes["priv"]]
    if len(bad):
        problems += _listed(
            "",
            [
                f"QI-group {_py(g)!r}: {sizes.at[g, 'pub']} released tuples but "
                f"{sizes.at[g, 'priv']} kept tuples assigned to it"
                for g in bad
            ],
        )
    cnt = pd.concat({"pub": pub.value_counts(), "priv": priv.value_counts()}, axis=1).fillna(0)
    moved = cnt.index[cnt["pub"] != cnt["priv"]].get_level_values("g").unique()
    moved = [g for g in moved if g not in set(bad.tolist())]
    if moved:
        problems.append(
            f"QI-groups {_names(moved)}: the released sensitive values differ from "
            "those of the tuples assigned to the group"
        )

    # every kept tuple inside its group's interval / value set, bounds tight
    first = released.assign(**{GROUP: rel_labels}).drop_duplicates(GROUP).set_index(GROUP)
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            lo, hi = f"{q}_min", f"{q}_max"
            if lo not in usable:
                continue
            x = pd.to_numeric(assigned[q], errors="coerce").to_numpy(dtype=float)
            lo_v = first[lo].reindex(labels.to_numpy()).to_numpy(dtype=float)
            hi_v = first[hi].reindex(labels.to_numpy()).to_numpy(dtype=float)
            out = ~((x >= lo_v) & (x <= hi_v))  # NaN (unknown group, missing value) is outside
            if out.any():
                problems.append(
                    f"QI {q!r}: {int(out.sum())} kept tuples lie outside the interval "
                    f"[{lo}, {hi}] of their QI-group (groups "
                    f"{_names(pd.unique(labels.to_numpy()[out]))})"
                )
            span = pd.DataFrame({"g": labels.to_numpy(), "x": x}).groupby("g")["x"].agg(["min", "max"])
            loose = span.index[
                (span["min"].to_numpy() != first[lo].reindex(span.index).to_numpy(float))
                | (span["max"].to_numpy() != first[hi].reindex(span.index).to_numpy(float))
            ]
            if len(loose) and not out.any():
                problems.append(
                    f"QI {q!r}: the interval of QI-groups {_names(loose)} is not the true "
                    "min/max of their tuples"
                )
        else:
            if q not in usable:
                continue
            dom = policy.domains[q]
            c = codes(assigned[q], dom)
            names = np.asarray([str(v) for v in dom] + ["\x00unknown"], dtype=object)[c]
            have = pd.DataFrame({"g": labels.to_numpy(), "v": names}).drop_duplicates()
            sets = first[q].astype(str).str.slice(1, -1).str.split(",").explode()
            shown = pd.DataFrame({"g": sets.index.to_numpy(), "v": sets.to_numpy()}).drop_duplicates()
            both = have.merge(shown, on=["g", "v"], how="outer", indicator=True)
            both = both[both["g"].isin(set(labels))]
            out = both.loc[both["_merge"] == "left_only", "g"].unique()
            unused = both.loc[both["_merge"] == "right_only", "g"].unique()
            if len(out):
                problems.append(
                    f"QI {q!r}: kept tuples of QI-groups {_names(out)} have values "
                    "outside their group's value set"
                )
            elif len(unused):
                problems.append(
                    f"QI {q!r}: the value sets of QI-groups {_names(unused)} list values "
                    "no tuple of the group has"
                )

    # JS (E8) of each group's priors, equal weights
    priors = assigned[policy.prior_columns].to_numpy(dtype=np.float64)
    rows_ok = (
        np.isfinite(priors).all(axis=1)
        & (priors >= 0).all(axis=1)
        & (np.abs(priors.sum(axis=1) - 1.0) <= 1e-6)
    )
    if not rows_ok.all():
        problems.append(
            f"assigned: {int((~rows_ok).sum())} prior rows ({policy.prior_columns[:3]}...) "
            "are not distributions (non-negative, summing to 1)"
        )
    g_codes, uniq = pd.factorize(labels, sort=True)
    order = np.argsort(g_codes, kind="stable")
    starts = np.searchsorted(g_codes[order], np.arange(len(uniq) + 1)).astype(np.int64)
    js = _js_all(np.ascontiguousarray(priors[order]), starts, float(policy.log_base))
    js_by_label = pd.Series(js, index=uniq)
    return problems, js_by_label.reindex(stats_labels.to_numpy())


def verify_release(
    released: pd.DataFrame,
    policy: ReleasePolicy,
    *,
    view_counts: np.ndarray | None = None,
    original: pd.DataFrame | None = None,
    assigned: pd.DataFrame | None = None,
) -> VerificationReport:
    """Check a released view against (E9) and the DESIGN.md released format.

    Parameters
    ----------
    released : the public view V*_i (pandas, or Dask which is materialised), DESIGN.md
        "Released view" columns.
    policy : resolved ReleasePolicy (sensitive domain D[S] and categorical QI levels known);
        ``k``, ``t`` (with ``emd_ground``), ``j`` (with ``log_base``) are the thresholds.
    view_counts : int64 array of shape (M,), counts of S over the whole ORIGINAL view V_i
        (before suppression), in the order of ``policy.sensitive_domain``.
    original : the original view V_i; gives ``view_counts`` when those are not passed (and
        is checked against them when both are).
    assigned : the private membership of the kept tuples (``Generalized.assigned``): the
        ``_label`` group label, the QI values, the sensitive column (or ``_s`` code) and
        the ``p__<value>`` prior columns. Enables the JS check (E8) and the membership checks.

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
    ValueError
        neither ``view_counts`` nor ``original``; ``view_counts`` of the wrong shape.
    PolicyError
        the policy has no sensitive domain or no levels for a categorical QI.
    """
    if policy.sensitive not in policy.domains:
        raise PolicyError(f"no domain for the sensitive column {policy.sensitive!r}; resolve the policy")
    released = _as_pandas(released)
    assigned = None if assigned is None else _as_pandas(assigned)
    domain = policy.sensitive_domain
    vc, problems = _view_counts(view_counts, original, policy)
    if vc.shape != (len(domain),):
        raise ValueError(f"view_counts has shape {vc.shape}; expected ({len(domain)},)")
    fmt, usable = _check_format(released, policy)
    problems += fmt
    if policy.sensitive not in released.columns:
        return VerificationReport(pd.DataFrame(), None, None, None, None, False, problems, len(released), 0)

    s = codes(released[policy.sensitive], domain)
    if (s < 0).any():
        bad = pd.unique(released[policy.sensitive].to_numpy()[s < 0])[:5].tolist()
        problems.append(
            f"sensitive column {policy.sensitive!r}: values {bad} are outside its domain "
            "(those rows are left out of the statistics)"
        )
        released = released[s >= 0]
        s = s[s >= 0]
    rel_counts = np.bincount(s, minlength=len(domain))
    over = [f"{domain[i]!r} ({rel_counts[i]} > {vc[i]})" for i in np.flatnonzero(rel_counts > vc)]
    if over:
        problems.append(
            f"sensitive values {over[:5]} are released more often than the original view holds them"
        )
    if vc.sum() == 0:
        problems.append("the original view has no tuple: no distribution to compare with")
        vc = np.ones(len(domain), dtype=np.int64)

    group_column = GROUP if GROUP in released.columns and not released[GROUP].isna().any() else None
    qi_cols = usable if group_column is None else []
    stats = group_statistics(
        released, qi_cols, policy.sensitive, domain, vc, policy.emd_ground, group_column=group_column
    )
    stats["js"] = np.nan
    stats["holds_k"] = stats["size"].to_numpy() >= policy.k
    stats["holds_t"] = _within_all(stats["emd_num"].to_numpy(), stats["emd_den"].to_numpy(), float(policy.t))
    stats["holds_j"] = pd.array([pd.NA] * len(stats), dtype="boolean")
    j_achieved = None
    if assigned is not None and group_column is not None:
        more, js = _check_assigned(released, assigned, policy, stats, usable)
        problems += more
        if js is not None:
            stats["js"] = js.to_numpy(dtype=float)
            stats["holds_j"] = pd.array(
                np.where(np.isnan(stats["js"]), False, stats["js"] <= policy.j + JS_TOLERANCE),
                dtype="boolean",
            )
            if len(stats):
                j_achieved = float(np.nanmax(stats["js"])) if stats["js"].notna().any() else None
    elif assigned is not None:
        problems.append(f"assigned given but the release has no usable {GROUP!r} column to match it")

    labels = stats[GROUP]
    small = stats.loc[~stats["holds_k"]]
    problems += _listed(
        "",
        [
            f"QI-group {_py(g)!r}: size {n} < k = {policy.k}"
            for g, n in zip(labels[small.index], small["size"])
        ],
    )
    far = stats.loc[~stats["holds_t"]]
    problems += _listed(
        "",
        [
            f"QI-group {_py(g)!r}: EMD {e:.6g} ({a}/{b}) > t = {policy.t} ({policy.emd_ground} ground)"
            for g, e, a, b in zip(labels[far.index], far["emd"], far["emd_num"], far["emd_den"])
        ],
    )
    if assigned is not None:
        spread = stats.loc[stats["holds_j"].eq(False).fillna(False).to_numpy(dtype=bool)]
        problems += _listed(
            "",
            [
                f"QI-group {_py(g)!r}: JS {x:.6g} > j = {policy.j} (tolerance "
                f"{JS_TOLERANCE:g}, base {policy.log_base:g})"
                for g, x in zip(labels[spread.index], spread["js"])
            ],
        )
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
    )


def combine_reports(parts: list[dict[str, Any]], released_counts: np.ndarray, view_counts: np.ndarray,
                    domain: list) -> dict[str, Any]:
    """One report (:meth:`VerificationReport.to_dict` form) for a release verified in parts
    that each hold whole QI-groups (the release loop checks Dask partitions this way).

    ``parts``: the parts' reports, each verified against the whole view's ``view_counts``;
    ``released_counts`` (int64, shape (M,)): the released count of each sensitive value
    summed over the parts, checked here against ``view_counts`` (a part alone cannot).
    Achieved values: smallest k and l, largest t and j over the parts that have groups.
    """
    problems = [p for part in parts for p in part["problems"]]
    rel, vc = np.asarray(released_counts), np.asarray(view_counts)
    over = [f"{domain[i]!r} ({rel[i]} > {vc[i]})" for i in np.flatnonzero(rel > vc)]
    if over:
        problems.append(
            f"sensitive values {over[:5]} are released more often than the original view holds them"
        )

    def pick(key: str, fn):
        vals = [part[key] for part in parts if part[key] is not None]
        return fn(vals) if vals else None

    return {
        "ok": not problems and all(part["ok"] for part in parts),
        "k_achieved": pick("k_achieved", min),
        "l_achieved": pick("l_achieved", min),
        "t_achieved": pick("t_achieved", max),
        "j_achieved": pick("j_achieved", max),
        "n_rows": sum(part["n_rows"] for part in parts),
        "n_groups": sum(part["n_groups"] for part in parts),
        "problems": problems,
    }

"""The privacy criteria, defined once: k-anonymity, distinct l-diversity, t-closeness (EMD),
the JS bound j, RBK-closeness and (B,t)-privacy (docs/algorithms.md (E9), §4.2, (E16)).

Each criterion is a small object in the shape of ARX's ``PrivacyCriterion``: ``name`` (as in
``metrics.json`` and the report), ``needs`` (the per-group statistics it reads), whether it
survives merging valid groups (``monotone_under_merge``), ``holds`` (a group table -> bool per
group), ``achieved`` (min size / min l / max EMD / max JS), ``holds_counts`` for one group's
sensitive counts (Mondrian's allowable cut), ``breaks`` (an achieved value against the
threshold, for the report) and ``problem`` (the message naming a failing group).

A *group table* is the frame of :func:`group_statistics` (``size``, ``l``, ``emd_num``,
``emd_den``, ``emd``; ``js`` when the priors are known). :data:`GUARANTEES` says which
criteria each release method promises: the verifier checks those, the report marks a
release that breaks one. The greedy grouping (numba) decides (E9) with the same exact
arithmetic (:func:`~dpriv.divergence.emd_within`, :data:`JS_TOLERANCE`) on its
running sums, with the thresholds of :func:`criteria_for`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit

from dpriv.divergence import (
    GROUNDS,
    JS_TOLERANCE,
    TV_TOLERANCE,
    emd_num_den,
    emd_within,
    entropy,
    js_from_sums,
    tv_from_sums,
)
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP
from dpriv.validate import codes

#: EMD ground name by its code in the numba kernels.
GROUND_NAMES = {code: name for name, code in GROUNDS.items()}

#: The criteria each release method promises (names of :data:`REGISTRY`).
GUARANTEES: dict[str, tuple[str, ...]] = {
    "jsreduce": ("k", "t", "j"),
    "mondrian-l": ("k", "l"),
    "mondrian-t": ("k", "t"),
    "mondrian-bt": ("k",),
}


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


@njit(cache=True)
def _tv_all(priors, s, starts, m):
    """RBK-closeness distance of each segment (group-sorted rows): sensitive codes ``s``."""
    g = starts.shape[0] - 1
    out = np.empty(g, dtype=np.float64)
    for i in range(g):
        sum_p = np.zeros(m)
        counts = np.zeros(m, dtype=np.int64)
        for x in range(starts[i], starts[i + 1]):
            sum_p += priors[x]
            counts[s[x]] += 1
        out[i] = tv_from_sums(counts, sum_p, starts[i + 1] - starts[i])
    return out


def tv_per_group(priors: np.ndarray, s: np.ndarray, labels: np.ndarray | pd.Series) -> pd.Series:
    """RBK-closeness distance of every group, indexed by label: the total variation between
    the group's sensitive distribution (codes ``s`` (n,) in [0, M)) and the mean of its
    members' priors (``priors`` (n, M), rows summing to 1); float64 in [0, 1]."""
    g_codes, uniq = pd.factorize(labels, sort=True)
    order = np.argsort(g_codes, kind="stable")
    starts = np.searchsorted(g_codes[order], np.arange(len(uniq) + 1)).astype(np.int64)
    p = np.ascontiguousarray(priors[order], dtype=np.float64)
    codes_ = np.ascontiguousarray(np.asarray(s)[order], dtype=np.int64)
    return pd.Series(_tv_all(p, codes_, starts, p.shape[1]), index=uniq)


def js_per_group(priors: np.ndarray, labels: np.ndarray | pd.Series, log_base: float) -> pd.Series:
    """JS (E8, equal weights, ``log_base``) of the priors of every group, indexed by label."""
    g_codes, uniq = pd.factorize(labels, sort=True)
    order = np.argsort(g_codes, kind="stable")
    starts = np.searchsorted(g_codes[order], np.arange(len(uniq) + 1)).astype(np.int64)
    return pd.Series(_js_all(np.ascontiguousarray(priors[order]), starts, float(log_base)), index=uniq)


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
    InputError
        ``view_counts`` not of shape (M,) / negative / summing to 0, a sensitive value
        outside ``domain``, a missing group label.
    PolicyError
        An unknown ``ground``.
    """
    m = len(domain)
    vc = np.ascontiguousarray(view_counts, dtype=np.int64)
    if vc.shape != (m,):
        raise InputError(f"view_counts has shape {vc.shape}; expected ({m},), one count per domain value")
    if (vc < 0).any() or vc.sum() == 0:
        raise InputError(f"view_counts must be non-negative with a positive sum, got {vc.tolist()}")
    if ground not in GROUNDS:
        raise PolicyError(f"unknown EMD ground {ground!r}; expected one of {sorted(GROUNDS)}")
    s = codes(released[sensitive], domain)
    if (s < 0).any():
        bad = pd.unique(released[sensitive].to_numpy()[s < 0])[:5].tolist()
        raise InputError(f"sensitive column {sensitive!r} holds values outside its domain: {bad}")

    if group_column is not None:
        gid, labels = pd.factorize(released[group_column], sort=True)
        if (gid < 0).any():
            raise InputError(f"group column {group_column!r} has missing labels")
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
# the criteria
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Criterion:
    """One privacy criterion with its threshold (see the module doc)."""

    threshold: float
    name: ClassVar[str]
    needs: ClassVar[frozenset[str]]
    monotone_under_merge: ClassVar[bool]
    #: the threshold bounds the statistic from below (k, l: the smallest group counts) or
    #: from above (t, j: the largest group counts)
    lower_bound: ClassVar[bool]
    #: column of the group table holding the statistic
    column: ClassVar[str]

    def __init_subclass__(
        cls, *, name: str, needs: str, monotone: bool, lower_bound: bool, column: str = "", **kw: Any
    ) -> None:
        super().__init_subclass__(**kw)
        cls.name, cls.needs, cls.column = name, frozenset(needs.split()), column
        cls.monotone_under_merge, cls.lower_bound = monotone, lower_bound

    def values(self, groups: pd.DataFrame) -> np.ndarray:
        """The statistic of every group that the threshold bounds."""
        return groups[self.column].to_numpy()

    def holds(self, groups: pd.DataFrame) -> np.ndarray:
        """bool per group of the group table ``groups``."""
        v = self.values(groups)
        return v >= self.threshold if self.lower_bound else v <= self.threshold

    def achieved(self, groups: pd.DataFrame) -> float | None:
        """The release's value of the statistic; None without groups (or without data)."""
        v = self.values(groups)
        v = v[~np.isnan(v)] if v.dtype.kind == "f" else v
        if not len(v):
            return None
        return (int if v.dtype.kind in "iu" else float)(v.min() if self.lower_bound else v.max())

    def breaks(self, achieved: float | None) -> bool:
        """Whether an achieved value (e.g. from ``metrics.json``) breaks the threshold."""
        if achieved is None or (isinstance(achieved, float) and np.isnan(achieved)):
            return False
        return achieved < self.threshold if self.lower_bound else achieved > self.threshold + 1e-9

    def describe(self) -> str:
        return f"{self.name} = {self.threshold:g}"


@dataclass(frozen=True)
class KAnonymity(Criterion, name="k", needs="size", monotone=True, lower_bound=True, column="size"):
    """|Q| >= k (E9)."""

    def holds_size(self, n: int) -> bool:
        """Whether a group of ``n`` tuples is large enough (Mondrian's cut check)."""
        return n >= self.threshold

    def holds_counts(self, counts: np.ndarray) -> bool:
        return self.holds_size(int(counts.sum()))

    def problem(self, label: Any, row: pd.Series) -> str:
        return f"QI-group {label!r}: size {row['size']} < k = {self.threshold}"


@dataclass(frozen=True)
class DistinctL(Criterion, name="l", needs="s_counts", monotone=True, lower_bound=True, column="l"):
    """At least l distinct sensitive values in every group (distinct l-diversity, §4.2)."""

    def holds_counts(self, counts: np.ndarray) -> bool:
        return int(np.count_nonzero(counts)) >= self.threshold

    def problem(self, label: Any, row: pd.Series) -> str:
        return f"QI-group {label!r}: {row['l']} distinct sensitive values < l = {self.threshold}"


@dataclass(frozen=True)
class TCloseness(Criterion, name="t", needs="s_counts", monotone=True, lower_bound=False, column="emd"):
    """EMD(P_Q, P_V) <= t, decided exactly on integer counts (E9, E18 / E19)."""

    ground: str = "equal"
    view_counts: tuple[int, ...] = ()

    def holds(self, groups: pd.DataFrame) -> np.ndarray:
        """Exact: ``emd_num <= t * emd_den`` (the float ``emd`` is for display)."""
        return _within_all(
            groups["emd_num"].to_numpy(np.int64), groups["emd_den"].to_numpy(np.int64), float(self.threshold)
        )

    @cached_property
    def _view(self) -> tuple[np.ndarray, int, int]:
        vc = np.asarray(self.view_counts, dtype=np.int64)
        return vc, int(vc.sum()), GROUNDS[self.ground]

    def holds_counts(self, counts: np.ndarray) -> bool:
        """Whether one group with sensitive counts ``counts`` (int64, (M,)) is within t."""
        vc, n_view, ground = self._view
        num, den = emd_num_den(counts, int(counts.sum()), vc, n_view, ground)
        return bool(emd_within(num, den, self.threshold))

    def problem(self, label: Any, row: pd.Series) -> str:
        return (
            f"QI-group {label!r}: EMD {row['emd']:.6g} ({row['emd_num']}/{row['emd_den']}) > "
            f"t = {self.threshold} ({self.ground} ground)"
        )


@dataclass(frozen=True)
class JSBound(Criterion, name="j", needs="priors", monotone=False, lower_bound=False, column="js"):
    """JS of the group members' priors <= j (E8, E9), up to :data:`JS_TOLERANCE`."""

    log_base: float = 2.0

    def values(self, groups: pd.DataFrame) -> np.ndarray:
        return groups["js"].to_numpy(dtype=float) if "js" in groups else np.full(len(groups), np.nan)

    def holds(self, groups: pd.DataFrame) -> np.ndarray:
        js = self.values(groups)
        return np.where(np.isnan(js), False, js <= self.threshold + JS_TOLERANCE)

    def problem(self, label: Any, row: pd.Series) -> str:
        return (
            f"QI-group {label!r}: JS {row['js']:.6g} > j = {self.threshold} (tolerance "
            f"{JS_TOLERANCE:g}, base {self.log_base:g})"
        )


@dataclass(frozen=True)
class RBKCloseness(
    Criterion, name="rbk_closeness", needs="priors", monotone=False, lower_bound=False, column="rbk_tv"
):
    """The total variation between a group's sensitive distribution and the mean of its members'
    revised priors is at most the threshold, up to :data:`TV_TOLERANCE` (docs/algorithms.md,
    "RBK-closeness"): t-closeness with the adversary's revised knowledge of the members as the
    reference instead of the whole view."""

    def values(self, groups: pd.DataFrame) -> np.ndarray:
        return groups["rbk_tv"].to_numpy(dtype=float) if "rbk_tv" in groups else np.full(len(groups), np.nan)

    def holds(self, groups: pd.DataFrame) -> np.ndarray:
        tv = self.values(groups)
        return np.where(np.isnan(tv), False, tv <= self.threshold + TV_TOLERANCE)

    def holds_sums(self, counts: np.ndarray, sum_p: np.ndarray) -> bool:
        """Whether one group (int counts (M,), its members' prior sums (M,)) keeps the bound."""
        return bool(tv_from_sums(counts, sum_p, int(counts.sum())) <= self.threshold)

    def problem(self, label: Any, row: pd.Series) -> str:
        return (
            f"QI-group {label!r}: its sensitive distribution is {row['rbk_tv']:.6g} (total "
            f"variation) from its members' mean prior > rbk_closeness = {self.threshold}"
        )


@dataclass(frozen=True)
class BTPrivacy(Criterion, name="bt", needs="rows", monotone=False, lower_bound=False):
    """(B,t)-privacy (E16): every member's Ω-posterior within plain JS t of its kernel prior
    of bandwidth B. Checked on the rows of a candidate group (``allowable``); the released
    view alone does not carry the kernel priors, so it is not in a group table."""

    bandwidth: float = 0.3
    allowable: Callable[[np.ndarray], bool] | None = None

    def holds_rows(self, rows: np.ndarray) -> bool:
        if self.allowable is None:
            raise PolicyError("(B,t)-privacy needs allowable=callable(rows) -> bool")
        return bool(self.allowable(rows))


#: Criterion class by name (``metrics.json`` keys ``<name>_achieved``).
REGISTRY: dict[str, type[Criterion]] = {
    c.name: c for c in (KAnonymity, DistinctL, TCloseness, JSBound, RBKCloseness)
}


def criteria_for(
    policy: ReleasePolicy, method: str = "jsreduce", view_counts: np.ndarray | None = None
) -> tuple[Criterion, ...]:
    """The criteria a release by ``method`` promises, with the policy's thresholds (JS-reduce's
    also RBK-closeness when ``policy.rbk_closeness`` is set)."""
    if method not in GUARANTEES:
        raise PolicyError(f"unknown method {method!r}; choose one of {list(GUARANTEES)}")
    vc = tuple(int(c) for c in view_counts) if view_counts is not None else ()
    make = {
        "k": lambda: KAnonymity(policy.k),
        "l": lambda: DistinctL(policy.l),
        "t": lambda: TCloseness(policy.t, policy.emd_ground, vc),
        "j": lambda: JSBound(policy.j, policy.log_base),
    }
    crit = tuple(make[name]() for name in GUARANTEES[method])
    if method == "jsreduce" and getattr(policy, "rbk_closeness", None) is not None:
        crit += (RBKCloseness(policy.rbk_closeness),)
    return crit


def refuse_ignored(policy: ReleasePolicy, method: str) -> None:
    """PolicyError when the policy sets ``rbk_closeness`` and ``method`` is a Mondrian baseline,
    which would ignore it (RBK-closeness is decided by JS-reduce's grouping)."""
    if method != "jsreduce" and getattr(policy, "rbk_closeness", None) is not None:
        raise PolicyError(
            f"rbk_closeness is applied by JS-reduce's grouping; method {method!r} would ignore it: "
            "use --method jsreduce or remove rbk_closeness from the policy"
        )


def keeps(
    crit: tuple[Criterion, ...], counts: np.ndarray, sum_p: np.ndarray | None = None, sum_h: float = 0.0
) -> bool:
    """Whether one candidate group keeps ``crit``: k, l and t on its integer sensitive counts
    (M,), j (E8) and RBK-closeness on the sums of its members' priors (M,) and of their
    entropies (summed in an order that does not depend on the partitions; the verifier's
    tolerances absorb the last bits of another order); both are skipped without ``sum_p``, j
    also for one member."""
    size = int(counts.sum())
    for c in crit:
        if isinstance(c, KAnonymity | DistinctL | TCloseness) and not c.holds_counts(counts):
            return False
        if isinstance(c, JSBound) and sum_p is not None and size > 1:
            if js_from_sums(sum_p, float(sum_h), size, c.log_base) > c.threshold:
                return False
        if isinstance(c, RBKCloseness) and sum_p is not None and not c.holds_sums(counts, sum_p):
            return False
    return True


def breaks(name: str, achieved: Any, threshold: Any) -> bool:
    """Whether ``achieved`` (a ``<name>_achieved`` of ``metrics.json``) breaks ``threshold``."""
    if threshold is None or name not in REGISTRY:
        return False
    return REGISTRY[name](threshold).breaks(achieved)

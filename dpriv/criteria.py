"""The privacy criteria, defined once: k-anonymity, distinct l-diversity, t-closeness (EMD),
the JS bound j, RBK-closeness and (B,t)-privacy (docs/algorithms.md (E9), §4.2, (E16)).

Each criterion is a small object in the shape of ARX's ``PrivacyCriterion``: ``name`` (as in
``metrics.json`` and the report), ``needs`` (the per-group statistics it reads), whether it
survives merging valid groups (``monotone_under_merge``), ``holds`` (a group table -> bool per
group), ``achieved`` (min size / min l / max EMD / max JS), ``holds_counts`` for one group's
sensitive counts (Mondrian's allowable cut), ``breaks`` (an achieved value against the
threshold, for the report) and ``problem`` (the message naming a failing group).

A *group table* is the frame of :func:`group_statistics` (``size``, ``l``, ``emd_num``,
``emd_den``, ``emd``; ``js`` and ``rbk_tv`` when the priors are known), computed in
:mod:`dpriv.group_table` and re-exported here. :data:`GUARANTEES` says which
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

from dpriv.divergence import (
    GROUNDS,
    JS_TOLERANCE,
    TV_TOLERANCE,
    emd_num_den,
    emd_within,
    js_from_sums,
    tv_from_sums,
)
from dpriv.errors import PolicyError
from dpriv.group_table import (  # noqa: F401 - re-exported: the group table the criteria read
    GROUND_NAMES,
    group_statistics,
    js_per_group,
    tv_per_group,
    within_all,
)
from dpriv.kernel_args import kernel_input
from dpriv.policy import ReleasePolicy
from dpriv.policy_keys import JSREDUCE_REFUSED

#: The criteria each release method promises (names of :data:`REGISTRY`).
GUARANTEES: dict[str, tuple[str, ...]] = {
    "jsreduce": ("k", "t", "j"),
    "mondrian-l": ("k", "l"),
    "mondrian-t": ("k", "t"),
    "mondrian-bt": ("k",),
    "histogram": ("k", "t"),  # one group: the view's own distribution (EMD 0)
}


def promised(method: str, rbk_closeness: float | None = None) -> tuple[str, ...]:
    """Names of the criteria a release by ``method`` promises under a policy whose
    ``rbk_closeness`` is given: :data:`GUARANTEES` (``("k",)`` for an unknown method), and
    ``"rbk_closeness"`` for JS-reduce when the bound is set. The one place the release
    (:func:`criteria_for`) and the report (its red cells and verdicts) learn what was promised."""
    names = GUARANTEES.get(method, ("k",))
    if method == "jsreduce" and rbk_closeness is not None:
        names = (*names, "rbk_closeness")
    return names


def unpromised(method: str, rbk_closeness: float | None = None) -> list[str]:
    """The criteria of k, l, t and j whose achieved value a release by baseline ``method`` measures
    (``metrics.json``) but does not bound, e.g. ``["t", "j"]`` for mondrian-l: what its summary and
    release table mark as measured. Empty for JS-reduce, whose l is reported as docs/policy.md says."""
    if method == "jsreduce":
        return []
    held = promised(method, rbk_closeness)
    return [name for name in ("k", "l", "t", "j") if name not in held]


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
        # read-only either way (pandas copies or not): one compiled signature (dpriv.kernel_args)
        num, den = (kernel_input(groups[c].to_numpy(np.int64), np.int64) for c in ("emd_num", "emd_den"))
        return within_all(num, den, float(self.threshold))

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
        "rbk_closeness": lambda: RBKCloseness(policy.rbk_closeness),
    }
    return tuple(make[name]() for name in promised(method, getattr(policy, "rbk_closeness", None)))


#: Policy fields only JS-reduce's grouping applies that a Mondrian baseline refuses (it would
#: ignore them): :data:`dpriv.policy_keys.JSREDUCE_REFUSED`, one list with the printed policy's.
JSREDUCE_ONLY = JSREDUCE_REFUSED


def refuse_ignored(policy: ReleasePolicy, method: str) -> None:
    """PolicyError when ``method`` is a Mondrian baseline and the policy sets a field of
    :data:`JSREDUCE_ONLY`, which the baseline would ignore; names the field."""
    if method == "jsreduce":
        return
    for field in JSREDUCE_ONLY:
        if getattr(policy, field, None) is not None:
            raise PolicyError(
                f"{field} is applied by JS-reduce's grouping; method {method!r} would ignore it: "
                f'use --method jsreduce (method="jsreduce" in Python) or remove {field} from the policy'
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

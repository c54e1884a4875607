"""Metrics of one release (``metrics.json``, :mod:`dpriv.metrics.record`) and the refusal to
publish a failing one.

Utility (E11, E24-E26) and the KPR of the release (E21) next to the sizes; pandas or Dask
frames. :func:`require` refuses a release whose verification failed or whose suppression
exceeds the policy's limit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.anonymity.verify import VerificationReport, verify_release
from dpriv.anonymity.verify_anatomy import verify_anatomy
from dpriv.errors import PolicyError, VerificationError
from dpriv.metrics.anatomy import anatomy_utility, association_per_group, view_association_loss
from dpriv.metrics.groups import group_table
from dpriv.metrics.microdata import release_kpr
from dpriv.metrics.record import ReleaseRecord
from dpriv.metrics.utility import GroupSums
from dpriv.policy import ReleasePolicy
from dpriv.policy_fix import policy_change, relax_hint
from dpriv.released import public
from dpriv.view_summary import ViewSummary


@dataclass(frozen=True)
class ReleaseMetrics:
    """Utility and privacy measures of one release (:func:`release_metrics`).

    ``utility``: :func:`~dpriv.metrics.utility.utility_metrics` (GCP, ILoss, discernibility,
    C_avg, ...; JSON-ready values); ``kpr``: KPR of microdata drawn from the release (percent,
    E21), None for an empty release; ``n_original`` / ``n_suppressed``: tuples in the view /
    left out.
    """

    utility: dict[str, Any]
    kpr: float | None
    n_original: int
    n_suppressed: int

    def to_dict(self) -> dict[str, Any]:
        """The flat form of ``metrics.json`` (utility keys first, then kpr and the sizes)."""
        sizes = {"n_original": self.n_original, "n_suppressed": self.n_suppressed}
        return {**self.utility, "kpr": self.kpr, **sizes}


def require(
    report: VerificationReport,
    policy: ReleasePolicy,
    n_original: int,
    n_suppressed: int,
    where: str,
    committed: int = 0,
) -> None:
    """Refuse a release: VerificationError when ``report`` is not ok, PolicyError when the
    suppression exceeds ``policy.max_suppression`` (``committed``: releases already in the
    ledger, whose policy cannot change: the message then says a new ledger is needed)."""
    if not report.ok:
        raise VerificationError(
            f"{where} failed verification, nothing written:\n  " + "\n  ".join(report.problems[:10])
        )
    suppression = n_suppressed / n_original
    if suppression > policy.max_suppression:
        raise PolicyError(
            f"{where}: suppression {suppression:.2%} exceeds max_suppression "
            f"{policy.max_suppression:.2%} ({n_suppressed} of {n_original} tuples), nothing written: "
            + policy_change(
                f"{relax_hint(policy)}, or allow more suppression with [privacy] max_suppression "
                "in the policy",
                committed,
            )
        )


def release_metrics(
    released: pd.DataFrame | dd.DataFrame,
    original: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    n_original: int,
    n_suppressed: int,
    *,
    sensitive: pd.DataFrame | None = None,
    view_counts: np.ndarray | None = None,
    by_group: bool = False,
    sums: GroupSums | None = None,
) -> ReleaseMetrics:
    """Utility (E11, E24-E26), KPR of the release (E21) and sizes; pandas or Dask frames.

    Both formats also get the QI-S association measures of :mod:`dpriv.metrics.anatomy`
    (``association_loss``, ``association_loss_view`` with ``view_counts``, the int64 (M,)
    counts of S over the view, and ``group_qi_span``). An Anatomy release passes its QI
    table as ``released`` and its ``sensitive`` table. ``by_group``: every Dask partition
    of ``released`` holds whole QI-groups (the release's label ranges), so the group sums are
    taken per partition on the workers (:func:`release_sums`). ``sums``: those sums, already
    taken (:func:`release_sums_with`, which computes them with other small results in one
    ``dask.compute``); the KPR then reads the number of released rows from them."""
    if sensitive is not None:
        util = anatomy_utility(released, sensitive, original, policy, n_original, view_counts)
        return ReleaseMetrics(util, util.pop("kpr"), n_original, n_suppressed)
    n_rows = None if sums is None else sums.n_released
    sums = release_sums(released, policy, by_group) if sums is None else sums
    util = sums.utility(n_original, len(policy.qi), policy.k)
    util["association_loss"] = sums.association_loss()
    util["association_loss_view"] = None if view_counts is None else view_association_loss(view_counts)
    util["group_qi_span"] = util["average_semiperimeter"]
    return ReleaseMetrics(util, release_kpr(released, original, policy, n_rows), n_original, n_suppressed)


def part_sums(part: pd.DataFrame, policy: ReleasePolicy) -> GroupSums:
    """The :class:`~dpriv.metrics.utility.GroupSums` of a generalized view (or of a part of
    it that holds whole QI-groups), with the association sums."""
    sums = GroupSums.of(group_table(part, **utility_domains(policy)))
    return sums.with_association(association_per_group(part, policy))


def release_sums(released: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, by_group: bool) -> GroupSums:
    """:func:`part_sums` of a whole generalized release. On Dask with whole QI-groups per
    partition (``by_group``, or one partition) each partition is summed where it lives and
    only one small record per partition reaches the client (one ``dask.compute``); else the
    group tables are computed with a groupby (one row per group reaches the client). Exact
    sums: the same figures for any partitioning, and as in process."""
    if not is_dask(released):
        return part_sums(released, policy)
    if by_group or released.npartitions == 1:
        task = dask.delayed(part_sums, pure=True)
        return functools.reduce(
            GroupSums.merge, dask.compute(*[task(p, policy) for p in released.to_delayed()])
        )
    sums = GroupSums.of(group_table(released, **utility_domains(policy)))
    return sums.with_association(association_per_group(released, policy))


class SumsWith(NamedTuple):
    """:func:`release_sums_with`'s result: the release's group sums and ``other`` computed (a
    Dask collection as pandas, anything else as it was given; None when none was)."""

    sums: GroupSums
    other: Any


def release_sums_with(
    released: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, by_group: bool, other: Any = None
) -> SumsWith:
    """:func:`release_sums` of ``released`` and ``other`` computed. On Dask with whole QI-groups
    per partition, the per-partition sums and ``other`` (e.g. the pk step's persisted tail rows)
    come in one ``dask.compute``: each compute is a round trip to the scheduler."""
    if is_dask(released) and (by_group or released.npartitions == 1):
        task = dask.delayed(part_sums, pure=True)
        # a Dask frame as its partitions' Delayed (no expressions mixed with Delayed in one compute)
        other = _concat(other.to_delayed()) if isinstance(other, dd.DataFrame) else other
        parts, other = dask.compute([task(p, policy) for p in released.to_delayed()], other)
        return SumsWith(functools.reduce(GroupSums.merge, parts), other)
    return SumsWith(release_sums(released, policy, by_group), dask.compute(other)[0])


@dask.delayed(pure=True)
def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """A Dask frame's partitions (its ``to_delayed()``) as one pandas frame, in partition order,
    inside the compute that gathers them (a Delayed: Dask expressions and Delayed do not mix in
    one ``dask.compute``)."""
    return pd.concat(parts)


def checked_metrics(
    released: pd.DataFrame,
    assigned: pd.DataFrame,
    original: pd.DataFrame,
    policy: ReleasePolicy,
    summary: ViewSummary,
    n_suppressed: int,
    *,
    promised: ReleasePolicy | None = None,
    where: str = "the release",
    sensitive: pd.DataFrame | None = None,
    method: str = "jsreduce",
) -> ReleaseRecord:
    """Verify a release independently and measure it; nothing is written here.

    ``promised`` is the policy whose constraints the method guarantees (default ``policy``);
    ``method`` names the criteria it promises (:data:`dpriv.criteria.GUARANTEES`).
    Raises VerificationError when the check fails and PolicyError when the suppression
    exceeds ``policy.max_suppression``. Returns the :class:`ReleaseRecord` of ``metrics.json``
    (achieved k/l/t/j, utility E11, E24-E26, KPR of the release E21, sizes; no seconds yet).
    An Anatomy release gives its QI table as ``released`` and its ``sensitive`` table
    (:func:`dpriv.anonymity.verify_anatomy.verify_anatomy` checks them).
    """
    if sensitive is not None:
        report = verify_anatomy(
            public(released), sensitive, promised or policy, view_counts=summary.s_counts, assigned=assigned
        )
    else:
        report = verify_release(
            public(released),
            promised or policy,
            view_counts=summary.s_counts,
            assigned=assigned,
            method=method,
        )
    require(report, policy, summary.n_rows, n_suppressed, where)
    measured = release_metrics(
        released,
        original,
        policy,
        summary.n_rows,
        n_suppressed,
        sensitive=sensitive,
        view_counts=summary.s_counts,
    )
    return ReleaseRecord.of(report, measured)


def utility_domains(policy: ReleasePolicy) -> dict:
    return {
        "numeric_domains": {q: tuple(policy.domains[q]) for q in policy.numeric_qi},
        "categorical_domains": {q: list(policy.domains[q]) for q in policy.categorical_qi},
        "hierarchies": {q: policy.hierarchy(q) for q in policy.hierarchies},
    }

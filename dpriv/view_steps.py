"""The steps of one release (:func:`dpriv.release.release_view`) after its grouping: the
release and its membership regrouped by QI-group and verified (``regroup``/``verify``), the
posteriors and the new state (``pk``), the metrics (``metrics``); nothing is written here.

Frames are pandas (a view released in process) or Dask (every step persisted by
:class:`dpriv.steps.Steps`); both give the same bytes in the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import dask.dataframe as dd
import pandas as pd

import dpriv.posterior_guard as posterior_guard
from dpriv._dispatch import is_dask, map_frame, meta_of, to_pandas
from dpriv.anonymity.verify import VerificationReport
from dpriv.metrics.defender_tail import combine_tail
from dpriv.metrics.record import ReleaseRecord
from dpriv.metrics.release import release_metrics, release_sums_with, require
from dpriv.pk_graph import pk_graph
from dpriv.pk_step import posteriors_with_truth, tail_of_posteriors, without_truth
from dpriv.policy import ReleasePolicy
from dpriv.release_check import canonical_rows, verify_parts
from dpriv.released import LABEL
from dpriv.state import next_state
from dpriv.state_parts import state_nbuckets
from dpriv.steps import Steps
from dpriv.view_summary import ViewSummary


@dataclass(frozen=True)
class Grouped:
    """One view grouped, by Generalize or a baseline, before its verification.

    ``released``: the released view (rows in ``_order`` order, ``_order`` still on);
    ``assigned``: its membership (id, label, the members' QIs and sensitive value); ``table``: the
    QI-group table; ``sensitive``: an Anatomy release's sensitive table (pandas, else None);
    ``n_suppressed``: tuples suppressed (the gate's withheld ones included); ``by_group``: the
    parts of ``assigned`` hold whole QI-groups (no regroup shuffle needed); ``posterior_guard``:
    the guard's record of Generalize (None for a baseline)."""

    released: pd.DataFrame | dd.DataFrame
    assigned: pd.DataFrame | dd.DataFrame
    table: pd.DataFrame | None
    sensitive: pd.DataFrame | None
    n_suppressed: int
    by_group: bool
    posterior_guard: dict | None = None


class ViewRelease(NamedTuple):
    """What :func:`dpriv.release.release_view` returns (and the gate, :meth:`dpriv.gate.RetroGate.release`):
    the metrics (``seconds`` per step), the released view (rows in ``_order`` order, the private
    ``_order`` column still on), the new state and an Anatomy release's sensitive table (pandas,
    else None)."""

    metrics: ReleaseRecord
    released: pd.DataFrame | dd.DataFrame
    state: pd.DataFrame | dd.DataFrame
    sensitive: pd.DataFrame | None


@dataclass(frozen=True)
class ViewContext:
    """What every step after the grouping reads: the view (its summary), the policy, the release
    index, the method and the timed steps."""

    view: pd.DataFrame | dd.DataFrame
    summary: ViewSummary
    policy: ReleasePolicy
    index: int
    method: str
    steps: Steps

    @property
    def small(self) -> bool:
        """small_view = "suppress": a view of fewer than k tuples, every tuple suppressed."""
        return self.summary.n_rows < self.policy.k


class Verified(NamedTuple):
    """A release verified: the verifier's report and the membership regrouped by QI-group,
    each part sorted by (label, id) (the pk step reads it so)."""

    report: VerificationReport
    members: pd.DataFrame | dd.DataFrame


class Posteriors(NamedTuple):
    """The pk step's output: the new state (in its buckets) and the defender's tail rows (one
    per part; pandas, or on Dask a Delayed pandas frame persisted with the state)."""

    state: pd.DataFrame | dd.DataFrame
    tail: pd.DataFrame | dd.DataFrame


def verified(ctx: ViewContext, grouped: Grouped) -> Verified:
    """The membership regrouped by QI-group, each part sorted by (label, id), and the release
    verified part by part (``regroup`` and ``verify``): VerificationError or PolicyError (the
    suppression) when it fails."""
    policy, summary, assigned = ctx.policy, ctx.summary, grouped.assigned
    nparts = grouped.released.npartitions if is_dask(grouped.released) else 1
    regrouped = assigned if grouped.by_group else assigned.shuffle(LABEL, npartitions=max(nparts, 1))
    # each part sorted by (label, id) once: the verification and the pk step find it so
    sorted_parts = map_frame(canonical_rows, regrouped, policy, meta=meta_of(regrouped))
    (asg_g,) = ctx.steps.run("regroup", sorted_parts)
    report = verify_parts(
        grouped.released, asg_g, grouped.table, policy, ctx.method, summary, grouped.sensitive
    )
    if ctx.small and grouped.n_suppressed != summary.n_rows:  # pragma: no cover - a grouping bug
        problem = f"a view of {summary.n_rows} < k tuples released a QI-group"
        report = replace(report, ok=False, problems=[*report.problems, problem])
    require(
        report,
        policy if not ctx.small else policy.with_overrides(max_suppression=1.0),
        summary.n_rows,
        grouped.n_suppressed,
        f"release {ctx.index}",
        committed=ctx.index - 1,
    )
    ctx.steps.lap("verify")
    return Verified(report, asg_g)


def posteriors(
    ctx: ViewContext,
    members: pd.DataFrame | dd.DataFrame,
    state: pd.DataFrame | dd.DataFrame,
    window: int,
    nbuckets: int | None,
    state_buckets: int | None,
) -> Posteriors:
    """PK^sv per QI-group and the new state (the ``pk`` step): Ω once per part of the regrouped
    ``members`` (:mod:`dpriv.pk_step`), the same table feeding the state (:func:`dpriv.state.next_state`,
    in ``nbuckets`` buckets, default :func:`dpriv.state_parts.state_nbuckets`) and the defender's
    tail risk; on Dask one small graph of Delayed tasks (:mod:`dpriv.pk_graph`). A pandas view
    collects a Dask ``state``. PolicyError from the posterior guard (pandas only)."""
    policy = ctx.policy
    if is_dask(members):  # one small graph (dpriv.pk_graph); the posterior guard checks no Dask view
        if nbuckets is None:
            nbuckets = state_nbuckets(len(state) + ctx.summary.n_rows)
        graph = pk_graph(members, state, policy, window, ctx.index, nbuckets, state_buckets)
        *buckets, tail = ctx.steps.run("pk", *graph.buckets, graph.tail)
        return Posteriors(graph.state(buckets), tail)
    posts_s = posteriors_with_truth(members, policy)
    posts = without_truth(posts_s)
    if not is_dask(ctx.view):
        state = to_pandas(state)
    if nbuckets is None:
        nbuckets = state_nbuckets(len(state) + ctx.summary.n_rows)
    new_state = next_state(state, posts, policy, window, ctx.index, nbuckets, state_buckets)
    # the defender's own PK vs the truth (tail risk)
    tail = tail_of_posteriors(posts_s, policy)
    new_state, tail = ctx.steps.run("pk", new_state, tail)
    posterior_guard.check(posts, policy, f"release {ctx.index}", ctx.method)  # a Dask view was refused
    return Posteriors(new_state, tail)


def measured(
    ctx: ViewContext, grouped: Grouped, report: VerificationReport, tail: pd.DataFrame | dd.DataFrame
) -> ReleaseRecord:
    """The release's metrics (the ``metrics`` step): the group sums and the tail rows in one
    compute (an Anatomy release sums its own tables), then :class:`ReleaseRecord` with the
    seconds of every step."""
    policy, summary, sensitive = ctx.policy, ctx.summary, grouped.sensitive
    sums = None
    if sensitive is None:  # an Anatomy release sums its own tables
        both = release_sums_with(grouped.released, policy, grouped.by_group, tail)
        sums, tail = both.sums, both.other
    measures = release_metrics(
        grouped.released,
        ctx.view,
        policy,
        summary.n_rows,
        grouped.n_suppressed,
        sensitive=sensitive,
        view_counts=summary.s_counts,
        by_group=grouped.by_group,  # the released parts hold whole QI-groups
        sums=sums,
    )
    defender_tail = combine_tail(to_pandas(tail))
    ctx.steps.lap("metrics")
    return ReleaseRecord.of(
        report, measures, seconds=ctx.steps.seconds, release=ctx.index, tail=defender_tail,
        small_view="suppressed" if ctx.small else None, posterior_guard=grouped.posterior_guard,
    )  # fmt: skip

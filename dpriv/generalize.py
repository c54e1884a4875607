"""One view through Generalize on Dask partitions (docs/architecture.md "Data flow", lines 2-7).

keys (map_partitions) -> set_index on the Hilbert key (partitions = contiguous Hilbert
ranges, divisions from quantiles) -> greedy QI-groups per range (map_partitions) ->
stitch the leftovers of all ranges in Hilbert order (one task on a worker: only the number
of suppressed tuples reaches the client) -> the guards -> whole QI-groups per partition (only
the rows of groups spread over several partitions move, :mod:`dpriv.whole_groups`) -> CreateQIG
per partition (no table on the client or in the graph) -> the released rows cut into label
ranges, each in its written order.
A pandas view runs the same kernels in-process over the same Hilbert ranges, so both paths
give the same release for the same divisions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.dataframe.core import _concat  # how a compute joins a frame's parts

from dpriv._dispatch import is_dask, map_frame
from dpriv.anatomy import apply_anatomy, sensitive_table
from dpriv.anonymity.jsreduce import range_stats, repair_leftovers
from dpriv.anonymity.persistent import PGROUP, UnitPlan, apply_plan, plan_units, unit_stats, with_next
from dpriv.exit_guard import guard_exits
from dpriv.first_pass import first_pass, range_divisions, range_ends, range_kernel
from dpriv.first_priors import FirstPriors
from dpriv.hilbert.keys import (
    HKEY,
    TIE,
    add_keys,
    is_anatomy,
    keyed_meta,
    pandas_divisions,
    split_ranges,
)
from dpriv.policy import ReleasePolicy
from dpriv.posterior_guard import guard_posteriors
from dpriv.qig_ranges import released_ranges
from dpriv.released import (
    LABEL,
    apply_qig,
    in_release_order,
    qig_table,
    released_meta,
    secret_policy,
)
from dpriv.row_order import stably_sorted
from dpriv.steps import Steps
from dpriv.view_summary import ViewSummary
from dpriv.whole_groups import in_label_ranges, whole_groups


@dataclass
class Generalized:
    """Result of :func:`generalize_view`.

    ``assigned``: private frame of the kept tuples (id, QIs, ``_s`` sensitive code,
    ``_label`` int64 QI-group label, prior columns); ``released``: the public view V*
    (docs/released-format.md); ``n_suppressed``: tuples left out; ``divisions``: the
    Hilbert ranges used (pass them back to reproduce the release on another path);
    ``table``: the CreateQIG table (:func:`qig_table`, pandas, one row per QI-group) of the
    pandas path; None on Dask, where each partition of ``assigned`` holds whole QI-groups
    (``by_group``) and CreateQIG runs per partition on the workers (issue 13, item 1).
    Both frames are pandas for a pandas input and Dask for a Dask input.
    With ``release_format = "anatomy"`` (:mod:`dpriv.anatomy`) ``released`` is the QI table
    (exact QIs), ``sensitive`` the sensitive table (pandas, one row per (group, value)) and
    ``table`` is None. ``posterior_guard``: :meth:`dpriv.posterior_guard.PosteriorGuard.as_record`.
    """

    assigned: pd.DataFrame | dd.DataFrame
    released: pd.DataFrame | dd.DataFrame
    n_suppressed: int
    divisions: tuple | None
    table: pd.DataFrame | None = None
    sensitive: pd.DataFrame | None = None
    by_group: bool = False  # Dask: ``assigned`` holds whole QI-groups per partition
    posterior_guard: dict | None = None  # what the posterior bound did (metrics.json)


def generalize_view(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    summary: ViewSummary,
    *,
    npartitions: int | None = None,
    divisions: tuple | None = None,
    steps: Steps | None = None,
    priors: FirstPriors | None = None,
) -> Generalized:
    """Generalize one validated view with priors in its ``p__<value>`` columns.

    Parameters
    ----------
    view : pandas or Dask DataFrame with the policy's id, QIs, sensitive column and
        ``policy.prior_columns`` (float64, rows sum to 1).
    summary : from :func:`dpriv.validate.validate_view` (size and sensitive counts).
    npartitions, divisions : Hilbert ranges; default the input's number of partitions (1
        for pandas). Each range gets the groups of the scan chained over the ranges (on Dask
        the ranges are scanned at once and resynced, :mod:`dpriv.anonymity.resync`) and the
        repair is global, so the release does not depend on them; the same input + policy
        gives the same bytes.
    steps : records the seconds of each step (Dask: keys, shuffle, grouping, repair, qig;
        each persisted on the workers, see :mod:`dpriv.steps`).
    priors : a first release's priors, when ``view`` comes without them
        (:func:`dpriv.first_priors.deferred`): attached per range right after the shuffle,
        which then carries ~150 B less per tuple; the same release as with them attached.

    The released rows come in the order of the private seeded ``_order`` column (uint64),
    which they keep: drop it before publishing (the ledger and :func:`dpriv.release.anonymize` do).
    """
    steps = steps or Steps()
    policy = secret_policy(policy, summary)
    run = _generalize_dask if is_dask(view) else _generalize_pandas
    result = run(view, policy, summary.s_counts, npartitions, divisions, steps, priors)
    known = result.divisions is not None and None not in result.divisions
    sensitive = sensitive_table(result.assigned, policy) if is_anatomy(policy) else None
    return replace(
        result,
        divisions=tuple(int(d) for d in result.divisions) if known else None,
        sensitive=sensitive,
        by_group=is_dask(result.assigned),
    )


def _guarded(assigned, policy: ReleasePolicy, counts: np.ndarray, n_suppressed: int):
    """The exit guard, then the posterior bound (:mod:`dpriv.exit_guard`,
    :mod:`dpriv.posterior_guard`; nothing changes without ``exit_values``/``posterior_bound``):
    the membership, the tuples suppressed in all, and the bound's record."""
    guard = guard_exits(assigned, policy, counts)
    bound = guard_posteriors(guard.assigned, policy, counts)
    return bound.assigned, n_suppressed + guard.n_suppressed + bound.n_suppressed, bound.as_record(policy)


def _generalize_pandas(view, policy, counts, npartitions, divisions, steps, priors):
    """The pandas orchestration: the same kernels in-process over the same Hilbert ranges,
    timed under the Dask path's step names (keys, shuffle = the sort, grouping, repair, qig)."""
    frame = add_keys(view, policy)
    steps.lap("keys")
    frame = stably_sorted(frame, [HKEY, TIE])
    divisions = divisions or pandas_divisions(frame[HKEY].to_numpy(), npartitions or 1)
    frame = frame if priors is None else priors.attach(frame)
    steps.lap("shuffle")
    plan = fixed = None
    if policy.persistent_groups:  # units of persistent groups first (dpriv.anonymity.persistent)
        plan = plan_units(unit_stats(frame, policy), policy, counts)
        frame = apply_plan(frame, plan.units)
        fixed, frame = frame[frame[LABEL] >= 0], frame[frame[LABEL] < 0].drop(columns=LABEL)
    parts, carry, kernel = [], None, range_kernel(policy)
    for i, part in enumerate(ranges := split_ranges(frame, divisions)):
        done, carry = kernel(part, carry, policy, counts, i == len(ranges) - 1)
        parts.append(done)
    grouped = pd.concat(parts, ignore_index=True)
    steps.lap("grouping")
    leftovers = grouped[grouped[LABEL] < 0]
    stats = _with_units(range_stats(grouped, policy), plan) if len(leftovers) else None
    repaired = _repair(stats, leftovers, policy, counts)  # on the client
    steps.lap("repair")
    kept = [grouped[grouped[LABEL] >= 0], *([fixed] if plan else [])]
    assigned = pd.concat([*kept, repaired.placed], ignore_index=True)
    assigned, n_suppressed, record = _guarded(assigned, policy, counts, repaired.n_suppressed)
    if plan is not None:  # after the exit guard: the final labels
        assigned = with_next(assigned, plan)
    if is_anatomy(policy):  # exact QIs: no CreateQIG table
        table, released = None, apply_anatomy(assigned, policy)
    else:
        table = qig_table(assigned, policy)
        released = apply_qig(assigned, table, policy)
    released = in_release_order(released)
    steps.lap("qig")
    return Generalized(assigned, released, n_suppressed, divisions, table, posterior_guard=record)


def _generalize_dask(view, policy, counts, npartitions, divisions, steps, priors):
    """The Dask orchestration: keys, shuffle into Hilbert ranges, the first pass over the ranges
    (:mod:`dpriv.first_pass`; each step persisted), the repair as one worker task, whole
    QI-groups per part, CreateQIG per part."""
    (keyed_view,) = steps.run("keys", map_frame(add_keys, view, policy, meta=keyed_meta(view._meta, policy)))
    histogram = None
    if not divisions:
        # one small pass: distinct keys, counted per part and summed in one tree (Dask's default
        # split_out spreads the counts over the parts with a task shuffle of its own: ~100 more
        # tasks at 8 parts); range_divisions sorts the keys, so the histogram's order is free
        histogram = keyed_view[HKEY].value_counts(split_out=1).compute()
        divisions = range_divisions(histogram, npartitions or view.npartitions, policy)
    ranges = keyed_view.set_index(HKEY, sort=True, divisions=divisions)
    del keyed_view
    if priors is not None:  # a first release's priors, looked up per range: not shuffled
        ranges = priors.attach(ranges)
    (ranges,) = steps.run("shuffle", ranges)
    vmeta = view._meta if priors is None else priors.attach(view._meta)
    plan, rest, fixed = None, ranges, None
    if policy.persistent_groups:  # units of persistent groups first (dpriv.anonymity.persistent)
        plan, rest, fixed = _persistent_dask(ranges, policy, counts)
    # each range's end blocks from the histogram, when it holds the keys of every range (the
    # persistent units take their rows out of the ranges): no compute of them in the grouping
    known = histogram is not None and plan is None and policy.grouping == "topdown"
    ends = range_ends(histogram, ranges.divisions, policy) if known else None
    (grouped,) = steps.run("grouping", first_pass(rest, vmeta, policy, counts, ends))
    divisions = ranges.divisions
    del ranges
    kept = grouped[grouped[LABEL] >= 0]
    kept = kept if fixed is None else dd.concat([kept, fixed])
    repaired = _repair_on_worker(grouped, kept, plan, policy, counts, steps)
    del grouped, kept  # the kept rows are persisted: the grouped ones are no longer read
    n_suppressed = repaired.n_suppressed
    # no leftover placed (the usual case at 10^6): no empty part for every later step to visit
    assigned = repaired.kept if repaired.placed is None else dd.concat([repaired.kept, repaired.placed])
    assigned, n_suppressed, record = _guarded(assigned, policy, counts, n_suppressed)
    if plan is not None:  # after the exit guard: the final labels
        assigned = map_frame(with_next, assigned, plan, meta=with_next(assigned._meta, plan))
    # whole QI-groups per part, moving only the rows of the groups spread over several parts
    # (dpriv.whole_groups): CreateQIG per part on the workers, no table on the client nor in the
    # graph; the release loop verifies these parts. The released rows are then cut into label
    # ranges, each sorted: their written order (issue 13, qig step)
    (guarded,) = dask.persist(assigned)  # read twice; held until the qig step has persisted
    assigned, homes = whole_groups(guarded)  # the homes (persisted) likewise
    table = None
    if is_anatomy(policy):  # exact QIs: no CreateQIG table
        rmeta = apply_anatomy(assigned._meta, policy)
        released = map_frame(apply_anatomy, assigned, policy, meta=rmeta)
        released = in_label_ranges(released, len(divisions) - 1)
    else:
        # apply_qig copies S as a NumPy array: the meta has that dtype (object for strings)
        rmeta = released_meta(
            policy, view._meta[policy.sensitive].to_numpy().dtype, view._meta.dtypes.to_dict()
        )
        # CreateQIG per part, its rows built in their written order and cut into the label
        # ranges as slices (dpriv.qig_ranges)
        released = released_ranges(assigned, policy, len(divisions) - 1, rmeta)
    released, assigned = steps.run("qig", released, assigned)
    del guarded, homes
    return Generalized(assigned, released, n_suppressed, divisions, table, posterior_guard=record)


class Repaired(NamedTuple):
    """What :func:`_repair_on_worker` persists: the kept rows of the first pass (the parts of
    ``kept``), the placed leftovers (a one-part Dask frame, None when the repair placed none)
    and the number of tuples suppressed."""

    kept: dd.DataFrame
    placed: dd.DataFrame | None
    n_suppressed: int


def _repair_on_worker(
    grouped: dd.DataFrame,
    kept: dd.DataFrame,
    plan: UnitPlan | None,
    policy: ReleasePolicy,
    counts: np.ndarray,
    steps: Steps,
) -> Repaired:
    """The global repair (:func:`repair_leftovers`) as one task on a worker: the range
    statistics (one row per QI-group) and the leftovers of all ranges are concatenated there,
    in range order as a compute would, and only the numbers of suppressed and placed tuples come
    back to the client; the placed leftovers stay on the worker (a one-partition Dask frame of
    ``kept``'s dtypes). ``kept`` (the rows the first pass grouped) is persisted with them, so
    that its filter runs once, not again for each later graph that reads it (the guards' and
    the qig step's). Persisted and timed as the ``repair`` step."""
    leftovers = grouped[grouped[LABEL] < 0].to_delayed()
    # the group statistics (a pass over every part) serve only to place leftovers: each part's
    # task learns, inside the graph, whether any range left one (at 10^6 none usually does)
    needed = dask.delayed(_any_rows, pure=True)([dask.delayed(len, pure=True)(x) for x in leftovers])
    stats = [dask.delayed(_stats_if, pure=True)(part, policy, needed) for part in grouped.to_delayed()]
    repair = dask.delayed(_repair_task, pure=True)(
        stats,
        leftovers,
        plan,
        policy,
        counts,
        kept._meta.dtypes.to_dict(),
    )
    placed, n_suppressed, n_placed = repair.placed, repair.n_suppressed, repair.n_placed
    # two graphs: Dask warns of (and materialises) a frame's expression persisted with delayed
    (kept,) = dask.persist(kept)
    placed, n_suppressed, n_placed = dask.persist(placed, n_suppressed, n_placed)
    n_suppressed, n_placed = dask.compute(n_suppressed, n_placed)
    steps.lap("repair")
    placed = dd.from_delayed([placed], meta=kept._meta, verify_meta=False) if n_placed else None
    return Repaired(kept, placed, int(n_suppressed))


class Repair(NamedTuple):
    """The global repair's outcome (:func:`_repair`): the placed leftovers (labels >= 0), the
    number of leftovers suppressed and the number placed."""

    placed: pd.DataFrame
    n_suppressed: int
    n_placed: int


def _repair(
    stats: pd.DataFrame | None, leftovers: pd.DataFrame, policy: ReleasePolicy, counts: np.ndarray
) -> Repair:
    """Global repair of the leftovers of all ranges (:func:`_placed`), split into the placed
    rows and the count of the suppressed: on the client (pandas path) or in the worker task of
    :func:`_repair_task`. ``stats`` None: there are no leftovers (their group statistics were not
    computed)."""
    placed = _placed(stats, leftovers, policy, counts)
    n_suppressed = int((placed[LABEL] < 0).sum())
    placed = placed[placed[LABEL] >= 0]
    return Repair(placed, n_suppressed, len(placed))


def _repair_task(
    stats: list[pd.DataFrame],
    leftovers: list[pd.DataFrame],
    plan: UnitPlan | None,
    policy: ReleasePolicy,
    counts: np.ndarray,
    dtypes: dict,
) -> Repair:
    """The worker side of :func:`_repair_on_worker`: :func:`_repair` of the concatenated parts,
    the placed rows cast to ``dtypes`` (``kept``'s)."""
    leftovers = _concat(leftovers)
    stats = _with_units(_concat(stats), plan) if len(leftovers) else None
    repaired = _repair(stats, leftovers, policy, counts)
    return repaired._replace(placed=repaired.placed.astype(dtypes))


def _any_rows(sizes: list[int]) -> bool:
    return any(sizes)


def _stats_if(part: pd.DataFrame, policy: ReleasePolicy, needed: bool) -> pd.DataFrame | None:
    """The range statistics of one grouped part (:func:`range_stats`) if the repair needs them."""
    return range_stats(part, policy) if needed else None


def _placed(
    stats: pd.DataFrame | None, leftovers: pd.DataFrame, policy: ReleasePolicy, counts: np.ndarray
) -> pd.DataFrame:
    """:func:`repair_leftovers`; with no leftovers (``stats`` None) what it returns for none,
    the empty frame with a fresh index, without its passes over the group statistics."""
    if stats is None or not len(leftovers):
        return leftovers.reset_index(drop=True)
    return repair_leftovers(stats, leftovers, policy, counts)


def _with_units(stats: pd.DataFrame, plan: UnitPlan | None) -> pd.DataFrame:
    """The repair's group statistics: the persistent unit groups' first, then the rest."""
    return stats if plan is None or not plan.n_groups else pd.concat([plan.stats, stats], ignore_index=True)


def _persistent_dask(ranges: dd.DataFrame, policy: ReleasePolicy, counts: np.ndarray):
    """The persistent units on Dask: rows hashed by persistent group (each unit whole in one
    part, its sums in Hilbert order, as in process), one small compute of the unit statistics,
    the plan on the client; returns (plan, the rows left to the scan indexed by the key, the
    unit groups' rows with their labels)."""
    rows = ranges.reset_index()
    persisting = rows[rows[PGROUP].fillna(-1) >= 0].shuffle(PGROUP, npartitions=ranges.npartitions)
    units = map_frame(unit_stats, persisting, policy, meta=unit_stats(rows._meta, policy)).compute()
    plan = plan_units(units, policy, counts)
    labelled = map_frame(apply_plan, ranges, plan.units, meta=apply_plan(ranges._meta, plan.units))
    rest = labelled[labelled[LABEL] < 0].drop(columns=LABEL)
    fixed = labelled[labelled[LABEL] >= 0].reset_index()
    return plan, rest, fixed

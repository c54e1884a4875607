"""The release loop (Algorithm 1) over a ledger: one view after another, resumable.

For view ``i``, on Dask (docs/architecture.md "Data flow"; every step a named, timed, persisted step
of :class:`dpriv.steps.Steps`):

* ``rbk``: the view joined with the respondent state on the id (hash join; none at a first
  release), RBK^sv per partition (E7; first-timers get BK^sv) -- :func:`dpriv.rbk.revised`;
* ``keys``/``shuffle``/``grouping``/``repair``/``qig``: Generalize under (k, t, j) on Hilbert
  ranges (:func:`dpriv.generalize.generalize_view`);
* ``regroup``/``verify``: the release and its membership hash-partitioned by QI-group and
  verified part by part by the independent verifier (a failing release is never written);
* ``pk``: PK^sv per QI-group (Ω-estimate, E14) and the new state (outer join on the id);
* ``metrics`` and, in the ledger, ``write``: streamed partition by partition; manifest last.
A view of at most :data:`SMALL_VIEW_ROWS` tuples runs the same steps in process on pandas
(no graph, no persist/wait per step; a Dask history of such views is read once: :func:`collected`)
and writes the same bytes (docs/architecture.md "Small views"). IE knowledge is counted view by
view (:class:`dpriv.sources.KnowledgeTracker`).

The respondent state is a Dask DataFrame in buckets of a hash of the id holding, per
respondent, the last ``W`` posteriors (W = the order of BK^seq), their count and the release
and QI-group of the last one. A respondent who skips releases keeps her own state and is
revised when she reappears (§1.4 "Timing"); a suppressed respondent gets no posterior for
that release (Algorithm 1, note b). Only small things reach the client (the key histogram,
the suppressed count, per-part reports and metrics: ``tests/test_client_bytes.py``, <= 1 % of
the view's bytes outside the metrics); the BK^seq tables go to the workers once per release.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import dask.dataframe as dd
import pandas as pd

import dpriv.posterior_guard as posterior_guard
from dpriv._dispatch import is_dask, shuffle_method, to_dask, to_pandas
from dpriv.baselines import baseline_view, check_method_name
from dpriv.criteria import refuse_ignored
from dpriv.dates import released_dates
from dpriv.first_priors import deferred
from dpriv.footer_reads import footers_read_once
from dpriv.generalize import generalize_view
from dpriv.input_checks import (
    check_callback,
    check_loop_args,
    checked_history,
    history_summaries,
    resolve_policy,
)
from dpriv.input_columns import policy_columns, warn_unused
from dpriv.inputs import as_frame, prepared
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.ledger_checks import check_ledger_whole, check_unchanged, check_views
from dpriv.ledger_domains import recorded_columns, refuse_outside_recorded, with_ledger_domains
from dpriv.ledger_expect import check_existing, check_stale
from dpriv.ledger_files import check_place, discard_new_ledger
from dpriv.metrics.record import ReleaseRecord
from dpriv.one_view import anonymize  # noqa: F401 - public here (dpriv anonymize, docs)
from dpriv.part_types import as_data_types, check_parts
from dpriv.path_args import path_arguments
from dpriv.pending_interrupt import as_interrupt
from dpriv.policy import ReleasePolicy
from dpriv.policy_base import pinned_files
from dpriv.policy_fix import ledger_kind_hint, view_named
from dpriv.policy_gate import refuse_unreachable
from dpriv.policy_given import as_policy, check_method
from dpriv.policy_hierarchies import hierarchy_digests
from dpriv.rbk import revised
from dpriv.release_start import Carried, Committed, LoopStart, loop_start
from dpriv.release_stops import said_stops
from dpriv.released import qig_table, secret_policy
from dpriv.resume_types import check_resumed_policy, resumed_types
from dpriv.sources import DefenderKnowledge, defender_knowledge
from dpriv.state_homes import state_homes
from dpriv.state_parts import state_nbuckets
from dpriv.steps import Steps
from dpriv.text_numbers import refuse_mixed_numbers
from dpriv.validate import refuse_merge
from dpriv.view_check import verify_view  # noqa: F401 - public here (dpriv verify)
from dpriv.view_steps import Grouped, ViewContext, ViewRelease, measured, posteriors, verified
from dpriv.view_summary import ViewSummary
from dpriv.workers import require_workers


def _view(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, i: int) -> pd.DataFrame | dd.DataFrame:
    view = history[history[policy.time] == i]
    return view if is_dask(view) else view.reset_index(drop=True)


@path_arguments(ledger_dir="the ledger's folder")  # before said_stops reads it as a path
@said_stops  # a closed client or an interrupt: which release the ledger stays at
@as_interrupt  # Ctrl-C inside a numba kernel: a KeyboardInterrupt, not a SystemError
@discard_new_ledger  # a refused first release leaves no ledger folder behind
@ledger_kind_hint  # a running ledger's QIs keep their kind: not "declare the QI categorical"
@shuffle_method()  # Dask's shuffles as measured fastest here, unless the user's config says
def release_history(
    history: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy | dict,
    ledger_dir: str | Path,
    *,
    npartitions: int | None = None,
    until: int | None = None,
    on_release: Callable[[int, ReleaseRecord], None] | None = None,
    on_start: Callable[[list[int]], None] | None = None,
    method: str = "jsreduce",
    allow_repeated_view: bool = False,
    allow_new_ids: bool = False,
    existing_ledger: bool = False,
) -> Ledger:
    """Release every view of ``history`` not yet committed in the ledger, in order.

    Parameters
    ----------
    history : pandas or Dask DataFrame with the policy's id, time (1-based release index),
        QIs and sensitive column; at most one tuple per respondent per view. A Dask history
        (e.g. ``dd.read_parquet``) is never collected on the client: each view is a filter
        of it (pushed down to the Parquet reader), the respondent state is a Dask DataFrame
        keyed by id, and the release is verified, measured and written partition by partition;
        except a view of at most :data:`SMALL_VIEW_ROWS` tuples, released in process.
    policy : the release policy (or a dict of its fields, :meth:`ReleasePolicy.from_dict`); a
        ledger refuses a policy other than its first one.
    npartitions : Hilbert ranges per view (Dask partitions); default policy.npartitions or 2.
    until : release at most up to this index (an int >= 1; InputError otherwise).
    on_release : called with (index, metrics: :class:`ReleaseRecord`) after each commit
        (progress output); the seconds are those of its metrics.json (the write step's included).
    on_start : called once the input passed its checks, before the first release, with the indices
        of the views this call releases (those not committed yet, in order; [] when none): a
        caller then knows, should the call fail after a commit, whether any release was left.
    method : "jsreduce" (Algorithm 1), a Mondrian baseline of :mod:`dpriv.baselines` ("mondrian-l",
        "mondrian-t", "mondrian-bt") or the "histogram" reference (one QI-group per view), these on
        the client; the defender's PK/RBK cycle and the ledger are the same for all methods.
    allow_repeated_view : release a view holding exactly the rows of an earlier one (refused by
        default: :func:`dpriv.ledger_checks.check_repeated`).
    allow_new_ids : release a view whose ids are almost all unknown after views whose
        respondents came back (refused by default: :func:`dpriv.new_ids.check_new_ids`).
    existing_ledger : refuse a ledger that holds no committed release (LedgerError, before any work)
        and a history older than the ledger (InputError; a warning without): dpriv.ledger_expect.

    Raises
    ------
    InputError, PolicyError, LedgerError, VerificationError; the ledger stays at its last
    committed release in every case.
    """
    check_callback("on_start", on_start, "(indices)")
    checked = _checked_input(history, policy, ledger_dir, method, until, npartitions, on_release,
                             allow_repeated_view, existing_ledger)  # fmt: skip
    ledger = Ledger(ledger_dir, create=True, prepare=False, lock=True)  # prepared below if there is work
    try:  # the ledger's lock (one writer at a time) is dropped however this ends
        ledger.check_policy(checked.fingerprint, files=checked.files)
        check_ledger_whole(ledger)
        _release_views(ledger, checked, npartitions, method, allow_new_ids, _Hooks(on_start, on_release))
    finally:
        ledger.unlock()
    return ledger


class _Checked(NamedTuple):
    """``release_history``'s input once checked, before the ledger is opened: the history (its
    types as every part holds them, read into this process when every view releases there), the
    resolved policy, the views to release (``indices``) and their summaries, the defender's
    knowledge and the policy's fingerprint and pinned files (the ledger refuses another)."""

    history: pd.DataFrame | dd.DataFrame
    policy: ReleasePolicy
    indices: list[int]
    summaries: dict[int, ViewSummary]
    knowledge: DefenderKnowledge
    fingerprint: dict
    files: dict


@footers_read_once()  # each Parquet footer read once by the checks (dpriv/footer_reads.py)
def _checked_input(
    history: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy | dict,
    ledger_dir: str | Path,
    method: str,
    until: int | None,
    npartitions: int | None,
    on_release: Callable[[int, ReleaseRecord], None] | None,
    allow_repeated_view: bool,
    existing_ledger: bool,
) -> _Checked:
    """Every check of ``release_history`` before the ledger is opened, in the order a user's
    mistake is found cheapest: the arguments, the place, the history's columns and types, every
    view (bad input writes nothing), the policy against the data and a resumed ledger."""
    check_method_name(method)
    policy = as_policy(policy, "release_history")
    check_method(policy, method)
    check_loop_args(until, npartitions, on_release)
    check_place(ledger_dir)  # no ledger there (a URL, inside another): refused before any work
    if existing_ledger:  # a scheduled run: a path not mounted or unset is no new ledger
        check_existing(Path(ledger_dir))
    history = as_frame(history, "release_history", "history", policy.id, policy)
    warn_unused(history.columns, policy)  # dropped, and said (dpriv release prints it itself)
    check_parts(history, [*policy_columns(policy), policy.time])  # a week's file with a column renamed
    if is_dask(history):  # a cluster without workers would wait for ever on the first compute
        require_workers("the release")
    refuse_merge(policy)
    history, policy = prepared(history, policy)
    checked = checked_history(history, policy)  # one view: read once (persisted)
    # a Dask history's meta is its first part's: the type checks must see what every part holds
    history = as_data_types(checked.history, [*policy_columns(policy), policy.time])
    views = checked.indices  # every view of the history (check_stale), those up to until released
    indices = views[:until]
    declared, taken = policy, with_ledger_domains(policy, ledger_dir)  # the ledger's policy.json read once
    policy, _ = resolve_policy(history, policy, recorded_columns(declared, taken))
    history = resumed_types(history, policy, ledger_dir)  # before any digest: ids as the ledger's dtype
    refuse_mixed_numbers(history, policy)  # 45 and "45" in one numeric QI (a later week's file)
    # every view before the first commit: bad input writes nothing
    summaries = history_summaries(history, policy, indices)
    history = collected(history, sizes := [s.n_rows for s in summaries.values()])
    refuse_ignored(policy, method)
    posterior_guard.refuse_unsupported(policy, sizes, SMALL_VIEW_ROWS, SMALL_STATE_ROWS)
    refuse_unreachable(policy)
    knowledge = defender_knowledge(policy)  # a missing knowledge file: refused, no ledger made
    pinned = {"method": method, "knowledge_sha256": knowledge.digest, **hierarchy_digests(policy)}
    fingerprint, files = {**policy.fingerprint(), **pinned}, pinned_files(policy, knowledge.source)
    check_resumed_policy(ledger_dir, fingerprint, files)  # other QIs change every view's digest
    check_views(ledger_dir, summaries, policy, allow_repeated_view, history)  # an edited committed view
    refuse_outside_recorded(history, declared, policy, taken)  # a later week's value: by row
    check_stale(Path(ledger_dir), views, existing_ledger)  # an old export (nothing new): said or refused
    return _Checked(history, policy, indices, summaries, knowledge, fingerprint, files)


class _Loop(NamedTuple):
    """What the release of every view reads: the checked input, Hilbert ranges per view, the
    method and the loop's start (state, IE counts, gate)."""

    checked: _Checked
    nparts: int
    method: str
    start: LoopStart


class _Hooks(NamedTuple):
    """``release_history``'s callbacks: ``start`` with the views to release, ``release`` per commit."""

    start: Callable[[list[int]], None] | None
    release: Callable[[int, ReleaseRecord], None] | None


def _release_views(
    ledger: Ledger, c: _Checked, npartitions: int | None, method: str, allow_new_ids: bool, hooks: _Hooks
) -> None:
    """The release of every view of ``c.indices`` not committed yet, in order, into the locked
    ``ledger`` (a committed one is checked unchanged); ``hooks.start`` once with the views to
    release, ``hooks.release`` after each commit."""
    start = loop_start(ledger, c.history, c.policy, c.summaries, c.indices, c.knowledge, allow_new_ids)
    if hooks.start:
        hooks.start([i for i in c.indices if i not in start.committed])
    on_release = hooks.release
    loop, carried = _Loop(c, npartitions or c.policy.npartitions or 2, method, start), start.carried
    for i in c.indices:
        if i in start.committed:
            check_unchanged(start.committed[i], i, c.summaries[i].input_sha)
            continue
        metrics, carried = _release_one(ledger, loop, i, carried)
        if on_release:
            on_release(i, metrics)


def _release_one(ledger: Ledger, loop: _Loop, i: int, carried: Carried) -> Committed:
    """Release view ``i`` with the state ``carried`` (in process or on Dask, under the gate when
    it is on) and commit it."""
    c, start = loop.checked, loop.start
    policy, summary = c.policy, c.summaries[i]
    view = _view(c.history, policy, i)
    if in_process(summary.n_rows, carried.rows):
        view = to_pandas(view).reset_index(drop=True)
    else:
        require_workers(f"release {i}")  # a cluster without workers would wait for ever
        view = view if is_dask(view) else to_dask(view, loop.nparts)  # scattered under a client
    tables = start.tracker.tables()
    nbuckets = state_nbuckets(carried.rows + summary.n_rows)  # data-determined parts
    run = functools.partial(
        release_view, view, summary, state=carried.frame, tables=tables, window=start.window, index=i,
        npartitions=loop.nparts, method=loop.method, nbuckets=nbuckets, state_buckets=carried.buckets,
    )  # fmt: skip
    gate = start.gate
    out = run(policy) if gate is None else gate.release(run, _view(start.hist_pd, policy, i), i, tables)
    metrics, released, state, sensitive = out
    start.tracker.add(view)
    released = released_dates(released, policy)
    # the bucket count: a resumed history's state
    entry = {"input_sha": summary.input_sha, "state_buckets": nbuckets}
    split = (policy.id, nbuckets)
    written = ledger.commit(i, released, metrics, state, entry, sensitive=sensitive, state_split=split)
    metrics = replace(metrics, seconds=written["seconds"])  # with the write step, as metrics.json
    # a Dask state comes one partition per bucket: the next release joins it where it lies; its
    # rows are counted only if a later release reads them (Carried.rows)
    return Committed(metrics, Carried(state, None, nbuckets if is_dask(state) else None))


#: Views of at most this many tuples are released in process (pandas, the same kernels, no
#: persist/wait per step; :func:`release_view`), larger ones on Dask: on 2 cores faster at every
#: size up to 50,000 (``benchmarks/bench_small_views.py``), the same bytes either way.
SMALL_VIEW_ROWS = 50_000
#: ... provided the respondent state has at most this many rows (collected on the client).
SMALL_STATE_ROWS = 500_000


def in_process(n_rows: int, n_state: int) -> bool:
    """Whether a view of ``n_rows`` tuples (the state: ``n_state`` rows) is released in process."""
    return n_rows <= SMALL_VIEW_ROWS and n_state <= SMALL_STATE_ROWS


def collected(history: pd.DataFrame | dd.DataFrame, sizes: list[int]) -> pd.DataFrame | dd.DataFrame:
    """A Dask history whose views all release in process as one pandas frame: read once, not per view."""
    small = bool(sizes) and max(sizes) <= SMALL_VIEW_ROWS and sum(sizes) <= SMALL_STATE_ROWS
    return to_pandas(history).reset_index(drop=True) if is_dask(history) and small else history


def release_view(
    view: pd.DataFrame | dd.DataFrame,
    summary: ViewSummary,
    policy: ReleasePolicy,
    state: pd.DataFrame | dd.DataFrame,
    tables: MarkovTables,
    window: int,
    index: int,
    npartitions: int,
    method: str = "jsreduce",
    nbuckets: int | None = None,
    withheld: Sequence | None = None,
    state_buckets: int | None = None,
) -> ViewRelease:
    """One step of Algorithm 1 (lines 6-10); nothing is written here.

    RBK per partition of the view joined with the state on the id -> Generalize -> the
    release and its membership regrouped by QI-group (hash shuffle), verified part by part
    (a failing release raises) -> Ω posteriors per part -> the new state
    (:func:`dpriv.state.next_state`). Returns a :class:`~dpriv.view_steps.ViewRelease`: the
    metrics (:class:`ReleaseRecord`, ``seconds`` per step), the released view (rows in
    ``_order`` order, the private ``_order`` column still on), the new state and the sensitive
    table of an Anatomy release (pandas, else None).

    A Dask ``view`` runs every step as a persisted Dask step (only per-part reports, metrics
    and that table reach the client); a pandas ``view`` runs the same kernels in process,
    one part, no persist/wait round trip (:data:`SMALL_VIEW_ROWS`), and returns pandas
    frames (a Dask ``state`` is then collected). Both give the same bytes in the ledger.
    The new state comes in ``nbuckets`` buckets of the id (default
    :func:`dpriv.state_parts.state_nbuckets` of the state's and the view's rows), one Dask
    partition each, the ledger's parts. ``withheld``: ids of respondents of the view the gate
    holds back (:mod:`dpriv.gate`), suppressed before grouping. ``state_buckets``: the
    number of buckets of a Dask ``state`` whose partitions are its buckets (the new state of
    the release before, as this function returns it): the state is then joined where it
    lies in the rbk step and, when ``nbuckets`` is a multiple of it, in the pk step.
    """
    steps = Steps()
    if withheld is not None and len(withheld):
        view = view[~view[policy.id].isin(withheld)]
    # a first release's priors are looked up after Generalize's shuffle (dpriv.first_priors)
    later = deferred(view, state, tables, policy, window) if method == "jsreduce" else None
    pin = later is None and is_dask(view) and (state_buckets or 0) > 1
    homes = state_homes(state, state_buckets) if pin else None
    view = view.persist() if homes is not None else view  # read once: pinned joins (dpriv.rbk), later steps
    # the time: read by no step after, so not shuffled, nor moved by a task after a pinned revision
    unused = policy.time if method == "jsreduce" and policy.time in view.columns else None
    rbk_args = (state, tables, policy, window, npartitions, state_buckets, homes)
    frame, priors = later or (revised(view.drop(columns=unused) if unused else view, *rbk_args), None)
    frame = frame.drop(columns=unused) if later and unused in frame.columns else frame  # first release
    frame, view = steps.run("rbk", frame, view)  # a Dask view read once, with RBK: metrics' KPR reads it
    ctx = ViewContext(view, summary, policy, index, method, steps)
    grouped = _grouped(ctx, frame, priors, npartitions)
    del frame
    if withheld is not None:
        grouped = replace(grouped, n_suppressed=grouped.n_suppressed + len(withheld))
    check = verified(ctx, grouped)
    pk = posteriors(ctx, check.members, state, window, nbuckets, state_buckets)
    metrics = measured(ctx, grouped, check.report, pk.tail)
    return ViewRelease(metrics, grouped.released, pk.state, grouped.sensitive)


def _grouped(ctx: ViewContext, frame: pd.DataFrame | dd.DataFrame, priors, npartitions: int) -> Grouped:
    """The view (``frame``: revised, RBK on) grouped by Generalize (the ``keys`` to ``qig``
    steps) or by a baseline of :mod:`dpriv.baselines` on the client (the ``grouping`` step)."""
    policy, summary, steps = ctx.policy, ctx.summary, ctx.steps
    if ctx.method == "jsreduce":
        result = generalize_view(frame, policy, summary, npartitions=npartitions, steps=steps, priors=priors)
        # whole QI-groups per part: Generalize's Dask path cut them so, in process the one frame is
        by_group = result.by_group or not is_dask(result.assigned)
        return Grouped(
            result.released, result.assigned, result.table, result.sensitive, result.n_suppressed,
            by_group, result.posterior_guard,
        )  # fmt: skip
    rows = to_pandas(frame).reset_index(drop=True)  # the Mondrian baselines are in-memory (client) algorithms
    with view_named(ctx.index):  # a baseline's refusal ("lower l") names the view
        result = baseline_view(rows, secret_policy(policy, summary), ctx.method)
    table = qig_table(result.assigned, policy)
    released, assigned = result.released, result.assigned
    if is_dask(ctx.view):
        released, assigned = to_dask(released, 1), to_dask(assigned, 1)
    steps.lap("grouping")
    return Grouped(released, assigned, table, None, result.n_suppressed, not is_dask(assigned))

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

import dask.dataframe as dd
import pandas as pd

import dpriv.posterior_guard as posterior_guard
from dpriv._dispatch import is_dask, map_frame, meta_of, shuffle_method, to_dask, to_pandas
from dpriv.baselines import baseline_view, check_method_name
from dpriv.criteria import refuse_ignored
from dpriv.dates import released_dates
from dpriv.errors import PolicyError
from dpriv.first_priors import deferred
from dpriv.generalize import generalize_view
from dpriv.hierarchy import hierarchy_digests
from dpriv.input_checked import input_checked
from dpriv.input_checks import (
    check_loop_args,
    checked_history,
    history_summaries,
    resolve_policy,
)
from dpriv.inputs import as_frame, policy_columns, prepared, warn_unused
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.ledger_expect import check_existing, check_stale
from dpriv.ledger_files import check_place, discard_new_ledger
from dpriv.metrics.defender_tail import combine_tail, tail_meta
from dpriv.metrics.record import ReleaseRecord
from dpriv.metrics.release import release_metrics, release_sums_with, require
from dpriv.new_ids import check_new_ids
from dpriv.one_view import anonymize  # noqa: F401 - public here (dpriv anonymize, docs)
from dpriv.part_types import as_data_types, check_parts
from dpriv.pending_interrupt import as_interrupt
from dpriv.pk_step import posteriors_with_truth, tail_of_posteriors, without_truth
from dpriv.policy import ReleasePolicy
from dpriv.policy_base import pinned_files
from dpriv.policy_fix import ledger_kind_hint, view_named
from dpriv.policy_gate import gate_on, refuse_unreachable
from dpriv.policy_keys import as_policy, check_method
from dpriv.rbk import revised
from dpriv.release_check import canonical_rows, check_ledger_whole, check_unchanged, check_views, verify_parts
from dpriv.release_stops import said_stops
from dpriv.released import LABEL, qig_table, secret_policy
from dpriv.resume_types import check_resumed_policy, resumed_types
from dpriv.sources import defender_knowledge
from dpriv.state import empty_state, next_state
from dpriv.state_parts import state_nbuckets
from dpriv.steps import Steps
from dpriv.value_jumps import warn_value_jumps
from dpriv.view_check import verify_view  # noqa: F401 - public here (dpriv verify)
from dpriv.view_summary import ViewSummary
from dpriv.workers import require_workers


def _view(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, i: int) -> pd.DataFrame | dd.DataFrame:
    view = history[history[policy.time] == i]
    return view if is_dask(view) else view.reset_index(drop=True)


#: Why ``small_view = "merge"`` is refused (docs/policy.md, "Views smaller than k").
MERGE_REFUSED = (
    'small_view = "merge" is refused: a view merged into the next release would put tuples of '
    "two times in one release (a respondent of both views twice, her knowledge revised (E7) "
    "and estimated (E14) as if she had one tuple, t measured against a mixture of two views) "
    'and the last view has no next one; use small_view = "suppress" (the small view is '
    'released empty and recorded in the ledger) or "refuse" (the default); see docs/policy.md'
)


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
        (progress output).
    method : "jsreduce" (Algorithm 1), a Mondrian baseline of :mod:`dpriv.baselines` ("mondrian-l",
        "mondrian-t", "mondrian-bt") or the "histogram" reference (one QI-group per view), these on
        the client; the defender's PK/RBK cycle and the ledger are the same for all methods.
    allow_repeated_view : release a view holding exactly the rows of an earlier one (refused by
        default: :func:`dpriv.release_check.check_repeated`).
    allow_new_ids : release a view whose ids are almost all unknown after views whose
        respondents came back (refused by default: :func:`dpriv.new_ids.check_new_ids`).
    existing_ledger : refuse a ledger that holds no committed release (LedgerError, before any work)
        and a history older than the ledger (InputError; a warning without): dpriv.ledger_expect.

    Raises
    ------
    InputError, PolicyError, LedgerError, VerificationError; the ledger stays at its last
    committed release in every case.
    """
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
    if policy.small_view == "merge":
        raise PolicyError(MERGE_REFUSED)
    history, policy = prepared(history, policy)
    history, views = checked_history(history, policy)  # one view: read once (persisted)
    # a Dask history's meta is its first part's: the type checks must see what every part holds
    history = as_data_types(history, [*policy_columns(policy), policy.time])
    indices = views[:until]
    policy, _ = resolve_policy(history, policy)
    history = resumed_types(history, policy, ledger_dir)  # before any digest: ids as the ledger's dtype
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
    check_stale(Path(ledger_dir), views, existing_ledger)  # an old export (nothing new): said or refused
    ledger = Ledger(ledger_dir, create=True, prepare=False, lock=True)  # prepared below if there is work
    try:  # the ledger's lock (one writer at a time) is dropped however this ends
        ledger.check_policy(fingerprint, files=files)
        check_ledger_whole(ledger)
        window = knowledge.order
        committed = {r["index"]: r for r in ledger.committed()}
        id_dtype = meta_of(history)[policy.id].dtype
        # the last committed state; a Dask state whose partitions are its buckets is joined where it lies
        held = ledger.held_state(max(committed)) if committed else None
        state = held.frame if held else empty_state(policy, window, id_dtype)
        n_state, state_buckets = (held.rows, held.buckets) if held else (0, None)
        nparts = npartitions or policy.npartitions or 2
        todo = [i for i in indices if i not in committed]
        if not allow_new_ids:  # a week of ids written otherwise: refused before anything is written
            check_new_ids(history, policy, summaries, todo, ledger, held)
        input_checked()  # a status line held until now (dpriv release) is said
        warn_value_jumps(history, policy, todo, knowledge.tables)  # said, not refused: data may hold them
        if todo:  # before any work; nothing to release: a user's file there is no obstacle
            ledger.prepare_next()
        # IE counts of the views before the first release to make, once; then view by view
        tracker = knowledge.tracker(history, policy, todo[0] if todo else 1)
        gate = hist_pd = None
        if gate_on(policy):  # the gate reads the history on the client
            from dpriv.gate import RetroGate  # the adversary's kernels only when the gate is on

            hist_pd = history.compute() if is_dask(history) else history
            gate = RetroGate.from_ledger(ledger, hist_pd, policy)
        for i in indices:
            view = _view(history, policy, i)
            digest = summaries[i].input_sha
            if i in committed:
                check_unchanged(committed[i], i, digest)
                continue
            if in_process(summaries[i].n_rows, n_state):
                view = to_pandas(view).reset_index(drop=True)
            else:
                require_workers(f"release {i}")  # a cluster without workers would wait for ever
                view = view if is_dask(view) else to_dask(view, nparts)  # scattered under a client
            tables = tracker.tables()
            nbuckets = state_nbuckets(n_state + summaries[i].n_rows)  # data-determined parts
            run = functools.partial(
                release_view, view, summaries[i], state=state, tables=tables, window=window, index=i,
                npartitions=nparts, method=method, nbuckets=nbuckets, state_buckets=state_buckets,
            )  # fmt: skip
            if gate is None:
                metrics, released, state, sensitive = run(policy)
            else:
                metrics, released, state, sensitive = gate.release(run, _view(hist_pd, policy, i), i, tables)
            tracker.add(view)
            released = released_dates(released, policy)
            entry = {"input_sha": digest, "state_buckets": nbuckets}  # the count: a resumed history's state
            split = (policy.id, nbuckets)
            ledger.commit(i, released, metrics, state, entry, sensitive=sensitive, state_split=split)
            # a Dask state comes one partition per bucket: the next release joins it where it lies
            n_state, state_buckets = len(state), (nbuckets if is_dask(state) else None)
            if on_release:
                on_release(i, metrics)
    finally:
        ledger.unlock()
    return ledger


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
) -> tuple[ReleaseRecord, pd.DataFrame | dd.DataFrame, pd.DataFrame | dd.DataFrame, pd.DataFrame | None]:
    """One step of Algorithm 1 (lines 6-10); nothing is written here.

    RBK per partition of the view joined with the state on the id -> Generalize -> the
    release and its membership regrouped by QI-group (hash shuffle), verified part by part
    (a failing release raises) -> Ω posteriors per part -> the new state
    (:func:`dpriv.state.next_state`). Returns the metrics (:class:`ReleaseRecord`, ``seconds``
    per step), the released view (rows in ``_order`` order, the private ``_order`` column
    still on), the new state and the sensitive table of an Anatomy release (pandas, else None).

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
    small = summary.n_rows < policy.k  # small_view = "suppress": every tuple is suppressed
    # a Dask view is read once, with RBK: the metrics step measures KPR against it
    # a first release's priors are looked up after Generalize's shuffle (dpriv.first_priors)
    later = deferred(view, state, tables, policy, window) if method == "jsreduce" else None
    frame, priors = later or (revised(view, state, tables, policy, window, npartitions, state_buckets), None)
    if method == "jsreduce" and policy.time in frame.columns:  # read by no step after: not shuffled
        frame = frame.drop(columns=policy.time)
    frame, view = steps.run("rbk", frame, view)
    if method == "jsreduce":
        result = generalize_view(frame, policy, summary, npartitions=npartitions, steps=steps, priors=priors)
        released, assigned, table = result.released, result.assigned, result.table
        sensitive = result.sensitive
    else:  # the Mondrian baselines are in-memory (client) algorithms
        rows = to_pandas(frame).reset_index(drop=True)
        with view_named(index):  # a baseline's refusal ("lower l") names the view
            result = baseline_view(rows, secret_policy(policy, summary), method)
        table = qig_table(result.assigned, policy)
        released, assigned = result.released, result.assigned
        if is_dask(view):
            released, assigned = to_dask(released, 1), to_dask(assigned, 1)
        steps.lap("grouping")
        sensitive = None
    del frame
    if withheld is not None:
        result = replace(result, n_suppressed=result.n_suppressed + len(withheld))
    nparts = released.npartitions if is_dask(released) else 1
    # whole QI-groups per part: Generalize's Dask path cut them so, in process the one frame is
    by_group = getattr(result, "by_group", False) or not is_dask(assigned)
    regrouped = assigned if by_group else assigned.shuffle(LABEL, npartitions=max(nparts, 1))
    del assigned
    # each part sorted by (label, id) once: the verification and the pk step find it so
    sorted_parts = map_frame(canonical_rows, regrouped, policy, meta=meta_of(regrouped))
    (asg_g,) = steps.run("regroup", sorted_parts)
    report = verify_parts(released, asg_g, table, policy, method, summary, sensitive)
    if small and result.n_suppressed != summary.n_rows:  # pragma: no cover - a grouping bug
        problem = f"a view of {summary.n_rows} < k tuples released a QI-group"
        report = replace(report, ok=False, problems=[*report.problems, problem])
    require(
        report,
        policy if not small else policy.with_overrides(max_suppression=1.0),
        summary.n_rows,
        result.n_suppressed,
        f"release {index}",
        committed=index - 1,
    )
    steps.lap("verify")
    # Ω once per part (dpriv.pk_step): the same table feeds the state and the tail risk
    meta = posteriors_with_truth(asg_g._meta, policy) if is_dask(asg_g) else None
    posts_s = map_frame(posteriors_with_truth, asg_g, policy, meta=meta)
    posts = map_frame(without_truth, posts_s, meta=without_truth(meta) if meta is not None else None)
    if not is_dask(view):
        state = to_pandas(state)
    if nbuckets is None:
        nbuckets = state_nbuckets(len(state) + summary.n_rows)
    new_state = next_state(state, posts, policy, window, index, nbuckets, state_buckets)
    # the defender's own PK vs the truth (tail risk), per partition, persisted with the state
    tail = map_frame(tail_of_posteriors, posts_s, policy, meta=tail_meta())
    new_state, tail = steps.run("pk", new_state, tail)
    posterior_guard.check(posts, policy, f"release {index}", method)  # a Dask view was refused
    # the group sums and the tail rows in one compute (an Anatomy release sums its own tables)
    sums, tail = release_sums_with(released, policy, by_group, tail) if sensitive is None else (None, tail)
    measured = release_metrics(
        released,
        view,
        policy,
        summary.n_rows,
        result.n_suppressed,
        sensitive=sensitive,
        view_counts=summary.s_counts,
        by_group=by_group,  # the released parts hold whole QI-groups
        sums=sums,
    )
    defender_tail = combine_tail(to_pandas(tail))
    steps.lap("metrics")
    metrics = ReleaseRecord.of(
        report, measured, seconds=steps.seconds, release=index, tail=defender_tail,
        small_view="suppressed" if small else None, posterior_guard=getattr(result, "posterior_guard", None),
    )  # fmt: skip
    return metrics, released, new_state, sensitive

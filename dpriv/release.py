"""The release loop (Algorithm 1) over a ledger: one view after another, resumable.

For view ``i``, on Dask (docs/architecture.md "Data flow"; every step a named, timed, persisted step
of :class:`dpriv.steps.Steps`):

* ``rbk``: the view joined with the respondent state on the id (hash join), RBK^sv per
  partition (E7; first-timers get BK^sv) -- :func:`with_revised_priors`;
* ``keys``/``shuffle``/``grouping``/``repair``/``qig``: Generalize under (k, t, j) on Hilbert
  ranges (:func:`dpriv.generalize.generalize_view`);
* ``regroup``/``verify``: the release and its membership hash-partitioned by QI-group and
  verified part by part by the independent verifier (a failing release is never written);
* ``pk``: PK^sv per QI-group (Ω-estimate, E14) and the new state (outer join on the id);
* ``metrics`` and, in the ledger, ``write``: streamed partition by partition; manifest last.

The respondent state is a Dask DataFrame keyed (hash-partitioned) by id holding, per
respondent, the last ``W`` posteriors (W = the order of BK^seq), their count and the release
and QI-group of the last one. A respondent who skips releases keeps her own state and is
revised when she reappears (§1.4 "Timing"); a suppressed respondent gets no posterior for
that release (Algorithm 1, note b). Only small things reach the client: per-part reports,
the repair's leftovers and group statistics, metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, meta_of
from dpriv.anonymity.verify import VerificationReport, verify_release
from dpriv.anonymity.verify_anatomy import verify_anatomy
from dpriv.baselines import METHODS, baseline_view
from dpriv.dates import released_dates, released_days
from dpriv.errors import InputError, PolicyError
from dpriv.generalize import generalize_view
from dpriv.hierarchy import hierarchy_digests
from dpriv.inputs import as_frame, check_sensitive_values, prepared, unused_note
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.metrics.defender_tail import combine_tail, tail_meta, tail_part
from dpriv.metrics.record import ReleaseRecord
from dpriv.metrics.release import checked_metrics, release_metrics, require
from dpriv.policy import ReleasePolicy
from dpriv.release_check import PartCheck, check_anatomy_groups, check_qi_groups, verify_parts  # noqa: F401
from dpriv.released import GROUP, LABEL, public, qig_table, secret_policy
from dpriv.sources import defender_knowledge
from dpriv.state import (
    advance_state,
    attach_priors,
    empty_state,
    group_posteriors,
    nullable_state,
    rbk_state,
    with_revised_priors,
)
from dpriv.steps import Steps
from dpriv.validate import (
    ViewSummary,
    check_history,
    codes,
    resolve_policy,
    validate_view,
)

if TYPE_CHECKING:  # the gate's adversary kernels are imported only when the gate is on
    from dpriv.gate import RetroGate


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


def release_history(
    history: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    ledger_dir: str | Path,
    *,
    npartitions: int | None = None,
    until: int | None = None,
    on_release: Callable[[int, ReleaseRecord], None] | None = None,
    method: str = "jsreduce",
) -> Ledger:
    """Release every view of ``history`` not yet committed in the ledger, in order.

    Parameters
    ----------
    history : pandas or Dask DataFrame with the policy's id, time (1-based release index),
        QIs and sensitive column; at most one tuple per respondent per view. A Dask history
        (e.g. ``dd.read_parquet``) is never collected on the client: each view is a filter
        of it (pushed down to the Parquet reader), the respondent state is a Dask DataFrame
        keyed by id, and the release is verified, measured and written partition by partition.
    policy : the release policy; a ledger refuses a policy other than its first one.
    npartitions : Hilbert ranges per view (Dask partitions); default policy.npartitions or 2.
    until : release at most up to this index.
    on_release : called with (index, metrics: :class:`ReleaseRecord`) after each commit
        (progress output).
    method : "jsreduce" (Algorithm 1) or a Mondrian baseline of :mod:`dpriv.baselines`
        ("mondrian-l", "mondrian-t", "mondrian-bt"; these run on the client); the
        defender's PK/RBK cycle and the ledger are the same for all, so ``dpriv attack``
        works on every method.

    Raises
    ------
    InputError, PolicyError, LedgerError, VerificationError; the ledger stays at its last
    committed release in every case.
    """
    if method not in METHODS:
        raise PolicyError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    check_format(policy, method)
    history = as_frame(history, "release_history", "history")
    if policy.small_view == "merge":
        raise PolicyError(MERGE_REFUSED)
    history, policy = prepared(history, policy)
    indices = check_history(history, policy)
    policy, _ = resolve_policy(history, policy)
    indices = indices[: until or None]
    summaries = {}
    allow_small = policy.small_view == "suppress"
    for i in indices:  # every view before the first commit: bad input writes nothing
        try:
            summaries[i] = validate_view(_view(history, policy, i), policy, allow_small=allow_small)
        except (InputError, PolicyError) as exc:
            raise type(exc)(f"{policy.time} = {i}: {exc}") from None
    if summaries:
        check_sensitive_values(sum(s.s_counts for s in summaries.values()), policy)
    ledger = Ledger(ledger_dir, create=True)
    knowledge = defender_knowledge(policy)
    pinned = {"method": method, "knowledge_sha256": knowledge.digest, **hierarchy_digests(policy)}
    ledger.check_policy({**policy.fingerprint(), **pinned})
    window = knowledge.order
    committed = {r["index"]: r for r in ledger.committed()}
    id_dtype = meta_of(history)[policy.id].dtype
    state = ledger.read_state_dask(max(committed)) if committed else empty_state(policy, window, id_dtype)
    nparts = npartitions or policy.npartitions or 2
    gate = hist_pd = None
    if policy.retro_max_gain is not None:  # the gate reads the history on the client
        from dpriv.gate import RetroGate  # the adversary's kernels only when the gate is on

        hist_pd = history.compute() if is_dask(history) else history
        gate = RetroGate.from_ledger(ledger, hist_pd, policy)
    for i in indices:
        view = _view(history, policy, i)
        digest = summaries[i].input_sha
        if i in committed:
            if committed[i]["input_sha"] != digest:
                raise InputError(
                    f"view {i} differs from the one committed in the ledger; a committed "
                    "release cannot change: start a new ledger or restore the input"
                )
            continue
        if not is_dask(view):
            view = dd.from_pandas(view, npartitions=nparts, sort=False)
        tables = knowledge.at(history, policy, i)
        args = (view, summaries[i], policy, state, tables, window, i, nparts, method)
        if gate is None:
            metrics, released, state, sensitive = release_view(*args)
        else:
            metrics, released, state, sensitive = _gated_release(gate, _view(hist_pd, policy, i), *args)
        released = released_dates(released, policy)
        ledger.commit(i, released, metrics, state, {"input_sha": digest}, sensitive=sensitive)
        if on_release:
            on_release(i, metrics)
    return ledger


def _gated_release(
    gate: RetroGate, original: pd.DataFrame, view, summary, policy, state, tables, window, index, *rest
):
    """:func:`release_view` under the release gate (:mod:`dpriv.gate`): regrouped with
    ``policy.retro_lever`` tightened while the retrospective adversary's gains as of this
    release exceed ``policy.retro_max_gain``, at most ``policy.retro_retries`` times; then
    PolicyError (nothing written). ``original``: the view on pandas (the true values)."""
    from dpriv.gate import refusal, regrouped_with, tightened

    pol, check = policy, None
    for attempt in range(policy.retro_retries + 1):
        try:
            out = release_view(view, summary, pol, state, tables, window, index, *rest)
        except PolicyError as exc:  # a regrouping that breaks another requirement (suppression)
            if check is None:
                raise
            raise PolicyError(f"{refusal(check)}; {regrouped_with(pol)}: {exc}") from None
        metrics, released, new_state, sensitive = out
        # an Anatomy release's values are in its sensitive table (``sensitive``)
        values = released[[GROUP] if sensitive is not None else [GROUP, policy.sensitive]].compute()
        candidate = gate.candidate(index, original, new_state.compute(), values, sensitive)
        check = gate.check(candidate, tables, pol, attempt)
        if check.ok:
            gate.accept(candidate)
            return replace(metrics, gate=check.as_record()), released, new_state, sensitive
        pol = tightened(pol)
    raise PolicyError(refusal(check))


def check_format(policy: ReleasePolicy, method: str) -> None:
    """PolicyError unless ``policy.release_format`` suits ``method``: Anatomy groups by the
    members' knowledge, which only JS-reduce's grouping does (the Mondrian baselines cut QI
    boxes for a generalized release)."""
    if policy.release_format == "anatomy" and method != "jsreduce":
        raise PolicyError(
            f'release_format = "anatomy" is a JS-reduce release; method {method!r} publishes a '
            'generalized view: use --method jsreduce or release_format = "generalized"'
        )


def _join_state(part: pd.DataFrame, state: pd.DataFrame, column: str) -> pd.DataFrame:
    return part.merge(state, on=column, how="left")


def _sorted_by(part: pd.DataFrame, column: str) -> pd.DataFrame:
    return part.sort_values(column, kind="stable")


def release_view(
    view: dd.DataFrame,
    summary: ViewSummary,
    policy: ReleasePolicy,
    state: pd.DataFrame | dd.DataFrame,
    tables: MarkovTables,
    window: int,
    index: int,
    npartitions: int,
    method: str = "jsreduce",
) -> tuple[ReleaseRecord, dd.DataFrame, dd.DataFrame, pd.DataFrame | None]:
    """One step of Algorithm 1 (lines 6-10) on Dask; nothing is written here.

    RBK per partition of the view joined with the state on the id -> Generalize -> the
    release and its membership regrouped by QI-group (hash shuffle), verified part by part
    (a failing release raises) -> Ω posteriors per part -> the new state (outer join on
    the id, per partition). Returns the metrics (:class:`ReleaseRecord`, ``seconds`` per step), the released
    view (persisted, rows in ``_order`` order, the private ``_order`` column still on) and
    the new state (persisted), and the sensitive table of an Anatomy release (pandas, else
    None). Only per-part reports, metrics and that table reach the client.
    """
    steps = Steps()
    small = summary.n_rows < policy.k  # small_view = "suppress": every tuple is suppressed
    # hash join into a fixed number of partitions, rows sorted by id: each respondent's RBK
    # is computed in the same batch whether the state came from memory or the ledger
    if isinstance(state, pd.DataFrame) and state.empty:  # a first release: BK^sv, row by row
        joined = view.map_partitions(_join_state, state, policy.id)
    else:
        joined = view.merge(
            rbk_state(state), on=policy.id, how="left", npartitions=npartitions, broadcast=False
        )
        joined = joined.shuffle(policy.id, npartitions=npartitions).map_partitions(_sorted_by, policy.id)
    meta = with_revised_priors(joined._meta, tables, policy, window)
    (frame,) = steps.run("rbk", joined.map_partitions(with_revised_priors, tables, policy, window, meta=meta))
    if method == "jsreduce":
        result = generalize_view(frame, policy, summary, npartitions=npartitions, steps=steps)
        released, assigned, table = result.released, result.assigned, result.table
        sensitive = result.sensitive
    else:  # the Mondrian baselines are in-memory (client) algorithms
        result = baseline_view(frame.compute().reset_index(drop=True), secret_policy(policy, summary), method)
        table = qig_table(result.assigned, policy)
        released = dd.from_pandas(result.released, npartitions=1, sort=False)
        assigned = dd.from_pandas(result.assigned, npartitions=1, sort=False)
        steps.lap("grouping")
        sensitive = None
    del frame
    (asg_g,) = steps.run("regroup", assigned.shuffle(LABEL, npartitions=max(released.npartitions, 1)))
    del assigned
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
    )
    steps.lap("verify")
    posts = asg_g.map_partitions(group_posteriors, policy, meta=group_posteriors(asg_g._meta, policy))
    # a hash join into a fixed number of partitions: the state's bytes do not depend on
    # whether the previous state came from memory or from the ledger (resume)
    if not is_dask(state):
        state = dd.from_pandas(state, npartitions=1, sort=False)
    merged = nullable_state(state).merge(posts, on=policy.id, how="outer", npartitions=npartitions)
    meta = empty_state(policy, window, state._meta[policy.id].dtype)
    new_state = merged.map_partitions(advance_state, policy, window, index, meta=meta)
    # the defender's own PK vs the truth (tail risk), per partition, persisted with the state
    tail = asg_g.map_partitions(tail_part, policy, meta=tail_meta())
    new_state, tail = steps.run("pk", new_state, tail)
    measured = release_metrics(
        released, view, policy, summary.n_rows, result.n_suppressed,
        sensitive=sensitive, view_counts=summary.s_counts,
    )
    defender_tail = combine_tail(tail.compute())
    steps.lap("metrics")
    metrics = ReleaseRecord.of(
        report,
        measured,
        seconds=steps.seconds,
        release=index,
        tail=defender_tail,
        small_view="suppressed" if small else None,
    )
    return metrics, released, new_state, sensitive


@dataclass
class Anonymized:
    """A verified released view (pandas), its private assignment and its metrics; for an
    Anatomy release ``released`` is the QI table and ``sensitive`` the sensitive table."""

    released: pd.DataFrame
    assigned: pd.DataFrame
    metrics: ReleaseRecord
    policy: ReleasePolicy
    notes: list[str] = field(default_factory=list)
    sensitive: pd.DataFrame | None = None


def anonymize(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    *,
    prior: str = "class",
    npartitions: int | None = None,
) -> Anonymized:
    """Release one view under (k, t, j) with one-shot priors (no history).

    Raises InputError / PolicyError for bad input, PolicyError when the suppression exceeds
    ``policy.max_suppression``, VerificationError when the independent check fails.
    """
    start = time.perf_counter()
    view = as_frame(view, "anonymize", "view")
    view, policy = prepared(view, policy)
    policy, notes = resolve_policy(view, policy)
    unused = unused_note(view.columns, policy)
    notes += [unused] if unused else []
    summary = validate_view(view, policy)
    check_sensitive_values(summary.s_counts, policy)
    with_priors = attach_priors(view, policy, prior, n_rows=summary.n_rows, notes=notes)
    result = generalize_view(with_priors, policy, summary, npartitions=npartitions or policy.npartitions)
    released, assigned = result.released, result.assigned
    if is_dask(released):
        released, assigned = dask.compute(released, assigned)
    original = view[policy.qi].compute() if is_dask(view) else view
    metrics = checked_metrics(
        released, assigned, original, policy, summary, result.n_suppressed, sensitive=result.sensitive
    )
    metrics = replace(metrics, seconds=round(time.perf_counter() - start, 3))
    assigned = assigned.drop(columns=[c for c in assigned.columns if c.startswith("_") and c != LABEL])
    released = released_dates(public(released).reset_index(drop=True), policy)
    return Anonymized(released, assigned, metrics, policy, notes, result.sensitive)


def verify_view(
    released: pd.DataFrame,
    original: pd.DataFrame,
    policy: ReleasePolicy,
    *,
    view: int | None = None,
    sensitive: pd.DataFrame | None = None,
) -> VerificationReport:
    """Verify a released view against the original view it was made from (``dpriv verify``).

    ``original`` may be a history (the policy's time column): ``view`` then picks the view
    (required when it holds several). The policy's domains are resolved from that view; t is
    checked against its sensitive distribution. An Anatomy release gives its QI table as
    ``released`` and its ``sensitive`` table (:func:`verify_anatomy`). Raises InputError /
    PolicyError.
    """
    original, policy = prepared(original, policy)
    released = released_days(released, policy)
    if policy.time and policy.time in original.columns:
        times = sorted(original[policy.time].unique().tolist())
        if view is None and len(times) > 1:
            raise InputError(
                f"--original holds {len(times)} views ({policy.time} = {times[0]}..{times[-1]}); t is "
                f"checked against the view a release was made from: pass --view <index>"
            )
        if view is not None:
            original = original[original[policy.time] == view]
            if original.empty:
                raise InputError(f"--original has no rows with {policy.time} = {view}; it holds {times[:10]}")
    policy, _ = resolve_policy(original, policy)
    c = codes(original[policy.sensitive], policy.sensitive_domain)
    counts = np.bincount(c[c >= 0], minlength=len(policy.sensitive_domain))
    if sensitive is not None:
        return verify_anatomy(released, sensitive, policy, view_counts=counts)
    return verify_release(released, policy, view_counts=counts)

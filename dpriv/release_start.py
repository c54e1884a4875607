"""What the release loop (:func:`dpriv.release.release_history`) does once, with the ledger
locked and before its first view: the last committed state taken up, the new ids and value
jumps of the views to release checked (refused or said before anything is written), the ledger
prepared when there is work, the defender's IE counts up to the first view to release, and the
release gate (:mod:`dpriv.gate`) when the policy sets one."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import dask.dataframe as dd
import pandas as pd

from dpriv._dispatch import is_dask, meta_of
from dpriv.input_checked import input_checked
from dpriv.ledger import Ledger
from dpriv.metrics.record import ReleaseRecord
from dpriv.new_ids import check_new_ids
from dpriv.policy import ReleasePolicy
from dpriv.policy_gate import gate_on
from dpriv.sources import DefenderKnowledge, KnowledgeTracker
from dpriv.state import empty_state
from dpriv.value_jumps import warn_value_jumps
from dpriv.view_summary import ViewSummary

if TYPE_CHECKING:
    from dpriv.gate import RetroGate


@dataclass(frozen=True)
class Carried:
    """The respondent state one release hands the next: the frame, its rows when known
    (``counted``; None: counted when :attr:`rows` is first read) and, for a Dask state whose
    partitions are its buckets (joined where it lies), their count, else None."""

    frame: pd.DataFrame | dd.DataFrame
    counted: int | None
    buckets: int | None

    @functools.cached_property
    def rows(self) -> int:
        """The state's rows (respondents): ``counted``, else ``len(frame)`` once, when a later
        release asks (a Dask state: one compute, a round trip to the cluster). The state of
        the last release of a run is never counted (a run of one view: one round trip fewer)."""
        return self.counted if self.counted is not None else len(self.frame)


class Committed(NamedTuple):
    """One release committed: its metrics and the state it hands the next release."""

    metrics: ReleaseRecord
    carried: Carried


class LoopStart(NamedTuple):
    """The loop's start: the committed releases' manifest entries by index, the state after the
    last of them (an empty one for a new ledger), the order W of BK^seq, the IE counts (view by
    view from the first view to release), and the gate with the history on pandas it reads (both
    None when the gate is off)."""

    committed: dict[int, dict]
    carried: Carried
    window: int
    tracker: KnowledgeTracker
    gate: RetroGate | None
    hist_pd: pd.DataFrame | None


def loop_start(
    ledger: Ledger,
    history: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    summaries: dict[int, ViewSummary],
    indices: list[int],
    knowledge: DefenderKnowledge,
    allow_new_ids: bool,
) -> LoopStart:
    """The start of the loop over ``indices`` in the locked ``ledger``. Raises InputError for a
    view of new ids (unless ``allow_new_ids``; :func:`dpriv.new_ids.check_new_ids`), LedgerError
    for a damaged committed state; nothing is written before."""
    committed = {r["index"]: r for r in ledger.committed()}
    id_dtype = meta_of(history)[policy.id].dtype
    # the last committed state; a Dask state whose partitions are its buckets is joined where it lies
    held = ledger.held_state(max(committed)) if committed else None
    window = knowledge.order
    empty = None if held else empty_state(policy, window, id_dtype)
    carried = Carried(held.frame, held.rows, held.buckets) if held else Carried(empty, 0, None)
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
    return LoopStart(committed, carried, window, tracker, gate, hist_pd)

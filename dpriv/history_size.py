"""How large a history to release is (:class:`HistorySize`, counted by :func:`history_size`
from the ledger's start, :func:`ledger_start`): what decides whether a run needs a Dask cluster
(:func:`dpriv.cluster.release_place`), and the status line that says so before the release
starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import dask
import dask.dataframe as dd
import pandas as pd

from dpriv.policy import ReleasePolicy

#: A history of at most this many tuples may be read into the ``dpriv release`` process
#: (about 50 bytes a tuple for the paper's six columns: ~100 MB); a larger one always runs on
#: a cluster unless ``--no-cluster`` is given.
SMALL_HISTORY_ROWS = 2_000_000


@dataclass(frozen=True)
class HistorySize:
    """What decides where a history is released (:func:`history_size`).

    ``rows``: tuples of the history; ``largest_view``: tuples of its largest view still to
    release and ``respondents``: distinct ids of the ledger's last state and of the views still
    to release, the most any release of the run starts from (both None when ``rows`` alone
    exceeds :data:`SMALL_HISTORY_ROWS`: not counted); ``views``: how many views
    are still to release (None: not counted), which only words :meth:`describe`."""

    rows: int
    largest_view: int | None
    respondents: int | None
    views: int | None = field(default=None, compare=False)

    @property
    def small(self) -> bool:
        """Every view is released in process (:func:`dpriv.release.in_process`) and the whole
        history fits the client: no cluster is needed."""
        from dpriv.release import SMALL_STATE_ROWS, SMALL_VIEW_ROWS  # read at each call (tests lower them)

        return (
            self.rows <= SMALL_HISTORY_ROWS
            and self.largest_view is not None
            and self.largest_view <= SMALL_VIEW_ROWS
            and self.respondents is not None
            and self.respondents <= SMALL_STATE_ROWS
        )

    def describe(self) -> str:
        """For the status line; the views counted are those still to release."""
        if not self.largest_view:
            return f"{self.rows} tuples, no view left to release"
        if self.views == 1:  # the one state the run makes holds them all: a count, not a bound
            if self.rows == self.largest_view:
                return f"one view of {self.rows} tuples and {self.respondents} respondents"
            left = f"{self.largest_view} tuples, {self.respondents} respondents"
            return f"{self.rows} tuples, one view left to release ({left})"
        views = f"{self.views} views" if self.views else "views"
        return (
            f"{self.rows} tuples, {views} still to release of at most {self.largest_view} tuples, "
            f"at most {self.respondents} respondents"
        )


@dataclass(frozen=True, eq=False)
class LedgerStart:
    """What a resumed release starts from: ``committed``, the indices of the releases in the
    ledger, and ``ids``, the respondent ids of its last state (empty for a new ledger);
    ``unread``: state rows whose ids could not be read (a ledger of another id column, which
    the release refuses later), counted as respondents of their own."""

    committed: frozenset[int] = frozenset()
    ids: pd.Index = field(default_factory=lambda: pd.Index([]))
    unread: int = 0


def ledger_start(ledger: str | Path, id_column: str) -> LedgerStart:
    """The :class:`LedgerStart` of the ledger at ``ledger`` (the manifest, and one column of
    the last state's Parquet); an empty one when it holds no release or does not exist."""
    from dpriv.ledger import MANIFEST, Ledger
    from dpriv.ledger_files import open_parquet

    if not (Path(ledger) / MANIFEST).is_file():
        return LedgerStart()
    led = Ledger(ledger)
    committed = frozenset(int(r["index"]) for r in led.committed())
    if not committed:
        return LedgerStart()
    parts = [open_parquet(f) for f in led.state_files(led.last_index())]  # LedgerError: none
    if id_column not in parts[0].schema_arrow.names:
        return LedgerStart(committed, unread=sum(p.metadata.num_rows for p in parts))
    ids = [p.read(columns=[id_column]).column(0).to_pandas() for p in parts]
    return LedgerStart(committed, pd.Index(pd.concat(ids, ignore_index=True)))


def history_size(
    frame: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, start: LedgerStart | None = None
) -> HistorySize:
    """Count a history's tuples, its largest view still to release and the respondents of the
    run (:class:`HistorySize`) on the threaded scheduler.

    ``frame``: the history as read (id and time columns present, :func:`dpriv.preflight.preflight`;
    no time column: one view); ``start``: the ledger's committed releases and last state
    (:func:`ledger_start`; None: a new ledger). A committed view is not released again, so its
    tuples count in ``rows`` only; its respondents are in the state. The views and ids are only
    scanned when the row count (Parquet metadata where Dask can use it) is at most
    :data:`SMALL_HISTORY_ROWS`.
    """
    start = start or LedgerStart()
    with dask.config.set(scheduler="threads"):
        rows = len(frame)
        if rows > SMALL_HISTORY_ROWS:
            return HistorySize(rows, None, None)
        todo = frame
        if policy.time and start.committed:
            todo = frame[~frame[policy.time].isin(sorted(start.committed))]
        by_view = todo[policy.time].value_counts() if policy.time else None
        by_view, ids = dask.compute(by_view, todo[policy.id].drop_duplicates())
    largest = rows if by_view is None else (int(by_view.max()) if len(by_view) else 0)
    respondents = (len(pd.Index(ids).union(start.ids)) if len(start.ids) else len(ids)) + start.unread
    return HistorySize(int(rows), largest, respondents, 1 if by_view is None else len(by_view))

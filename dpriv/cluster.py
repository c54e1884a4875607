"""Where the Dask work runs: a LocalCluster, an existing scheduler, or this process.

``dpriv release`` (and ``dpriv demo``) start a LocalCluster only when the history needs one
(:func:`release_place`): a history whose every view is released in process anyway
(:data:`dpriv.release.SMALL_VIEW_ROWS`, :data:`dpriv.release.SMALL_STATE_ROWS`) is collected
once and released here, on Dask's threaded scheduler, with the same bytes in the ledger
(docs/architecture.md "Small views"); the worker processes of a cluster would only cost
their start-up and the round trips.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow.parquet as pq
from distributed import Client, LocalCluster

from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy


@contextlib.contextmanager
def dask_client(
    scheduler: str | None = None,
    *,
    n_workers: int | None = None,
    say: Callable[[str], None] = print,
) -> Iterator[Client]:
    """A distributed Client for the duration of a command; prints the dashboard link.

    ``scheduler``: address of an existing scheduler (``tcp://host:8786``); ``None`` starts a
    LocalCluster (one single-threaded worker process per core, 2 here) that is closed after.
    """
    if scheduler:
        with _connect(scheduler) as client:
            say(f"connected to {scheduler}; dashboard: {client.dashboard_link}")
            yield client
        return
    with (
        LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        say(f"local Dask cluster with {len(cluster.workers)} workers; dashboard: {client.dashboard_link}")
        yield client


def _connect(scheduler: str) -> Client:
    """A Client of the scheduler at ``scheduler``; InputError (exit 2) when it cannot be reached."""
    before = dask.config.get("scheduler", None)
    try:
        return Client(scheduler, timeout="20s")
    except (OSError, ValueError, TypeError) as exc:
        # a Client that failed to connect has already made itself the default scheduler
        if before is None:
            dask.config.config.pop("scheduler", None)
        else:
            dask.config.set(scheduler=before)
        raise InputError(
            f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({exc}); give the address "
            "a running scheduler prints (tcp://host:8786), or drop --scheduler to use this machine"
        ) from None


#: A history of at most this many tuples may be collected in the ``dpriv release`` process
#: (about 50 bytes a tuple for the paper's six columns: ~100 MB); a larger one always runs on
#: a cluster unless ``--no-cluster`` is given.
SMALL_HISTORY_ROWS = 2_000_000


@dataclass(frozen=True)
class HistorySize:
    """What decides where a history is released (:func:`history_size`).

    ``rows``: tuples of the history; ``largest_view``: tuples of its largest view and
    ``respondents``: distinct ids plus the rows of the ledger's last state (both None when
    ``rows`` alone exceeds :data:`SMALL_HISTORY_ROWS`: not counted)."""

    rows: int
    largest_view: int | None
    respondents: int | None

    @property
    def small(self) -> bool:
        """Every view is released in process (:func:`dpriv.release.in_process`) and the whole
        history fits the client: no cluster is needed."""
        from dpriv.release import SMALL_STATE_ROWS, SMALL_VIEW_ROWS

        return (
            self.rows <= SMALL_HISTORY_ROWS
            and self.largest_view is not None
            and self.largest_view <= SMALL_VIEW_ROWS
            and self.respondents is not None
            and self.respondents <= SMALL_STATE_ROWS
        )

    def describe(self) -> str:
        return (
            f"{self.rows} tuples, views of at most {self.largest_view} tuples, "
            f"at most {self.respondents} respondents"
        )


def history_size(
    frame: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, state_rows: int = 0
) -> HistorySize:
    """Count a history's tuples, largest view and respondents on the threaded scheduler.

    ``frame``: the history as read (id and time columns present, :func:`dpriv.preflight.preflight`);
    ``state_rows``: rows of the ledger's last committed state (0 for a new ledger), added to
    the distinct ids (a resumed history may omit committed views). The views and ids are
    only scanned when the row count (Parquet metadata where Dask can use it) is at most
    :data:`SMALL_HISTORY_ROWS`.
    """
    with dask.config.set(scheduler="threads"):
        rows = len(frame)
        if rows > SMALL_HISTORY_ROWS:
            return HistorySize(rows, None, None)
        by_view = frame[policy.time].value_counts() if policy.time else frame[policy.id].count()
        largest, ids = dask.compute(by_view, frame[policy.id].nunique())
    largest = int(largest.max()) if isinstance(largest, pd.Series) and len(largest) else int(rows)
    return HistorySize(int(rows), largest, int(ids) + state_rows)


Place = Literal["scheduler", "cluster", "process"]


def release_place(
    frame: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    *,
    scheduler: str | None,
    cluster: bool | None,
    state_rows: int = 0,
) -> tuple[Place, HistorySize | None]:
    """Where ``dpriv release`` runs: ``"scheduler"`` (``--scheduler ADDR``, always),
    ``"cluster"`` (a LocalCluster: ``--cluster``, or by default a history that is not
    :attr:`HistorySize.small`) or ``"process"`` (``--no-cluster``, or by default a small
    history). The size is measured unless ``--scheduler`` or ``--cluster`` is given (else
    None); ``--no-cluster`` collects a small history too.

    Raises InputError for ``--scheduler`` with ``--no-cluster`` (they contradict).
    """
    if scheduler:
        if cluster is False:
            raise InputError(
                "--scheduler and --no-cluster contradict each other: drop --no-cluster to run on "
                f"{scheduler}, or drop --scheduler to release in this process"
            )
        return "scheduler", None
    if cluster:
        return "cluster", None
    size = history_size(frame, policy, state_rows)
    return ("process" if cluster is False or size.small else "cluster"), size


def ledger_state_rows(ledger: str | Path) -> int:
    """Rows of the last committed state of the ledger at ``ledger`` (from the Parquet
    footer), 0 when it holds no release yet or does not exist."""
    from dpriv.ledger import MANIFEST, Ledger

    if not (Path(ledger) / MANIFEST).is_file():
        return 0
    led = Ledger(ledger)
    last = led.last_index()
    return pq.ParquetFile(led.state_path(last)).metadata.num_rows if last else 0


@contextlib.contextmanager
def release_frame(
    frame: dd.DataFrame,
    place: Place,
    size: HistorySize | None,
    *,
    scheduler: str | None = None,
    say: Callable[[str], None] = print,
) -> Iterator[pd.DataFrame | dd.DataFrame]:
    """The history to release, for the duration of the release, at ``place``
    (:func:`release_place`): persisted on the workers of the scheduler or of a LocalCluster
    (each view is a filter of it, never collected), or in this process on the threaded
    scheduler: collected as one pandas frame when ``size`` says it is small, else left lazy."""
    if place != "process":
        with dask_client(scheduler if place == "scheduler" else None, say=say):
            yield frame.persist()
        return
    with dask.config.set(scheduler="threads"):
        if size is not None and size.small:
            say(
                f"{size.describe()}: every view is released in this process, no Dask cluster "
                "started (--cluster starts one, --scheduler ADDR uses yours)"
            )
            yield frame.compute()
        else:
            say("--no-cluster: released in this process on Dask's threaded scheduler")
            yield frame

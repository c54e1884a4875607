"""Where the Dask work runs: a LocalCluster, an existing scheduler, or this process.

``dpriv release``, ``dpriv demo`` and ``dpriv anonymize`` start a LocalCluster only when the
input needs one (:func:`release_place`, the one decision): an input whose every view is
released in process anyway (:data:`dpriv.release.SMALL_VIEW_ROWS`,
:data:`dpriv.release.SMALL_STATE_ROWS`) is read once into this process and released here, on
Dask's threaded scheduler, with the same bytes (docs/architecture.md "Small views"); the
worker processes of a cluster would only cost their start-up and the round trips.
``--scheduler ADDR`` implies a cluster (that one): ``--cluster`` or ``--no-cluster`` with it is
an error (each says where to run).
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

# modules whose values are read at each call (tests lower SMALL_HISTORY_ROWS, CONNECT_SECONDS and
# replace the probe, scheduler_identity, where they live)
from dpriv import history_size as sizes
from dpriv import scheduler_address
from dpriv.allocator import worker_config
from dpriv.errors import InputError
from dpriv.history_size import SMALL_HISTORY_ROWS as SMALL_HISTORY_ROWS  # re-exported (docs/architecture.md)
from dpriv.history_size import HistorySize, LedgerStart, history_size
from dpriv.history_size import ledger_start as ledger_start  # re-exported
from dpriv.numba_cache import CompileNotice
from dpriv.parquet_files import parquet_rows
from dpriv.policy import ReleasePolicy
from dpriv.scheduler_address import CONFIG, config_used, configured_scheduler, contradiction, unreachable
from dpriv.scheduler_address import scheduler_identity as scheduler_identity  # re-exported
from dpriv.wording import Named, argument_named


@contextlib.contextmanager
def dask_client(
    scheduler: str | None = None,
    *,
    n_workers: int | None = None,
    say: Callable[[str], None] = print,
    notice: CompileNotice | None = None,
    named: Named = argument_named,
    config: bool = True,
) -> Iterator[Client]:
    """A distributed Client for the duration of a command; prints the dashboard link.

    ``scheduler``: address of an existing scheduler (``tcp://host:8786``); ``None``: the one Dask's
    ``scheduler-address`` config (``DASK_SCHEDULER_ADDRESS``) names, said, as ``Client()`` and the
    commands take it, else a LocalCluster (one single-threaded worker process per core), closed
    after, its workers keeping freed memory (:mod:`dpriv.allocator`); with ``config=False`` a
    LocalCluster whatever the config says (the commands settle the address first).
    ``notice``: told when a worker compiles a dpriv kernel (:class:`dpriv.worker_notice.WorkerCompileNotice`).
    InputError when the scheduler cannot be reached, naming it as ``named`` words the argument
    (``scheduler``; the command line's ``--scheduler``) or as the config.
    """
    origin = None
    if not scheduler and config and (configured := configured_scheduler()) is not None:
        say(config_used(configured, named, "dask_client(config=False) starts a local cluster instead"))
        scheduler, origin = configured, CONFIG
    if scheduler:
        with _connect(scheduler, named, origin) as client, _compile_reports(client, notice):
            say(f"connected to {scheduler}; dashboard: {client.dashboard_link}")
            yield client
        return
    with (
        dask.config.set(worker_config()),  # read when each Nanny is made
        LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
        _compile_reports(client, notice),
    ):
        say(f"local Dask cluster with {len(cluster.workers)} workers; dashboard: {client.dashboard_link}")
        yield client


@contextlib.contextmanager
def _compile_reports(client: Client, notice: CompileNotice | None) -> Iterator[None]:
    """The workers of ``client`` report compiles to ``notice`` for the duration (the plugin is
    removed after, so that a user's scheduler keeps nothing of dpriv)."""
    if notice is None:
        yield
        return
    from dpriv.worker_notice import COMPILE_TOPIC, WorkerCompileNotice

    client.subscribe_topic(COMPILE_TOPIC, notice.on_worker_event)
    client.register_plugin(WorkerCompileNotice())
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # the cluster may be going down already
            client.unregister_worker_plugin(WorkerCompileNotice.name)
        client.unsubscribe_topic(COMPILE_TOPIC)


def _connect(scheduler: str, named: Named, origin: str | None = None) -> Client:
    """A Client of the scheduler at ``scheduler`` (given as ``named`` words it, or by ``origin``,
    :func:`dpriv.scheduler_address.scheduler_identity`); InputError (exit 2) when it cannot be
    reached. It waits up to :data:`dpriv.scheduler_address.CONNECT_SECONDS` to connect, and to
    reconnect (read at each call: tests shorten it)."""
    scheduler_address.scheduler_identity(scheduler, named, origin=origin)
    before = dask.config.get("scheduler", None)
    try:
        return Client(scheduler, timeout=f"{scheduler_address.CONNECT_SECONDS:g}s")
    except (OSError, ValueError, TypeError) as exc:
        # a Client that failed to connect has already made itself the default scheduler
        if before is None:
            dask.config.config.pop("scheduler", None)
        else:
            dask.config.set(scheduler=before)
        raise unreachable(scheduler, str(exc), named, origin) from None


#: A CSV input (its rows are only known by reading it) of at most this many bytes is read into
#: the process once, then measured there (~2,000,000 rows of the paper's columns); a larger one,
#: or a Parquet input whose footers count more than :data:`SMALL_HISTORY_ROWS`, is measured on
#: Dask (id and time columns only) and read again where it is released.
SMALL_CSV_BYTES = 100_000_000


Place = Literal["scheduler", "cluster", "process"]


@dataclass(frozen=True)
class Placement:
    """Where a command releases (:func:`release_place`) and what: ``place``, ``size`` (None
    when a flag decided) and ``frame``, the input to release: the pandas frame read once into
    this process when it is small and released here, else the input as given (lazy)."""

    place: Place
    size: HistorySize | None
    frame: pd.DataFrame | dd.DataFrame


def release_place(
    frame: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    *,
    scheduler: str | None,
    cluster: bool | None,
    start: LedgerStart | None = None,
    source: str | None = None,
    named: Named = argument_named,
) -> Placement:
    """Where ``dpriv release``/``anonymize`` run, checked before any cluster starts: the input
    is refused at once when bad (:func:`dpriv.preflight.preflight`), then placed at
    ``"scheduler"`` (``--scheduler ADDR``, always), ``"cluster"`` (a
    LocalCluster: ``--cluster``, or by default an input that is not :attr:`HistorySize.small`)
    or ``"process"`` (``--no-cluster``, or by default a small input).

    The size is measured unless ``--scheduler`` or ``--cluster`` is given. To measure it, an
    input known to be small without reading it (``source``: a Parquet input whose footers count
    at most :data:`SMALL_HISTORY_ROWS` rows, any other of at most :data:`SMALL_CSV_BYTES`
    bytes) is read once into this process and measured there; a small one is then released
    from that frame (never read again), as is any input read here with ``--no-cluster``; one
    placed on a cluster is read again by the workers.

    Raises InputError (a ValueError) for ``--scheduler`` with ``--cluster`` or ``--no-cluster``
    (they contradict, as on the command line; ``named`` words the arguments: ``scheduler`` and
    ``cluster=True`` in Python), or for a bad input (:func:`dpriv.preflight.preflight`, which
    names the column and the fix).
    """
    from dpriv.inputs import policy_columns
    from dpriv.part_types import check_parts
    from dpriv.preflight import preflight

    if scheduler and cluster is not None:
        raise InputError(contradiction(scheduler, cluster, named))
    # a file of a glob lacking a column the first one holds: named (a KeyError on reading it before)
    check_parts(frame, [*policy_columns(policy), policy.time])
    if scheduler or cluster:
        preflight(frame, policy, source or "the input")
        return Placement("scheduler" if scheduler else "cluster", None, frame)
    local = _read_if_small(frame, source)
    preflight(local, policy, source or "the input")  # a pandas frame: nothing read again
    size = history_size(local, policy, start)
    place: Place = "process" if cluster is False or size.small else "cluster"
    return Placement(place, size, local if place == "process" else frame)


def _read_if_small(frame: pd.DataFrame | dd.DataFrame, source: str | None) -> pd.DataFrame | dd.DataFrame:
    """``frame`` read into this process (pandas, one read on the threaded scheduler) when
    ``source`` is known to be small without reading it (:func:`release_place`), else as it is."""
    if not isinstance(frame, dd.DataFrame) or source is None:
        return frame
    import fsspec

    fs, _, paths = fsspec.get_fs_token_paths(source)
    if source.rstrip("/").endswith((".parquet", ".pq")) or fs.isdir(paths[0]):  # as dpriv.io.read_table
        small = sum(parquet_rows(fs, p) for p in paths) <= sizes.SMALL_HISTORY_ROWS  # footers only, read now
    else:
        small = sum(fs.size(path) for path in paths) <= SMALL_CSV_BYTES  # every file of a glob
    if not small:
        return frame
    with dask.config.set(scheduler="threads"):
        return frame.compute()


def ledger_state_rows(ledger: str | Path) -> int:
    """Rows of the last committed state of the ledger at ``ledger`` (from its parts' Parquet
    footers), 0 when it holds no release yet or does not exist."""
    from dpriv.ledger import MANIFEST, Ledger

    if not (Path(ledger) / MANIFEST).is_file():
        return 0
    led = Ledger(ledger)
    last = led.last_index()
    return sum(pq.ParquetFile(f).metadata.num_rows for f in led.state_files(last)) if last else 0


@contextlib.contextmanager
def release_frame(
    placement: Placement,
    *,
    scheduler: str | None = None,
    say: Callable[[str], None] = print,
    named: Named = argument_named,
) -> Iterator[pd.DataFrame | dd.DataFrame]:
    """The input to release, for the duration of the release, at ``placement.place``
    (:func:`release_place`): persisted on the workers of the scheduler or of a LocalCluster
    (each view is a filter of it, never collected), or in this process on the threaded
    scheduler: the frame read here (pandas), else left lazy. numba's first
    compile of a dpriv kernel, here or on a worker, is said once (:class:`CompileNotice`).
    ``named`` words the arguments in what is said (``cluster=True``; the command's ``--cluster``)."""
    notice = CompileNotice(say)
    if placement.place != "process":
        address = scheduler if placement.place == "scheduler" else None
        # a LocalCluster asked for (cluster=True, --cluster: no size measured) whatever Dask's
        # config says; one the size asked for runs where the config says, as dask_client(None)
        config = placement.place == "cluster" and placement.size is not None
        with dask_client(address, say=say, notice=notice, named=named, config=config), notice.listening():
            yield placement.frame.persist()
        return
    with dask.config.set(scheduler="threads"), notice.listening():
        if placement.size is not None and placement.size.small:
            # said before the release starts (and before any refusal): what will happen, not what did
            plan = "to be released in this process, " if placement.size.largest_view else ""
            say(
                f"{placement.size.describe()}: {plan}no Dask cluster started "
                f"({named('cluster', True)} starts one, {named('scheduler', 'ADDR')} uses yours)"
            )
        else:
            say(f"{named('cluster', False)}: to be released in this process on Dask's threaded scheduler")
        yield placement.frame

"""Where the Dask work runs: a LocalCluster by default, or an existing scheduler."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from distributed import Client, LocalCluster


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
        with Client(scheduler) as client:
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

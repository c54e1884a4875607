"""A distributed client whose cluster has no worker fails fast (:class:`ClusterError`).

Without a worker, Dask neither computes nor refuses: a release waited for ever, or ended after
Dask's own timeout with ``TimeoutError: No valid workers found`` from a scatter (a notebook's
Interrupt ends the workers of a LocalCluster started in that notebook, the client stays
"running" with none). A release on Dask asks for one worker first.
"""

from __future__ import annotations

from dpriv._dispatch import distributed_client
from dpriv.errors import ClusterError

#: How long a release waits for a worker to join a cluster that has none (seconds).
WAIT_SECONDS = 10.0


def require_workers(what: str) -> None:
    """Return once the current distributed client's cluster has a worker (at once when it has
    one; no client: nothing to check). ClusterError, naming ``what`` (e.g. ``"release 2"``),
    when none joins within :data:`WAIT_SECONDS`."""
    client = distributed_client()
    if client is None:
        return
    try:
        client.wait_for_workers(1, timeout=WAIT_SECONDS)
    except TimeoutError:
        address = getattr(client.scheduler, "address", "?")
        raise ClusterError(
            f"{what} needs a Dask worker, and the cluster of the current client ({address}) has "
            f"none (none joined in {WAIT_SECONDS:g} s): nothing of it was released; start a worker "
            f"(dask worker {address}, on a machine that reaches the scheduler; in a notebook, whose "
            "Interrupt ends the workers of a cluster started in it: a new cluster and client) and run "
            "the same release again (a ledger resumes at its next release)"
        ) from None

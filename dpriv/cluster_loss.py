"""A Dask cluster that lost a worker or its scheduler under a computation: the exceptions that
say so (:func:`cluster_loss`) and what was lost, in words (:func:`what_was_lost`).

A lost worker whose results Dask cannot compute again, or a lost scheduler, ends a computation
with exceptions from :mod:`distributed` (``FutureCancelledError``/``FuturesCancelledError``,
``CommClosedError``, ``KilledWorker``...): not dpriv's bugs nor bad input. The CLI ends with
exit 3 (:mod:`dpriv.cli.failures`) and :func:`dpriv.release.release_history` raises
:class:`~dpriv.errors.ClusterError` or warns (:mod:`dpriv.release_stops`), each naming the
release the ledger stays at.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import re

from dpriv.errors import ClusterError, Loss  # Loss: carried by the errors, imported from here too

#: The reasons Dask gives for cancelled futures: (what was lost, what happened, in words).
_REASONS = {
    "already forgotten": ("a worker", "results that a lost worker held are gone"),
    "lost dependencies": ("a worker", "results that a lost worker held are gone"),
    "scheduler-connection-lost": ("its scheduler", "the connection to the scheduler was lost"),
    "scheduler-restart": ("its scheduler", "the scheduler was restarted"),
}
_EITHER = "a worker or its scheduler"
_KILLED = "https://distributed.dask.org/en/stable/killed.html"


class ClusterLost(Exception):
    """The Dask cluster failed under a command; ``str()`` is the whole message for the user
    (exit :data:`CLUSTER_EXIT`), the exception from Dask is the ``__cause__``."""


def _cluster_types() -> tuple[type[BaseException], ...]:
    """The exception classes that mean a lost worker or scheduler, as this distributed has them
    (``FutureCancelledError`` and ``FuturesCancelledError`` derive from
    :class:`concurrent.futures.CancelledError`, which older releases raised themselves)."""
    types: list[type[BaseException]] = [concurrent.futures.CancelledError, asyncio.CancelledError]
    with contextlib.suppress(ImportError):  # distributed is a dependency, but read it defensively
        from distributed import client, core
        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker

        types += [CommClosedError, KilledWorker]
        types += [
            getattr(mod, n)
            for mod, n in ((client, "ClosedClientError"), (core, "RPCClosed"))
            if hasattr(mod, n)
        ]
    return tuple(types)


def cluster_loss(exc: BaseException | None) -> BaseException | None:
    """The exception of ``exc``'s chain (itself, its cause or context) that says the Dask
    cluster lost a worker or its scheduler, or None. A plain ``OSError`` counts only as
    distributed's "Timed out trying to connect" (a disk error is the user's: exit 2)."""
    types = _cluster_types()
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (ClusterLost, ClusterError, *types)):
            return exc
        if isinstance(exc, OSError) and str(exc).startswith("Timed out trying to connect"):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _reasons(exc: BaseException) -> list[str]:
    """The reasons Dask gave for cancelling the futures of ``exc`` (both classes' attributes,
    else its text), in order, without repeats."""
    groups = getattr(exc, "error_groups", None)
    found = [g.reason for g in groups] if groups else [getattr(exc, "reason", None)]
    found = [r for r in found if r] or re.findall(r"for reason: ([^.\n]+)", str(exc))
    return list(dict.fromkeys(found))


def what_was_lost(exc: BaseException) -> Loss:
    """What the cluster lost under ``exc`` (:class:`Loss`)."""
    from_dask = cluster_loss(exc) or exc
    name = type(from_dask).__name__
    if name == "KilledWorker":
        task = from_dask.args[0] if from_dask.args else "?"
        why = f"every worker that ran task {task!r} died running it, out of memory? (Dask: {name}, {_KILLED})"
        return Loss("a worker", why)
    reasons = _reasons(from_dask) if isinstance(from_dask, concurrent.futures.CancelledError) else []
    if reasons:
        lost = {_REASONS.get(r, (_EITHER,))[0] for r in reasons}
        why = "; ".join(
            f"{_REASONS[r][1]} (Dask: {r!r})" if r in _REASONS else f"Dask: {r!r}" for r in reasons
        )
        return Loss(lost.pop() if len(lost) == 1 else _EITHER, why)
    text = (str(from_dask).splitlines() or [""])[0][:200]
    dask_said = f"Dask: {name}: {text}" if text else f"Dask: {name}"
    if name == "ClosedClientError":  # closed after failing to reconnect to its scheduler
        return Loss("its scheduler", f"the client could not reach the scheduler again ({dask_said})")
    if isinstance(from_dask, OSError):  # CommClosedError, RPCClosed, a timed-out connect
        return Loss(_EITHER, f"a connection to the cluster failed ({dask_said})")
    return Loss(_EITHER, dask_said)

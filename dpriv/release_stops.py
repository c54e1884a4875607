"""What a Python caller is told when a release stops half-way: the release the ledger stays at.

``dpriv release`` says it itself (:mod:`dpriv.cli.failures`, :mod:`dpriv.cli.interrupts`). In a
notebook, a ``Client`` closed while :func:`dpriv.release.release_history` computes ended it with
Dask's ``FutureCancelledError: ... cancelled for reason: unknown`` or ``ClosedClientError``, and
an Interrupt with a bare ``KeyboardInterrupt``: nothing said which release the ledger holds.
:func:`said_stops` turns the first into :class:`~dpriv.errors.ClusterError` (the class of a
cluster without workers) naming the release being made and the one the ledger stays at, and
adds that as a note to the second (still the same KeyboardInterrupt: Jupyter's Interrupt and a
caller's ``except KeyboardInterrupt`` see it as ever). Nothing else is changed: a worker or
scheduler lost under an open client stays Dask's exception, as the CLI reports it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from dpriv._dispatch import distributed_client
from dpriv.errors import ClusterError, DprivError

F = TypeVar("F", bound=Callable[..., Any])


def holds(ledger_dir: Path) -> int:
    """The last release committed in the ledger at ``ledger_dir`` (0: none, or no ledger)."""
    from dpriv.resume_types import open_committed  # the ledger's modules: only when a release stops

    return max((int(e["index"]) for e in open_committed(ledger_dir)[1]), default=0)


def _held(last: int) -> str:
    return {0: "no release yet", 1: "release 1"}.get(last, f"releases 1..{last}")


def said_stops(fn: F) -> F:
    """Decorate a function whose third argument (or ``ledger_dir=``) is a ledger folder
    (``release_history``): a client closed during the call raises ClusterError (from Dask's
    exception), an interrupt gets a note; both name the release the ledger stays at."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        root = Path(kwargs["ledger_dir"] if "ledger_dir" in kwargs else args[2])
        client = distributed_client()
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt as exc:
            last = holds(root)
            exc.add_note(
                f"dpriv: interrupted; nothing half-written: the ledger {root} holds {_held(last)}; "
                f"run release_history again to resume at release {last + 1}"
            )
            raise
        except Exception as exc:
            # any failure once the client is closed is its doing (a cancelled future, a closed
            # client, a persisted state gone: "Missing dependency"); dpriv's refusals pass as they are
            if isinstance(exc, DprivError) or client is None or client.status not in ("closing", "closed"):
                raise
            last = holds(root)
            raise ClusterError(
                f"the Dask client was closed during release {last + 1} (Dask: {type(exc).__name__}): "
                f"nothing of release {last + 1} was committed; the ledger {root} holds {_held(last)}: "
                "start a client (or none, to release in this process) and run release_history again "
                f"to resume at release {last + 1}"
            ) from exc

    return wrapped  # type: ignore[return-value]

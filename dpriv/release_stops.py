"""What a Python caller is told when a release stops half-way: the release the ledger stays at.

``dpriv release`` says it itself (:mod:`dpriv.cli.failures`, :mod:`dpriv.cli.interrupts`). In a
notebook, a ``Client`` closed while :func:`dpriv.release.release_history` computes ended it with
Dask's ``FutureCancelledError: ... cancelled for reason: unknown`` or ``ClosedClientError``, and
an Interrupt with a bare ``KeyboardInterrupt``: nothing said which release the ledger holds.
:func:`said_stops` turns the first into :class:`~dpriv.errors.ClusterError` (the class of a
cluster without workers) naming the release being made and the one the ledger stays at, and
adds that as a note to the second (still the same KeyboardInterrupt: Jupyter's Interrupt and a
caller's ``except KeyboardInterrupt`` see it as ever). A worker or scheduler lost under an open
client (:func:`dpriv.cluster_loss.cluster_loss`) raised Dask's own exception, also when the loss
came after the commit of the last release to make, where ``dpriv release`` warns and exits 0:
now, as the command says it, the call returns the ledger with a ``UserWarning`` ("lost its
scheduler after release 3 was committed: ... Every release of this call is committed") when
every view it was to release is committed, and raises ClusterError naming the release being
made and the one the ledger stays at otherwise: :class:`~dpriv.errors.ClusterLossError` (a
ClusterError) and :class:`~dpriv.errors.ClusterLossWarning` (a UserWarning), which carry what was
lost and the release the ledger holds; ``dpriv release`` reads them and words the loss itself
(:func:`dpriv.cli.failures.during_release`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from dpriv._dispatch import distributed_client
from dpriv.errors import ClusterError, ClusterLossError, ClusterLossWarning, DprivError, LedgerError

F = TypeVar("F", bound=Callable[..., Any])

#: Set while a caller that words a loss itself runs ``release_history`` (:func:`losses_raised`):
#: the ClusterLossWarning of a loss after the last commit is raised to it instead of warned.
_LOSS_RAISED: ContextVar[bool] = ContextVar("dpriv_loss_raised", default=False)


@contextlib.contextmanager
def losses_raised() -> Iterator[None]:
    """Within the block, ``release_history`` raises the :class:`~dpriv.errors.ClusterLossWarning`
    of a loss after its last commit (as it raises a ClusterLossError before), ending the block as
    the error does (``dpriv release``: :func:`dpriv.cli.failures.during_release`). Scoped to this
    thread's context: a ``warnings`` filter turning it into an error would hold for the whole
    process while the release runs (Dask's threads too) and, restored by ``catch_warnings`` at the
    end, drop a filter that another thread set meanwhile."""
    token = _LOSS_RAISED.set(True)
    try:
        yield
    finally:
        _LOSS_RAISED.reset(token)


def holds(ledger_dir: Path) -> int:
    """The last release committed in the ledger at ``ledger_dir``: 0 for none, or no
    ``manifest.json`` yet (a new ledger). The one reading of it for a release that stops (here,
    :mod:`dpriv.cli.failures`, :mod:`dpriv.cli.interrupts`). Raises LedgerError for a manifest that
    cannot be read or is damaged (:func:`dpriv.ledger_manifest.read_manifest`'s words)."""
    from dpriv.ledger_manifest import MANIFEST, read_manifest

    root = Path(ledger_dir)
    if not (root / MANIFEST).is_file():
        return 0
    releases = read_manifest(root)["releases"]
    return int(releases[-1]["index"]) if releases else 0


def holds_at_stop(ledger_dir: Path, what: str) -> int:
    """:func:`holds` once ``what`` (a client closed, a cluster lost: a clause) stopped a release.
    A manifest that cannot be read then is a LedgerError naming both, not the stop's own error:
    which releases are committed cannot be told, and the same call run again would stop at the
    manifest, so the user mends it first (``dpriv release``: exit 2, not the 3 of a loss, whose
    advice is to run the same command again; docs/ledger.md#a-damaged-manifest)."""
    try:
        return holds(ledger_dir)
    except LedgerError as damaged:
        raise LedgerError(
            f"{what}, and the ledger's manifest cannot be read now: {damaged}. Which releases are "
            "committed cannot be told, and the same command run again would stop at the manifest: "
            "mend it first"
        ) from damaged


def held(last: int) -> str:
    """What a ledger holding releases 1..``last`` holds, in words ("no release yet" for 0)."""
    return {0: "no release yet", 1: "release 1"}.get(last, f"releases 1..{last}")


def said_stops(fn: F) -> F:
    """Decorate a function whose third argument (or ``ledger_dir=``) is a ledger folder
    (``release_history``): a client closed or a worker or scheduler lost during the call raises
    ClusterError (from Dask's exception; a loss: :class:`~dpriv.errors.ClusterLossError`), an
    interrupt gets a note; both name the release the ledger stays at. A client closed or a
    cluster lost once every view of the call is committed is a UserWarning (a loss:
    :class:`~dpriv.errors.ClusterLossWarning`), the ledger returned."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        root = Path(kwargs["ledger_dir"] if "ledger_dir" in kwargs else args[2])
        client = distributed_client()
        planned: list[list[int]] = []  # the views this call is to release, once its checks passed
        kwargs = _recording_start(kwargs, planned)
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt as exc:
            exc.add_note(_interrupted(root))
            raise
        except Exception as exc:
            if isinstance(exc, (DprivError, ClusterError)):  # dpriv's refusals pass as they are
                raise
            # any failure once the client is closed is its doing (a cancelled future, a closed
            # client, a persisted state gone: "Missing dependency")
            if client is not None and client.status in ("closing", "closed"):
                last = holds_at_stop(root, f"the Dask client was closed (Dask: {type(exc).__name__})")
                if _all_committed(planned, last):  # closed after the last commit: done
                    dask_said = f"Dask: {type(exc).__name__}"
                    said = _after_last(root, last, "the Dask client was closed", dask_said)
                    return _done(root, said)
                raise ClusterError(
                    f"the Dask client was closed during release {last + 1} (Dask: {type(exc).__name__}): "
                    f"nothing of release {last + 1} was committed; the ledger {root} holds {held(last)}: "
                    "start a client (or none, to release in this process) and run release_history again "
                    f"to resume at release {last + 1}"
                ) from exc
            from dpriv.cluster_loss import cluster_loss

            if cluster_loss(exc) is None:
                raise
            return _lost(exc, root, planned)

    return wrapped  # type: ignore[return-value]


def _interrupted(root: Path) -> str:
    """The note of an interrupt: the release the ledger at ``root`` stays at (its manifest
    unreadable: said, the interrupt stays the exception)."""
    try:
        last = holds(root)
    except LedgerError as damaged:
        return f"dpriv: interrupted; the ledger's manifest cannot be read: {damaged}"
    return (
        f"dpriv: interrupted; nothing half-written: the ledger {root} holds {held(last)}; "
        f"run release_history again to resume at release {last + 1}"
    )


def _recording_start(kwargs: dict[str, Any], planned: list[list[int]]) -> dict[str, Any]:
    """``kwargs`` whose ``on_start`` also records the indices it is given into ``planned`` (a
    caller's own ``on_start`` still called; one that is not a function is left for
    ``release_history`` to refuse by name)."""
    own = kwargs.get("on_start")
    if own is not None and not callable(own):
        return kwargs

    def on_start(indices: list[int]) -> None:
        planned.append(list(indices))
        if own is not None:
            own(indices)

    return {**kwargs, "on_start": on_start}


def _all_committed(planned: list[list[int]], last: int) -> bool:
    """Whether the call's ``on_start`` was given its views (``planned[0]``) and each is at most
    ``last``, the ledger's last committed release (none to release: True)."""
    return bool(planned) and all(i <= last for i in planned[0])


def _lost(exc: Exception, root: Path, planned: list[list[int]]) -> Any:
    """After a lost worker or scheduler (``exc``): the ledger at ``root`` with a
    ClusterLossWarning when every view of ``planned`` is committed in it (the loss came after the
    last commit), else ClusterLossError naming what was lost and the release being made."""
    from dpriv.cluster_loss import what_was_lost

    loss = what_was_lost(exc)
    last = holds_at_stop(root, f"the Dask cluster lost {loss.what}: {loss.why}")
    if _all_committed(planned, last):
        said = _after_last(root, last, f"the Dask cluster lost {loss.what}", loss.why)
        return _done(root, ClusterLossWarning(said, loss, last))
    raise ClusterLossError(
        f"the Dask cluster lost {loss.what} during release {last + 1}: {loss.why}. Nothing of release "
        f"{last + 1} was committed; the ledger {root} holds {held(last)}: run release_history again to "
        f"resume at release {last + 1} (a cluster that loses workers often: read the workers' logs)",
        loss,
        last,
    ) from exc


def _after_last(root: Path, last: int, what: str, why: str) -> str:
    """The warning's words: ``what`` happened after release ``last``, the last of the call, was
    committed in the ledger at ``root``, ``why`` in a few words."""
    return (
        f"{what} after release {last} was committed: {why}. Every release of this call is "
        f"committed: the ledger {root} holds {held(last)}"
    )


def _done(root: Path, warning: str | Warning) -> Any:
    """The ledger at ``root`` (a :class:`dpriv.ledger.Ledger`, as ``release_history`` returns
    it) with ``warning`` (:func:`_after_last`'s words; as ``dpriv release`` warns and exits 0)."""
    from dpriv.ledger import Ledger
    from dpriv.user_warning import warn_user

    if isinstance(warning, ClusterLossWarning) and _LOSS_RAISED.get():
        raise warning
    warn_user(warning)
    return Ledger(root)

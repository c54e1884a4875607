"""A command that fails for a reason outside its input: a Dask cluster lost (exit 3), a file it
cannot write (exit 2), dpriv's own fault (exit 1, :func:`internal_failure`).

A lost worker whose results Dask cannot compute again, or a lost scheduler, ends a command
with exceptions from :mod:`distributed` (``FutureCancelledError``/``FuturesCancelledError``,
``CommClosedError``, ``KilledWorker``...). They are not dpriv's bugs (exit 1) nor bad input
(exit 2): :func:`cluster_loss` recognizes them and the command ends with
:data:`CLUSTER_EXIT` and one message (:func:`loss_message`) saying what was lost, that the
ledger stayed at its last committed release and that the same command resumes.
``dpriv release`` adds which release was being made (:func:`during_release`), reading a loss
inside ``release_history`` from its :class:`~dpriv.errors.ClusterLossError` or
:class:`~dpriv.errors.ClusterLossWarning`.
While a command runs, Dask's own logging of the loss (``distributed.client - ERROR`` with
tracebacks) is silenced unless ``--debug`` (:func:`quiet_dask_logs`).
A folder made read-only, a full disk, a quota or a file-size limit is the user's to fix: one
``error:`` line naming the file (:func:`write_failure`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn, Protocol

import typer

from dpriv.cli.interrupts import interrupt_of, interrupted
from dpriv.cluster_loss import ClusterLost, Loss, cluster_loss, what_was_lost
from dpriv.errors import ClusterError, ClusterLossError, ClusterLossWarning, DprivError
from dpriv.release_stops import held, holds_at_stop, losses_raised

#: Exit status of a command whose Dask cluster lost a worker or its scheduler, or whose ledger
#: another command holds (dpriv.errors.LedgerBusy): nothing half-written, the same command
#: resumes (0 ok, 1 internal error, 2 bad input, 130 Ctrl-C, 143 SIGTERM).
CLUSTER_EXIT = 3

#: Dask's routine chatter (P2P shuffle start/stop, slow worker shutdown) is not for users.
QUIET_LOGGERS = ("distributed.shuffle", "distributed.nanny", "distributed.worker", "distributed.core")


def _advice(lost: str, scheduler: str | None) -> str:
    if lost == "its scheduler":
        where = f"the scheduler at {scheduler}" if scheduler else "the scheduler"
        return f"If it fails again, check that {where} runs (restart it and its workers)"
    return (
        "A cluster that loses workers often: read the workers' logs (a worker that exceeds its "
        "memory limit is killed: give the workers more memory, or add workers)"
        + ("" if scheduler else ", or release in this process with --no-cluster")
    )


#: Commands that write nothing before their Dask computation is done (their outputs atomically).
_WRITE_AFTER = ("anonymize",)


def loss_message(exc: BaseException, scheduler: str | None = None, command: str = "") -> str:
    """The message of a command whose cluster failed: :class:`ClusterLost`'s own, else one
    naming ``command`` (``dpriv release`` raises :class:`ClusterLost` itself)."""
    if isinstance(exc, (ClusterLost, ClusterError)):
        return str(exc)
    lost, why = what_was_lost(exc)
    done = "Nothing was written" if command in _WRITE_AFTER else "The command did not finish"
    where = f"dpriv {command}" if command else "the command"
    return (
        f"the Dask cluster lost {lost} during {where}: {why}. {done}: run the same command again. "
        + _advice(lost, scheduler)
    )


class ReleaseProgress(Protocol):
    """What ``dpriv release`` printed and planned (:class:`dpriv.cli.release_table.ReleaseTable`)."""

    def catch_up(self, last: int) -> None: ...  # print the rows of releases committed up to ``last``
    def all_committed(self, last: int) -> bool: ...  # nothing left to release once ``last`` is


@contextlib.contextmanager
def during_release(ledger: Path, progress: ReleaseProgress, scheduler: str | None) -> Iterator[None]:
    """Turn a cluster failure inside the block into :class:`ClusterLost` naming the release
    being made, the one after the last committed as the ledger's manifest says (a failure can
    come between a commit and the command's report of it; no manifest: 0, none; a manifest that
    cannot be read: LedgerError, exit 2, :func:`dpriv.release_stops.holds_at_stop`). Releases
    committed but not yet printed get their rows first; when the failure came after the commit
    of the last release to make, the release is done: a warning says so and the block ends
    normally (exit 0, as ``dpriv status`` confirms).
    A :class:`~dpriv.errors.DprivError` passes as it is (exit 2). A loss inside
    ``release_history`` comes as its ClusterLossError, or its ClusterLossWarning (raised, not
    warned, within the block: :func:`dpriv.release_stops.losses_raised`, no warnings filter), read
    by :func:`_loss_of`."""
    try:
        with losses_raised():
            yield
    except BaseException as exc:
        loss = _loss_of(exc)
        if loss is None:
            raise
        lost, why = loss
        # a manifest unreadable now: LedgerError, exit 2 (dpriv.release_stops.holds_at_stop)
        last = holds_at_stop(ledger, f"the Dask cluster lost {lost} during dpriv release: {why}")
        holds = held(last)
        try:  # the rows a loss just after a commit kept from being printed
            progress.catch_up(last)
        except Exception:  # noqa: BLE001 - a metrics.json unreadable now: the ledger says the rest
            caught_up = False
        else:
            caught_up = True
        if caught_up and progress.all_committed(last):
            typer.echo(
                f"warning: the Dask cluster lost {lost} after release {last} was committed: {why}. "
                f"Every release of this run is committed: the ledger {ledger} holds {holds} "
                f"(dpriv status {ledger})",
                err=True,
            )
            return
        raise ClusterLost(
            f"the Dask cluster lost {lost} during release {last + 1}: {why}. Nothing of release "
            f"{last + 1} was committed; the ledger {ledger} holds {holds}: run the same "
            f"command again to resume at release {last + 1}. {_advice(lost, scheduler)}"
        ) from exc


def _loss_of(exc: BaseException) -> Loss | None:
    """What the cluster lost, when ``exc`` says it lost a worker or its scheduler: as
    ``release_history`` said it (:class:`~dpriv.errors.ClusterLossError`,
    :class:`~dpriv.errors.ClusterLossWarning`), or from Dask's exception raised outside it (the
    history persisted on the cluster); None for anything else."""
    if isinstance(exc, (ClusterLossError, ClusterLossWarning)):
        return exc.loss
    # bad input (exit 2) stays so, whatever its context: a scheduler found unreachable
    # raises InputError from distributed's "Timed out trying to connect"
    if (
        isinstance(exc, (KeyboardInterrupt, SystemExit, ClusterLost, ClusterError, DprivError))
        or cluster_loss(exc) is None
    ):
        return None
    return what_was_lost(exc)


class _DropErrors(logging.Filter):
    """Drops what ``distributed.client`` logs at ERROR and above (a lost scheduler: "Failed to
    reconnect", tracebacks of cancelled tasks); the command says it in one message."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


@contextlib.contextmanager
def quiet_dask_logs(debug: bool) -> Iterator[None]:
    """Unless ``debug``: Dask's routine loggers at ERROR (:data:`QUIET_LOGGERS`) and, for the
    duration, the client's errors dropped (:class:`_DropErrors`)."""
    if debug:
        yield
        return
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    client_log, drop = logging.getLogger("distributed.client"), _DropErrors()
    client_log.addFilter(drop)
    try:
        yield
    finally:
        client_log.removeFilter(drop)


#: errno values of a write the user can fix: read-only file system, no space left, quota, a
#: file-size limit (``ulimit -f``).
_WRITE_ERRORS = (errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EFBIG)


def is_write_failure(exc: OSError) -> bool:
    """Whether ``exc`` is a write the user can fix (:func:`write_failure`), not dpriv's fault."""
    return isinstance(exc, PermissionError) or exc.errno in _WRITE_ERRORS


#: Commands whose output goes where ``--out`` says (a file, or a folder): a failed write is fixed
#: by another ``--out``.
OUT_COMMANDS = frozenset(
    {"anonymize", "export", "report", "demo", "generate_medical", "generate_pbc", "experiment_paper"}
)


def write_fix(exc: OSError, name: str) -> str:
    """What to do after the failed write ``exc`` of the command ``name`` (the function's name):
    ``release`` writes only its ledger (no --out), ``attack`` the ledger's attack/ folder unless
    given --out, the commands of :data:`OUT_COMMANDS` their --out."""
    room = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if exc.errno == errno.EFBIG:
        first = "raise the file-size limit (ulimit -f)"
    elif name == "release":
        first = "free space on the ledger's disk" if room else "make the ledger's folder writable"
    elif name == "attack":
        first = "free space, or " if room else ""
    else:
        first = "free space or " if room else ""
    if name == "release":
        return (
            f"{first} (or copy the ledger to a folder you can write to) and run the same command again; "
            "the ledger keeps its last committed release (dpriv status LEDGER)"
        )
    if name == "attack":
        return (
            f"{first}give --out FILE in a folder you can write to (without --out the result goes into "
            "the ledger's attack/ folder); the ledger's releases are untouched"
        )
    if exc.errno == errno.EFBIG:
        first += " or "
    return f"{first}choose a folder you can write to" + (" (--out)" if name in OUT_COMMANDS else "")


def write_failure(exc: OSError, debug: bool, name: str = "") -> NoReturn:
    """Exit 2 with one line naming the file and the fix (:func:`write_fix`, for the command
    ``name``): a folder read-only (or made so after the checks), a full disk or quota, a
    file-size limit (:func:`is_write_failure`)."""
    if debug:
        traceback.print_exc()
    why = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
    typer.echo(f"error: {why.lower()} writing {exc.filename or 'a file'}; {write_fix(exc, name)}", err=True)
    raise typer.Exit(2) from None


def internal_failure(
    exc: BaseException, debug: bool, scheduler: str | None = None, name: str = "", ledger: Path | None = None
) -> NoReturn:
    """Exit 1 for what is dpriv's own fault (130/143 for Ctrl-C/SIGTERM inside a compiled kernel, 3 for a
    lost Dask worker or scheduler); ``ledger``: the one the command writes
    (:func:`dpriv.cli.interrupts.interrupted`)."""
    if (interrupt := interrupt_of(exc)) is not None:  # Ctrl-C inside a compiled kernel: a SystemError
        interrupted(debug, interrupt, name, ledger)
    if debug:
        traceback.print_exc()
    if cluster_loss(exc) is not None:
        typer.echo(f"error: {loss_message(exc, scheduler, name)}", err=True)
        raise typer.Exit(CLUSTER_EXIT) from None
    typer.echo(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
    raise typer.Exit(1) from None

"""A command interrupted: Ctrl-C (SIGINT, exit 130) or SIGTERM (what ``timeout``, systemd and
SLURM send; exit 143 = 128 + 15). Both end the same way: the files being written are removed
(each writer cleans up on an exception), one line on stderr says what stays, no traceback
unless --debug.

Each interrupt is also recorded (:mod:`dpriv.pending_interrupt`): its exception, raised inside
a gc callback or a ``__del__``, is discarded by Python, and the command's next safe point
raises it again. From the interrupt on, the shutdown's noise is kept off stderr unless
--debug: a local Dask cluster whose workers got the signal too (``timeout`` signals the whole
process group) logs ``distributed.scheduler - ERROR`` lines and asyncio's "Future exception
was never retrieved" tracebacks while it closes."""

from __future__ import annotations

import contextlib
import functools
import logging
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

import typer

from dpriv import pending_interrupt
from dpriv.pending_interrupt import interrupt_of  # noqa: F401  (the CLI's name for it)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command was (a KeyboardInterrupt: every clean-up of a Ctrl-C
    runs for it too)."""


class _Shutdown:
    """Whether an interrupt arrived during the command (its shutdown is then quiet), and what
    stays of the command if it is interrupted now, when the command said so (:func:`stays`)."""

    quiet = False
    stays: str | None = None


def stays(what: str | None) -> None:
    """Say that an interrupt of the running command from now on leaves ``what`` (the end of the
    line :func:`interrupted` prints: "the released view was written to ..."); None: the
    command's usual line (:data:`_STAYS`, "nothing was written"). For a command that writes its
    outputs in steps; forgotten when the next command starts."""
    _Shutdown.stays = what


def _quiet_shutdown() -> None:
    """Keep the shutdown that follows an interrupt off stderr: every logger (distributed's, and
    asyncio's, which reports the futures of a closed connection "never retrieved") and the
    exceptions Python can only report ("Exception ignored in ..."); dpriv's own line is echoed."""
    _Shutdown.quiet = True
    logging.disable(logging.CRITICAL)


def _interrupt(kind: type[KeyboardInterrupt], debug: bool, signum: int, frame: Any) -> NoReturn:
    pending_interrupt.record(kind)  # before raising: the exception may be discarded (see module)
    if not debug:
        _quiet_shutdown()
    raise kind()


def _unraisable(previous: Callable[[Any], None], debug: bool, unraisable: Any) -> None:
    """``sys.unraisablehook`` while a command runs: an interrupt discarded is recorded (a Ctrl-C
    the default handler raised) and, as whatever shutdown noise follows an interrupt, not
    printed unless --debug."""
    interrupt = isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type, KeyboardInterrupt)
    if interrupt:
        pending_interrupt.record(unraisable.exc_type)
    if debug or not (interrupt or _Shutdown.quiet):
        previous(unraisable)


@contextlib.contextmanager
def sigterm_interrupts(debug: bool = False) -> Iterator[None]:
    """While active (in the main thread), SIGTERM raises :class:`Terminated` and Ctrl-C its
    KeyboardInterrupt (unless a handler of the caller's own is set), each also recorded; one
    recorded and not raised by the command's end ends it as interrupted all the same. Unless
    ``debug``, the shutdown after an interrupt prints nothing (:func:`_quiet_shutdown`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending_interrupt.clear()
    _Shutdown.stays = None  # the previous command's (in one process: tests, notebooks)
    previous_hook, logging_disabled = sys.unraisablehook, logging.root.manager.disable
    kinds = {signal.SIGTERM: Terminated}
    sigint = signal.getsignal(signal.SIGINT)
    if sigint is signal.default_int_handler or _starting(sigint):  # Python's own: raise as it does
        kinds[signal.SIGINT] = KeyboardInterrupt
    previous = {n: signal.signal(n, functools.partial(_interrupt, kind, debug)) for n, kind in kinds.items()}
    # after the command, not the start-up's line ("nothing was read or written") but the defaults
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    previous = {n: defaults[n] if _starting(h) else h for n, h in previous.items()}
    sys.unraisablehook = functools.partial(_unraisable, previous_hook, debug)
    try:
        yield
        pending_interrupt.raise_pending()  # discarded after the last safe point: still interrupted
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = previous_hook
        pending_interrupt.clear()
        _Shutdown.quiet = False
        logging.disable(logging_disabled)


def _starting(handler: Any) -> bool:
    """Whether ``handler`` is that of the ``dpriv`` script while it starts (dpriv/__main__.py:
    one line, exit at once), which a command's own handler replaces."""
    return bool(getattr(handler, "dpriv_starting", False))


#: What stays of an interrupted ``dpriv generate`` (dpriv/datasets/generated.py: each file
#: recorded as it is written, so that --force replaces it).
_GENERATED = (
    "a file being written was removed; files written before it stay, recorded as dpriv's: run "
    "the command again with --force to replace them"
)
#: What stays after an interrupted command that writes no ledger, by command (the function's
#: name); others write nothing, or one file whole or not at all.
_STAYS = {
    "generate_medical": _GENERATED,
    "generate_pbc": _GENERATED,
    "experiment_paper": "a file being written was removed; files written before it stay",
}
#: What stays of a command that writes a ledger whose manifest cannot be read now.
_LEDGER_STAYS = "the release being written is dropped, the ledger stays at its last committed release"

#: How a command names the ledger it writes, given to :func:`dpriv.cli.common.command` by the
#: commands that write one: the name of its parameter holding the folder (``dpriv release``:
#: ``"ledger"``), or a function of its arguments (``dpriv demo``: ``OUT/ledger``).
LedgerOf = str | Callable[[Mapping[str, Any]], "str | Path | None"]


def ledger_written(ledger_of: LedgerOf | None, kwargs: Mapping[str, Any]) -> Path | None:
    """The ledger a command writes, found by ``ledger_of`` in its arguments ``kwargs``; None for
    a command that writes none (``ledger_of`` None) or a ledger argument not given."""
    if ledger_of is None:
        return None
    place = kwargs.get(ledger_of) if isinstance(ledger_of, str) else ledger_of(kwargs)
    return None if place is None else Path(place)


def _last_committed(ledger: Path) -> int | None:
    """The last release committed in ``ledger`` (0: none, or no manifest yet;
    :func:`dpriv.release_stops.holds`), None when its manifest cannot be read."""
    from dpriv.errors import DprivError
    from dpriv.release_stops import holds

    try:
        return holds(ledger)
    except (OSError, DprivError):
        return None


def interrupted(
    debug: bool, exc: BaseException | None = None, name: str = "", ledger: Path | None = None
) -> NoReturn:
    """One line, then exit 130 for Ctrl-C or 143 for SIGTERM (128 + the signal, as a shell
    reports it); ``name``: the command's function, whose outcome the line says; ``ledger``: the
    ledger it writes (:func:`ledger_written`), whose last committed release the line names as its
    manifest says now (an interrupt can come just after a commit, before the command reported it)."""
    if debug:
        traceback.print_exc()
    how = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted (Ctrl-C)"
    said = _STAYS.get(name, "nothing was written") if ledger is None else _LEDGER_STAYS
    said = _Shutdown.stays or said  # as the command said it last, when it did
    last = None if ledger is None else _last_committed(ledger)  # None: its manifest unreadable
    if ledger is not None and not ledger.exists():  # a new ledger removed with its first release
        said = f"no ledger is left at {ledger}: the next run starts it again from release 1"
    elif last == 0:
        said = "the release being written is dropped, the ledger holds no committed release"
    elif last is not None:
        said = (
            f"the ledger stays at its last committed release, release {last}; a release not committed "
            "by then is dropped"
        )
    typer.echo(f"{how}: {said}", err=True)
    raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None

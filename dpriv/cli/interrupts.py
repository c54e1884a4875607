"""A command interrupted: Ctrl-C (SIGINT, exit 130) or SIGTERM (what ``timeout``, systemd and
SLURM send; exit 143 = 128 + 15). Both end the same way: the files being written are removed
(each writer cleans up on an exception), one line on stderr says what stays, no traceback
unless --debug."""

from __future__ import annotations

import contextlib
import signal
import threading
import traceback
from collections.abc import Iterator
from typing import Any, NoReturn

import typer


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command was (a KeyboardInterrupt: every clean-up of a Ctrl-C
    runs for it too)."""


def _terminate(signum: int, frame: Any) -> NoReturn:
    raise Terminated()


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While active (in the main thread), SIGTERM raises :class:`Terminated`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupt_of(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (or :class:`Terminated`) ``exc`` is or was raised while pending
    (its cause or context), else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


#: What stays of an interrupted ``dpriv generate`` (dpriv/datasets/generated.py: each file
#: recorded as it is written, so that --force replaces it).
_GENERATED = (
    "a file being written was removed; files written before it stay, recorded as dpriv's: run "
    "the command again with --force to replace them"
)
#: What stays after an interrupted command, by command (the function's name); others write
#: nothing, or one file whole or not at all.
_STAYS = {
    "release": "the release being written is dropped, the ledger stays at its last committed release",
    "demo": "the release being written is dropped, the ledger stays at its last committed release",
    "generate_medical": _GENERATED,
    "generate_pbc": _GENERATED,
    "experiment_paper": "a file being written was removed; files written before it stay",
}


def interrupted(debug: bool, exc: BaseException | None = None, name: str = "") -> NoReturn:
    """One line, then exit 130 for Ctrl-C or 143 for SIGTERM (128 + the signal, as a shell
    reports it); ``name``: the command's function, whose outcome the line says."""
    if debug:
        traceback.print_exc()
    how = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted (Ctrl-C)"
    typer.echo(f"{how}: {_STAYS.get(name, 'nothing was written')}", err=True)
    raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None

"""An interrupt whose exception was lost, raised again at the next safe point.

A signal's exception (SIGTERM's ``Terminated``, Ctrl-C's ``KeyboardInterrupt``) is raised
wherever the main thread is when the signal arrives. Inside a gc callback (Dask's
``GCDiagnosis``), a ``__del__`` or a weakref callback, Python reports it as "Exception ignored
in ..." and discards it: an operator's ``timeout -s TERM`` once let a release commit all its
views and exit 0. So the CLI records each interrupt (:func:`record`, from its signal handlers
and :data:`sys.unraisablehook`) and the safe points of a command raise it again
(:func:`raise_pending`): between the steps of a release (:meth:`dpriv.steps.Steps.lap`) and
before a file is renamed into place (:func:`dpriv.io.atomic_write`, a ledger's manifest, its
commit point, last). A discarded interrupt delays the stop by at most one step, and nothing
is committed after it.

A commit point itself (a ledger's manifest renamed, then its bookkeeping) runs with interrupts
:func:`deferred`: the signal's exception, raised just after the rename took effect, made the
clean-up of a failed commit remove the files of the release it had just committed.

An interrupt inside a compiled (numba) kernel surfaces as another exception chained from the
KeyboardInterrupt (``SystemError: CPUDispatcher(...) returned a result with an exception
set``): the public entry points re-raise it as the interrupt it is (:func:`as_interrupt`), so
that a caller's ``except KeyboardInterrupt`` (Jupyter's interrupt) catches it.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_pending: type[KeyboardInterrupt] | None = None


def record(kind: type[KeyboardInterrupt]) -> None:
    """Note that an interrupt of class ``kind`` arrived (its exception may be discarded)."""
    global _pending
    _pending = kind


def clear() -> None:
    """Forget a recorded interrupt (a command's end: the next one starts afresh)."""
    global _pending
    _pending = None


def pending() -> type[KeyboardInterrupt] | None:
    """The class of the interrupt recorded and not raised again yet, or None."""
    return _pending


def raise_pending() -> None:
    """Raise the recorded interrupt, once, in the main thread (where a signal's exception
    belongs), and only when no exception is being handled: then the interrupt itself (or
    another error) is on its way, and the clean-up that runs meanwhile (temp files removed, a
    ledger's policy file put back) must run whole."""
    kind = _pending
    if kind is None or sys.exc_info()[1] is not None:
        return
    if threading.current_thread() is not threading.main_thread():
        return
    clear()
    raise kind()


#: The signals whose Python handlers :func:`deferred` holds back (Ctrl-C; SIGTERM as the CLI
#: handles it: timeout, systemd and SLURM send it).
DEFERRED = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Run the block with SIGINT and SIGTERM held back: their Python handlers (the CLI's, or
    Python's own Ctrl-C handler) are called only once the block ends, whole or raising, for the
    first signal that arrived meanwhile. For a commit point that must not be cut between its
    rename and its bookkeeping. Not a mask of the process's threads (a signal blocked in the main
    thread goes to another), a recording handler instead: a signal with no Python handler
    (SIGTERM's default, which ends the process like a kill -9) is left as it is. In a thread
    other than the main one (where no handler can be set) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[tuple[int, Any]] = []
    held = {n: h for n in DEFERRED if callable(h := signal.getsignal(n))}
    for signum in held:
        signal.signal(signum, lambda n, frame: arrived.append((n, frame)))
    try:
        yield
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
        if arrived:  # raised now, after the block (an exception of the block's own is kept as context)
            signum, frame = arrived[0]
            held[signum](signum, frame)


def interrupt_of(exc: BaseException | None) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (or the CLI's SIGTERM, a subclass) ``exc`` is, or was raised while
    pending (its cause or context, followed down the chain), else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def as_interrupt(function: F) -> F:
    """``function`` re-raising an exception chained from an interrupt (:func:`interrupt_of`) as
    that KeyboardInterrupt: an interrupt inside a numba kernel comes out as a ``SystemError``
    that a caller's ``except KeyboardInterrupt`` would miss. Other exceptions pass as they are."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            interrupt = interrupt_of(exc)
            if interrupt is None:
                raise
            raise interrupt from None  # itself, with its traceback; the SystemError it became not shown

    return wrapper  # type: ignore[return-value]

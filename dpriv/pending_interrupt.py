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
"""

from __future__ import annotations

import sys
import threading

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

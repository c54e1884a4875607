"""The path arguments of dpriv's Python entry points, checked before anything runs.

A folder or file given as anything but a ``str`` or ``os.PathLike`` (``release_history(history,
policy, 5)``, ``run_experiment(out=5)``) failed deep inside the call with pathlib's bare
``TypeError: expected str, bytes or os.PathLike object, not int``. :func:`check_path` is the one
check, :func:`path_arguments` the decorator that applies it to named arguments; both raise
:class:`~dpriv.errors.PathArgumentError` (an InputError, exit 2 in a command) naming the
function, the argument, what it is and the types it takes.
"""

from __future__ import annotations

import functools
import inspect
import os
import reprlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from dpriv.errors import PathArgumentError

F = TypeVar("F", bound=Callable[..., Any])


def check_path(value: object, argument: str, function: str, what: str, *, ledger: bool = False) -> None:
    """PathArgumentError unless ``value`` is a ``str`` or ``os.PathLike`` (``bytes`` is refused:
    no dpriv path is bytes). ``argument`` and ``function`` name it (``ledger_dir`` of
    ``release_history``), ``what`` says what it is ("the ledger's folder"); ``ledger``: the
    argument takes a :class:`~dpriv.ledger.Ledger` too (the caller returns it first), said so.
    E.g. ``release_history() takes ledger_dir as the ledger's folder (a str or pathlib.Path),
    not int 5``."""
    if isinstance(value, str | os.PathLike):
        return
    accepted = f"a Ledger or {what}" if ledger else what
    # a number is shown (a 5 for the ledger: which argument got it?); a frame is not
    got = f"{type(value).__name__} {reprlib.repr(value)}" if isinstance(value, int | float | bytes) else None
    raise PathArgumentError(
        f"{function}() takes {argument} as {accepted} (a str or pathlib.Path), "
        f"not {got or ('None' if value is None else type(value).__name__)}"
    )


def path_arguments(*, ledgers: Mapping[str, type] | None = None, **what: str) -> Callable[[F], F]:
    """Decorate a function whose arguments named in ``what`` (name -> what it is) are paths, and
    those named in ``ledgers`` (name -> :class:`~dpriv.ledger.Ledger`, given by the caller: the
    ledger's modules import this one) a Ledger or the ledger's folder: each is checked with
    :func:`check_path` before the function (and any decorator below this one) runs; an optional
    one (default None) may be None. Arguments that do not bind to the signature are left for
    the function to refuse."""
    ledgers = dict(ledgers or {})
    what = {**dict.fromkeys(ledgers, "the ledger's folder"), **what}

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        for name in what:  # a typo here would leave the argument unchecked for ever
            if name not in signature.parameters:
                raise AssertionError(f"{fn.__name__} has no argument {name!r}")

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind_partial(*args, **kwargs).arguments
            except TypeError:
                return fn(*args, **kwargs)  # Python's own words for a call that does not fit
            for name, meaning in what.items():
                if name not in bound:
                    continue
                value = bound[name]
                if value is None and signature.parameters[name].default is None:
                    continue
                if name in ledgers and isinstance(value, ledgers[name]):
                    continue
                check_path(value, name, fn.__name__, meaning, ledger=name in ledgers)
            return fn(*args, **kwargs)

        return wrapped  # type: ignore[return-value]

    return decorate

"""A command interrupted (Ctrl-C): one line on stderr and exit 130, no traceback unless --debug."""

from __future__ import annotations

import traceback
from typing import NoReturn

import typer


def by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was pending (its cause or context)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def interrupted(debug: bool) -> NoReturn:
    """Ctrl-C: one line, exit 130 (128 + SIGINT, as a shell reports it)."""
    if debug:
        traceback.print_exc()
    typer.echo("interrupted (Ctrl-C): a ledger stays at its last committed release", err=True)
    raise typer.Exit(130) from None

"""An option given twice on the command line: never one of its values silently dropped.

click keeps the last value of an option given twice, so ``--date birth --date adm`` released
``birth`` as exact dates. Every ``dpriv`` command is an :class:`OnceCommand`: an option of
comma-separated names (:data:`LIST_OPTIONS`: ``--qi``, ``--categorical``, ``--date``,
``--known``) adds up when repeated (``--date birth --date adm`` is ``--date birth,adm``); any
other option given twice with different values (``--id a --id b``, ``--k 4 --k 5``,
``--cluster --no-cluster``) is a usage error, exit 2, naming the option and both values
(the same value twice is harmless). ``--hierarchy`` (repeatable) naming one column twice is
refused by :func:`dpriv.cli.common.with_hierarchies`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand

#: The options of comma-separated names (their parameter names): repeated, they add up.
LIST_OPTIONS = frozenset({"qi", "categorical", "date", "known"})

#: click's UsageError (exit 2), of the click typer runs on (typer >= 0.20 bundles its own click).
UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def comma_names(text: str | None) -> list[str]:
    """The column names of a comma-list option's value, in order (``" a, b,,"`` is ``a``, ``b``)."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _flags(opt: Any) -> str:
    """The spellings of a parser option, e.g. ``--id`` or ``--cluster``."""
    return "/".join([*opt._long_opts, *opt._short_opts])


def _once(opt: Any, process: Callable[[Any, Any], None], value: Any, state: Any) -> None:
    """``opt.process``: store ``value`` unless the option was given before (then add up a list
    option's names, or refuse a different value)."""
    if opt.dest not in state.opts:
        return process(value, state)
    before = state.opts[opt.dest]
    if opt.action == "store" and opt.dest in LIST_OPTIONS:
        state.opts[opt.dest] = f"{before},{value}"
        state.order.append(opt.obj)
        return None
    now = opt.const if opt.action == "store_const" else value
    if now == before:
        return process(value, state)
    if opt.action == "store_const":  # --cluster then --no-cluster: two spellings of one option
        names = "/".join([*opt.obj.opts, *opt.obj.secondary_opts])
        raise UsageError(f"{names} given both ways: give one of them")
    raise UsageError(
        f"{_flags(opt)} given twice, as {before!r} and {value!r}: give it once (only "
        f"{', '.join('--' + n for n in sorted(LIST_OPTIONS))} add up when repeated)"
    )


class OnceCommand(TyperCommand):
    """A typer command whose options refuse a second, different value (see the module)."""

    def make_parser(self, ctx: Any) -> Any:
        parser = super().make_parser(ctx)
        if not hasattr(parser, "_long_opt"):  # a click whose parser changed: its own rules (tests say so)
            return parser
        options = {id(o): o for o in [*parser._long_opt.values(), *parser._short_opt.values()]}
        for opt in options.values():
            if opt.action in ("store", "store_const"):
                opt.process = functools.partial(_once, opt, opt.process)
        return parser


class App(typer.Typer):
    """``typer.Typer`` whose commands are :class:`OnceCommand` s."""

    def command(self, name: str | None = None, *, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or OnceCommand, **kwargs)

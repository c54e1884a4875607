"""click as the ``dpriv`` command line parses with it (the click typer runs on: typer >= 0.20
bundles its own): its usage error, dpriv's wording of one (:class:`OptionError`, exit 2), the
command being run, and what a parsed option is (its spellings, a path or not, its value
converted). :mod:`dpriv.cli.repeats`, :mod:`dpriv.cli.path_options` and :mod:`dpriv.cli.usage`
build on these; none of them is imported here."""

from __future__ import annotations

import importlib
from typing import Any

import typer

#: click's UsageError (exit 2), of the click typer runs on (typer >= 0.20 bundles its own click).
UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
#: The key of ``ctx.meta`` holding a command's arguments as given
#: (:meth:`dpriv.cli.repeats.OnceCommand.parse_args`).
GIVEN = "dpriv.given"


def current_context() -> Any | None:
    """The click context of the command being run (None outside one), of that click too."""
    return importlib.import_module(UsageError.__module__.rsplit(".", 1)[0] + ".globals").get_current_context(
        silent=True
    )


class OptionError(UsageError):
    """A usage error worded and printed as dpriv's other bad input (``error: ...`` on stderr,
    exit 2), not with click's usage block and ``Error:``."""

    def show(self, file: Any = None) -> None:
        typer.echo(f"error: {self.format_message()}", err=True)


def flags_of(opt: Any) -> str:
    """The spellings of a parser option, e.g. ``--id`` or ``--cluster``."""
    return "/".join([*opt._long_opts, *opt._short_opts])


def takes_path(param: Any) -> bool:
    """Whether the click/typer parameter ``param`` is declared with a path type."""
    desc = getattr(param, "type_descriptor", None)  # typer >= 0.2x: its own types
    return desc.is_path if desc is not None else getattr(getattr(param, "type", None), "name", "") == "path"


def convert_value(param: Any, ctx: Any, value: Any) -> Any:
    """``value`` converted by ``param``'s type (UsageError when it does not convert)."""
    if hasattr(param, "get_runtime_param"):  # typer >= 0.2x converts values itself
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)
    return param.type_cast_value(ctx, value)

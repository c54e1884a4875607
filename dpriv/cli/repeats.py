"""An option given twice, or two options that contradict each other, on the command line: never
one of the values silently dropped.

click keeps the last value of an option given twice, so ``--date birth --date adm`` released
``birth`` as exact dates. Every ``dpriv`` command is an :class:`OnceCommand`: an option of
comma-separated names (:data:`LIST_OPTIONS`: ``--qi``, ``--categorical``, ``--date``,
``--known``) adds up when repeated (``--date birth --date adm`` is ``--date birth,adm``) and
names each column once (``--qi age --qi age`` and ``--date d,d`` are refused); any other option
given twice with different values (``--id a --id b``, ``--k 4 --k 5``, ``--cluster
--no-cluster``) is refused naming the option and both values. The same value twice is harmless,
however it is spelled (``--t .45 --t 0.45``, ``--out x --out ./x/``): values are compared as the
command gets them. ``--scheduler ADDR`` with ``--cluster`` or ``--no-cluster``, and a column
both ``--categorical`` and ``--date``, are refused (:func:`_refuse_contradictions`). Each
refusal is an :class:`~dpriv.cli.click_parts.OptionError`: exit 2 and ``error: ...`` as
dpriv's other bad input, before the command does anything. ``--hierarchy`` (repeatable) naming
one column twice is refused by :func:`dpriv.cli.policy_flags.with_hierarchies`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from dpriv.cli.click_parts import GIVEN, OptionError, UsageError, convert_value, flags_of, takes_path
from dpriv.cli.path_options import watch_paths
from dpriv.cli.usage import worded

#: The options of comma-separated names (their parameter names): repeated, they add up.
LIST_OPTIONS = frozenset({"qi", "categorical", "date", "known"})


def comma_names(text: str | None) -> list[str]:
    """The column names of a comma-list option's value, in order (``" a, b,,"`` is ``a``, ``b``)."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _refuse_repeated_names(flag: str, text: str) -> None:
    """OptionError when ``text`` (a list option's value, added up) names a column twice: the
    second would only repeat the first, or stand for a typo of another column."""
    names = comma_names(text)
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:
        raise OptionError(f"{flag} names {twice!r} twice (in {text!r}): give each column once")


def _converted(param: Any, ctx: Any, value: Any) -> Any:
    """``value`` as the command gets it (``.45`` and ``0.45`` one number), a path made absolute
    and normal (``x``, ``x/`` and ``./x`` one path); the text itself when it does not convert
    (two such values are compared as written, and click names a bad one once it is single)."""
    try:
        value = convert_value(param, ctx, value)
    except UsageError:
        return value
    return os.path.abspath(value) if takes_path(param) and value is not None else value


def _once(opt: Any, process: Callable[[Any, Any], None], ctx: Any, value: Any, state: Any) -> None:
    """``opt.process``: store ``value`` unless the option was given before (then add up a list
    option's names, or refuse a different value)."""
    first = opt.dest not in state.opts
    if ctx.resilient_parsing:  # shell completion parses partial command lines: click's own rules
        return process(value, state)
    if opt.action == "store" and opt.dest in LIST_OPTIONS:
        text = value if first else f"{state.opts[opt.dest]},{value}"
        _refuse_repeated_names(flags_of(opt), text)
        if first:
            return process(value, state)
        state.opts[opt.dest] = text
        state.order.append(opt.obj)
        return None
    if first:
        return process(value, state)
    before = state.opts[opt.dest]
    now = opt.const if opt.action == "store_const" else value
    if now == before or (
        opt.action == "store" and _converted(opt.obj, ctx, now) == _converted(opt.obj, ctx, before)
    ):
        return process(value, state)
    if opt.action == "store_const":  # --cluster then --no-cluster: two spellings of one option
        names = "/".join([*opt.obj.opts, *opt.obj.secondary_opts])
        raise OptionError(f"{names} given both ways: give one of them")
    raise OptionError(
        f"{flags_of(opt)} given twice, as {before!r} and {value!r}: give it once (only "
        f"{', '.join('--' + n for n in sorted(LIST_OPTIONS))} add up when repeated)"
    )


def _refuse_contradictions(params: Mapping[str, Any]) -> None:
    """OptionError for ``--scheduler ADDR`` with ``--cluster`` (start a local Dask cluster) or
    ``--no-cluster`` (no cluster at all): each says where the command runs, differently; and for
    a QI named by both ``--categorical`` and ``--date`` (one kind would be dropped)."""
    both = [c for c in comma_names(params.get("categorical")) if c in comma_names(params.get("date"))]
    if both:
        raise OptionError(
            f"--categorical and --date both name {both[0]!r}: a QI is released as a value set or as "
            "date intervals, give it to one of them"
        )
    scheduler, cluster = params.get("scheduler"), params.get("cluster")
    if not scheduler or cluster is None:
        return
    from dpriv.scheduler_address import contradiction
    from dpriv.wording import flag_named

    raise OptionError(contradiction(scheduler, cluster, flag_named))


class OnceCommand(TyperCommand):
    """A typer command whose options refuse a second, different value and contradictions (see
    the module)."""

    def make_parser(self, ctx: Any) -> Any:
        parser = super().make_parser(ctx)
        if not hasattr(parser, "_long_opt"):  # a click whose parser changed: its own rules (tests say so)
            return parser
        options = {id(o): o for o in [*parser._long_opt.values(), *parser._short_opt.values()]}
        for opt in options.values():
            if opt.action in ("store", "store_const"):
                opt.process = functools.partial(_once, opt, opt.process, ctx)
        if not ctx.resilient_parsing:  # shell completion parses partial command lines: as given
            watch_paths(parser)  # first, then the above: ~/x and /home/u/x are one value
        return parser

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)  # click's parser consumes the list
        ctx.meta[GIVEN] = given  # a refusal quotes a value as typed (dpriv.cli.usage.typed_value)
        try:
            rest = super().parse_args(ctx, args)
        except UsageError as exc:
            raise _worded(exc, self, ctx, given) from None
        if not ctx.resilient_parsing:
            _refuse_contradictions(ctx.params)
        return rest


def _worded(exc: Exception, command: Any, ctx: Any, args: list[str]) -> Exception:
    if ctx.resilient_parsing:  # shell completion: click's own errors, never printed
        return exc
    return worded(exc, command, ctx, args)


class OnceGroup(TyperGroup):
    """A typer group (``dpriv``, ``dpriv generate``...) whose usage errors (an unknown option or
    command) print as dpriv's other bad input (:mod:`dpriv.cli.usage`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            raise _worded(exc, self, ctx, given) from None

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        given = list(args)
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            raise _worded(exc, self, ctx, given) from None


class App(typer.Typer):
    """``typer.Typer`` whose groups are :class:`OnceGroup` s and commands :class:`OnceCommand` s."""

    def __init__(self, *, cls: Any = None, **kwargs: Any) -> None:
        super().__init__(cls=cls or OnceGroup, **kwargs)

    def command(self, name: str | None = None, *, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or OnceCommand, **kwargs)

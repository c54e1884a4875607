"""click's usage errors (a value out of range or of the wrong type, an unknown option or
command, a missing value) worded as dpriv's other bad input: one ``error: ...`` line, exit 2.

click printed its usage block, a "Try ... --help" line and ``Error: Invalid value for '--k':
Input should be greater than or equal to 1`` (typer >= 0.2x: the value given is not named), or
``0 is not in the range x>=1.`` (older typer). :func:`worded` turns each such error into an
:class:`dpriv.cli.click_parts.OptionError` naming the option, the value as typed and what the
option takes (``--k must be a whole number >= 1, not '0'``); every
:class:`dpriv.cli.repeats.OnceCommand` and :class:`dpriv.cli.repeats.OnceGroup` raises it
instead of click's. ``dpriv`` alone still prints the help (click's NoArgsIsHelpError).
"""

from __future__ import annotations

import difflib
from typing import Any

from dpriv.cli.click_parts import GIVEN, OptionError, UsageError, convert_value, current_context

#: What a value of each Python type is called in a message.
_KINDS = {int: "a whole number", float: "a number", bool: "true or false"}

#: click's names of its number and boolean types (typer < 0.2x converts values with them).
_CLICK_TYPES = {"integer": int, "integer range": int, "float": float, "float range": float, "boolean": bool}


def _kind(param: Any) -> type | None:
    """The Python type an option's value converts to (int, float or bool; None: another)."""
    desc = getattr(param, "type_descriptor", None)  # typer >= 0.2x: its own types
    kind = desc.annotation if desc is not None else _CLICK_TYPES.get(getattr(param.type, "name", ""))
    return kind if kind in _KINDS else None


def _bound(param: Any, name: str) -> Any:
    value = getattr(param, name, None)  # typer >= 0.2x keeps min/max on the option itself
    return value if value is not None else getattr(getattr(param, "type", None), name, None)


def allowed(param: Any) -> str | None:
    """What ``param`` (a typer option or argument) takes, in words (``a whole number >= 1``);
    None for a type described by its own error message (a path, a text)."""
    kind = _kind(param)
    if kind is None:
        return None
    lo, hi = _bound(param, "min"), _bound(param, "max")
    if lo is not None and hi is not None:
        return f"{_KINDS[kind]} from {lo} to {hi}"
    if lo is not None or hi is not None:
        return f"{_KINDS[kind]} {'>=' if lo is not None else '<='} {lo if lo is not None else hi}"
    return _KINDS[kind]


def _given(command: Any, ctx: Any, args: list[str], param: Any) -> str | None:
    """The text given for ``param`` on the command line ``args`` (parsed again, as given:
    the command had failed on it), None when it was not given there (a default, a callback's)."""
    try:
        opts = command.make_parser(ctx).parse_args(args=list(args))[0]
    except UsageError:
        return None
    value = opts.get(param.name)
    if isinstance(value, list | tuple):  # an option given several times, or nargs > 1
        value = " ".join(map(str, value))
    return value if isinstance(value, str) else None


def typed_value(flag: str) -> str | None:
    """The text given for option ``flag`` (``--j``) on the command line of the command being run,
    as typed (``1e400``, which the command got as inf); None outside a command or when not given."""
    ctx = current_context()
    args = ctx.meta.get(GIVEN) if ctx is not None else None
    if not args:
        return None
    param = next((p for p in ctx.command.params if flag in p.opts), None)
    return None if param is None else _given(ctx.command, ctx, args, param)


def _flag(param: Any) -> str:
    """How the command line names ``param``: its long option (``--k``), an argument's name."""
    names = [o for o in getattr(param, "opts", []) if o.startswith("--")] or list(getattr(param, "opts", []))
    if getattr(param, "param_type_name", "") == "argument" or not names:
        return param.name.upper()
    return max(names, key=len)


def _message(exc: Any) -> str:
    """click's own message, as a clause (no leading capital, no closing period)."""
    text = str(exc.message if getattr(exc, "message", None) else exc.format_message()).strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text  # "No such", not "URL"


def worded(exc: Exception, command: Any, ctx: Any, args: list[str]) -> Exception:
    """``exc`` (click's UsageError raised parsing ``args`` for ``command``) as an OptionError
    worded as dpriv's bad input; ``exc`` itself when already one, or when it prints the help
    (``dpriv`` alone). Never raises."""
    if isinstance(exc, OptionError) or type(exc).__name__ == "NoArgsIsHelpError":
        return exc
    where = getattr(getattr(exc, "ctx", None) or ctx, "command_path", "") or "dpriv"
    param = getattr(exc, "param", None)
    if type(exc).__name__ == "NoSuchOption":
        guesses = likely_meant(exc.option_name, getattr(exc, "ctx", None) or ctx, command)
        maybe = f" (did you mean {' or '.join(guesses)}?)" if guesses else ""
        text = f"{where} has no option {exc.option_name}{maybe}: {where} --help lists its options"
    elif type(exc).__name__ == "BadParameter" and param is not None:
        text = _bad_value(exc, command, ctx, args, param)
    else:  # an unknown command, a missing argument, an option without its value...
        lists = "commands" if hasattr(command, "list_commands") else "options"
        said = _message(exc)  # typer adds "Did you mean 'release'?" to an unknown command
        text = f"{said}{' ' if said.endswith('?') else ': '}{where} --help lists its {lists}"
    error = OptionError(text, ctx=getattr(exc, "ctx", None) or ctx)
    error.exit_code = getattr(exc, "exit_code", 2)
    return error


def likely_meant(name: str, ctx: Any, command: Any) -> list[str]:
    """The options of the command (``ctx``'s, else ``command``) that ``name`` (an unknown ``--x``)
    is plausibly a typo of, sorted: compared without the dashes, similar by difflib's ratio >= 0.75
    or one letter added, dropped, changed or two swapped (``--kk`` -> ``--k``); of an option's two
    spellings the nearer (``--no-clustr`` -> ``--no-cluster``, not ``--cluster``). click's own guesses
    (ratio >= 0.6 with the dashes) offered ``--out`` for ``--nosuch`` and ``--t`` for ``--out``."""
    params = getattr(getattr(ctx, "command", None) or command, "params", [])
    opts = {o.lstrip("-"): o for p in params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}
    typed = name.lstrip("-")
    close = set(difflib.get_close_matches(typed, list(opts), n=3, cutoff=0.75))
    close |= {o for o in opts if len(typed) > 1 and _one_edit(typed, o)}
    for p in params:  # two spellings of one option (--cluster/--no-cluster): the nearer one only
        both = [o[2:] for o in (*p.opts, *p.secondary_opts) if o.startswith("--") and o[2:] in close]
        if len(both) > 1:
            near = {o: difflib.SequenceMatcher(None, typed, o).ratio() for o in both}
            close -= {o for o, ratio in near.items() if ratio < max(near.values())}
    return sorted(opts[o] for o in close)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one letter added, dropped or changed, or two swapped."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :] or (a[i + 2 :] == b[i + 2 :] and a[i : i + 2] == b[i : i + 2][::-1])
    short, long_ = sorted((a, b), key=len)
    return short[i:] == long_[i + 1 :]


def _bad_value(exc: Any, command: Any, ctx: Any, args: list[str], param: Any) -> str:
    flag, given = _flag(param), _given(command, ctx, args, param)
    takes = allowed(param)
    if given is None:
        return f"{flag}: {_message(exc)}"
    if takes is not None:
        try:
            convert_value(param, ctx, given)
        except UsageError:  # the text is no value of its type, or out of its range
            return f"{flag} must be {takes}, not {given!r}"
    return f"{flag} {given!r}: {_message(exc)}"  # a check of the option's own (a callback's)

"""How the command line says a refusal (:func:`error_text`): a policy with one bad value is one
``error:`` line naming the flag and the value as the command line or the policy file gave it
(``error: --t must be a number in [0, 1], not '-1' (policy file p.toml with --t)``; ``--j 1e400``,
which is read as inf, quoted as ``'1e400'``; a TOML table ``{a = 1}`` as typed, not as Python's
``{'a': 1}``), where the policy check's own message (:func:`dpriv.policy_keys.invalid_policy`, a
line per problem, kept for Python) said ``invalid policy (...):`` and ``t: must be ..., got -1.0``
on a second line. Several problems keep a line each, each bad value worded and quoted so."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

from dpriv.errors import DprivError

#: ``invalid policy (WHERE):`` and its problem lines; a bound's problem is ``KEY: must be ..., got V``.
_PROBLEMS = re.compile(r"invalid policy \((?P<where>[^\n]*)\):(?P<problems>(?:\n  [^\n]*)+)")
_BOUND = re.compile(r"(?P<key>\w+): (?P<rule>must be [^\n]*), got (?P<value>[^\n]*)")


def error_text(exc: BaseException) -> str:
    """The text after ``error:`` for a refusal ``exc`` (a DprivError, or pandas' ParserError or a
    UnicodeDecodeError of a file being read): a policy refusal of one problem on one line
    (:func:`one_line_policy`, the value as the command line or the policy file gave it), anything
    else as it is."""
    if not isinstance(exc, DprivError):
        return f"cannot parse the input: {exc}"
    return one_line_policy(str(exc), _as_given)


def one_line_policy(message: str, given: Callable[[str, str], str | None] = lambda name, where: None) -> str:
    """``message`` with a one-problem ``invalid policy (WHERE):`` refusal on one line: a value the
    flag ``--KEY`` gave (WHERE names the flag) as ``--KEY must be ..., not 'V' (WHERE)``, any other
    problem as ``invalid policy (WHERE): problem``; of several problems, a line each, each bad
    value worded so (:func:`_bound_text`); other messages unchanged.
    ``given(name, where)``: the text the user gave for ``--KEY`` or ``KEY`` (``1e400``, where the
    message shows the number read, ``inf``; ``{a = 1}``, where it shows ``{'a': 1}``), None when
    unknown."""
    whole = _PROBLEMS.fullmatch(message)
    if whole is None:
        return message
    where, problems = whole["where"], whole["problems"].split("\n  ")[1:]
    if len(problems) > 1:
        lines = [_bound_text(problem, where, given) or problem for problem in problems]
        return f"invalid policy ({where}):" + "".join(f"\n  {line}" for line in lines)
    text = _bound_text(problems[0], where, given)
    return f"invalid policy ({where}): {problems[0]}" if text is None else f"{text} ({where})"


def _bound_text(problem: str, where: str, given: Callable[[str, str], str | None]) -> str | None:
    """A bound's ``problem`` (``t: must be ..., got -1.0``) as ``t must be ..., not '-1e0'``: named
    as the flag when WHERE names it (``--t``), the value as typed; None for another problem."""
    bound = _BOUND.fullmatch(problem)
    if bound is None:
        return None
    flag = "--" + bound["key"].replace("_", "-")
    named = re.search(rf"(^|[ ,]){re.escape(flag)}(,|$)", where) is not None
    name = flag if named else bound["key"]
    value = _typed(bound["value"], given(name, where))
    return f"{name} must be {bound['rule'].removeprefix('must be ')}, not {value}"


def _as_given(name: str, where: str) -> str | None:
    """The text the user gave for ``name``: a flag's (``--j``) on the command line being run, a
    key's (``j``) in the policy file ``where`` names (``policy file p.toml``, the --policy given)."""
    from dpriv.cli.click_parts import current_context
    from dpriv.cli.usage import typed_value

    if name.startswith("--"):
        return typed_value(name)
    ctx = current_context()
    policy = ctx.params.get("policy") if ctx is not None else None
    if policy is None or not re.fullmatch(rf"policy file {re.escape(str(policy))}( with .*)?", where):
        return None
    try:
        text = Path(policy).read_text(encoding="utf-8-sig")  # read before: a bad value refused it
    except (OSError, ValueError):
        return None
    found = re.findall(rf"^[ \t]*{re.escape(name)}[ \t]*=[ \t]*([^#\s][^#\n]*?)[ \t]*(?:#.*)?$", text, re.M)
    # the key given a table of its own ([privacy.t] and its lines): named by its header
    found += re.findall(rf"^[ \t]*(\[[ \t]*\w+\.{re.escape(name)}[ \t]*\])[ \t]*(?:#.*)?$", text, re.M)
    return found[0] if len(found) == 1 else None  # the key twice (a QI named t in [kinds]): unknown


def _typed(shown: str, given: str | None = None) -> str:
    """The value the policy check shows (its ``repr``: ``-1.0``, ``inf``, ``{'a': 1}``) quoted as
    the user typed it: ``given`` (``1e400``) when that is the number shown, else the number in its
    shortest form (``-1.0`` -> ``'-1'``); a table or array as ``given`` (``'{a = 1}'``, ``the table
    [privacy.t]`` for a table of its own). A number past the largest float (1e400) reads as inf:
    said as too large."""
    try:
        value = float(shown)
    except ValueError:  # a text value is quoted by its repr; a TOML table or array as typed
        if given is None or shown[:1] not in "[{":
            return shown
        return f"the table {given}" if shown[:1] == "{" and given[:1] == "[" else f"'{given}'"
    if given is not None and _same(given, value):
        text = given
    elif re.fullmatch(r"-?\d+", shown):  # a whole number: as it is (a float would round 2**63 - 1)
        text = shown
    elif not math.isnan(value) and not math.isinf(value) and value.is_integer():
        text = str(int(value))
    else:
        text = shown
    typed_inf = given is not None and given.lower().lstrip("+-") in ("inf", "infinity")
    too_large = math.isinf(value) and not typed_inf  # 1e400, or a text unknown (most likely so)
    return f"'{text}'" + (": too large to be a finite number" if too_large else "")


def _same(given: str, value: float) -> bool:
    """Whether ``given`` (a flag's value, a TOML number such as ``1_000``) is the number ``value``."""
    try:
        number = float(given.replace("_", ""))
    except ValueError:
        return False
    return number == value or (math.isnan(number) and math.isnan(value))

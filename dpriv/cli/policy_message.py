"""How the command line says a refusal (:func:`error_text`): a policy with one bad value is one
``error:`` line naming the flag and the value as the command line or the policy file gave it
(``error: --t must be a number in [0, 1], not '-1' (policy file p.toml with --t)``; ``--j 1e400``,
which is read as inf, quoted as ``'1e400'``), where the policy check's own message
(:func:`dpriv.policy_keys.invalid_policy`, a line per problem, kept for several problems and for
Python) said ``invalid policy (...):`` and ``t: must be ..., got -1.0`` on a second line."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

from dpriv.errors import DprivError

#: ``invalid policy (WHERE):`` and one problem line; a bound's problem is ``KEY: must be ..., got V``.
_ONE_PROBLEM = re.compile(r"invalid policy \((?P<where>[^\n]*)\):\n  (?P<problem>[^\n]*)")
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
    problem as ``invalid policy (WHERE): problem``; several problems and other messages unchanged.
    ``given(name, where)``: the text the user gave for ``--KEY`` or ``KEY`` (``1e400``, where the
    message shows the number read, ``inf``), None when unknown."""
    whole = _ONE_PROBLEM.fullmatch(message)
    if whole is None:
        return message
    where, problem = whole["where"], whole["problem"]
    bound = _BOUND.fullmatch(problem)
    if bound is None:
        return f"invalid policy ({where}): {problem}"
    flag = "--" + bound["key"].replace("_", "-")
    named = re.search(rf"(^|[ ,]){re.escape(flag)}(,|$)", where) is not None
    name = flag if named else bound["key"]
    value = _typed(bound["value"], given(name, where))
    return f"{name} must be {bound['rule'].removeprefix('must be ')}, not {value} ({where})"


def _as_given(name: str, where: str) -> str | None:
    """The text the user gave for ``name``: a flag's (``--j``) on the command line being run, a
    key's (``j``) in the policy file ``where`` names (``policy file p.toml``, the --policy given)."""
    from dpriv.cli.repeats import current_context
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
    return found[0] if len(found) == 1 else None  # the key twice (a QI named t in [kinds]): unknown


def _typed(shown: str, given: str | None = None) -> str:
    """The value the policy check shows (its ``repr``: ``-1.0``, ``inf``) quoted as the user typed
    it: ``given`` (``1e400``) when that is the number shown, else the number in its shortest form
    (``-1.0`` -> ``'-1'``). A number past the largest float (1e400) reads as inf: said as too large."""
    try:
        value = float(shown)
    except ValueError:  # a text value: already quoted by its repr
        return shown
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

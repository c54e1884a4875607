"""How the command line says a refusal (:func:`error_text`): a policy with one bad value is one
``error:`` line naming the flag and the value as a number is typed (``error: --t must be a number
in [0, 1], not '-1' (policy file p.toml with --t)``), where the policy check's own message
(:func:`dpriv.policy_keys.invalid_policy`, a line per problem, kept for several problems and for
Python) said ``invalid policy (...):`` and ``t: must be ..., got -1.0`` on a second line."""

from __future__ import annotations

import math
import re

from dpriv.errors import DprivError

#: ``invalid policy (WHERE):`` and one problem line; a bound's problem is ``KEY: must be ..., got V``.
_ONE_PROBLEM = re.compile(r"invalid policy \((?P<where>[^\n]*)\):\n  (?P<problem>[^\n]*)")
_BOUND = re.compile(r"(?P<key>\w+): (?P<rule>must be [^\n]*), got (?P<value>[^\n]*)")


def error_text(exc: BaseException) -> str:
    """The text after ``error:`` for a refusal ``exc`` (a DprivError, or pandas' ParserError or a
    UnicodeDecodeError of a file being read): a policy refusal of one problem on one line
    (:func:`one_line_policy`), anything else as it is."""
    if not isinstance(exc, DprivError):
        return f"cannot parse the input: {exc}"
    return one_line_policy(str(exc))


def one_line_policy(message: str) -> str:
    """``message`` with a one-problem ``invalid policy (WHERE):`` refusal on one line: a value the
    flag ``--KEY`` gave (WHERE names the flag) as ``--KEY must be ..., not 'V' (WHERE)``, any other
    problem as ``invalid policy (WHERE): problem``; several problems and other messages unchanged."""
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
    return f"{name} must be {bound['rule'].removeprefix('must be ')}, not {_typed(bound['value'])} ({where})"


def _typed(shown: str) -> str:
    """A number as the user would have typed it (``-1.0`` -> ``'-1'``), from the ``repr`` the
    policy check shows; a flag's number past the largest float (1e400) reads as inf, said as too large."""
    if re.fullmatch(r"-?\d+", shown):  # a whole number: as it is (a float would round 2**63 - 1)
        return f"'{shown}'"
    try:
        value = float(shown)
    except ValueError:  # a text value: already quoted by its repr
        return shown
    if math.isinf(value):
        return f"'{shown}': too large to be a finite number"
    if not math.isnan(value) and value.is_integer():
        return f"'{int(value)}'"
    return f"'{shown}'"

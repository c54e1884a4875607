"""The ``[domains]`` entries (and ``exit_values``) that no release can use, in words: a column
that is neither a QI nor the sensitive one, a numeric QI's domain that is not ``[min, max]``,
a categorical one with repeated values or none, an entry holding a list or table where a value
belongs, exit values outside the sensitive domain. :func:`dpriv.policy_keys.fields_problem`
raises them as the policy's refusal (PolicyError)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from dpriv.column_hints import misspelled_hint


def is_number(v: Any) -> bool:
    """An int or float, not a bool (a numeric domain's bounds)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def exit_values_problem(exit_values: list, sensitive_domain: list, sensitive: str) -> str | None:
    """The message for ``exit_values`` the exit guard cannot use (fewer than two distinct
    values, or values outside the sensitive column's domain), else None."""
    if exit_values and len(set(exit_values)) < 2:
        return (
            f"exit_values = {exit_values}: the exit guard needs at least two "
            "distinct terminal values; list them all or leave it empty"
        )
    known = {str(v) for v in sensitive_domain}
    if unknown := [v for v in exit_values if str(v) not in known]:
        return f"exit_values {unknown} are not values of the sensitive column {sensitive!r}"
    return None


def min_max_message(name: str, dom: list) -> str:
    """The words refusing ``dom`` as the numeric domain of QI ``name``."""
    return f"numeric domain of {name!r} must be [min, max] with min <= max, got {dom}"


def domain_problem(
    name: str, dom: list, numeric: bool, columns: Iterable[str], entries: Iterable[str] = ()
) -> str | None:
    """The message for a ``[domains]`` entry of column ``name`` that no release can use (not a
    policy column, with :func:`misspelled_hint` over ``entries``, the table's names; a numeric
    QI's domain that is not [min, max] or whose width overflows float64; a categorical one with
    repeated values or none), else None."""
    if name not in columns:
        hint = misspelled_hint(name, columns, entries, "[domains]")
        return f"[domains] names {name!r}, which is neither a QI nor the sensitive column{hint}"
    if nested := [v for v in dom if isinstance(v, list | tuple | dict | set)]:
        # a list of lists was read as the levels of a categorical QI, and refused by the data
        # as of the wrong type ("the domain FrozenList values")
        inner = "a table" if isinstance(nested[0], dict) else "a list"
        return (
            f"[domains] {name} holds {inner} ({_plain(nested[0])}) among its values ({_plain(dom)}): "
            f"write {name} = [low, high] for a numeric QI (e.g. {name} = [18, 90]), or the list of its "
            f'values for a categorical QI or the sensitive column (e.g. {name} = ["a", "b"]), each a '
            "number or a text, no list inside"
        )
    if not numeric:
        ok = len(set(map(str, dom))) == len(dom) and dom
        return None if ok else f"domain of {name!r} must list distinct values, got {dom}"
    if len(dom) != 2 or not all(is_number(v) for v in dom) or dom[0] > dom[1]:
        return min_max_message(name, dom)
    if not all(math.isfinite(float(v)) for v in dom):  # TOML's nan and inf (s46 drill: "overflows")
        return (
            f"numeric domain of {name!r} is {dom}: nan and inf are no bounds; declare [domains] "
            f"{name} = [min, max], the attribute's true range, or leave it out to have it inferred "
            "from the data"
        )
    if not math.isfinite(float(dom[1]) - float(dom[0])):  # e.g. [-1e308, 1e308]
        # a QI's numbers lie within +-1e150 (dpriv.value_types.MAX_MAGNITUDE): the true range is far
        # narrower, and the fix is to declare it
        return (
            f"numeric domain of {name!r} is {dom}: its width max - min overflows float64, "
            f"so no box on it could be measured; narrow [domains] {name} to the attribute's true "
            "range (its smallest and largest possible values), or leave it out to have it inferred "
            "from the data"
        )
    return None


def _plain(value: Any) -> str:
    """``value`` as the policy file wrote it: lists and tables (frozen ones too: dpriv/frozen.py)
    as plain ``[...]`` and ``{...}``, never by their class."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    return repr(value)

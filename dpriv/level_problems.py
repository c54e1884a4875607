"""Values that a declared list of levels does not hold (a categorical QI's levels, the sensitive
column's domain D[S]), as problems of :func:`dpriv.validate.partition_problems`, each with its fix.

A QI whose kind is not declared takes it from the shape of its ``[domains]`` entry
(:meth:`dpriv.policy.ReleasePolicy.kind`): two numbers are a numeric QI's ``[min, max]``, any
other entry a categorical QI's levels. A column of numbers declared ``age = [10]`` (a bound
left out) is thus a categorical QI of one level, and its other ages were refused as "not in its
declared levels [10]: add them to [domains]". Such a QI (:func:`numbers_read_as_levels`) is
refused with the numeric domain's own words instead (:func:`dpriv.policy_domains.min_max_message`),
and both fixes: ``[min, max]`` for a numeric QI, ``[kinds]`` and every level for number codes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
import pandas as pd

from dpriv.domain_codes import codes
from dpriv.policy import ReleasePolicy
from dpriv.policy_domains import is_number, min_max_message
from dpriv.policy_values import as_python

#: ``add(order, column, rows, message)`` of :func:`dpriv.validate.partition_problems`.
Add = Callable[[int, str, np.ndarray, str], None]


def domain_word(name: str, inferred: Collection[str]) -> str:
    """How a message calls the domain of column ``name``: ``"inferred"`` when it is one of
    ``inferred`` (no policy given declares it: a resumed ledger recorded it, inferred from the
    data of its first release), else ``"declared"``."""
    return "inferred" if name in inferred else "declared"


def add_unknown(
    add: Add,
    part: pd.DataFrame,
    name: str,
    domain: list,
    what: str,
    kind: str,
    fix: str = "add them to [domains]",
    how: str = "declared",
) -> None:
    """A problem for values of ``name`` that are not in ``domain`` (``how``: "declared" or
    "inferred", :func:`domain_word`), naming a few of them; the sensitive column's (``kind``
    "domain") are not named: the message names their rows, and a sensitive value is never
    printed beside its row (a batch job's log)."""
    bad, values = _unknown(part, name, domain)
    if not bad.any():
        return
    shown = f"{domain[:8]}" + (f" (+{len(domain) - 8} more)" if len(domain) > 8 else "")
    named = (
        "values (not printed beside their rows: see the rows named)"
        if kind == "domain"
        else f"values {values}"
    )
    message = f"{what} has {named} not in its {how} {kind} {shown}: "
    have = sorted({type(as_python(v)).__name__ for v in values})
    want = sorted({type(as_python(v)).__name__ for v in domain})
    if not set(have) & set(want):
        message += (
            f"the types differ: the data holds {'/'.join(have)} values and the domain "
            f"{'/'.join(want)} values; write the domain in the data's type (numbers without "
            "quotes, text in quotes) or cast the column"
        )
        add(3, name, bad, message)
        return
    add(3, name, bad, message + f"{fix} or correct the data" + _respelled(values, domain))


def _respelled(values: list, domain: list) -> str:
    """A hint when one of ``values`` (not in ``domain``) is a value of ``domain`` written another
    way (:func:`dpriv.same_text.spelling_key`: case, spaces at the ends, spaces, '_' or '-'
    between words): a later week's export that renamed ``liver_2`` to ``liver 2`` (s43, user D).
    Never a value: a sensitive one is not printed beside its rows."""
    from dpriv.same_text import spelling_key  # same_text reads the checks this module serves

    known = {spelling_key(d) for d in domain if isinstance(as_python(d), str)}
    if not any(isinstance(v, str) and spelling_key(v) in known for v in values):
        return ""
    return (
        " (of these, a value of the domain written another way: in upper and lower case, with spaces "
        "at its ends, or with spaces, '_' or '-' between its words; write it as the domain does)"
    )


def add_unknown_levels(
    add: Add, part: pd.DataFrame, policy: ReleasePolicy, name: str, how: str = "declared"
) -> None:
    """A problem for values of the categorical QI ``name`` that its levels (``how``: "declared"
    or "inferred", :func:`domain_word`) do not hold: in the words of a numeric domain when the
    levels are numbers read as levels (:func:`numbers_read_as_levels`, declared by shape), else
    naming the fix (the hierarchy or ``[domains]``)."""
    domain = policy.domains[name]
    if not numbers_read_as_levels(policy, name, part[name]):
        fix = (
            f"add a row for each to its hierarchy {policy.hierarchies[name]}"
            if name in policy.hierarchies
            else ""
        )
        fix = fix or "add them to [domains]"
        add_unknown(add, part, name, domain, f"categorical QI {name!r}", "levels", fix, how)
        return
    bad, values = _unknown(part, name, domain)
    if bad.any():
        add(
            3,
            name,
            bad,
            f"{min_max_message(name, domain)}: a [domains] entry other than two numbers declares "
            f"a categorical QI's levels, and the column holds numbers {values} not in its declared "
            f"levels; for a numeric QI declare {name} = [min, max] (the attribute's true range), "
            f'for number codes [kinds] {name} = "categorical" and all its levels in [domains]',
        )


def numbers_read_as_levels(policy: ReleasePolicy, name: str, column: pd.Series) -> bool:
    """Whether QI ``name`` is categorical only by the shape of its ``[domains]`` entry (no
    ``[kinds]`` entry, no hierarchy; numbers, not two of them) while ``column`` holds numbers."""
    if name in policy.kinds or name in policy.hierarchies:
        return False
    numbers = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    return numbers and all(is_number(as_python(v)) for v in policy.domains[name])


def _unknown(part: pd.DataFrame, name: str, domain: list) -> tuple[np.ndarray, list]:
    """The rows of ``part`` whose ``name`` is not in ``domain`` (NaN aside), and the first five
    distinct such values."""
    bad = (part[name].notna() & (codes(part[name], domain) < 0)).to_numpy()
    return bad, (pd.unique(part[name].to_numpy()[bad])[:5].tolist() if bad.any() else [])

"""The spelling of generalized values in the interchange export (:mod:`dpriv.interchange`;
docs/released-format.md "Interchange export"): numbers, intervals, date ranges and value sets
as text, in ARX's spelling (``45-52``, ``45``, ``Male``) or dpriv's earlier one (``[45-52]``,
``[45-45]``, ``{Male}``), and their reading back (either spelling)."""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pandas as pd

from dpriv.dates import EPOCH
from dpriv.errors import InputError
from dpriv.released import escape_value, parse_value_set

_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)"
# [lo-hi] (dpriv's spelling), lo-hi or a lone number (ARX's)
_INTERVAL = re.compile(rf"^(?:\[({_NUMBER})-({_NUMBER})\]|({_NUMBER})-({_NUMBER})|({_NUMBER}))$")
#: The spellings of generalized values: ARX's (default) or dpriv's before December 2026.
Spelling = Literal["arx", "dpriv"]


def format_number(x) -> str:
    """Shortest decimal text of a bound that reads back to the same number: integers as
    integers (exact beyond 2**53), floats without exponent and without a trailing ``.0``
    (``45.0 -> "45"``, ``72.5 -> "72.5"``, ``1e-05 -> "0.00001"``)."""
    if isinstance(x, int | np.integer):
        return str(int(x))
    return np.format_float_positional(float(x), unique=True, trim="-")


def interval_text(lo, hi, spelling: Spelling = "arx") -> str:
    """A numeric group's bounds (inclusive) as text: ARX's ``lo-hi`` (``interval_text(45, 52) ==
    "45-52"``), the lone value when ``lo == hi`` (``"45"``); ``spelling="dpriv"``: ``[lo-hi]``
    always (``"[45-52]"``, ``"[45-45]"``)."""
    a, b = format_number(lo), format_number(hi)
    if spelling == "dpriv":
        return f"[{a}-{b}]"
    return a if a == b else f"{a}-{b}"


def date_interval_text(lo_days: int, hi_days: int, spelling: Spelling = "arx") -> str:
    """A date group's first and last day (whole days since 1970-01-01) in ISO 8601:
    ``first/last`` (``date_interval_text(19728, 19734) == "2024-01-06/2024-01-12"``), the one
    day when they are equal; ``spelling="dpriv"``: ``[first/last]`` always."""
    first, last = (str((EPOCH + pd.Timedelta(days=int(d))).date()) for d in (lo_days, hi_days))
    if spelling == "dpriv":
        return f"[{first}/{last}]"
    return first if first == last else f"{first}/{last}"


def parse_interval(text: str) -> tuple[float, float] | tuple[int, int]:
    """Bounds of a numeric interchange cell, in either spelling: ``[lo-hi]`` (dpriv), ``lo-hi``
    or a lone number ``x`` (ARX; ``(x, x)``). Ints when both are integers.

    Raises
    ------
    InputError
        ``text`` is none of these with decimal numbers and ``lo <= hi``.
    """
    m = _INTERVAL.match(str(text).strip())
    if m is None:
        raise InputError(
            f"{text!r} is not an interval of two decimal numbers (45-52, [45-52]) or one number (45)"
        )
    a, b = m.group(1, 2) if m.group(1) else m.group(3, 4) if m.group(3) else (m.group(5),) * 2
    lo, hi = (int(a), int(b)) if "." not in a + b else (float(a), float(b))
    if lo > hi:
        raise InputError(f"interval {text!r} has its lower bound above its upper bound")
    return lo, hi


def parse_dates(text: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """First and last day (Timestamps at midnight) of a date cell in either spelling:
    ``[first/last]`` (dpriv), ``first/last`` or one day (ARX), ISO 8601.

    Raises
    ------
    InputError
        ``text`` is none of these, or its first day is after its last.
    """
    body = str(text).strip()
    body = body[1:-1] if body.startswith("[") and body.endswith("]") else body
    parts = body.split("/")
    try:
        first, last = (pd.Timestamp(parts[0]), pd.Timestamp(parts[-1])) if len(parts) <= 2 else (None, None)
    except ValueError:
        first = last = None
    if first is None or last is None or pd.isna(first) or pd.isna(last) or first > last:
        raise InputError(
            f"{text!r} is not a date range first/last ([first/last]) or one day in ISO 8601 (2024-01-06)"
        )
    return first, last


def arx_cell(text: str) -> str:
    """A released value-set cell as ARX spells it: a set of one value is that value (``"{Male}"
    -> "Male"``), unless the value holds a character the set escapes (it stays a set so that
    it reads back as one value); any other cell unchanged."""
    if not (text.startswith("{") and text.endswith("}")):
        return text
    items = parse_value_set(text)
    return items[0] if len(items) == 1 and escape_value(items[0]) == items[0] == text[1:-1] else text

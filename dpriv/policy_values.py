"""How a policy's values are read and shown: a date QI's domain given as dates (whole days since
1970-01-01), NumPy scalars as Python values, the sort order of inferred levels and the line that
tells an inferred domain (:meth:`dpriv.policy.ReleasePolicy.resolve`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpriv.policy_keys import is_number


def domain_note(name: str, kind: str | None, domain: list) -> str:
    """The line that tells an inferred domain (``kind`` None: the sensitive attribute's)."""
    shown = _dates(domain) if kind == "date" else _short(domain)
    return f"inferred {kind or 'sensitive'} domain of {name!r}: {shown}"


def _dates(days: list) -> str:
    """A date QI's [min, max] in days as ISO dates (``[2020-01-01, 2020-12-31]``)."""
    dates = [str((pd.Timestamp("1970-01-01") + pd.Timedelta(days=int(d))).date()) for d in days]
    return f"[{', '.join(dates)}]"


def as_days(v: Any) -> Any:
    """A date (date, datetime, ISO text) as days from 1970-01-01; anything else as it is."""
    import datetime as dt

    if isinstance(v, dt.date | str):
        try:
            stamp = pd.Timestamp(v)
        except (TypeError, ValueError):
            return v
        stamp = stamp.tz_localize(None) if stamp.tzinfo is not None else stamp
        return int((stamp.normalize() - pd.Timestamp("1970-01-01")) // pd.Timedelta(days=1))
    return v


def as_python(v: Any) -> Any:
    """A NumPy scalar as the Python value it holds (JSON, messages); anything else as it is."""
    return v.item() if isinstance(v, np.generic) else v


def sort_key(v: Any) -> tuple:
    return (0, v, "") if is_number(as_python(v)) else (1, 0, str(v))


def _short(values: list[Any]) -> str:
    return str(values) if len(values) <= 8 else f"{values[:4]} ... {values[-2:]} ({len(values)} values)"

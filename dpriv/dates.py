"""Date and timestamp QIs: whole days on an integer grid inside, date intervals outside.

A QI is a *date QI* when the policy says so (``[kinds] admitted = "date"``, CLI ``--date
admitted``) or, undeclared, when its column has a date or timestamp dtype (``datetime64``,
timezone-aware ``datetime64[ns, tz]``, Arrow ``date32``/``timestamp``, Python ``date``
objects): :func:`with_date_kinds` records the kind, so a ledger pins it.

* In (:func:`to_days`, called by :func:`dpriv.inputs.prepare_view`): each value becomes
  the whole number of days from 1970-01-01 to its calendar date (int64; a column with a
  missing value is left as it is, and validation refuses it naming the rows). A timezone-aware
  timestamp counts on the calendar of its own time zone (its wall-clock date: 2020-03-01
  00:30 in Europe/Paris is day 2020-03-01, although it is 2020-02-29 in UTC). The time of
  day is dropped: generalization works on whole days. Text (a CSV) is parsed as ISO 8601
  (``YYYY-MM-DD``, optionally with a time and one UTC offset for the whole column).
  Everything downstream (Hilbert grid, grouping, verification) sees a numeric QI.
* Out (:func:`released_dates`): ``<qi>_min`` / ``<qi>_max`` of a date QI are Arrow
  ``date32`` columns (Parquet ``DATE``, CSV ``2020-03-01``), the first and last calendar day
  of the group; an original date d lies in its group's box when min <= d <= max.
* Back (:func:`released_days`, for ``dpriv verify`` and ``dpriv attack``): a released view's
  date bounds (Arrow dates, ``date`` objects, ``datetime64`` or ISO text from a CSV) as days.

Not a date QI: ``timedelta`` columns and a date as the sensitive attribute (refused by
:func:`dpriv.value_types.type_problems` with a message naming the column).
"""

from __future__ import annotations

import datetime as _dt
import re
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa

from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.rows import missing_message

#: Day 0 of the grid.
EPOCH = pd.Timestamp("1970-01-01")
#: The first and last calendar days a date QI may hold (pandas' nanosecond timestamps).
FIRST_DAY = pd.Timestamp.min.date() + _dt.timedelta(days=1)
LAST_DAY = pd.Timestamp.max.date()
#: The dtype of a released date bound.
DATE = pd.ArrowDtype(pa.date32())


def is_date_dtype(dtype) -> bool:
    """A date or timestamp dtype (naive or timezone-aware, NumPy or Arrow)."""
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return True
    if isinstance(dtype, pd.ArrowDtype):
        return pa.types.is_date(dtype.pyarrow_dtype) or pa.types.is_timestamp(dtype.pyarrow_dtype)
    return False


def _holds_dates(col: pd.Series) -> bool:
    """An object column of Python ``date``/``datetime`` values (pandas only; a Dask meta has none)."""
    if not pd.api.types.is_object_dtype(col.dtype):
        return False
    return pd.api.types.infer_dtype(col, skipna=True) in ("date", "datetime")


def with_date_kinds(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> ReleasePolicy:
    """``policy`` with ``[kinds] q = "date"`` added for each QI not in ``[kinds]`` whose column
    has a date or timestamp dtype (the policy itself when there is none)."""
    sample = view._meta if isinstance(view, dd.DataFrame) else view
    found = [
        q
        for q in policy.qi
        if q not in policy.kinds
        and q in sample.columns
        and (is_date_dtype(sample[q].dtype) or _holds_dates(sample[q]))
    ]
    if not found:
        return policy
    return policy.with_overrides(kinds={**policy.kinds, **dict.fromkeys(found, "date")})


#: A UTC offset at the end of an ISO 8601 text with a time: ``Z``, ``+01``, ``+0100``, ``+01:00``.
_TEXT_OFFSET = re.compile(r"[T ]\d{2}:?\d{2}(?::?\d{2}(?:[.,]\d+)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)\s*$")


def _zone(value) -> object:
    """The time zone of one value: a datetime's ``tzinfo``, a text's UTC offset (``+01:00``;
    ``Z`` is ``+00:00``), None for a naive value (or one that is not a date)."""
    if isinstance(value, _dt.datetime):
        return value.tzinfo
    if not isinstance(value, str) or (found := _TEXT_OFFSET.search(value)) is None:
        return None
    offset = found.group(1)
    if offset == "Z":
        return "+00:00"
    digits = offset[1:].replace(":", "").ljust(4, "0")
    return f"{offset[0]}{digits[:2]}:{digits[2:]}"


def _as_timestamps(col: pd.Series) -> pd.Series | None:
    """``col`` as naive wall-clock ``datetime64[ns]`` (NaT where missing), or None when some
    present value is not a date (or the column mixes time zones): validation reports it."""
    if isinstance(col.dtype, pd.ArrowDtype):
        col = col.astype(object)
    if not pd.api.types.is_datetime64_any_dtype(col.dtype):
        present = col.notna()
        if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas' mixed-time-zone FutureWarning: refused below
            try:
                if pd.api.types.infer_dtype(col, skipna=True) in ("date", "datetime"):
                    parsed = pd.to_datetime(col, errors="coerce")
                elif len({_zone(v) for v in pd.unique(col[present].astype(object))}) > 1:
                    return None  # texts of several UTC offsets (pandas 2 would drop them silently)
                else:
                    parsed = pd.to_datetime(col.astype(object), format="ISO8601", errors="coerce")
            except (TypeError, ValueError):
                return None
        if not pd.api.types.is_datetime64_any_dtype(parsed.dtype) or (parsed.isna() & present).any():
            return None  # several time zones (object dtype), or text that is not a date
        col = parsed
    if isinstance(col.dtype, pd.DatetimeTZDtype):
        col = col.dt.tz_localize(None)  # the wall-clock time in the column's own zone
    try:
        return col.astype("datetime64[ns]")
    except (pd.errors.OutOfBoundsDatetime, OverflowError):  # :func:`date_problem` names the dates
        return None


def to_days(col: pd.Series) -> pd.Series:
    """Days from 1970-01-01 to each value's calendar date (int64); ``col`` itself when a value
    is missing (validation names the rows) or is not a date (:func:`date_problem`)."""
    stamps = _as_timestamps(col)
    if stamps is None or stamps.isna().any():
        return col
    return ((stamps.dt.normalize() - EPOCH) // pd.Timedelta(days=1)).astype("int64")


def _beyond_timestamps(value) -> bool:
    """A date, datetime or ISO 8601 text outside :data:`FIRST_DAY` .. :data:`LAST_DAY`, which
    :func:`to_days` cannot count from; False for anything else."""
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return False
    if not isinstance(value, _dt.date) or value is pd.NaT:  # NaT is a datetime too
        return False
    day = value.date() if isinstance(value, _dt.datetime) else value
    return not FIRST_DAY <= day <= LAST_DAY


#: A date written with its day and month first (``29/09/2025``, ``9.3.2025``), as spreadsheets export.
_DMY = re.compile(r"^\s*(\d{1,2})([/.\-])(\d{1,2})\2(\d{4})\s*$")


def _numeric_dates(values: pd.Series, name: str) -> str:
    """What to add to the refusal of a date QI when every value refused is written ``dd/mm/yyyy``
    or ``mm/dd/yyyy`` (a spreadsheet's export): the pandas conversion to ISO text, day first
    when a first number exceeds 12, month first when a second one does; both ways otherwise
    (dpriv does not guess: ``03/04/2025`` is 3 April or 4 March). ``""`` for other values."""
    found = [_DMY.match(str(v)) for v in pd.unique(values)]
    if not found or not all(found):
        return ""
    sep = found[0].group(2)
    day_first = any(int(m.group(1)) > 12 for m in found)
    month_first = any(int(m.group(3)) > 12 for m in found)
    dmy, mdy = f"%d{sep}%m{sep}%Y", f"%m{sep}%d{sep}%Y"
    if day_first != month_first:
        fmt, said = (dmy, "day first") if day_first else (mdy, "month first")
    else:
        fmt, said = dmy, f"day or month first: dpriv does not guess; {mdy!r} if the month comes first"
    return (
        f" (written {said}, as a spreadsheet exports them: convert the column to YYYY-MM-DD, e.g. "
        f"pd.to_datetime(frame[{name!r}], format={fmt!r}).dt.strftime('%Y-%m-%d'), or set the "
        "column's format to YYYY-MM-DD before exporting)"
    )


def date_problem(col: pd.Series, name: str, *, csv: bool = False) -> tuple[np.ndarray, str] | None:
    """(rows, message) for a date QI that :func:`to_days` could not convert, else None; ``csv``:
    ``col`` is a CSV file's (:func:`dpriv.rows.missing_message`)."""
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
        return None
    present = col.notna().to_numpy()
    values = col.astype(object)
    far = present & values.map(_beyond_timestamps).to_numpy(dtype=bool)
    if far.any():
        shown = [str(v) for v in pd.unique(values[far])[:5]]
        return far, (
            f"date QI {name!r} holds dates outside {FIRST_DAY} .. {LAST_DAY}, the range of "
            f"dpriv's dates: {shown}; a placeholder for "
            "'no date' (9999-12-31, 0001-01-01)? correct or drop these rows"
        )
    if is_date_dtype(col.dtype) or not present.all():  # left as it was because a value is missing
        return ~present, missing_message(name, "NaN/None/NaT", csv=csv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # utc=True: texts of several offsets parse (to be refused below) on every pandas version
        parsed = pd.to_datetime(values.map(lambda v: v if isinstance(v, str) else None), format="ISO8601",
                                errors="coerce", utc=True)  # fmt: skip
    text_ok = values.map(lambda v: isinstance(v, _dt.date)).to_numpy(dtype=bool) | parsed.notna().to_numpy()
    bad = present & ~text_ok
    if bad.any():
        shown = [str(v) for v in pd.unique(values[bad])[:5]]
        return bad, (
            f"date QI {name!r} holds values that are not dates: {shown}{_numeric_dates(values[bad], name)}"
            "; write dates as YYYY-MM-DD "
            "(optionally with a time, e.g. 2020-03-01 14:30, and one UTC offset for the column), "
            f'correct or drop these rows, or declare the QI categorical ([kinds] {name} = "categorical")'
        )
    # by name: pytz (pandas 2) gives Berlin's summer and winter times two tzinfo objects
    zones = {"no offset" if (z := _zone(v)) is None else str(z) for v in values[present]}
    if len(zones) < 2:
        return present, (
            f"date QI {name!r} could not be read as dates ({col.dtype}); write dates as YYYY-MM-DD "
            "(or store them as a date/timestamp column)"
        )
    shown = sorted(zones)
    return present, (
        f"QI {name!r} holds timestamps in {len(shown)} different time zones (UTC offsets or zones "
        f"{shown}); dpriv counts days on one calendar: convert the column to one time zone (e.g. "
        "UTC, or the local zone), or write every time without an offset, first"
    )


def released_dates(frame: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy):
    """The released view with each date QI's ``<qi>_min`` / ``<qi>_max`` (whole days, int64)
    as Arrow ``date32`` calendar dates. Pandas in, pandas out; Dask in, Dask out (lazy)."""
    names = [f"{q}_{b}" for q in date_qi(policy) for b in ("min", "max")]
    if not names:
        return frame
    if isinstance(frame, dd.DataFrame):
        return frame.map_partitions(_dates_part, names, meta=_dates_part(frame._meta, names))
    return _dates_part(frame, names)


def _dates_part(part: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    out = {}
    for c in names:
        if c in part.columns and not isinstance(part[c].dtype, pd.ArrowDtype):
            days = part[c].to_numpy(dtype=np.int64)
            out[c] = pd.array(pa.array(days.astype(np.int32)).cast(pa.date32()), dtype=DATE)
    return part.assign(**{c: pd.Series(v, index=part.index) for c, v in out.items()}) if out else part


def released_days(frame: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """A released view (pandas) with each date QI's bounds back as whole days (int64).

    Accepts Arrow dates, ``date`` objects, ``datetime64`` and ISO text (a CSV release);
    raises InputError naming the column when a bound is not a date."""
    out = {}
    for q in date_qi(policy):
        for c in (f"{q}_min", f"{q}_max"):
            if c in frame.columns and not pd.api.types.is_integer_dtype(frame[c].dtype):
                out[c] = bound_days(frame[c], c, q)
    return frame.assign(**out) if out else frame


def bound_days(bounds: pd.Series, column: str, q: str) -> pd.Series:
    """A released bound column ``column`` of the date QI ``q`` as whole days (int64);
    InputError naming it when a value is not a date."""
    days = to_days(bounds)
    if days is bounds or days.isna().any():
        raise InputError(
            f"released column {column!r} of the date QI {q!r} holds values that are not dates "
            f"(e.g. {bounds.iloc[0]!r}): give the released view as dpriv wrote it"
        )
    return days


def date_qi(policy: ReleasePolicy) -> list[str]:
    """The QIs of kind ``"date"``, in policy order."""
    return [q for q in policy.qi if policy.kinds.get(q) == "date"]


def shown_domain(policy: ReleasePolicy, name: str, domain: list) -> list:
    """A date QI's day domain as ISO dates (for messages), any other domain as it is."""
    if policy.kinds.get(name) != "date":
        return domain
    return [str((EPOCH + pd.Timedelta(days=int(d))).date()) for d in domain]

"""KPR (§5.3), inputs that are legal or nearly so but not what the user meant, said in words
that name the table, the column, the value and the row:

* a released (generalized) view given as a table (``age_min``, ``age_max``: intervals, where
  KPR compares microdata) -- :class:`ReleasedViewError`;
* a number column holding text in one table -- :class:`KindMismatchError` names the first
  value that is not a number and its row;
* tables of very different sizes, e.g. a whole history against the synthetic version of one
  of its views (:func:`size_warning`), which (E21) accepts (§5.3) but which reads as ~100.

The errors keep the table they are about (``"original"`` / ``"synthetic"``) so that ``dpriv
kpr``, which read two files, names the row by its line in the right one (:meth:`KPRTableError.
in_file`); in Python a row is named by its label (:mod:`dpriv.rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from dpriv._dispatch import is_dask
from dpriv.errors import InputError
from dpriv.row_problems import problems_of
from dpriv.rows import PROBLEM_COLUMNS, BadRow, bad_rows, describe, rows_of

#: One table with at least this many times the rows of the other: the size warning.
SIZE_RATIO = 2.0
#: Columns of the larger table probed for a history's time column (distinct values counted).
_TIME_PROBES = 8
#: Interval columns quoted when a released view is given.
_SHOWN = 6


class KPRTableError(InputError):
    """An input problem of one of the two tables; ``table`` is ``"original"`` or ``"synthetic"``."""

    def __init__(self, message: str, table: str) -> None:
        super().__init__(message)
        self.table = table

    def in_file(self, path: str) -> str:
        """The message, its rows named by their line in ``path`` (the file the table was read
        from, whole and in order); this base class names no row."""
        return str(self)


class ReleasedViewError(KPRTableError):
    """A known variable is missing from a table that holds its ``_min`` / ``_max`` columns."""


class KindMismatchError(KPRTableError):
    """A known variable numeric in one table and categorical (text) in the other; ``rows``
    and ``count`` are the rows of the text table whose value is not a number, ``value`` the
    first one's repr (``""`` when there is none)."""

    def __init__(self, head: str, table: str, value: str, rows: list[BadRow], count: int) -> None:
        self.head, self.table, self.value, self.rows, self.count = head, table, value, rows, count
        super().__init__(self._text(), table)

    def _text(self) -> str:
        if not self.rows:  # no text value (bool, category dtype): the types alone differ
            return f"{self.head}; cast it to the same type in both tables"
        where = describe(self.rows, self.count, None, whole=True)
        return (
            f"{self.head}: the {self.table} table's {self.value} is not a number ({where}); correct "
            "or drop such rows, or cast the column to the same type in both tables"
        )

    def in_file(self, path: str) -> str:
        with rows_of(path):
            return self._text()


def released_view_error(
    label: str, missing: Sequence[str], columns: Sequence[str]
) -> ReleasedViewError | None:
    """The error for known variables ``missing`` from a table of ``columns`` that holds their
    ``<name>_min`` / ``<name>_max`` (docs/released-format.md); None when it holds none."""
    intervals = [c for k in missing for c in (f"{k}_min", f"{k}_max") if c in columns]
    if not intervals:
        return None
    shown = ", ".join(map(repr, intervals[:_SHOWN])) + (", ..." if len(intervals) > _SHOWN else "")
    return ReleasedViewError(
        f"kpr: known variable(s) {list(missing)} not found in the {label} table, which looks like a "
        f"released (generalized) view: it holds intervals ({shown}) where KPR compares microdata "
        "(one value per variable and record: the original records, and synthetic or anonymized "
        "records of the same columns). A release's KPR is computed when it is made: key kpr of its "
        "metrics.json (releases/<i>/metrics.json in a ledger, OUT.metrics.json beside the file "
        "dpriv anonymize wrote), on one record drawn inside each released row's intervals against "
        "the original view, its QIs known (docs/algorithms.md §5.3, KPR of a release; in Python "
        "dpriv.metrics.microdata.release_kpr)",
        label,
    )


def _text_part(part: pd.DataFrame, column: str) -> pd.DataFrame:
    """The rows of ``part`` whose ``column`` holds a value that is not a number (one problem
    row, its message the first such value's repr; :data:`dpriv.rows.PROBLEM_COLUMNS`)."""
    values = part[column]
    present = values.notna().to_numpy(dtype=bool)
    text = present & pd.to_numeric(values.where(present), errors="coerce").isna().to_numpy(dtype=bool)
    found = []
    if text.any():
        first = values.to_numpy(dtype=object)[np.flatnonzero(text)[0]]
        found.append((0, column, repr(first), bad_rows(part, text, None), int(text.sum())))
    return pd.DataFrame(found, columns=PROBLEM_COLUMNS).astype({"order": "int64", "count": "int64"})


def kind_mismatch(name: str, kinds: dict[str, tuple[str, Any]], frames: dict[str, Any]) -> KindMismatchError:
    """The error of known variable ``name`` of ``kinds`` (table -> (kind, dtype)) numeric in one
    table and categorical in the other, naming the first text value of the categorical one
    (its rows over all partitions) when it holds text; ``frames``: table -> frame."""
    (lo, (ko, do)), (ls, (ks, ds)) = kinds.items()
    head = f"kpr: known variable {name!r} is {ko} in the {lo} table ({do}) but {ks} in the {ls} table ({ds})"
    table = lo if ko == "categorical" else ls
    frame = frames[table]
    dtype = frame.dtypes[name]
    if not (ptypes.is_object_dtype(dtype) or ptypes.is_string_dtype(dtype)):
        return KindMismatchError(head, table, "", [], 0)
    problems = problems_of(frame[[name]], _text_part, name)
    if not len(problems):
        return KindMismatchError(head, table, "", [], 0)
    rows = sorted((r for found in problems["rows"] for r in found), key=lambda r: r.position)
    first = min(range(len(problems)), key=lambda i: min(r.position for r in problems["rows"].iloc[i]))
    return KindMismatchError(head, table, problems["message"].iloc[first], rows, int(problems["count"].sum()))


def _time_like(
    big: Any, small: Any, labels: tuple[str, str], n_big: int, n_small: int, known: Sequence[str]
) -> str:
    """A column of the larger table absent from the smaller one whose distinct values split the
    larger table into about the smaller one's size (``view`` of a history: 6 values of 2,000
    rows against one view of 2,000): how to say it, or ``""``. ``labels``: the larger and the
    smaller table's names."""
    names = [
        c
        for c in big.columns
        if c not in small.columns and c not in known and not ptypes.is_float_dtype(big.dtypes[c])
    ][:_TIME_PROBES]
    if not names:
        return ""
    try:
        if is_dask(big):
            import dask

            counts = dask.compute(*[big[c].nunique() for c in names])
        else:
            counts = [big[c].nunique() for c in names]
    except TypeError:  # a column of lists (unhashable): no time column to name, the sizes are said
        return ""
    fits = [
        (int(d), c)
        for c, d in zip(names, counts, strict=True)
        if int(d) >= 2 and n_small / SIZE_RATIO <= n_big / int(d) <= n_small * SIZE_RATIO
    ]
    if not fits:
        return ""
    d, column = min(fits)
    big_name, small_name = labels
    return (
        f"; the {big_name} table's column {column!r} (not in the {small_name} table) has {d} values of "
        f"{n_big / d:,.0f} rows on average, about the {small_name} table's size: the {big_name} table "
        f"looks like a history of {d} views; give the rows of the one view the {small_name} table "
        f"is about (one value of {column!r})"
    )


def size_warning(original: Any, synthetic: Any, n: int, n_syn: int, known: Sequence[str]) -> str:
    """What to say when one table has :data:`SIZE_RATIO` times the rows of the other or more
    (``""`` otherwise, and for an empty synthetic table, which has its own note): (E21) is
    legal on any sizes (§5.3), but it is meant for records against their synthetic version."""
    if n_syn == 0 or max(n, n_syn) < SIZE_RATIO * min(n, n_syn):
        return ""
    big, small = ("original", "synthetic") if n > n_syn else ("synthetic", "original")
    frames = {"original": (original, n), "synthetic": (synthetic, n_syn)}
    (fb, nb), (fs, ns) = frames[big], frames[small]
    return (
        f"kpr: the {big} table has {nb:,} rows, {nb / ns:.1f} times the {small} table's {ns:,}: KPR "
        "compares records with the synthetic version of the same records (one view with its "
        "release), and a profile repeated within a table (one respondent in several views of a "
        "history) is never a unique match, which pushes KPR towards 100 whatever the synthetic "
        "data" + _time_like(fb, fs, (big, small), nb, ns, known)
    )

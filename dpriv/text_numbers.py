"""A numeric QI of declared domain or kind that holds numbers in some rows and the same numbers
stored as text in others: a weekly folder whose later week's Parquet file wrote ``age`` as the
text ``"45"`` (session 43, user D).

Such a column was released: its text read as numbers, but the column as a whole was no longer
an integer one, so every release's ``age_min``/``age_max`` came out float64 instead of int64
(other bytes than the same history with ints), and once a ledger was committed so, the next week
written as numbers was refused as a changed type. It is refused now, naming the view, the column
and the rows holding text: a Parquet file carries its column types, so a type that changes from
one week's file to the next is an export that changed, which the user corrects at the source, as
ARX and sdcMicro take one type per attribute and never convert a value of another type. A column
of text alone (every week) is still read as numbers (docs/ledger.md#column-types: float64), and a
QI of undeclared kind holding text is refused earlier (:func:`dpriv.raw_checks.raw_problems`).
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, meta_of
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.raw_checks import offending_rows
from dpriv.row_problems import problems_message, problems_of
from dpriv.rows import PROBLEM_COLUMNS

#: One row per partition: how many cells of the column hold text, how many a number.
_COUNTS_META = pd.DataFrame({"text": pd.Series(dtype="int64"), "numbers": pd.Series(dtype="int64")})


def refuse_mixed_numbers(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> None:
    """InputError for a numeric QI of ``history`` (declared by ``[domains]`` or ``[kinds]``, not a
    date QI) whose rows hold numbers and numbers stored as text (``45`` and ``"45"``), naming the
    rows holding text (their file and view where :func:`dpriv.rows.rows_of` names them). Only a
    column whose dtype is not numeric is read (a column of numbers costs nothing): one pass to
    count, a second to name the rows of a mix."""
    meta = meta_of(history) if is_dask(history) else history
    for c in policy.qi:
        declared = c in policy.domains or c in policy.kinds
        if not declared or policy.kinds.get(c) == "date" or policy.kind(c) != "numeric":
            continue
        if c not in meta.columns or pd.api.types.is_numeric_dtype(meta[c].dtype):
            continue
        counts = _counts(history[c].to_frame()) if not is_dask(history) else None
        if counts is None:
            counts = history[[c]].map_partitions(_counts, meta=_COUNTS_META).compute()
        if not (counts["text"].sum() and counts["numbers"].sum()):
            continue
        problems = problems_of(history, _text_rows, policy, c)
        raise InputError(problems_message(problems, policy.time, whole=True))


#: :func:`pandas.api.types.infer_dtype` (missing values skipped) of a column whose present cells
#: are all text (``str``, ``numpy.str_``), or all numbers (Python or NumPy ints and floats; a bool
#: is "boolean" or "mixed-integer", never one of these): each cell's kind follows from the
#: answer. Any other answer (a mix, a category, a Decimal, a complex, a NaT) is read cell by cell.
_ALL_TEXT = "string"
_ALL_NUMBERS = ("integer", "floating", "mixed-integer-float")


def _kinds(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the cells of ``col`` holding text and holding a number (a bool is neither, a
    missing value neither): one :func:`~pandas.api.types.infer_dtype` call for a column of one
    kind (a text column of pandas' string dtype is not even scanned), cell by cell otherwise."""
    present = col.notna().to_numpy()
    inferred = pd.api.types.infer_dtype(col, skipna=True)
    if inferred == _ALL_TEXT:
        return present, np.zeros(len(col), dtype=bool)
    if inferred in _ALL_NUMBERS:
        return np.zeros(len(col), dtype=bool), present
    values = col.to_numpy(dtype=object)
    text = np.fromiter((isinstance(v, str) for v in values), dtype=bool, count=len(values))
    numbers = np.fromiter(
        (isinstance(v, int | float | np.number) and not isinstance(v, bool | np.bool_) for v in values),
        dtype=bool,
        count=len(values),
    )
    return text, numbers & present


def _counts(part: pd.DataFrame) -> pd.DataFrame:
    """One row: the cells of ``part``'s one column holding text and holding a number."""
    text, numbers = _kinds(part.iloc[:, 0])
    return pd.DataFrame({"text": [int(text.sum())], "numbers": [int(numbers.sum())]})


def _text_rows(part: pd.DataFrame, policy: ReleasePolicy, column: str) -> pd.DataFrame:
    """The problem of ``part``'s rows whose ``column`` holds text (none: an empty frame)."""
    text, _ = _kinds(part[column])
    if not text.any():
        return pd.DataFrame([], columns=PROBLEM_COLUMNS).astype({"order": "int64", "count": "int64"})
    example = part[column][text].iloc[0]
    message = (
        f"numeric QI {column!r} holds numbers stored as text (e.g. {example!r}) where its other rows hold "
        f"numbers: released so, {column}_min and {column}_max would be float64 instead of the int64 of "
        "numbers alone (in every view of a history, whose ledger would then refuse the weeks written as "
        f"numbers); write {column!r} as numbers in every file, every week's (pandas: frame[{column!r}] = "
        f"pd.to_numeric(frame[{column!r}]) before to_parquet) and run again. Rows holding text"
    )
    found = [(2, column, message, offending_rows(part, text, policy), int(text.sum()))]
    return pd.DataFrame(found, columns=PROBLEM_COLUMNS).astype({"order": "int64", "count": "int64"})

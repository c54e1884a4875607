"""The values a QI or sensitive column may hold, checked before anything runs.

:func:`type_problems` finds the values no release can hold, with the rows that hold them:
list/array cells (Parquet list columns), ``inf``/``-inf``, a QI's float beyond
:data:`MAX_MAGNITUDE` (such as ``1e308``), durations, a date as the
sensitive value, a date QI holding text that is not a date (or several time zones), and a
numeric QI holding a few text values (``unknown``, ``45+``, ``thirty``) unless that QI is
declared categorical, and a sensitive column of values of several types (:func:`mixed_types`:
Parquet holds one type per column). Its rows have the shape of
:func:`dpriv.validate.partition_problems`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from dpriv.dates import date_problem, is_date_dtype
from dpriv.policy import ReleasePolicy
from dpriv.policy_fix import declare_categorical

#: pandas' inferred kinds of an object column that hold ordinary scalars (no per-cell check).
_SCALAR_KINDS = {
    "string",
    "integer",
    "floating",
    "mixed-integer",
    "mixed-integer-float",
    "boolean",
    "decimal",
    "empty",
    "bytes",
}
#: Share of the non-missing cells of an undeclared QI that must be numbers for the QI to be
#: read as numeric with a few stray text values (below it, the QI is categorical).
MOSTLY_NUMERIC = 0.5
#: Largest magnitude of a float in a QI (numeric, or categorical coded as floats: KPR bins any
#: float column). A release is measured with the squares of these values (the variance behind
#: KPR's bins, E22, which overflows float64 from about 1.3e154 on, so a value such as 1e308
#: failed late, inside the metric); within +-1e150 every such square, sum and width is finite.
MAX_MAGNITUDE = 1e150

#: A number written with thousands separators or a decimal comma ("105,000", "1.072,5",
#: "12 500", "3,5"): text to pandas, a number to the person who wrote it.
GROUPED_NUMBER = re.compile(r"^\s*[+-]?(?:\d{1,3}(?:[,.\u00a0' ]\d{3})+(?:[.,]\d+)?|\d+,\d+)\s*$")


def mixed_types(values: pd.Series) -> tuple[np.ndarray, str] | None:
    """For an object column of values of several Python types (pandas infers "mixed..."): the
    rows not of its most common type and how to say it by the types alone ("int, and str in
    some rows": a message names the rows, never a value beside them); all rows for values of
    one type that is neither text nor a number (tuples). None otherwise."""
    if not pd.api.types.infer_dtype(values, skipna=True).startswith("mixed"):
        return None
    types = values.map(lambda v: type(v).__name__, na_action="ignore")
    usual = types.mode().iloc[0]
    odd = (types.notna() & (types != usual)).to_numpy(dtype=bool)
    if not odd.any():
        return types.notna().to_numpy(dtype=bool), f"values of type {usual}, neither text nor numbers"
    others = " and ".join(sorted(set(types[odd])))
    return odd, f"values of several types ({usual}, and {others} in some rows)"


#: What :func:`id_kinds` says of a partition of an id column.
ID_KINDS_META = pd.DataFrame({"kind": pd.Series(dtype=object), "example": pd.Series(dtype=object)})


def id_kinds(values: pd.Series) -> pd.DataFrame:
    """One row (kind, example) for a partition of an id column: ``"text"`` or ``"number"`` and
    its first id; no row when the partition is empty or of another kind (:func:`mixed_types`
    names those). A Dask frame's partitions may each hold one type where the whole holds two
    (7 in one, "x8" in another), which no partition can see alone."""
    values = values.dropna()
    if not len(values):
        return ID_KINDS_META
    inferred = pd.api.types.infer_dtype(values, skipna=True)
    kind = (
        "text"
        if inferred == "string"
        else "number"
        if inferred in ("integer", "floating", "mixed-integer-float", "decimal")
        else None
    )
    return pd.DataFrame({"kind": [kind], "example": [values.iloc[0]]}).dropna()


def _listed(v):
    return v.tolist() if isinstance(v, np.ndarray) else v


def _example(values: pd.Series, name: str, policy: ReleasePolicy) -> str:
    """`` (e.g. [1, 2])``: the first of a QI's ``values``; ``""`` for the sensitive column, whose
    values are never printed beside their rows."""
    return "" if name == policy.sensitive else f" (e.g. {_listed(values.iloc[0])!r})"


def _is_nested(v) -> bool:
    return isinstance(v, list | tuple | set | dict | np.ndarray)


def is_decimal(values: pd.Series) -> bool:
    """Whether ``values`` hold decimal numbers (Parquet's decimal128: Arrow decimals, or
    ``decimal.Decimal`` objects)."""
    if isinstance(values.dtype, pd.ArrowDtype):
        return pa.types.is_decimal(values.dtype.pyarrow_dtype)
    return pd.api.types.is_object_dtype(values.dtype) and pd.api.types.infer_dtype(values) == "decimal"


def huge_values(x: np.ndarray, name: str) -> tuple[np.ndarray, str] | None:
    """The rows (mask) of QI ``name``'s values ``x`` (float64) beyond :data:`MAX_MAGNITUDE` and the
    message naming up to 5 of them; None when there is none."""
    huge = np.abs(x) > MAX_MAGNITUDE  # NaN compares False: missing values are another problem
    if not huge.any():
        return None
    values = pd.unique(x[huge])
    shown = ", ".join(f"{v:g}" for v in values[:5]) + (
        f" and {len(values) - 5} more" if len(values) > 5 else ""
    )
    return huge, (
        f"QI {name!r} holds {shown}, too large in magnitude: the numbers of a QI must lie within "
        f"+-{MAX_MAGNITUDE:g} (dpriv measures a release with their squares, which overflow float64 "
        "beyond); correct or drop these rows, or rescale the column (other units)"
    )


def type_problems(
    part: pd.DataFrame,
    policy: ReleasePolicy,
    rows: Callable[[pd.DataFrame, np.ndarray, ReleasePolicy], list],
    *,
    csv: bool = False,
) -> list[tuple]:
    """Problems (order, column, message, rows, count) of the QI and sensitive columns' values.

    ``rows`` lists the first offending rows (:func:`dpriv.raw_checks.offending_rows`:
    :class:`dpriv.rows.BadRow`).
    ``csv``: ``part`` holds a CSV file's rows (a missing date is said as a CSV holds it).
    """
    found: list[tuple] = []

    def add(column: str, mask: np.ndarray, message: str) -> None:
        if mask.any():
            found.append((0, column, message, rows(part, mask, policy), int(mask.sum())))

    for name in dict.fromkeys([*policy.qi, policy.sensitive]):
        if name not in part.columns:
            continue
        vals = part[name]
        what = "sensitive column" if name == policy.sensitive else "QI"
        if name in policy.kinds and policy.kinds[name] == "date" and name != policy.sensitive:
            problem = date_problem(vals, name, csv=csv)  # None once prepare_view made it days
            if problem is not None:
                add(name, *problem)
            continue
        if pd.api.types.is_timedelta64_dtype(vals.dtype):
            add(
                name,
                np.ones(len(vals), dtype=bool),
                f"{what} {name!r} holds durations ({vals.dtype}); dpriv does not generalize "
                "durations: convert them to whole numbers (e.g. days) for a numeric QI",
            )
            continue
        if name != policy.sensitive and is_decimal(vals):
            present = vals.notna().to_numpy()
            add(
                name,
                present,
                f"QI {name!r} holds decimal numbers ({vals.dtype}, e.g. {vals[present][:1].tolist()}), "
                "which dpriv does not generalize: convert the column to float (e.g. "
                f"frame[{name!r}].astype(float), or DOUBLE in the tool that wrote the file)",
            )
            continue
        if isinstance(vals.dtype, pd.PeriodDtype):
            add(
                name,
                np.ones(len(vals), dtype=bool),
                f"{what} {name!r} holds periods ({vals.dtype}); convert them to "
                + (
                    f"text (e.g. frame[{name!r}].astype(str))"
                    if name == policy.sensitive
                    else f"dates (e.g. frame[{name!r}].dt.start_time, released as date intervals) or to text"
                ),
            )
            continue
        if is_date_dtype(vals.dtype):
            add(
                name,
                np.ones(len(vals), dtype=bool),
                f"{what} {name!r} holds dates or times ({vals.dtype}); a date QI is released as "
                "date intervals, but a sensitive value must be a category: convert it to text "
                "(e.g. the month, 2020-03) or choose another sensitive column",
            )
            continue
        if pd.api.types.is_float_dtype(vals.dtype):
            x = vals.to_numpy(dtype=np.float64, na_value=np.nan)
            inf = np.isinf(x)
            if inf.any():
                add(
                    name,
                    inf,
                    f"{what} {name!r} holds {float(x[inf][0])!r}; values must be finite numbers: "
                    "correct or drop these rows",
                )
            elif name != policy.sensitive and (huge := huge_values(x, name)):  # KPR bins any float QI
                add(name, *huge)
            continue
        if not (pd.api.types.is_object_dtype(vals.dtype) or pd.api.types.is_string_dtype(vals.dtype)):
            continue
        kind = pd.api.types.infer_dtype(vals, skipna=True)
        if kind not in _SCALAR_KINDS:
            nested = vals.map(_is_nested).to_numpy(dtype=bool)
            if nested.any():
                add(
                    name,
                    nested,
                    f"{what} {name!r} holds lists or arrays{_example(vals[nested], name, policy)}, "
                    "not one value per row: flatten the column (one value per row) or drop it from "
                    "the policy",
                )
                continue
        if name == policy.sensitive and (mixed := mixed_types(vals)):  # Parquet: one type per column
            add(
                name,
                mixed[0],
                f"{what} {name!r} holds {mixed[1]}: write its values one way (text or numbers)",
            )
            continue
        if name == policy.sensitive or name in policy.kinds or name in policy.domains:
            continue
        uniq = pd.Series(pd.unique(vals.dropna().to_numpy()), dtype=object)
        words = uniq[pd.to_numeric(uniq, errors="coerce").isna()]
        if words.empty or len(words) == len(uniq):
            continue
        present = vals.notna().to_numpy()
        text = present & vals.isin(set(words)).to_numpy()
        n_num = int((present & ~text).sum())
        if n_num >= MOSTLY_NUMERIC * int(present.sum()):
            shown = [str(w) for w in words[:5]]
            found.append(
                (
                    2,
                    name,
                    f"QI {name!r} holds numbers and text: {shown} are not numbers; correct or drop "
                    f"these rows, or declare the QI categorical ({declare_categorical(name)})",
                    rows(part, text, policy),
                    int(text.sum()),
                )
            )
    return found

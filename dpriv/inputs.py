"""The types of a view's policy columns, checked and normalised before anything runs.

:func:`prepare_view` gives every entry point (``anonymize``, ``release_history``,
``verify_view``, ``attack``) the same column types: a pandas ``category`` QI or sensitive
column becomes its plain values (numbers stay numbers), text becomes Unicode NFC (the same
city typed in NFC and NFD is one level), a text id column becomes ``string[pyarrow]``, the dtype Dask
gives the respondent state's ids (one id dtype on both sides of every join on the id, so
Dask never warns about merging ``string`` with ``object``), and a date QI becomes whole days
(:mod:`dpriv.dates`; :func:`prepared` detects date and timestamp columns first).

:func:`type_problems` finds the values no release can hold, with the rows that hold them:
list/array cells (Parquet list columns), ``inf``/``-inf``, a QI's float beyond
:data:`MAX_MAGNITUDE` (such as ``1e308``), durations, a date as the
sensitive value, a date QI holding text that is not a date (or several time zones), and a
numeric QI holding a few text values (``unknown``, ``45+``, ``thirty``) unless that QI is
declared categorical. Its rows have the shape of :func:`dpriv.validate.partition_problems`.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Callable
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import meta_of
from dpriv.dates import date_problem, date_qi, is_date_dtype, to_days, with_date_kinds
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy

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


def policy_columns(policy: ReleasePolicy) -> list[str]:
    return [c for c in dict.fromkeys([policy.id, *policy.qi, policy.sensitive])]


def duplicate_columns(columns, source: str = "the input") -> None:
    """Raise InputError if a column name occurs twice (a frame built by hand; a CSV header
    is checked on its raw text by :func:`dpriv.io.read_table`)."""
    names = [str(c) for c in columns]
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise InputError(
            f"{source} has the column(s) {dup} more than once; rename or drop the copies so that "
            "each column name is unique"
        )


def unused_columns(columns, policy: ReleasePolicy) -> list[str]:
    """Columns of the input the policy does not name: they are dropped from the release."""
    named = {policy.id, *policy.qi, policy.sensitive, *([policy.time] if policy.time else [])}
    return [str(c) for c in columns if c not in named]


def unused_note(columns, policy: ReleasePolicy) -> str | None:
    extra = unused_columns(columns, policy)
    if not extra:
        return None
    return (
        f"not released: column(s) {extra} (not named by the policy as id, time, QI or sensitive); "
        "a quasi-identifier among them belongs in qi (--qi) to be released generalized "
        "(never an identifier)"
    )


def _nfc(values: pd.Series) -> pd.Series:
    if not (pd.api.types.is_object_dtype(values.dtype) or pd.api.types.is_string_dtype(values.dtype)):
        return values
    try:
        uniq = pd.unique(values.dropna().to_numpy())
    except TypeError:  # unhashable cells (lists): type_problems reports them
        return values
    change = {
        v: unicodedata.normalize("NFC", v)
        for v in uniq
        if isinstance(v, str) and not unicodedata.is_normalized("NFC", v)
    }
    return values.replace(change) if change else values


def _plain(values: pd.Series) -> pd.Series:
    """A category column as its plain values: numbers as their own dtype, text as object."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.dtype.categories
        target = cats.dtype if pd.api.types.is_numeric_dtype(cats.dtype) else object
        values = values.astype(target)
    return values


#: dtype of a text id: the one Dask gives strings (``dataframe.convert-string``), so the view,
#: the respondent state and the posteriors are merged on one id dtype (no Dask warning).
ID_STRING = pd.StringDtype("pyarrow")


def _is_text_id(col: pd.Series) -> bool:
    if pd.api.types.is_object_dtype(col.dtype):
        return pd.api.types.infer_dtype(col, skipna=True) == "string"
    return pd.api.types.is_string_dtype(col.dtype)


def _refuse_mixed_ids(col: pd.Series) -> None:
    """InputError for an id column of values of several types (``7`` and ``"x8"``): the state
    is kept in id order, and 7 and "7" would be two respondents."""
    if not pd.api.types.infer_dtype(col, skipna=True).startswith("mixed"):
        return
    values = col.dropna()
    first = {}  # one example per type, in row order
    for v in values:
        first.setdefault(type(v).__name__, v)
    examples = " and ".join(f"{v!r} ({t})" for t, v in list(first.items())[:3])
    raise InputError(
        f"id column {col.name!r} mixes values of several types ({examples}): write every id as "
        "text (or every id as a number)"
    )


def _prepare_part(
    part: pd.DataFrame, columns: list[str], id_col: str | None, dates: tuple[str, ...] = ()
) -> pd.DataFrame:
    out = {}
    for c in columns:
        if c not in part.columns:
            continue
        col = to_days(part[c]) if c in dates else part[c]
        col = _nfc(_plain(col))
        if c == id_col and col.dtype != ID_STRING and _is_text_id(col):
            col = col.astype(ID_STRING)
        elif c == id_col and pd.api.types.is_object_dtype(col.dtype):
            _refuse_mixed_ids(col)
        if col is not part[c]:
            out[c] = col
    return part.assign(**out) if out else part


def prepare_view(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, *, ids: bool = True):
    """``view`` with the policy columns' types normalised (see the module docstring); the
    QIs of kind ``"date"`` become whole days (:func:`dpriv.dates.to_days`).

    Pandas in, pandas out; Dask in, Dask out (one ``map_partitions``, lazy). Other columns
    are untouched; ``ids=False`` leaves the id column as it is. Raises InputError for a
    column name that occurs twice. Use :func:`prepared` to detect date QIs first.
    """
    duplicate_columns(view.columns)
    columns = [*policy_columns(policy), *([policy.time] if policy.time else [])]
    id_col = policy.id if ids else None
    dates = tuple(date_qi(policy))
    if isinstance(view, dd.DataFrame):
        meta = _prepare_part(view._meta, columns, id_col, dates)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return view.map_partitions(_prepare_part, columns, id_col, dates, meta=meta)
    return _prepare_part(view, columns, id_col, dates)


def prepared(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, *, ids: bool = True):
    """(:func:`prepare_view` of ``view``, ``policy``) with date and timestamp QIs detected first
    (:func:`dpriv.dates.with_date_kinds`): the entry points' one input-normalising step."""
    duplicate_columns(view.columns)  # before a column is looked up by name
    meta = meta_of(view)
    named = dict.fromkeys([*policy.qi, policy.sensitive])
    odd = [c for c in named if c in meta and meta[c].dtype.kind == "c"]
    if odd:  # min/max and EMD need an order: complex numbers have none
        raise InputError(f"column(s) {odd} hold complex numbers: use their real part, magnitude or text")
    policy = with_date_kinds(view, policy)
    _numbers_as_dates(meta, policy)
    return prepare_view(view, policy, ids=ids), policy


def _numbers_as_dates(meta: pd.DataFrame, policy: ReleasePolicy) -> None:
    """InputError for a QI declared a date (``--date``, ``[kinds] q = "date"``) whose input
    column holds numbers: inside, a date is a whole number of days since 1970-01-01, so ages
    45..74 would be released as dates in February 1970 without a word."""
    for q in policy.qi:
        kind = policy.kinds.get(q)
        dtype = meta[q].dtype if q in meta.columns else None
        if (
            kind == "date"
            and dtype is not None
            and pd.api.types.is_numeric_dtype(dtype)
            and not pd.api.types.is_bool_dtype(dtype)
        ):
            raise InputError(
                f"QI {q!r} is declared a date but holds numbers ({dtype}), not dates: write its "
                f"values as dates (YYYY-MM-DD), or release it as a number (drop --date {q}, or "
                f'[kinds] {q} = "date" from the policy)'
            )


def as_frame(data: object, function: str, name: str) -> pd.DataFrame | dd.DataFrame:
    """``data`` itself when it is a pandas or Dask DataFrame; a ``str``/``Path`` is read with
    :func:`dpriv.io.read_table` (CSV or Parquet, a Dask DataFrame); anything else is an
    InputError naming what was given."""
    if isinstance(data, pd.DataFrame | dd.DataFrame):
        if isinstance(data.columns, pd.MultiIndex):  # a column is then a tuple: no policy names it
            raise InputError(
                f"{function}() takes a {name} with one level of column names, not a MultiIndex "
                f"({list(data.columns[:3])}...): flatten it first (e.g. frame.columns = ['_'.join(c) "
                "for c in frame.columns])"
            )
        return data
    if isinstance(data, str | Path):
        from dpriv.io import read_table

        return read_table(str(data))
    raise InputError(
        f"{function}() takes the {name} as a pandas or Dask DataFrame (or the path of a CSV or "
        f"Parquet file), not a {type(data).__name__}: e.g. dpriv.io.read_table(path)"
    )


def attack_history(history: object, policy: ReleasePolicy) -> tuple[pd.DataFrame, ReleasePolicy]:
    """The history as ``attack`` reads it, and the policy with its date QIs: the same types as
    ``release_history`` gave it (:func:`prepared`: text ids as ``string[pyarrow]``, category
    columns as plain values, text in NFC, dates as days), collected to pandas; a path is read
    with :func:`dpriv.io.read_table`.

    Raises InputError for what :func:`as_frame` and :func:`prepare_view` refuse."""
    frame, policy = prepared(as_frame(history, "attack", "history"), policy)
    return (frame.compute() if isinstance(frame, dd.DataFrame) else frame), policy


def _listed(v):
    return v.tolist() if isinstance(v, np.ndarray) else v


def _is_nested(v) -> bool:
    return isinstance(v, list | tuple | set | dict | np.ndarray)


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
) -> list[tuple]:
    """Problems (order, column, message, rows, count) of the QI and sensitive columns' values.

    ``rows`` lists the first offending rows (:func:`dpriv.validate._rows`: :class:`dpriv.rows.BadRow`).
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
            problem = date_problem(vals, name)  # None once prepare_view made it days
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
        if isinstance(vals.dtype, pd.PeriodDtype):
            add(
                name,
                np.ones(len(vals), dtype=bool),
                f"{what} {name!r} holds periods ({vals.dtype}); convert them to dates (e.g. "
                f"frame[{name!r}].dt.start_time, released as date intervals) or to text",
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
                    f"{what} {name!r} holds lists or arrays (e.g. {_listed(vals[nested].iloc[0])!r}), "
                    "not one value per row: flatten the column (one value per row) or drop it from "
                    "the policy",
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
                    f"these rows, or declare the QI categorical (--categorical {name}, or "
                    f'[kinds] {name} = "categorical" in the policy)',
                    rows(part, text, policy),
                    int(text.sum()),
                )
            )
    return found


def check_sensitive_values(s_counts: np.ndarray, policy: ReleasePolicy, view: int | None = None) -> None:
    """Refuse a sensitive column that holds one value only (``s_counts``: (M,) int64 counts of
    the released data over D[S]; ``view``: the view's index in a history, named in the
    message): every QI-group would have l = 1 and the release would disclose that value for
    every respondent. ``allow_single_sensitive`` releases it with a warning instead (ARX's
    l-diversity finds no solution there; sdcMicro reports l = 1)."""
    present = np.flatnonzero(np.asarray(s_counts) > 0)
    if len(present) != 1:
        return
    value = policy.sensitive_domain[int(present[0])]
    where = "" if view is None else f"view {view}: "
    what = (
        f"{where}sensitive column {policy.sensitive!r} holds one value only ({value!r}): every QI-group "
        "has l = 1, so the release discloses that value for every respondent"
    )
    if not policy.allow_single_sensitive:
        raise PolicyError(
            f"{what}. Choose a sensitive column with at least 2 values, or set "
            "allow_single_sensitive = true in [privacy] to release it anyway"
        )
    warnings.warn(f"{what} (allow_single_sensitive = true)", stacklevel=2)

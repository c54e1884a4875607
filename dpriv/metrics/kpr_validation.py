"""KPR (§5.3), validation: the inputs of :func:`dpriv.metrics.kpr.kpr` checked without
bringing a Dask table to the client; warnings for legal but suspicious inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from dpriv._dispatch import is_dask
from dpriv.errors import InputError
from dpriv.metrics.kpr_inputs import kind_mismatch, released_view_error


class KnownColumns(NamedTuple):
    """The known variables of a KPR call, checked: their names and, per name, whether it is numeric."""

    names: tuple[str, ...]
    numeric: tuple[bool, ...]


LOW_CARDINALITY = 10  # numeric known variable with <= 10 distinct values -> warning (§5.2)


class KPRWarning(UserWarning):
    """A KPR input that is legal but probably not what the user meant."""


def _kind(dtype: Any) -> str:
    """'numeric', 'categorical' or 'refused' for a column dtype (§5.2 step 2)."""
    if ptypes.is_bool_dtype(dtype):
        return "categorical"
    if isinstance(dtype, pd.CategoricalDtype):
        return "categorical"
    if (
        ptypes.is_datetime64_any_dtype(dtype)
        or ptypes.is_timedelta64_dtype(dtype)
        or isinstance(dtype, pd.PeriodDtype | pd.IntervalDtype)
        or ptypes.is_complex_dtype(dtype)
    ):
        return "refused"
    if ptypes.is_numeric_dtype(dtype):
        return "numeric"
    if ptypes.is_object_dtype(dtype) or ptypes.is_string_dtype(dtype):
        return "categorical"
    return "refused"


def validate_kpr(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    tolerance: float,
    padding: float,
    ddof: int,
) -> KnownColumns:
    """The checked known variables of :func:`dpriv.metrics.kpr.kpr` (its arguments, same names).

    Raises InputError naming the argument, the variable and its table: a table not a pandas or
    Dask frame, ``known`` empty, not strings, repeated or missing from a table, a known variable
    of a kind KPR cannot bin (dates, durations), or kinds differing between the tables; a
    ``tolerance`` not > 0, a ``padding`` not >= 0, a ``ddof`` not an integer >= 0.
    """
    for label, obj in (("original", original), ("synthetic", synthetic)):
        if not (isinstance(obj, pd.DataFrame) or is_dask(obj)):
            raise InputError(
                f"kpr: the {label} table must be a pandas or Dask DataFrame, got {type(obj).__name__}"
            )
    if isinstance(known, str) or not isinstance(known, Sequence):
        raise InputError(f"kpr: `known` must be a list of column names, e.g. ['age', 'sex'], got {known!r}")
    known_t = tuple(known)
    if not known_t:
        raise InputError("kpr: `known` is empty; give at least one known variable")
    bad = [k for k in known_t if not isinstance(k, str)]
    if bad:
        raise InputError(f"kpr: known variable names must be strings, got {bad!r}")
    dup = sorted({k for k in known_t if known_t.count(k) > 1})
    if dup:
        raise InputError(f"kpr: known variable(s) {dup} listed more than once; list each once")
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance > 0):
        raise InputError(f"kpr: tolerance must be a finite number > 0, got {tolerance!r}")
    if not (isinstance(padding, int | float) and math.isfinite(padding) and padding >= 0):
        raise InputError(f"kpr: padding must be a finite number >= 0, got {padding!r}")
    if isinstance(ddof, bool) or not isinstance(ddof, int | np.integer) or ddof < 0:
        raise InputError(f"kpr: ddof must be an integer >= 0, got {ddof!r}")
    for label, obj in (("original", original), ("synthetic", synthetic)):
        missing = [k for k in known_t if k not in obj.columns]
        if missing and (released := released_view_error(label, missing, list(obj.columns))):
            raise released
        if missing:
            raise InputError(
                f"kpr: known variable(s) {missing} not found in the {label} table "
                f"(columns: {list(map(str, obj.columns))}); fix the names or the table"
            )
    numeric: list[bool] = []
    for k in known_t:
        ko, ks = _kind(original.dtypes[k]), _kind(synthetic.dtypes[k])
        for label, kind, dt in (
            ("original", ko, original.dtypes[k]),
            ("synthetic", ks, synthetic.dtypes[k]),
        ):
            if kind == "refused":
                raise InputError(
                    f"kpr: known variable {k!r} has dtype {dt} in the {label} table; "
                    "dates, durations and other non-numeric, non-categorical types are "
                    "refused (5 % of their mean is meaningless): cast the column in both "
                    "tables, e.g. to a number of days or to a category"
                )
        if ko != ks:
            kinds = {"original": (ko, original.dtypes[k]), "synthetic": (ks, synthetic.dtypes[k])}
            raise kind_mismatch(k, kinds, {"original": original, "synthetic": synthetic})
        numeric.append(ko == "numeric")
    return KnownColumns(known_t, tuple(numeric))

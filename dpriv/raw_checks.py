"""Checks of a view BEFORE its domains are inferred, on the policy as the user gave it.

:func:`check_raw` refuses what no release can hold and what would be inferred wrongly: a
column name twice, a missing column, an empty view, values of no usable type
(:func:`dpriv.value_types.type_problems`), a generalized or placeholder value (``[45-52]``,
``*``: :data:`GENERALIZED`) and a QI's numbers stored as text (:func:`raw_problems`, which
:mod:`dpriv.preflight` also runs on a file's first rows). The checks of the resolved policy's
domains follow in :mod:`dpriv.validate`.
"""

from __future__ import annotations

import re

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.errors import InputError
from dpriv.id_format import shape_of
from dpriv.input_columns import duplicate_columns, missing_columns
from dpriv.policy import ReleasePolicy
from dpriv.row_problems import lazy_problems, partition_lengths, placed, problems_message
from dpriv.rows import PROBLEM_COLUMNS, BadRow, bad_rows, csv_rows, input_file
from dpriv.value_types import GROUPED_NUMBER, ID_KINDS_META, id_kinds, type_problems

#: Values an anonymizer writes in place of original ones: intervals ("[45-52]", "[17, 30[",
#: "(20, 30]"), value sets ("{F,M}", dpriv's own released views), "*" (suppressed), "?" (missing).
GENERALIZED = re.compile(r"^\s*(?:\*+|\?|[\[\]\(].*[-,;].*[\]\[\)]|\{.*\})\s*$")


def is_text(col: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype))


def raw_problems(part: pd.DataFrame, policy: ReleasePolicy, columns: list[str]) -> pd.DataFrame:
    """Problems of one partition of raw (not yet resolved) data: generalized values and, for a
    QI whose kind is not declared, numbers stored as text. Same rows as partition_problems."""
    found: list[tuple] = []
    for name in columns:
        vals = part[name]
        text = vals.notna() & vals.astype(str).str.match(GENERALIZED)
        if text.any():
            # a sensitive value is never printed beside its rows (a value set may hold true values);
            # a placeholder of no letter or digit ('*', '?') holds none
            example = repr(vals[text].iloc[0])
            hidden = name == policy.sensitive and re.search(r"[^\W_]", example[1:-1]) is not None
            example, held = ("it", "a value") if hidden else (example, example)
            found.append(
                (
                    1,
                    name,
                    f"column {name!r} holds {held}, a generalized or placeholder value (interval, "
                    "value set, '*' or '?'): dpriv releases original data, not an already anonymized "
                    f"file; feed the original values, or drop or impute the rows with {example}",
                    offending_rows(part, text.to_numpy(), policy),
                    int(text.sum()),
                )
            )
            continue
        if name in policy.qi and name not in policy.kinds:
            num = pd.to_numeric(vals.astype(object), errors="coerce")
            grouped = vals.notna() & num.isna() & vals.astype(str).str.match(GROUPED_NUMBER)
            if vals.notna().any() and ((num.notna() | grouped) == vals.notna()).all():
                # only the cells holding text: an object column may mix 1 (int) and '2' (str)
                text = vals.map(lambda v: isinstance(v, str), na_action="ignore").fillna(False).astype(bool)
                text = text if text.any() else vals.notna()
                example = vals[grouped].iloc[0] if grouped.any() else vals[text].iloc[0]
                how = " with thousands separators or a decimal comma" if grouped.any() else ""
                mixed = (
                    " (the others as numbers: the column mixes str and numbers)"
                    if (~text & vals.notna()).any()
                    else ""
                )
                found.append(
                    (
                        2,
                        name,
                        f"QI {name!r} holds numbers stored as text{how} (e.g. {example!r}){mixed}: store "
                        f"them as plain numbers, declare its range in [domains] ({name} = [min, max]), or "
                        f'declare it categorical in [kinds] ({name} = "categorical")',
                        offending_rows(part, text.to_numpy(), policy),
                        int(text.sum()),
                    )
                )
    return pd.DataFrame(found, columns=PROBLEM_COLUMNS).astype({"order": "int64", "count": "int64"})


def offending_rows(part: pd.DataFrame, mask: np.ndarray, policy: ReleasePolicy) -> list[BadRow]:
    """The first offending rows of ``part`` (:func:`dpriv.rows.bad_rows`)."""
    return bad_rows(part, mask, policy.time)


def _raw_all(part: pd.DataFrame, policy: ReleasePolicy, columns: list[str], csv: bool) -> pd.DataFrame:
    """Type problems of every policy column (:func:`dpriv.value_types.type_problems`; ``csv``: of
    a CSV file) and the raw problems of the text columns without a declared domain
    (:func:`raw_problems`)."""
    typed = pd.DataFrame(type_problems(part, policy, offending_rows, csv=csv), columns=PROBLEM_COLUMNS)
    # a generalized value ('[45-52]', '*': order 1) is named before a mix of numbers and text (2)
    unusable = set(typed.loc[typed["order"] == 0, "column"])
    raw = raw_problems(part, policy, [c for c in columns if c not in unusable])
    both = [f for f in (typed, raw) if len(f)]
    out = pd.concat(both, ignore_index=True) if both else raw
    return out.astype({"order": "int64", "count": "int64"})


def check_raw(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, source: str = "the input") -> None:
    """Checks of a view BEFORE its domains are inferred (run on the policy as the user gave it).

    Raises InputError for a column name that occurs twice, a missing column, an empty view
    (header only), values no release can hold (lists, ``inf``, a QI's float beyond ±1e150,
    dates; a numeric QI with a few text values: :func:`dpriv.value_types.type_problems`), a
    generalized or placeholder value (``[45-52]``, ``{F,M}``, ``*``, ``?``) in a QI or the
    sensitive column whose domain is not declared, and a QI of undeclared kind holding numbers
    stored as text. Columns with a declared domain are checked later by
    :func:`dpriv.validate.validate_view`.
    """
    duplicate_columns(view.columns, source)
    missing_columns(view.columns, policy)
    if source == "the input" and input_file() is not None:  # a command's file: named (header only)
        source = input_file().path
    columns = [c for c in (*policy.qi, policy.sensitive) if c not in policy.domains and is_text(view[c])]
    if is_dask(view):
        if len(view.head(1, npartitions=1, compute=True)) == 0 and not partition_lengths(view).any():
            raise InputError(f"{source} has a header but no rows: give the data that holds the tuples")
    elif len(view) == 0:
        raise InputError(f"{source} has a header but no rows: give the data that holds the tuples")
    if not is_dask(view):
        problems = _raw_all(view, policy, columns, csv_rows())
    else:  # with the kinds of ids each partition holds, in the same compute
        ids = view[policy.id].map_partitions(id_kinds, meta=ID_KINDS_META)
        problems, kinds = dask.compute(lazy_problems(view, _raw_all, policy, columns, csv_rows()), ids)
        problems = placed(view, problems)
        if not len(problems) and kinds["kind"].nunique() > 1:
            shown = kinds.drop_duplicates("kind").set_index("kind")["example"]
            raise InputError(
                f"{source}: id column {policy.id!r} holds numbers ({shape_of([shown['number']])}) in "
                f"some partitions and text ({shape_of([shown['text']])}) in others: write every id "
                "as text (or every id as a number)"  # ids by their shape: never printed
            )
    if len(problems):
        raise InputError(f"{source}: {problems_message(problems, policy.time, whole=True)}")

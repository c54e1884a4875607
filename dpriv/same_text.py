"""Two values of a column whose domain is to be inferred that read as one: ``1`` and ``"1"``,
``"B"`` and ``"B "``, ``"F"`` and ``"f"``, ``"stage_2"`` and ``"stage 2"``
(:func:`check_same_text`), refused before the inference would make them two levels; the rarer
spelling's rows named (:mod:`dpriv.rows`): a weekly file that wrote a category as text after
weeks of numbers is found by its lines."""

from __future__ import annotations

import re

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.raw_checks import offending_rows
from dpriv.row_problems import problems_message, problems_of
from dpriv.rows import PROBLEM_COLUMNS, input_file

#: Said instead of the two spellings of a sensitive value (never printed beside its rows).
_HIDDEN = "two values (not printed beside their rows: see the rows named)"


#: A run of spaces, '_' or '-' between two word characters, one of them a letter: "stage 2",
#: "stage_2", "stage-2" and "stage2" are one value typed four ways; "1-2" (a range) and "12", or
#: "-1" and "1" (a sign), are not.
_SEPARATOR = re.compile(r"(?<=[^\W\d_])[\s_-]+(?=[^\W_])|(?<=[^\W_])[\s_-]+(?=[^\W\d_])")


def spelling_key(value: object) -> str:
    """What two spellings of one value share: the text without spaces at its ends, in one case,
    without the separators :data:`_SEPARATOR` matches."""
    return _SEPARATOR.sub("", str(value).strip().casefold())


def check_same_text(
    view: pd.DataFrame | dd.DataFrame, data: pd.DataFrame, policy: ReleasePolicy, source: str = "the input"
) -> None:
    """InputError for a column of ``data`` (``view``'s columns whose domains are to be inferred,
    read into this process) that holds two distinct values written alike: ``1`` and ``"1"``
    (the released view and the policy write values as text, where the two would be one
    value), or ``"B"`` and ``"B "`` (one category typed two ways, e.g. a CSV cell with a
    trailing space, that would become two levels), or ``"F"`` and ``"f"`` (upper and lower
    case: the same, typed by hand), or ``"stage_2"`` and ``"stage 2"`` (a separator between
    words typed otherwise: a later week's export renamed a value, :func:`spelling_key`).
    Each names the rows of ``view`` holding the less frequent spelling, or type (the first
    :data:`dpriv.rows.MAX_ROWS_SHOWN`, by their line in the input file where
    :func:`dpriv.rows.rows_of` names one); the sensitive column's spellings are not printed
    beside them."""
    for c in data.columns:
        dtype = data[c].dtype
        if not (pd.api.types.is_string_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype)):
            continue
        seen: dict[str, object] = {}
        for v in pd.unique(data[c].dropna()):
            key = spelling_key(v)
            other = seen.setdefault(key, v)
            if other is v:
                continue
            # the rarer spelling; on a tie one with spaces, else v (found later)
            rare = min((v, other), key=lambda x: (int(data[c].eq(x).sum()), str(x) == str(x).strip()))
            held = _HIDDEN if c == policy.sensitive else f"{other!r} and {v!r}"
            rows = "the less frequent of the two" if c == policy.sensitive else repr(rare)
            if str(other) == str(v):  # 1 and "1": one week's file with numbers, another's with text
                if c != policy.sensitive:
                    held = f"{other!r} ({type(other).__name__}) and {v!r} ({type(v).__name__})"
                    rows = f"{rare!r} ({type(rare).__name__})"
                said = (
                    f"column {c!r} holds {held}, which read the same once released: write its values "
                    "one way (all text, or all numbers)"
                )
            elif str(other).strip() == str(v).strip():
                said = (
                    f"column {c!r} holds {held}, which differ only in spaces at the start or end: one "
                    f"value written two ways would become two; strip the spaces (e.g. "
                    f"frame[{c!r}].str.strip()) or declare [domains] {c} with the values as they are meant"
                )
            elif str(other).strip().casefold() != str(v).strip().casefold():  # 'stage 2', 'stage_2'
                said = (
                    f"column {c!r} holds {held}, which differ only in the spaces, '_' or '-' between their "
                    "words (a value renamed in a later week's export?): one value written two ways would "
                    "become two; write it one way, as the other weeks do, or declare [domains] "
                    f"{c} with the values as they are meant (both, if they are two values)"
                )
            else:  # 'F' and 'f' typed by hand: two levels, each group's set telling them apart
                said = (
                    f"column {c!r} holds {held}, which differ only in upper and lower case: one value "
                    f"written two ways would become two; write it one way (e.g. frame[{c!r}].str.upper()) "
                    f"or declare [domains] {c} with the values as they are meant (both, if they are two "
                    "values)"
                )
            problems = problems_of(view, _rows_holding, policy, c, rare, f"{said}; rows holding {rows}")
            message = problems_message(problems, policy.time, whole=True)
            raise InputError(message if input_file() or policy.time else f"{source}: {message}")


def _rows_holding(
    part: pd.DataFrame, policy: ReleasePolicy, column: str, value: object, message: str
) -> pd.DataFrame:
    """The problem ``message`` with the rows of ``part`` whose ``column`` holds ``value``."""
    mask = np.asarray(part[column].eq(value).fillna(False), dtype=bool)
    found = [(1, column, message, offending_rows(part, mask, policy), int(mask.sum()))] if mask.any() else []
    return pd.DataFrame(found, columns=PROBLEM_COLUMNS).astype({"order": "int64", "count": "int64"})

"""A row check run over every partition of a frame, and the problems it found in one message.

A validation kernel returns a problems frame (:data:`dpriv.rows.PROBLEM_COLUMNS`) for one
partition; :func:`problems_of` runs it over each partition of a Dask frame (:func:`lazy_problems`
when the caller computes it with other work), puts each bad row at its place in the whole frame
(:func:`placed`, with the partitions' lengths, counted only when a problem was found), and
:func:`problems_message` says every problem once, its rows over all partitions named by
:func:`dpriv.rows.describe`. Moved out of :mod:`dpriv.rows` (naming rows), which still gives
these names.
"""

from __future__ import annotations

import re

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.rows import PROBLEM_COLUMNS, describe, input_file, place, views_prefix


def located(part: pd.DataFrame, kernel, *args, partition_info=None) -> pd.DataFrame:
    """``kernel(part, *args)`` (a problems frame) with the partition's number in column ``part``."""
    out = kernel(part, *args)
    out["part"] = np.int64((partition_info or {}).get("number", 0))
    return out


#: The problems frame of a partition, with the partition's number (:func:`located`).
LOCATED_META = pd.DataFrame(
    {
        c: pd.Series(dtype=t)
        for c, t in zip([*PROBLEM_COLUMNS, "part"], ["int64", *["object"] * 3, "int64", "int64"])
    }
)


def lazy_problems(view: dd.DataFrame, kernel, *args) -> dd.DataFrame:
    """``kernel`` over every partition of ``view``, each result with its partition's number."""
    return view.map_partitions(located, kernel, *args, meta=LOCATED_META)


def placed(view: pd.DataFrame | dd.DataFrame, problems: pd.DataFrame) -> pd.DataFrame:
    """``problems`` (computed from :func:`lazy_problems`) with their rows placed in the whole
    frame (:func:`place`); the partitions' lengths are counted only when a problem
    was found."""
    if "part" not in problems.columns:
        return problems
    if len(problems):
        lengths = partition_lengths(view)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        problems["rows"] = [place(r, int(offsets[p])) for r, p in zip(problems["rows"], problems["part"])]
    return problems.drop(columns="part").reset_index(drop=True)


def partition_lengths(view: dd.DataFrame) -> np.ndarray:
    """Rows of each partition of ``view``. The meta is given: without it (``len(view)``) Dask
    builds a sample row of every column, which pyarrow cannot cast for a narrow decimal such as
    ``decimal128(1, 1)`` (an internal error instead of the QI's type message)."""
    return view.map_partitions(len, meta=(None, "int64")).compute().to_numpy()


def problems_of(view: pd.DataFrame | dd.DataFrame, kernel, *args) -> pd.DataFrame:
    """``kernel`` over ``view`` (every partition of a Dask frame), rows placed in the whole frame."""
    if not is_dask(view):
        return kernel(view, *args)
    return placed(view, lazy_problems(view, kernel, *args).compute())


#: The example values a problem message quotes (they differ between partitions).
_EXAMPLES = re.compile(r"\[[^\]]*\]|'[^']*'|\{[^}]*\}")
#: Other problems named after the first one in a message (the rest counted).
MAX_OTHER_PROBLEMS = 3


def problems_message(
    problems: pd.DataFrame, time_col: str | None, *, whole: bool, checked: int | None = None
) -> str:
    """One message for every problem of a problems frame (:data:`PROBLEM_COLUMNS`, the rows of
    all partitions, :func:`placed`): the first (smallest order, then first found) in full, then
    ``"; also: "`` up to :data:`MAX_OTHER_PROBLEMS` other problems with their rows, then
    ``"; and N other problem(s)"``, so that fixing the first does not hide the next one.
    Each problem is a column and a message (its quoted example values aside: each partition
    names its own), its rows over all partitions (the first
    :data:`MAX_ROWS_SHOWN` named, :func:`describe`; ``checked``: of the first rows checked)."""
    cut = _cut_off(problems) if whole else None
    if cut is not None:  # the last line of a CSV file still being written: not a row to correct
        return cut
    texts = []
    # one problem over all partitions: its message up to the example values each partition names
    kind = problems["message"].map(lambda m: _EXAMPLES.sub("…", m))
    for seen, (_, same) in enumerate(problems.groupby([problems["column"], kind], sort=False)):
        rows = sorted((r for found in same["rows"] for r in found), key=lambda r: r.position)
        count = int(same["count"].sum())
        key = (int(same["order"].min()), seen)  # as before: the smallest order, first found
        where = describe(rows, count, time_col, whole=whole, checked=checked)
        message = same["message"].iloc[0]
        texts.append((key, f"{views_prefix(rows, time_col)}{message} ({where})"))
    texts = [t for _, t in sorted(texts, key=lambda kt: kt[0])]
    out = texts[0]
    others = texts[1 : 1 + MAX_OTHER_PROBLEMS]
    if others:
        out += "; also: " + "; ".join(others)
    if len(texts) > 1 + MAX_OTHER_PROBLEMS:
        out += f"; and {len(texts) - 1 - MAX_OTHER_PROBLEMS} other problem(s)"
    return out


def _cut_off(problems: pd.DataFrame) -> str | None:
    """The refusal of the CSV input of :func:`rows_of` when a row of ``problems`` is its last
    line, written without a newline (:func:`dpriv.cut_csv.cut_problem`), else None."""
    source = input_file()
    if source is None or not source.csv:
        return None
    from dpriv.cut_csv import cut_problem

    rows = [
        (r.position, column) for column, found in zip(problems["column"], problems["rows"]) for r in found
    ]
    return cut_problem(source.path, rows)

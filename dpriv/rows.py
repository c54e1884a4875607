"""Naming the bad rows of an input in a message: the line of the file the user gave (the header
is line 1), or the row label of a DataFrame given in Python.

A validation kernel (:mod:`dpriv.validate`, :func:`dpriv.value_types.type_problems`) lists the first
:data:`MAX_ROWS_SHOWN` offending rows of its partition as :class:`BadRow` tuples; the rows of
all partitions are put at their place in the whole input (:func:`place`, with the partitions'
lengths) and named once (:func:`describe`): every bad row up to the cap, over all views of a
history, then "and N more".

Line numbers are given only while :func:`rows_of` names the file, i.e. while the frame being
checked is that file read whole and in order (``dpriv anonymize INPUT``, ``dpriv release
HISTORY``); elsewhere (a DataFrame given in Python, one view of a history) a row is named by its
label, as before. In a CSV file a line is counted as the reader counts it (a quoted newline
inside a value makes a row span two lines; blank lines are skipped by the reader and counted
here; over the first :data:`LINE_SCAN_LINES` lines, then one line per row); in a Parquet file
a row is the 1-based row of the file, and a row of a Parquet folder is named in its own file
(``row 7 of DIR/part.1.parquet``, :func:`dpriv.parquet_files.folder_rows`).
"""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dpriv.wording import counted

#: The columns of a problems frame (one row per problem found in a partition): its order (the
#: first problem is reported), column, message, :class:`BadRow` list and row count.
PROBLEM_COLUMNS = ["order", "column", "message", "rows", "count"]
#: Bad rows named in one message, the rest counted ("and N more").
MAX_ROWS_SHOWN = 5
#: Lines of a CSV file read to count lines exactly (quoted newlines; on a failure only, about
#: 5 s per million lines on a loaded 2-core machine); beyond, one line per row.
LINE_SCAN_LINES = 1_000_000


class BadRow(NamedTuple):
    """One offending row: its 0-based position in the frame checked (or its partition), its
    index label and its time (None without a time column). Never its id: a message may be logged
    or shown where the ids must not go."""

    position: int
    label: Any
    time: Any


@dataclass(frozen=True)
class InputFile:
    """The file whose rows are being checked, whole and in order: ``path`` and whether it is CSV."""

    path: str
    csv: bool


_FILE: ContextVar[InputFile | None] = ContextVar("dpriv_input_file", default=None)
#: The released file ``dpriv verify`` checks (:func:`rows_of` with ``released=True``).
_RELEASED: ContextVar[InputFile | None] = ContextVar("dpriv_released_file", default=None)


@contextlib.contextmanager
def rows_of(path: str | None, *, released: bool = False) -> Iterator[None]:
    """While active, bad rows of a frame checked whole are named by their line in ``path`` (the
    input file, read whole and in order); None: by their labels. ``released``: ``path`` is the
    released view ``dpriv verify`` checks, read whole and in order: a bad row of it
    (:func:`rows_named` with ``whole=False``) is named by its line or row in that file."""
    if path is None:
        yield
        return
    text = str(path).rstrip("/")
    parquet = text.endswith((".parquet", ".pq")) or ("://" not in text and os.path.isdir(text))
    var = _RELEASED if released else _FILE
    token = var.set(InputFile(str(path), not parquet))
    try:
        yield
    finally:
        var.reset(token)


def input_file() -> InputFile | None:
    """The file named by the enclosing :func:`rows_of`, or None."""
    return _FILE.get()


def csv_rows(whole: bool = True) -> bool:
    """Whether the rows checked are those of a CSV file: the enclosing :func:`rows_of` names one
    and the frame checked is that file, ``whole`` (not one view of a history). Read here, in the
    command's process, and passed to the checks' kernels (on a Dask worker no file is named)."""
    source = input_file()
    return whole and source is not None and source.csv


def bad_rows(part: pd.DataFrame, mask: np.ndarray, time_col: str | None) -> list[BadRow]:
    """The first :data:`MAX_ROWS_SHOWN` rows of ``part`` where ``mask`` (bool, shape (n,)) holds,
    then the first such row of each other time (view) of ``time_col``: a message names the views
    of every bad row (:func:`views_prefix`), not only of the rows it shows."""
    hit = np.flatnonzero(mask)
    pos = hit[:MAX_ROWS_SHOWN]
    if time_col and time_col in part and len(hit) > len(pos):
        first = pd.Series(part[time_col].to_numpy()[hit]).drop_duplicates().index.to_numpy()
        pos = np.union1d(pos, hit[first])  # one row per view beyond the rows shown
    sub = part.iloc[pos]
    times = sub[time_col].tolist() if time_col and time_col in sub else [None] * len(pos)
    return [BadRow(int(p), lab, t) for p, lab, t in zip(pos.tolist(), sub.index.tolist(), times)]


#: What a missing value is in a CSV file, said in :func:`missing_message` when the input is one.
CSV_MISSING = "; in a CSV file: an empty cell, or a text pandas reads as missing such as NA, N/A, null, NaN"


def missing_message(name: str, what: str = "NaN/None", *, every: bool = False, csv: bool = False) -> str:
    """The message of column ``name`` holding missing values (``what``: how they are held);
    ``every``: it holds no value at all. ``csv``: the rows are those of a CSV file
    (:func:`csv_rows`), where a user sees no NaN: the message says what pandas reads as missing."""
    if csv:
        what += CSV_MISSING
    if every:
        return (
            f"column {name!r} has missing values ({what}) in every row: it holds no value at all; "
            "fill the column, or leave it out of the policy (--qi/--sensitive, [columns])"
        )
    return (
        f"column {name!r} has missing values ({what}); dpriv refuses them by default: drop or "
        "impute these rows before releasing"
    )


def place(rows: list[BadRow], offset: int) -> list[BadRow]:
    """``rows`` of one partition with their positions in the whole frame (``offset``: the rows
    of the partitions before it)."""
    return [r._replace(position=r.position + offset) for r in rows]


def describe(
    rows: list[BadRow],
    count: int,
    time_col: str | None,
    *,
    whole: bool,
    checked: int | None = None,
    source: InputFile | None = None,
) -> str:
    """``"3 rows: line 5 (view=2), line 8 (view=2), line 11 (view=3) of in.csv (the header is
    line 1)"``: the first :data:`MAX_ROWS_SHOWN` of ``rows`` (sorted by position) and how many
    more of ``count``. Lines only when ``whole`` (the frame checked is the input file of
    :func:`rows_of`, whole and in order), else ``row <label>``, or ``row at position <p>`` (from 0)
    when two of the rows named share their index label (a frame of repeated labels).
    ``checked``: only the first rows of the input were checked (``"62 of the first 1,000 rows,
    the rest not checked yet: ..."``). A row is never named by its id (:class:`BadRow`): the
    line or row with its time locates it. ``source``: the file the rows are of (their positions
    its rows), instead of that of :func:`rows_of`."""
    rows = sorted(rows, key=lambda r: r.position)[:MAX_ROWS_SHOWN]
    source = source or (input_file() if whole else None)
    in_files = False
    if source:
        where, in_files = row_places(source, [r.position for r in rows])
    elif len({r.label for r in rows}) < len(rows):
        where = [f"row at position {r.position}" for r in rows]
    else:
        where = [f"row {r.label}" for r in rows]
    parts = []
    for w, r in zip(where, rows):
        about = [f"{time_col}={r.time!r}"] if time_col and r.time is not None else []
        parts.append(f"{w} ({', '.join(about)})" if about else w)
    how_many = (
        counted(count, "row")
        if checked is None
        else f"{count} of the first {checked:,} rows, the rest not checked yet"
    )
    text = f"{how_many}: " + ", ".join(parts)
    if count > len(rows):
        text += f" and {count - len(rows)} more"
    if in_files:  # a Parquet folder: each row named in its own file
        text += " (the first row of a file is row 1)"
    elif source is not None:
        text += f" of {source.path}" + (
            " (the header is line 1)" if source.csv else " (the first row is row 1)"
        )
    return text


def rows_named(frame: pd.DataFrame, mask: np.ndarray, *, whole: bool = True) -> str:
    """The rows of ``frame`` where ``mask`` (bool, shape (n,)) holds, counted and the first named
    by :func:`describe`: ``line 9 of r.csv`` when ``frame`` is the file of :func:`rows_of`, read
    whole and in order (``dpriv export``); ``whole=False``: ``frame`` is the released view
    ``dpriv verify`` checks against its --original, its rows named in the released file
    (:func:`rows_of` with ``released=True``: ``line 6 of o.csv``, ``row 5 of view.parquet``), else
    by index label. Never by a column's value (a view with ids added would print them; a
    sensitive value is secret)."""
    hit = np.flatnonzero(mask)
    labels = frame.index[hit[:MAX_ROWS_SHOWN]].tolist()
    rows = [BadRow(int(p), label, None) for p, label in zip(hit[:MAX_ROWS_SHOWN].tolist(), labels)]
    return describe(rows, len(hit), None, whole=whole, source=None if whole else _RELEASED.get())


def views_prefix(rows: list[BadRow], time_col: str | None) -> str:
    """``"view = 5: "``, ``"view = 2, 3: "``, ``"view = 5..9, 12: "``: the views of a history
    the bad ``rows`` are in (:func:`bad_rows` keeps a row of each); ``""`` without a time."""
    times = {r.time for r in rows if r.time is not None}
    if not time_col or not times:
        return ""
    return f"{time_col} = {spans(times, most=MAX_SPANS)}: "


#: Runs of views named in a message (:func:`spans`), then how many views in all.
MAX_SPANS = 10


def spans(values, most: int | None = None) -> str:
    """``[1, 2, 3, 5, 6]`` as ``"1..3, 5, 6"`` (runs of three or more consecutive whole numbers
    as ``a..b``; other values as they are, after the numbers); ``"none"`` when empty. With
    ``most``, the first ``most`` parts, then ``", ... (N in all)"``."""
    values = list(values)
    whole = sorted(v for v in values if isinstance(v, (int, np.integer)) and not isinstance(v, bool))
    runs: list[list] = []
    for i in whole:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    texts = [f"{a}..{b}" if b > a + 1 else ", ".join(map(str, range(a, b + 1))) for a, b in runs]
    texts += sorted({str(v) for v in values} - {str(v) for v in whole})
    if most is not None and len(texts) > most:
        return ", ".join(texts[:most]) + f", ... ({len(set(map(str, values)))} in all)"
    return ", ".join(texts) or "none"


def row_places(source: InputFile, positions: list[int]) -> tuple[list[str], bool]:
    """The names of the rows at 0-based ``positions`` of the input file ``source`` (``line 7`` of a
    CSV file, :func:`csv_lines`; ``row 7`` of a Parquet file), and whether each names its own file:
    a row of a Parquet folder is ``row 7 of DIR/part.1.parquet`` (else the caller adds ``of PATH``)."""
    if not source.csv:
        from dpriv.parquet_files import folder_rows

        files = folder_rows(source.path, positions)
        if files is not None:
            return [f"row {r + 1} of {f}" for f, r in files], True
        return [f"row {p + 1}" for p in positions], False
    lines = csv_lines(source.path, positions)
    return [f"line {n}" for n in lines], False


def csv_lines(path: str, positions: list[int]) -> list[int]:
    """The line (1-based; the header is line 1) where each data row ``positions`` (0-based, as
    the reader counts rows: blank lines skipped) starts in the CSV file ``path``. Counted with
    :mod:`csv` over the first :data:`LINE_SCAN_LINES` lines (a quoted newline spans lines);
    beyond them, or if the file cannot be read again, one line per row is assumed."""
    from dpriv.csv_read import sniff_delimiter

    wanted = set(positions)
    found: dict[int, int] = {}
    try:
        sep = sniff_delimiter(path)
        with _open_text(path) as fh:
            reader = csv.reader(fh, delimiter=sep)
            start, row = 1, -1  # the header is row -1
            for record in reader:
                if record:  # the reader skips blank lines
                    if row in wanted:
                        found[row] = start
                        if len(found) == len(wanted):
                            break
                    row += 1
                start = reader.line_num + 1
                if start > LINE_SCAN_LINES:
                    break
    except (OSError, ValueError, csv.Error):
        found = {}
    last = max(found.items(), default=(-1, 1))  # beyond the scan: one line per row from there
    return [found.get(p, last[1] + (p - last[0])) for p in positions]


def _open_text(path: str):
    """``path`` as UTF-8 text for :mod:`csv` (a BOM dropped): the builtin reader for a local
    file (4x faster than fsspec's text wrapper), fsspec for a URL."""
    if "://" not in path:
        return open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed by the caller
    import fsspec

    return fsspec.open(path, "rt", encoding="utf-8-sig", newline="")

"""Lines of a CSV written with another separator than its header (a weekly export appended to a
history after a spreadsheet's list separator changed: ``;`` in weeks 1-2, ``,`` in week 3), or
with another number of values (a week appended with a column missing).

pandas reads such a line as one value in the first column and blanks in the others (or its
values shifted into the wrong columns), so the refusal that followed named a missing release
index, a date that is not one or a blank sensitive value, never the separator or the column.
Checked on a single file of at most :data:`dpriv.csv_read.CSV_SAMPLE` bytes, as the ids are
(README, "Input types"); larger inputs are not checked.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from dpriv.errors import InputError
from dpriv.rows import MAX_ROWS_SHOWN


def _odd_lines(raw: bytes, sep: str) -> tuple[bool, bool]:
    """Whether some line of ``raw`` after the first holds (a) more than a ``\\r`` but no ``sep``
    byte, (b) some ``sep`` bytes but not as many as the first line (the header); blank lines
    aside, quoted newlines counted as line ends and quoted separators as separators:
    :func:`check_separators` parses such a file to tell them apart. Vectorised: positions of the
    line ends and of the separators, the separators counted per line."""
    data = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    if ends.size == 0:
        return False, False
    starts = np.append(0, ends + 1)  # every line, the last one up to the end of the file
    stops = np.append(ends, data.size)
    seps = np.flatnonzero(data == ord(sep))
    counts = np.searchsorted(seps, stops) - np.searchsorted(seps, starts)
    length = stops - starts - (data[np.maximum(stops - 1, 0)] == 13)
    counts = counts[1:][length[1:] > 0]  # the lines after the header, blank ones aside
    return bool((counts == 0).any()), bool(((counts > 0) & (counts != _header_count(raw, sep))).any())


def _header_count(raw: bytes, sep: str) -> int:
    """The ``sep`` bytes of the first line of ``raw`` (a quoted one counted too)."""
    first = raw.find(b"\n")
    return raw[: first if first >= 0 else len(raw)].count(sep.encode())


def check_separators(raw: bytes | None, sep: str, shown: str) -> None:
    """InputError naming the lines (header = line 1) of the CSV whose bytes are ``raw``
    (:func:`dpriv.csv_read.small_csv`) that hold one value (no ``sep``, outside quotes) while its
    header names several columns separated by ``sep``, with the separator they seem written
    with; then (:func:`_check_field_counts`) those that hold several values but not as many as
    the header names columns (a week appended with a column missing or added). Nothing for a
    file whose every line holds the header's number of ``sep`` (the usual case, found by
    :func:`_odd_lines` without parsing), a file of one column, blank lines (pandas skips them),
    or ``raw`` None (several files or a file over :data:`dpriv.csv_read.CSV_SAMPLE` bytes).
    ``shown``: the input as the user gave it."""
    if raw is None:
        return
    without, uneven = _odd_lines(raw, sep)
    if not (without or uneven):
        return  # every line holds the header's separators (the usual case: array passes, no parse)
    text = raw.decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, skipinitialspace=True)
    header = next(reader, [])
    if len(header) < 2:
        return
    bad: list[int] = []
    others: set[str] = set()
    short: list[tuple[int, int]] = []  # (line, fields) of a line of several values, not len(header)
    start = reader.line_num + 1
    for record in reader:
        if len(record) == 1 and record[0].strip():
            bad.append(start)
            others |= {c for c in ",;\t|" if c != sep and c in record[0]}
        elif len(record) > 1 and len(record) != len(header):
            short.append((start, len(record)))
        start = reader.line_num + 1
    name = {"\t": "tab"}.get(sep, repr(sep))
    if bad:
        lines = ", ".join(f"line {n}" for n in bad[:MAX_ROWS_SHOWN])
        more = f" and {len(bad) - MAX_ROWS_SHOWN} more" if len(bad) > MAX_ROWS_SHOWN else ""
        seems = f", and seem separated by {' or '.join(repr(c) for c in sorted(others))}" if others else ""
        raise InputError(
            f"{shown}: {len(bad)} line(s) hold no {name}, the separator of its header, which names "
            f"{len(header)} columns ({lines}{more} (the header is line 1)){seems}: each would be read as "
            f"one value in column {header[0].strip()!r} and blanks in the others. Was a week exported "
            f"with another separator? Write every line with {name} (export that week again, or replace "
            "its separators) and run again. Nothing was written"
        )
    _check_field_counts(short, [h.strip() for h in header], shown)


def _check_field_counts(uneven: list[tuple[int, int]], header: list[str], shown: str) -> None:
    """InputError naming the ``uneven`` lines (line, number of fields) of the CSV ``shown`` whose
    number of values is not the ``header``'s number of columns: pandas reads a shorter line's
    values into the columns from the first on, each in the wrong column from the missing one on,
    and blanks in the last ones, so the refusal that followed named a blank or a value out of
    its domain in some column, never the missing one; a longer line (a column added to a week's
    export) stopped pandas' reader, whose message named no column."""
    if not uneven:
        return
    lines = ", ".join(f"line {n} ({k} values)" for n, k in uneven[:MAX_ROWS_SHOWN])
    more = f" and {len(uneven) - MAX_ROWS_SHOWN} more" if len(uneven) > MAX_ROWS_SHOWN else ""
    fewer = "fewer" if all(k < len(header) for _, k in uneven) else "other numbers of"
    read = (
        "their values would be read into the wrong columns (a value left out moves the ones after it; "
        "one left out at the end is read as blank)"
    )
    if all(k > len(header) for _, k in uneven):  # pandas refuses these lines outright
        fewer, read = (
            "more",
            "their values fit no column of the header (a column added, or a value holding the separator "
            "without quotes)",
        )
    raise InputError(
        f"{shown}: {len(uneven)} line(s) hold {fewer} values than its header names columns "
        f"({len(header)}: {', '.join(header)}): {lines}{more} of {shown} (the header is line 1); "
        f"{read}. Was a week exported with a column missing (or one more)? "
        "Export that week again with the header's columns, in its order (or write each line's every "
        "value, an empty one as ,,), and run again. Nothing was written"
    )

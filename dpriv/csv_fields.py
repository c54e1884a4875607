"""Lines of a CSV written with another separator than its header (a weekly export appended to a
history after a spreadsheet's list separator changed: ``;`` in weeks 1-2, ``,`` in week 3).

pandas reads such a line as one value in the first column and blanks in the others, so the
refusal that followed named a missing release index or a date that is not one, never the
separator. Checked on a single file of at most :data:`dpriv.csv_read.CSV_SAMPLE` bytes, as the
ids are (README, "Input types"); larger inputs are not checked.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from dpriv.errors import InputError
from dpriv.rows import MAX_ROWS_SHOWN


def _lines_without(raw: bytes, sep: str) -> bool:
    """Whether some line of ``raw`` after the first holds more than a ``\\r`` but no ``sep``
    byte (blank lines aside; quoted newlines counted as line ends: :func:`check_separators`
    parses such a file to tell them apart). Vectorised: positions of the line ends and of the
    separators, the separators counted per line."""
    data = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    if ends.size == 0:
        return False
    starts = ends + 1  # the lines after the first, the last one up to the end of the file
    stops = np.append(ends[1:], data.size)
    seps = np.flatnonzero(data == ord(sep))
    counts = np.searchsorted(seps, stops) - np.searchsorted(seps, starts)
    length = stops - starts - (data[np.maximum(stops - 1, 0)] == 13)
    return bool(((counts == 0) & (length > 0)).any())


def check_separators(raw: bytes | None, sep: str, shown: str) -> None:
    """InputError naming the lines (header = line 1) of the CSV whose bytes are ``raw``
    (:func:`dpriv.csv_read.small_csv`) that hold one value (no ``sep``, outside quotes) while its
    header names several columns separated by ``sep``, with the separator they seem written
    with; nothing for a file whose every line holds ``sep`` (the usual case, found by
    :func:`_lines_without` without parsing), a file of one column, blank lines (pandas skips
    them), or ``raw`` None (several files or a file over :data:`dpriv.csv_read.CSV_SAMPLE` bytes).
    ``shown``: the input as the user gave it."""
    if raw is None:
        return
    if not _lines_without(raw, sep):
        return  # every line holds the separator (the usual case: two array passes, no parse)
    text = raw.decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, skipinitialspace=True)
    header = next(reader, [])
    if len(header) < 2:
        return
    bad: list[int] = []
    others: set[str] = set()
    start = reader.line_num + 1
    for record in reader:
        if len(record) == 1 and record[0].strip():
            bad.append(start)
            others |= {c for c in ",;\t|" if c != sep and c in record[0]}
        start = reader.line_num + 1
    if not bad:
        return
    lines = ", ".join(f"line {n}" for n in bad[:MAX_ROWS_SHOWN])
    more = f" and {len(bad) - MAX_ROWS_SHOWN} more" if len(bad) > MAX_ROWS_SHOWN else ""
    name = {"\t": "tab"}.get(sep, repr(sep))
    seems = f", and seem separated by {' or '.join(repr(c) for c in sorted(others))}" if others else ""
    raise InputError(
        f"{shown}: {len(bad)} line(s) hold no {name}, the separator of its header, which names "
        f"{len(header)} columns ({lines}{more} (the header is line 1)){seems}: each would be read as "
        f"one value in column {header[0].strip()!r} and blanks in the others. Was a week exported "
        f"with another separator? Write every line with {name} (export that week again, or replace "
        "its separators) and run again. Nothing was written"
    )

"""A CSV file cut off mid-line: an exporter still writing it (or one killed part-way) leaves a
last line without its newline, short of fields or with its last value cut (``hiv`` of
``hiv_1``, ``7`` of ``72``). Refused with the advice to wait for the export and run again: the
advice for a bad row of a complete file (drop or impute the row, correct the data) would, if
followed, publish a partial week for good.

Checked twice: when the file is read (:func:`check_not_cut`, a last line with fewer fields than
the header: the bytes :func:`dpriv.csv_read.small_csv` read for every check of a file up to
64 MB, else one read of the file's end) and when a row fails a check (:func:`cut_problem`, the
failing row is the last one of a file without a final newline), so that a complete file with
the same bad row keeps its own message."""

from __future__ import annotations

import csv
import io

import fsspec

from dpriv.csv_read import csv_text_lines, sniff_delimiter
from dpriv.errors import InputError

#: Bytes read from the end of a CSV file to find its last line.
TAIL = 65536


def _open(path: str, fs=None):
    """``path`` opened for reading bytes, on the file system ``fs`` (a URL's) or by fsspec."""
    return fs.open(path, "rb") if fs is not None else fsspec.open(path, "rb").open()


def unfinished_line(path: str, fs=None, raw: bytes | None = None) -> str | None:
    """The last line of the CSV file ``path`` (text, UTF-8) when the file does not end with a
    newline, else None (also for an empty file, a last line longer than :data:`TAIL` bytes, a
    last line inside a quoted value: its fields cannot be told from its end, and a file that
    cannot be read again). ``raw``: the file's bytes when they were read already
    (:func:`dpriv.csv_read.small_csv`), else its end is read."""
    if raw is not None:
        size, tail = len(raw), raw[max(0, len(raw) - TAIL) :]
    else:
        try:
            with _open(path, fs) as fh:
                size = fh.seek(0, 2)
                fh.seek(max(0, size - TAIL))
                tail = fh.read()
        except (OSError, ValueError):  # not to be read again (gone, a stream): the check is moot
            return None
    if not tail or tail.endswith((b"\n", b"\r")):
        return None
    cut = max(tail.rfind(b"\n"), tail.rfind(b"\r"))
    if cut < 0 and size > len(tail):
        return None
    last = tail[cut + 1 :].decode("utf-8", errors="replace")
    return None if last.count('"') % 2 else last


def _line_count(path: str, fs=None, raw: bytes | None = None) -> int:
    """Lines of ``path`` as :func:`dpriv.rows.csv_lines` counts them
    (:func:`dpriv.csv_read.csv_text_lines`: an export with lone ``\\r`` line ends was one line),
    the last line, which has no newline, included. One read of the file (none given its bytes
    ``raw``), only when a cut-off file is refused."""
    with io.BytesIO(raw) if raw is not None else _open(path, fs) as fh:
        return sum(1 for _ in csv_text_lines(fh))


def _row_count(path: str) -> int:
    """Data rows of the CSV file ``path`` as the reader counts them (blank lines skipped, a
    quoted value over several lines one row): the whole file parsed (~5 s per 10^6 lines), only
    when a file beyond :data:`dpriv.rows.LINE_SCAN_LINES` lines is refused, where
    :func:`dpriv.rows.csv_lines` estimates one line per row."""
    with _open(path) as fh:
        records = csv.reader(csv_text_lines(fh), delimiter=sniff_delimiter(path))
        return sum(1 for record in records if record) - 1


def cut_message(path: str, line: int, why: str) -> str:
    """The refusal of ``path`` whose last line (``line``, 1-based) has no newline and ``why``."""
    return (
        f"{path} seems cut off mid-line: its last line (line {line}) has no newline at its end and "
        f"{why}; the file may still be being written (an export not finished yet): wait for the "
        "export to finish (or export the file again) and run again. Nothing was written"
    )


def check_not_cut(path: str, sep: str, header: int, fs=None, raw: bytes | None = None) -> None:
    """InputError when the CSV file ``path`` (delimiter ``sep``, ``header`` columns) ends
    without a newline on a line of fewer fields than the header: the rest of the line, and of
    the file, may be still to come. ``raw``: its bytes if read already (else its end is read)."""
    last = unfinished_line(path, fs, raw)
    if last is None or not last.strip():
        return
    fields = next(csv.reader([last], delimiter=sep), [])
    if len(fields) < header:
        why = f"holds {len(fields)} of the header's {header} fields"
        raise InputError(cut_message(path, _line_count(path, fs, raw), why))


def cut_problem(path: str, rows: list[tuple[int, str]]) -> str | None:
    """The refusal of the CSV file ``path`` when its last line has no newline and holds one of
    ``rows`` (the rows that failed a check: their 0-based data-row position and the column
    checked), else None: a value cut short fails a check (``hiv`` outside the domain, ``7``
    below the range) though its line has every field."""
    if not rows or unfinished_line(path) is None:
        return None
    import dpriv.rows  # not at the top: dpriv.rows imports this module

    position = max(p for p, _ in rows)
    last = _line_count(path)
    if dpriv.rows.csv_lines(path, [position])[0] != last and (
        last <= dpriv.rows.LINE_SCAN_LINES or position != _row_count(path) - 1
    ):
        return None
    names = ", ".join(repr(c) for c in dict.fromkeys(c for p, c in rows if p == position))
    return cut_message(path, last, f"its row fails the checks of column(s) {names}")

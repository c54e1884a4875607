"""Reading a CSV safely: its delimiter and decimal mark, and the checks whose failure would
otherwise be silent or a reader's cryptic error (a file that is not UTF-8, a header naming a
column twice, a quote that never closes, ids written two ways that read as one number).
:func:`dpriv.io.read_table` calls them."""

from __future__ import annotations

import csv
import io
import re

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv as arrow_csv

from dpriv.errors import InputError
from dpriv.foreign_input import foreign_message

#: Bytes of a CSV read to infer its column types: a column with text far down the file (e.g. a
#: '*' in row 50,000 of a numeric column) would otherwise fail in the middle of the computation.
CSV_SAMPLE = 64_000_000


def csv_text_lines(fh) -> io.TextIOWrapper:
    """The binary file ``fh`` as text whose lines are those :mod:`csv` reads from a file opened
    with ``newline=""`` (the reader's ``line_num``, :func:`dpriv.rows.csv_lines`): a line ends at
    ``\\n``, ``\\r\\n`` or a lone ``\\r`` (an old Mac export), inside a quoted value too. Every
    message naming a line of a CSV file counts them so. UTF-8, a bad byte replaced: naming it is
    :func:`_text_sample`'s job."""
    return io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")


def _text_sample(path: str, size: int = 65536) -> str:
    """The first ``size`` bytes of ``path`` as UTF-8 text (a leading BOM removed).

    Raises InputError when they are not UTF-8 (e.g. a Latin-1 export), naming the byte, its
    line and the fix, and for a file of another format (:mod:`dpriv.foreign_input`)."""
    with fsspec.open(path, "rb") as fh:
        raw = fh.read(size)
    if foreign := foreign_message(raw, path):  # gzip, a workbook, JSON...: named, not read as text
        raise InputError(foreign)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start >= len(raw) - 3 and exc.reason == "unexpected end of data":
            return raw[: exc.start].decode("utf-8-sig")  # a character cut by the sample's end
        ends = (x for x in csv_text_lines(io.BytesIO(raw[: exc.start])) if x.endswith(("\n", "\r")))
        line = sum(1 for _ in ends) + 1
        raise InputError(
            f"cannot read {path}: it is not UTF-8 (byte 0x{raw[exc.start]:02x} on line {line}); "
            "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8), or save it as Parquet"
        ) from None


def sniff_delimiter(path: str) -> str:
    """Delimiter of a CSV file from its first 64 KiB (``,``, ``;``, tab or ``|``).

    Raises InputError for an empty file, a file that is not UTF-8 and a header that names
    a column twice (pandas would silently rename the copy ``age.1``)."""
    sample = _text_sample(path)
    if not sample.strip():
        raise InputError(f"{path} is empty: there is no header and no row to read")
    first = sample.splitlines()[0]
    try:
        sep = csv.Sniffer().sniff(first, delimiters=",;\t|").delimiter
    except csv.Error:
        sep = ","
    sep = _decimal_comma_separator(first, sep)
    header = next(csv.reader([first], delimiter=sep, skipinitialspace=True))
    names = [h.strip() for h in header]
    _refuse_data_as_header(path, names, sep)
    dup = sorted({h for h in names if names.count(h) > 1})
    if dup:
        where = {h: [i + 1 for i, x in enumerate(names) if x == h] for h in dup}
        raise InputError(
            f"the header of {path} names the column(s) {dup} more than once (positions {where}); "
            "rename or drop the copies so that each column name is unique"
        )
    return sep


_DECIMAL_COMMA = re.compile(r"^\s*-?\d+,\d+\s*$")


def _refuse_data_as_header(path: str, names: list[str], sep: str) -> None:
    """InputError when a field of the first line of ``path`` (``names``, cut at ``sep``) is a
    number with a decimal comma: no header names a column so, so the file has no header row, and
    read as one its first tuple would become the column names (every column then "missing")."""
    numbers = [n for n in names if _DECIMAL_COMMA.match(n)]
    if not numbers:
        return
    shown = "tab" if sep == "\t" else repr(sep)
    raise InputError(
        f"the first line of {path} holds {numbers[0]!r}, a number with a decimal comma, where a header "
        f"names the columns: the file has no header row, and dpriv reads a CSV's columns by their "
        f"names; add a first line naming them, separated by {shown} as the rows are (e.g. "
        f"id{sep}age{sep}weight{sep}diagnosis, the names --id/--qi/--sensitive or the policy give), "
        "then run again"
    )


def _decimal_comma_separator(line: str, sep: str) -> str:
    """``sep`` as sniffed from a CSV's first ``line``, unless it is ``,`` and the line, cut at a
    ``;`` (tab, ``|``) it also holds, has a field that is a number with a decimal comma (``45,5``):
    then that separator. A header never holds such a field, but the first line of a file without
    one does (``1;45,5;2``, a European export), where the sniffer prefers ``,`` and cut the line
    into ``1;45`` and ``5;2``."""
    if sep != ",":
        return sep
    for other in ";\t|":
        fields = next(csv.reader([line], delimiter=other), []) if other in line else []
        if len(fields) > 1 and any(_DECIMAL_COMMA.match(f) for f in fields):
            return other
    return sep


def decimal_mark(path: str, sep: str) -> str:
    """``","`` for a ``;``- (or tab-/pipe-) separated file whose fields hold decimal commas
    (``72,5``, the usual export of a European spreadsheet), else ``"."``."""
    if sep == ",":
        return "."
    lines = _text_sample(path).splitlines()[1:200]
    fields = [f for line in lines for f in next(csv.reader([line], delimiter=sep), [])]
    return "," if any(_DECIMAL_COMMA.match(f) for f in fields) else "."


def unclosed_quote(fs, path: str) -> int | None:
    """The line (1-based) of a CSV where a quoted value opens and never closes, else None
    (a doubled ``""`` inside a quoted value is an escaped quote; a value may span lines)."""
    opened = None
    with fs.open(path, "rb") as fh:
        for number, line in enumerate(csv_text_lines(fh), start=1):
            if line.count('"') % 2:
                opened = number if opened is None else None
    return opened


def small_csv(fs, paths: list[str]) -> bytes | None:
    """The bytes of a CSV input that is a single file of at most :data:`CSV_SAMPLE` bytes, else
    None (larger inputs are not checked whole: README, "Input types"). Read once for the checks
    that read the whole file (:func:`dpriv.cut_csv.check_not_cut`,
    :func:`dpriv.csv_fields.check_separators`, :func:`check_id_texts`), which each opened and
    read it before. Raises OSError as ``fs.open`` does."""
    if len(paths) != 1 or fs.size(paths[0]) > CSV_SAMPLE:
        return None
    with fs.open(paths[0], "rb") as fh:
        return fh.read()


def check_id_texts(raw: bytes | None, sep: str, id_column: str, shown: str) -> None:
    """InputError when the CSV's id column holds two texts that read as one number (``00012``
    and ``12``, ``1E5`` and ``1e5``): read as numbers, they would be one respondent across the
    views. ``raw``: the file's bytes (:func:`small_csv`), its id column parsed again as text by
    pyarrow; None (a larger input) is not checked (README, "Input types")."""
    if raw is None:
        return
    try:
        only_ids = {"include_columns": [id_column], "column_types": {id_column: pa.string()}}
        ids = arrow_csv.read_csv(
            pa.BufferReader(raw),
            parse_options=arrow_csv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=arrow_csv.ConvertOptions(**only_ids),
        ).column(0)
    except (pa.ArrowException, OSError):  # the read itself names what is wrong with the file
        return
    ids = pc.utf8_trim_whitespace(ids.combine_chunks()).drop_null()
    plain = pc.match_substring_regex(ids, r"^-?(?:0|[1-9][0-9]{0,17})$")  # one text per number
    others = pd.Series(pd.unique(pc.filter(ids, pc.invert(plain)).to_numpy(zero_copy_only=False)))
    if others.empty:
        return
    numbers = pd.to_numeric(others, errors="coerce")
    canonical = pc.cast(pc.filter(ids, plain), pa.int64()).to_numpy()
    twice = numbers.notna() & numbers.duplicated(keep=False)
    known = numbers.notna() & np.isin(numbers.to_numpy(dtype=float, na_value=np.nan), canonical)
    if not (twice.any() or known.any()):
        return
    number = numbers[twice | known].iloc[0]
    pair = others[numbers == number].tolist() + [f"{number:.0f}"]  # a plain id last
    raise InputError(
        f"id column {id_column!r} of {shown} holds {pair[0]!r} and {pair[1]!r}, which read as the same "
        f"number ({number:g}): a CSV's ids are read as numbers, so the two would be one respondent; "
        "write each id one way (e.g. all with or all without leading zeros), or give the history as "
        "Parquet with the id column as text"
    )

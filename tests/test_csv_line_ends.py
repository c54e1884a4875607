"""A CSV file's lines named in a message are counted as the csv reader counts them (dpriv.rows.csv_lines,
which names a bad row's line): a line ends at \n, \r\n or a lone \r (an old Mac export; pandas reads
it so). The not-UTF-8 byte and the quote never closed were placed by counting \n alone: in a file of
lone \r line ends, always "line 1". Both messages now name the line a bad row's message would."""

import pytest
from test_cli import assert_refused
from typer.testing import CliRunner

from dpriv.cli import app

ARGS = ["--qi", "age,sex", "--sensitive", "disease", "--k", "2", "--t", "0.9", "--j", "5", "--no-cluster"]
LINES = [
    "respondent_id,age,sex,disease",
    "1,31,F,flu_a",
    '2,32,"F\nM",flu_a',  # a quoted value over two lines (lines 3 and 4)
    "3,33,F,cold_b",
    "4,34,M,flu_a",
    "5,35,F,cold_b",
]
ENDS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


def refused(tmp_path, lines: list[str], end: str, *patterns: str) -> str:
    src = tmp_path / "in.csv"
    src.write_bytes(end.join(lines).encode("latin-1") + end.encode())
    res = CliRunner().invoke(app, ["anonymize", str(src), "--out", str(tmp_path / "o.csv"), *ARGS])
    out = assert_refused(res, *patterns)
    assert not (tmp_path / "o.csv").exists()
    return out


@pytest.mark.parametrize("end", ENDS)
def test_a_byte_that_is_not_utf8_is_placed_on_its_line(tmp_path, end):
    lines = [x.replace("\n", ENDS[end]) for x in LINES]
    lines[4] = "4,34,M,flu_\xe9"  # latin-1: line 6 (the quoted value spans lines 3 and 4)
    refused(tmp_path, lines, ENDS[end], r"it is not UTF-8 \(byte 0xe9 on line 6\)")


@pytest.mark.parametrize("end", ENDS)
def test_a_quote_never_closed_is_placed_on_its_line(tmp_path, end):
    lines = [x.replace("\n", ENDS[end]) for x in LINES]
    lines[4] = '4,34,M,"flu_a'  # line 6 opens a quoted value no line closes
    refused(tmp_path, lines, ENDS[end], r"line 6 opens a quoted value \(\"\) that is never closed")


@pytest.mark.parametrize("end", ENDS)
def test_a_bad_row_is_named_on_the_same_line(tmp_path, end):
    """The line the two messages above name is the one a bad row's message names."""
    lines = [x.replace("\n", ENDS[end]) for x in LINES]
    lines[4] = "4,,M,flu_a"  # a missing age on line 6
    refused(tmp_path, lines, ENDS[end], r"column 'age' has missing values", r"line 6 of .*in\.csv")

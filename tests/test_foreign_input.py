"""An input that is no CSV text is refused by what it is (s46 drill): a gzipped CSV was told to
be converted with ``iconv -f latin1``, a JSON export got a "column named twice" message listing
hundreds of made-up columns, the policy file given as the input a tokenizer's error."""

import gzip
import io
import zipfile

import pandas as pd
import pytest
from test_cli import assert_refused
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.foreign_input import foreign_kind

ARGS = ["--qi", "age,sex", "--sensitive", "disease", "--k", "2", "--t", "0.9", "--j", "5", "--no-cluster"]
FRAME = pd.DataFrame(
    {
        "respondent_id": [1, 2, 3, 4],
        "age": [31, 32, 33, 34],
        "sex": ["F", "M", "F", "M"],
        "disease": ["flu", "cold", "flu", "cold"],
    }
)
CSV = FRAME.to_csv(index=False).encode()


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("history.csv", CSV)
    return buf.getvalue()


def _feather() -> bytes:
    buf = io.BytesIO()
    FRAME.to_feather(buf)
    return buf.getvalue()


# (file name, its bytes, what the message must say it is, a word of the fix)
CASES = {
    "gzip": ("h.csv.gz", gzip.compress(CSV), "it is gzip-compressed", "gunzip -k"),
    "zip": ("h.xlsx", _zip(), "it is a ZIP archive (an Excel .xlsx", "save the sheet as 'CSV UTF-8'"),
    "feather": ("h.feather", _feather(), "it is an Arrow IPC / Feather file", "read_feather"),
    "utf16": ("h.txt", CSV.decode().encode("utf-16"), "it is UTF-16 text", "iconv -f utf-16 -t utf-8"),
    "json": ("h.json", FRAME.to_json().encode(), "it is JSON, not CSV", "read_json"),
    "records": ("h.csv", FRAME.to_json(orient="records").encode(), "it is JSON, not CSV", "read_json"),
    "policy": ("p.toml", b'[columns]\nqi = ["age"]\n', "it is a TOML policy file", "--policy"),
    "policy-as-csv": ("p.csv", b'# mine\n[columns]\nqi = ["age"]\n', "it is a TOML policy file", "--policy"),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_a_file_of_another_format_is_named_with_its_fix(tmp_path, kind):
    name, data, what, fix = CASES[kind]
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / "o.csv"
    res = CliRunner().invoke(app, ["anonymize", str(src), "--out", str(out), *ARGS])
    msg = assert_refused(res)
    assert f"cannot read {src}: {what}" in msg, msg
    assert fix in msg and "Nothing was written" in msg, msg
    assert "iconv -f latin1" not in msg and "more than once" not in msg, msg
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize(
    "head",
    [
        CSV,
        b"\xef\xbb\xbf" + CSV,  # Excel's UTF-8 BOM
        b"[id],[age],[sex]\n1,31,F\n",  # SQL Server's bracketed names
        b"ORCID,age\n0000-0001,31\n",
        b"PK,age\n1,31\n",  # a column named PK (primary key)
        b"columns,privacy\n1,2\n",
        "âge;poids\n31;72,5\n".encode("latin-1"),  # not UTF-8: the CSV reader names the byte
    ],
)
def test_a_csv_is_not_taken_for_another_format(head):
    assert foreign_kind(head, "h.csv") is None


def test_bzip2_and_xz_are_named():
    import bz2
    import lzma

    assert foreign_kind(bz2.compress(CSV), "h.csv.bz2")[0] == "bzip2-compressed"
    assert foreign_kind(lzma.compress(CSV), "h.csv.xz")[0] == "xz-compressed"

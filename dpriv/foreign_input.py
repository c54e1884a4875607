"""An input that is no CSV (nor Parquet) told by what it is, with the fix for that kind of file.

dpriv reads a table from a Parquet file (told by suffix or content) and from anything else as
CSV. A new user's drill (s46) gave it a gzipped CSV (``history.csv.gz``), an Excel workbook, a
Feather file, a JSON export and, arguments swapped, the policy file itself: each was refused in
a CSV reader's words: "it is not UTF-8 (byte 0x8b on line 1); convert the file to UTF-8 (e.g.
iconv -f latin1 -t utf-8)", advice that cannot work on a compressed file, or "the header names the
column(s) ['100:1', '101:1', ...] more than once" for a JSON file. :func:`foreign_kind` reads the
first bytes of the file (the formats' magic numbers, then the text's first line) and
:func:`csv_read._text_sample` refuses such a file before any CSV check, naming the format.

Sources of the magic numbers: gzip RFC 1952 §2.3.1 (1f 8b); bzip2 ("BZh" + level + the block
magic 31 41 59 26 53 59); xz file format §2.1.1.1 (fd 37 7a 58 5a 00); zstd RFC 8878 §3.1.1
(28 b5 2f fd); ZIP APPNOTE §4.3.7 (local file header 50 4b 03 04, empty archive 50 4b 05 06),
the container of .xlsx/.ods; the OLE2 compound file of .xls (d0 cf 11 e0 a1 b1 1a e1); Arrow
IPC file / Feather v2 ("ARROW1" and two bytes of padding); SQLite ("SQLite format 3\\0"); the
UTF-16 byte order marks (ff fe, fe ff) of Excel's "Unicode Text" export.
"""

from __future__ import annotations

import re

#: Leading bytes of a file format that is no CSV text, and the words that name it.
MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed", "decompress it first (gunzip -k FILE) and give the .csv file it holds"),
    (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first (unxz -k FILE) and give the .csv file it holds"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first (unzstd FILE) and give the .csv file"),
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx or OpenDocument .ods workbook is one)", "_zip"),
    (b"PK\x05\x06", "an empty ZIP archive", "_zip"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel workbook (.xls, an OLE2 compound file)", "_sheet"),
    (b"ARROW1\x00\x00", "an Arrow IPC / Feather file", "_arrow"),
    (b"SQLite format 3\x00", "an SQLite database", "export the table to CSV (UTF-8) or Parquet"),
    (b"\xff\xfe", "UTF-16 text (Excel's 'Unicode Text' export)", "_utf16"),
    (b"\xfe\xff", "UTF-16 text", "_utf16"),
)
_FIXES = {
    "_zip": "unzip it and give the CSV file it holds, or, for a workbook, save the sheet as 'CSV UTF-8' "
    "(or read it with pandas.read_excel and write it with to_parquet)",
    "_sheet": "save the sheet as 'CSV UTF-8' (or read it with pandas.read_excel and write it with "
    "to_parquet)",
    "_arrow": "write it as Parquet (pandas.read_feather('FILE').to_parquet('history.parquet'))",
    "_utf16": "save it as 'CSV UTF-8', or convert it (iconv -f utf-16 -t utf-8 FILE > FILE.csv)",
}
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY", re.S)
#: A JSON document's start: an object, or an array of objects, arrays, strings or numbers (a CSV
#: header such as SQL Server's ``[id],[age]`` starts with '[' and a letter: not JSON).
_JSON = re.compile(r"\s*(\{|\[\s*(\{|\[|\"|-?\d|\]))")
#: The tables of a policy file (dpriv.policy_file.TABLES): a first line ``[columns]`` is a policy.
_POLICY_TABLE = re.compile(r"\[(columns|privacy|release|domains|kinds|knowledge|hierarchies)\]\s*(#.*)?")


def foreign_kind(raw: bytes, path: str) -> tuple[str, str] | None:
    """What the file ``path`` whose first bytes are ``raw`` is, and what to do, when it is no
    CSV text: ``("gzip-compressed", "decompress it first ...")``; None for anything a CSV
    reader should read (its own checks then name what is wrong)."""
    for magic, what, fix in MAGIC:
        if raw.startswith(magic):
            return what, _FIXES.get(fix, fix).replace("FILE", path)
    if _BZIP2.match(raw[:10]):
        return "bzip2-compressed", f"decompress it first (bunzip2 -k {path}) and give the .csv file it holds"
    text = raw[:4096].decode("utf-8", errors="replace").lstrip("\ufeff")
    first = next((x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#")), "")
    if path.lower().endswith(".toml") or _POLICY_TABLE.fullmatch(first):
        return (
            "a TOML policy file, not a table",
            "give the history (or view) as the input and the policy with --policy",
        )
    if _JSON.match(text):
        fix = f"write the table as CSV (UTF-8) or Parquet (pandas.read_json({path!r}).to_parquet(...))"
        return "JSON, not CSV", fix
    return None


def foreign_message(raw: bytes, path: str) -> str | None:
    """The one-line refusal of a file :func:`foreign_kind` recognises, else None."""
    found = foreign_kind(raw, path)
    if found is None:
        return None
    what, fix = found
    return (
        f"cannot read {path}: it is {what}; dpriv reads a table from a CSV file (UTF-8 text) or a "
        f"Parquet file or folder: {fix}. Nothing was written"
    )

"""A single CSV input of at most 64 MB is read whole once by the checks before a release
(dpriv.csv_read.small_csv): the cut-off last line (dpriv/cut_csv.py), the lines without the
header's separator (dpriv/csv_fields.py) and the ids written two ways (pyarrow, csv_read.py)
each opened and read it before, 3 reads of the file.

The spy counts the files dpriv's own functions open (not Dask's reads of its sample and blocks)
and the bytes read from each handle; the reads of the file's head (its 64 KiB sample for the
delimiter, its 4 magic bytes for Parquet) are counted apart."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from fsspec.implementations.local import LocalFileSystem

from dpriv.errors import InputError
from dpriv.io import read_table

HEAD = ("_text_sample", "is_parquet")  # the delimiter's 64 KiB sample, Parquet's 4 magic bytes


def _caller() -> str | None:
    """The dpriv function that opened a file, None when another library (Dask) did."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("fsspec"):
        frame = frame.f_back
    if frame is None or not frame.f_globals.get("__name__", "").startswith("dpriv"):
        return None
    return frame.f_code.co_name


def read_spy(monkeypatch, name: str) -> list[list]:
    """Per opening of file ``name`` by dpriv: [function, bytes read from the handle]."""
    opened: list[list] = []
    real_open = LocalFileSystem._open

    def spying_open(self, path, mode="rb", *args, **kwargs):
        handle = real_open(self, path, mode, *args, **kwargs)
        who = _caller()
        if Path(str(path)).name != name or who is None:
            return handle
        entry = [who, 0]
        opened.append(entry)
        real_read = handle.read

        def read(*a, **k):
            data = real_read(*a, **k)
            entry[1] += len(data)
            return data

        handle.read = read
        return handle

    monkeypatch.setattr(LocalFileSystem, "_open", spying_open)
    return opened


def _write(path: Path, n: int, last: str = "") -> int:
    rows = pd.DataFrame({"respondent_id": range(n), "age": 45 + pd.Series(range(n)) % 30, "s": "flu"})
    path.write_text(rows.to_csv(index=False) + last)
    return path.stat().st_size


def test_a_small_csv_is_read_whole_once_by_the_checks(tmp_path, monkeypatch):
    size = _write(tmp_path / "h.csv", 20_000)  # ~300 KB: more than the 64 KiB end read before
    opened = read_spy(monkeypatch, "h.csv")
    frame = read_table(str(tmp_path / "h.csv"), id_column="respondent_id")
    assert list(frame.columns) == ["respondent_id", "age", "s"]
    checks = [(who, n) for who, n in opened if who not in HEAD]
    assert checks == [("small_csv", size)]  # before: the end, then the whole file twice
    assert sum(n for who, n in opened if who in HEAD) <= 65536 + 4


def test_the_three_checks_still_refuse_from_the_one_read(tmp_path, monkeypatch):
    cut = tmp_path / "cut.csv"
    _write(cut, 5_000, last="5000,4")  # the last line without its newline, short of a field
    ids = tmp_path / "ids.csv"
    _write(ids, 5_000, last="00012,50,flu\n")  # 00012 and 12: one number
    seps = tmp_path / "seps.csv"
    _write(seps, 5_000, last="5000;50;flu\n")
    opened = read_spy(monkeypatch, "cut.csv")
    with pytest.raises(InputError, match=r"cut\.csv seems cut off mid-line: its last line \(line 5002\)"):
        read_table(str(cut), id_column="respondent_id")
    assert [who for who, _ in opened if who not in HEAD] == ["small_csv"]  # the line count too
    with pytest.raises(InputError, match="holds '00012' and '12', which read as the same number"):
        read_table(str(ids), id_column="respondent_id")
    with pytest.raises(
        InputError, match=r"1 line\(s\) hold no ',', .* \(line 5002 \(the header is line 1\)\)"
    ):
        read_table(str(seps), id_column="respondent_id")

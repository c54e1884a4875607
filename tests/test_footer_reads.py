"""Each Parquet file's footer is read once before a release (dpriv/footer_reads.py): the checks
(the folder's footers, its stored index, its rows, a file lacking a column, the footer survey of
the partitions' types) share one read per file, in ``release_history`` and in ``dpriv release``.

The spy counts ``pyarrow.parquet.read_metadata`` calls made from dpriv's own modules, per file,
up to the first view's release; before, ``check_parts`` read each file once per ``ReadParquet``
operation of the history's graph and the footer survey once more (``dpriv release``: the read's
index and footer checks and the size count, 3 reads a file)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import dpriv.release as release_mod
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}
FILES = ["part.0.parquet", "part.1.parquet", "part.2.parquet"]


@pytest.fixture(scope="module")
def weeks(tmp_path_factory) -> tuple[Path, Path]:
    """A generated 3-view history and its policy in ``out``, and ``out/weeks``: one Parquet file
    per view (``part.<view - 1>.parquet``)."""
    out = tmp_path_factory.mktemp("footers")
    write_history(out, medical_history(n_views=3, view_size=60, seed=3), policy_extra=LOOSE)
    hist = pd.read_parquet(out / "history.parquet")
    (out / "weeks").mkdir()
    for i in (1, 2, 3):
        hist[hist["view"] == i].to_parquet(out / "weeks" / f"part.{i - 1}.parquet", index=False)
    return out, out / "weeks"


class _LoopReached(Exception):
    """Raised where the first view's release would begin: the checks are over (and no kernel
    is compiled)."""


def footer_spy(monkeypatch) -> Counter:
    """Counts of the footers dpriv reads, by file name, up to the first view's release (which
    raises :class:`_LoopReached`)."""
    seen = Counter()
    real = pq.read_metadata

    def counting(where, *args, **kwargs):
        if sys._getframe(1).f_globals.get("__name__", "").startswith("dpriv"):
            seen[Path(str(getattr(where, "path", where))).name] += 1
        return real(where, *args, **kwargs)

    def first(*args, **kwargs):
        raise _LoopReached

    monkeypatch.setattr(pq, "read_metadata", counting)
    monkeypatch.setattr(release_mod, "_release_one", first)
    return seen


def test_release_history_of_a_parquet_folder_reads_each_footer_once_before_its_loop(
    weeks, tmp_path, monkeypatch
):
    out, folder = weeks
    seen = footer_spy(monkeypatch)
    with pytest.raises(_LoopReached):
        release_history(dd.read_parquet(folder), ReleasePolicy.from_toml(out / "policy.toml"), tmp_path / "L")
    assert seen == Counter(dict.fromkeys(FILES, 1))


def test_dpriv_release_of_a_parquet_folder_reads_each_footer_once_before_its_loop(
    weeks, tmp_path, monkeypatch
):
    from dpriv.cli import app

    out, folder = weeks
    seen = footer_spy(monkeypatch)
    args = ["release", str(folder), "--ledger", str(tmp_path / "L"), "--policy", str(out / "policy.toml")]
    res = CliRunner().invoke(app, [*args, "--no-cluster"])
    assert "internal error: _LoopReached" in res.output, res.output  # the command's own words for it
    assert seen == Counter(dict.fromkeys(FILES, 1))


def test_a_missing_column_is_refused_in_the_same_words_once_read(weeks, tmp_path):
    """A later week's file without ``weight``: check_parts' message (names both files), from
    the footers read once, and no ledger left behind."""
    out, folder = weeks
    d = tmp_path / "weeks"
    d.mkdir()
    for name in FILES:
        frame = pd.read_parquet(folder / name)
        frame = frame.drop(columns="weight") if name == FILES[2] else frame
        frame.to_parquet(d / name, index=False)
    from dpriv.errors import InputError

    with pytest.raises(InputError) as exc:
        release_history(dd.read_parquet(d), ReleasePolicy.from_toml(out / "policy.toml"), tmp_path / "L")
    said = f"{d} holds Parquet files of different tables: {d}/{FILES[2]} has columns"
    assert str(exc.value).startswith(said)
    assert not (tmp_path / "L").exists()


def test_a_scope_reads_a_footer_once_and_a_later_scope_reads_the_file_afresh(tmp_path):
    """Inside one scope the second ask is the first read; a file replaced between two scopes
    (a command, then the next) is read again: its new row count, not the kept one."""
    import fsspec

    from dpriv.footer_reads import footer, footers_read_once, reads_in_scope

    fs = fsspec.filesystem("file")
    path = str(tmp_path / "one.parquet")
    pd.DataFrame({"a": range(3)}).to_parquet(path)
    with footers_read_once():
        first = footer(fs, path)
        with footers_read_once():  # a nested scope (read_table inside dpriv release) shares it
            assert footer(fs, path) is first
        assert reads_in_scope() == 1
    assert first.num_rows == 3
    pd.DataFrame({"a": range(5)}).to_parquet(path)
    assert reads_in_scope() is None
    assert footer(fs, path).num_rows == 5  # no scope: read now
    with footers_read_once():
        assert footer(fs, path).num_rows == 5


def test_a_one_view_parquet_history_is_read_once_before_its_loop(weeks, tmp_path, monkeypatch):
    """Its footers say one view (the time column's statistics: one value, no null), so it is
    persisted before its time column is checked: each file's rows are read once (the Parquet
    engine's ``read_partition``, Dask's synchronous scheduler here), not once for the time column
    and again for the persist."""
    from dask.dataframe.io.parquet.arrow import ArrowDatasetEngine

    out, folder = weeks
    d = tmp_path / "one"
    d.mkdir()
    view = pd.read_parquet(folder / FILES[0])  # view 1: 60 tuples, 3 files of 20
    for i, name in enumerate(FILES):
        view.iloc[i::3].to_parquet(d / name, index=False)
    reads = Counter()
    real = ArrowDatasetEngine.read_partition

    def counting(cls, fs, pieces, *args, **kwargs):
        one = isinstance(pieces, str) or (isinstance(pieces, tuple) and isinstance(pieces[0], str))
        for piece in [pieces] if one else pieces:  # a piece: a path, or (path, row groups, keys)
            reads[Path(str(piece if isinstance(piece, str) else piece[0])).name] += 1
        return real(fs, pieces, *args, **kwargs)

    monkeypatch.setattr(ArrowDatasetEngine, "read_partition", classmethod(counting))
    footer_spy(monkeypatch)
    with dask.config.set(scheduler="sync"), pytest.raises(_LoopReached):
        release_history(dd.read_parquet(d), ReleasePolicy.from_toml(out / "policy.toml"), tmp_path / "L")
    assert reads == Counter(dict.fromkeys(FILES, 1))


def test_one_value_is_told_only_by_statistics_of_one_value(tmp_path):
    """The footers' answer against the values: one value without null (True), two values, a
    null, statistics not written (False)."""
    from dpriv.part_footers import one_value

    cases = {
        "one": ([3, 3, 3, 3], {}, True),
        "two": ([3, 3, 4, 3], {}, False),
        "null": ([3.0, None, 3.0, 3.0], {}, False),
        "unwritten": ([3, 3, 3, 3], {"write_statistics": False}, False),
    }
    for name, (values, options, told) in cases.items():
        d = tmp_path / name
        d.mkdir()
        frame = pd.DataFrame({"view": values, "x": range(4)})
        for i in (0, 1):
            frame.iloc[2 * i : 2 * i + 2].to_parquet(d / f"part.{i}.parquet", index=False, **options)
        assert one_value(dd.read_parquet(d), "view") is told, name

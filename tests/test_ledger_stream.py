"""Streaming Parquet writes of the ledger (:func:`dpriv.io.write_parquet`).

A view or state may be a Dask DataFrame: it is written partition by partition into one
Parquet file with fixed-size row groups, so its bytes depend only on the rows (and dtypes),
not on the partitioning; ``_``-prefixed helper columns never reach ``view.parquet``; a failure
in the middle of the stream leaves no file, no temp file and the manifest as it was.
"""

from __future__ import annotations

import json
import re
import stat

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from dpriv.io import write_parquet
from dpriv.ledger import Ledger
from dpriv.released import text_as_object

R = 4  # a small row group size, so that a few dozen rows make several row groups
N = 23  # 5 full row groups of R rows and a last one of 3


def frame(n: int = N) -> pd.DataFrame:
    """n rows of the dtypes a ledger holds: int64 ids, uint64 hashes (above 2**63), float64
    posteriors (with NaN), object strings (with a missing value)."""
    rng = np.random.default_rng(7)
    strings = [f"s{i % 5}" for i in range(n)]
    if n > 3:
        strings[3] = None
    floats = rng.random(n)
    if n > 5:
        floats[5] = np.nan
    return pd.DataFrame(
        {
            "id": np.arange(n, dtype="int64") * 11 - 40,
            "hash": np.uint64(2**63) + np.arange(n, dtype="uint64") * np.uint64(977),
            "p": floats,
            "s": pd.Series(strings, dtype=object),
        }
    )


def dask_frame(df: pd.DataFrame, cuts: list[int]) -> dd.DataFrame:
    """``df`` as a Dask DataFrame whose partitions are ``df[cuts[k]:cuts[k+1]]`` (empty where
    two cuts are equal), with the pandas index of each slice (never written)."""
    bounds = [0, *cuts, len(df)]
    parts = [df.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    return dd.from_delayed([dask.delayed(p) for p in parts], meta=df.iloc[:0])


def failing_dask_frame(df: pd.DataFrame, fail_at: int, computed: list[int]) -> dd.DataFrame:
    """``df`` in 4 partitions; computing partition ``fail_at`` raises. ``computed`` records the
    partitions computed, in order."""
    bounds = np.linspace(0, len(df), 5).astype(int)

    def part(k: int) -> pd.DataFrame:
        computed.append(k)
        if k == fail_at:
            raise RuntimeError(f"partition {k} failed")
        return df.iloc[bounds[k] : bounds[k + 1]]

    return dd.from_delayed([dask.delayed(part)(k) for k in range(4)], meta=df.iloc[:0])


# 1, 3 and 7 partitions; the 7 include empty ones at the start, the middle and the end, and
# cuts that fall inside and on the boundaries of row groups
CUTS = {1: [], 3: [9, 10], 7: [0, 0, 4, 11, 11, N]}


def row_groups(path) -> list[int]:
    meta = pq.ParquetFile(path).metadata
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def no_temp_files(folder) -> bool:
    return not [p for p in folder.rglob(".*")]


# -- bytes independent of partitioning ----------------------------------------------------


def test_same_bytes_for_pandas_and_any_dask_partitioning(tmp_path, object_strings):
    df = frame()
    write_parquet(tmp_path / "pandas.parquet", df, row_group_size=R)
    reference = (tmp_path / "pandas.parquet").read_bytes()
    # the index is not written: another index gives the same bytes
    shuffled_index = df.set_axis(np.random.default_rng(1).permutation(N) * 3)
    write_parquet(tmp_path / "indexed.parquet", shuffled_index, row_group_size=R)
    assert (tmp_path / "indexed.parquet").read_bytes() == reference
    for n, cuts in CUTS.items():
        ddf = dask_frame(df, cuts)
        assert ddf.npartitions == n
        path = tmp_path / f"dask{n}.parquet"
        assert write_parquet(path, ddf, row_group_size=R) == N
        assert path.read_bytes() == reference, f"{n} partitions"
    assert row_groups(tmp_path / "pandas.parquet") == [R] * 5 + [3]


def test_same_bytes_when_a_row_group_spans_data_pages(tmp_path):
    """Row groups of more than one data page (1 MiB) whose rows come from several partitions
    cut at odd places: the pages must be cut as from one contiguous frame."""
    n, size = 200_000, 150_000
    df = pd.DataFrame({"p": np.random.default_rng(3).random(n), "id": np.arange(n, dtype="int64")})
    write_parquet(tmp_path / "pandas.parquet", df, row_group_size=size)
    assert row_groups(tmp_path / "pandas.parquet") == [size, n - size]
    ddf = dask_frame(df, [12_345, 70_001, 70_001, 149_999, 150_003, 190_000])
    write_parquet(tmp_path / "dask.parquet", ddf, row_group_size=size)
    assert (tmp_path / "dask.parquet").read_bytes() == (tmp_path / "pandas.parquet").read_bytes()


def test_same_bytes_with_arrow_strings_of_dasks_default(tmp_path):
    """Dask's default makes the string column Arrow-backed: the frames are the same again once
    the pandas frame has those dtypes too, and the partitioning still does not matter."""
    with dask.config.set({"dataframe.convert-string": True}):
        ddfs = {n: dask_frame(frame(), cuts) for n, cuts in CUTS.items()}
    df = frame().astype(ddfs[1].dtypes.to_dict())
    write_parquet(tmp_path / "pandas.parquet", df, row_group_size=R)
    reference = (tmp_path / "pandas.parquet").read_bytes()
    for n, ddf in ddfs.items():
        write_parquet(tmp_path / f"dask{n}.parquet", ddf, row_group_size=R)
        assert (tmp_path / f"dask{n}.parquet").read_bytes() == reference, f"{n} partitions"


def test_dictionary_pages_only_for_columns_of_few_values(tmp_path):
    """DICTIONARY_PAGE_LIMIT: a column of 2,000 distinct floats keeps its dictionary for all
    its 50,000 rows; a column of distinct floats falls back to plain pages after the first
    2,048 values (with pyarrow's 1 MiB default it would stay dictionary-encoded throughout,
    larger and slower to write).
    The values read back are the same either way."""
    n = 50_000
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"few": rng.random(2_000)[rng.integers(0, 2_000, n)], "distinct": rng.random(n)})
    write_parquet(tmp_path / "d.parquet", df)
    meta = pq.ParquetFile(tmp_path / "d.parquet").metadata.row_group(0)
    few, distinct = meta.column(0), meta.column(1)
    # (pyarrow lists PLAIN for both: the dictionary page itself is plain; the sizes tell)
    # few: a 16,000-byte dictionary + 11-bit indices (~69 KB) instead of 400 KB of values
    assert few.dictionary_page_offset is not None
    assert few.total_uncompressed_size < 16_000 + n * 11 // 8 + 2_048
    # distinct: the values, 8 bytes each, after a dictionary of at most 2,048 of them (with
    # pyarrow's default the whole column is indexed against a 400 KB dictionary: ~498 KB)
    assert distinct.total_uncompressed_size < 8 * n + 16_384 + 4_096
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "d.parquet"), df)


def test_the_row_group_size_changes_the_bytes(tmp_path):
    """The byte comparisons above can fail: the layout is in the bytes."""
    write_parquet(tmp_path / "a.parquet", frame(), row_group_size=R)
    write_parquet(tmp_path / "b.parquet", frame(), row_group_size=R + 1)
    assert (tmp_path / "a.parquet").read_bytes() != (tmp_path / "b.parquet").read_bytes()
    assert row_groups(tmp_path / "b.parquet") == [R + 1] * 4 + [3]


@pytest.mark.parametrize(
    "n, expected",
    [(N, [R] * 5 + [3]), (24, [R] * 6), (3, [3]), (1, [1]), (0, [0])],
)
def test_row_groups_are_full_but_the_last(tmp_path, n, expected):
    df = frame(n)
    write_parquet(tmp_path / "pandas.parquet", df, row_group_size=R)
    assert row_groups(tmp_path / "pandas.parquet") == expected
    cuts = [0, n // 3, n // 3, max(n - 1, 0), n]  # empty partitions at both ends and inside
    write_parquet(tmp_path / "dask.parquet", dask_frame(df, cuts), row_group_size=R)
    assert row_groups(tmp_path / "dask.parquet") == expected


def test_empty_dask_frame_keeps_the_columns(tmp_path, object_strings):
    df = frame()
    ddf = dask_frame(df.iloc[:0], [0, 0])  # three empty partitions
    assert write_parquet(tmp_path / "e.parquet", ddf, row_group_size=R) == 0
    back = pd.read_parquet(tmp_path / "e.parquet")
    assert list(back.columns) == list(df.columns) and len(back) == 0
    assert back.dtypes[["id", "hash", "p"]].tolist() == ["int64", "uint64", "float64"]


# -- round trip -------------------------------------------------------------------------------


def test_round_trip_of_values_and_dtypes(tmp_path, object_strings):
    df = frame()
    write_parquet(tmp_path / "dask.parquet", dask_frame(df, CUTS[7]), row_group_size=R)
    back = pd.read_parquet(tmp_path / "dask.parquet")
    assert isinstance(back.index, pd.RangeIndex) and list(back.columns) == list(df.columns)
    assert back.dtypes[["id", "hash", "p"]].tolist() == ["int64", "uint64", "float64"]
    pd.testing.assert_frame_equal(back[["id", "hash", "p"]], df[["id", "hash", "p"]])
    assert back["hash"].min() >= 2**63  # no wrap to int64
    # strings come back as pandas reads strings back from its own Parquet (object on
    # pandas 2, str on pandas 3), with the missing value missing
    df.to_parquet(tmp_path / "own.parquet", index=False)
    own = pd.read_parquet(tmp_path / "own.parquet")
    assert back["s"].dtype == own["s"].dtype
    pd.testing.assert_series_equal(back["s"], own["s"])
    assert back["s"].isna().tolist() == df["s"].isna().tolist()
    assert back["s"].dropna().tolist() == df["s"].dropna().tolist()


# -- streaming and failures ---------------------------------------------------------------------


def test_partitions_are_computed_one_at_a_time_in_order(tmp_path):
    computed: list[int] = []
    ddf = failing_dask_frame(frame(), fail_at=-1, computed=computed)
    write_parquet(tmp_path / "x.parquet", ddf, row_group_size=R)
    assert computed == [0, 1, 2, 3]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "x.parquet")[["id", "p"]], frame()[["id", "p"]])


def test_a_failure_mid_stream_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"old")
    computed: list[int] = []
    ddf = failing_dask_frame(frame(), fail_at=2, computed=computed)
    with pytest.raises(RuntimeError, match="partition 2 failed"):
        write_parquet(path, ddf, row_group_size=2)  # row groups were written before the failure
    assert computed == [0, 1, 2]  # streamed: the partition after the failure never ran
    assert path.read_bytes() == b"old"
    assert no_temp_files(tmp_path)


# -- the ledger ---------------------------------------------------------------------------------


def ledger_with_one_release(tmp_path) -> Ledger:
    led = Ledger(tmp_path / "led", create=True)
    led.commit(1, frame(), {"k": 2}, frame(5), {"input_sha": "a"})
    return led


def test_commit_of_dask_frames_drops_private_columns_and_protects_the_state(tmp_path, object_strings):
    led = ledger_with_one_release(tmp_path)
    df = frame()
    view = dask_frame(df.assign(_order=np.arange(N)[::-1], _label=7), CUTS[3])
    state = dask_frame(df, CUTS[7])
    led.commit(2, view, {"k": 2}, state, {"input_sha": "b"})
    assert [r["index"] for r in led.committed()] == [1, 2]
    assert pq.ParquetFile(led.release_dir(2) / "view.parquet").schema_arrow.names == list(df.columns)
    # the same bytes as the pandas view of release 1, which never had the helper columns
    assert (led.release_dir(2) / "view.parquet").read_bytes() == (
        led.release_dir(1) / "view.parquet"
    ).read_bytes()
    # the same rows; a view's text reads back object (read_released), a state's as pandas reads it
    pd.testing.assert_frame_equal(text_as_object(led.read_state(2)), led.read_view(1))
    assert isinstance(led.read_state(2), pd.DataFrame)
    assert stat.S_IMODE(led.state_path(2).stat().st_mode) == 0o600
    for folder in (led.state_path(2).parent, led.state_path(2).parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert no_temp_files(led.root)


def test_private_columns_can_be_kept_on_request(tmp_path):
    led = Ledger(tmp_path / "led", create=True)
    led.commit(1, frame().assign(_order=1), {}, frame(), {}, drop_private=False)
    assert "_order" in led.read_view(1).columns


@pytest.mark.parametrize("failing", ["view", "state"])
def test_a_failure_while_streaming_a_commit_leaves_the_manifest(tmp_path, failing):
    led = ledger_with_one_release(tmp_path)
    before = (led.root / "manifest.json").read_bytes()
    computed: list[int] = []
    bad = failing_dask_frame(frame(), fail_at=1, computed=computed)
    view, state = (bad, frame()) if failing == "view" else (frame(), bad)
    with pytest.raises(RuntimeError, match="partition 1 failed"):
        led.commit(2, view, {"k": 2}, state, {"input_sha": "b"})
    assert computed == [0, 1]
    assert (led.root / "manifest.json").read_bytes() == before
    assert Ledger(led.root).last_index() == 1
    assert not led.state_path(2).exists()
    # the view written before the state failed is removed with the failed commit
    assert not led.release_dir(2).exists()
    assert no_temp_files(led.root)
    # the next attempt commits
    led.commit(2, frame(), {"k": 2}, frame(), {"input_sha": "b"})
    assert [r["index"] for r in json.loads((led.root / "manifest.json").read_text())["releases"]] == [1, 2]


def test_read_state_dask_reads_in_row_group_partitions(tmp_path, object_strings):
    led = ledger_with_one_release(tmp_path)
    # rewrite the state of release 1 with small row groups, as a large state would have
    write_parquet(led.state_path(1), dask_frame(frame(), CUTS[3]), mode=0o600, row_group_size=R)
    for per_partition, expected in [(1, 6), (2, 3), (4, 2), (10, 1)]:
        ddf = led.read_state_dask(1, row_groups=per_partition)
        assert ddf.npartitions == expected
        back, whole = ddf.compute().reset_index(drop=True), led.read_state(1)
        pd.testing.assert_frame_equal(back[["id", "hash", "p"]], whole[["id", "hash", "p"]])
        assert back["s"].isna().tolist() == whole["s"].isna().tolist()
        assert back["s"].dropna().tolist() == whole["s"].dropna().tolist()
    with pytest.raises(ValueError, match="row_groups"):
        led.read_state_dask(1, row_groups=0)


@pytest.mark.parametrize("given", [0, -1, 1.5, True, "2", None])
def test_read_state_dask_refuses_a_row_groups_that_is_no_count(tmp_path, given):
    """Refused up front, naming the argument, the value and the allowed range: "2" and None
    were TypeErrors of a comparison, 1.5 and True were taken as numbers of row groups."""
    from dpriv.errors import InputError

    led = ledger_with_one_release(tmp_path)
    said = (
        "row_groups must be a whole number >= 1 "
        f"(Parquet row groups of 262,144 rows per partition), not {given!r}"
    )
    with pytest.raises(InputError, match=re.escape(said)):
        led.read_state_dask(1, row_groups=given)
    with pytest.raises(InputError, match="row_groups"):  # before the release index is looked up
        led.read_state_dask(7, row_groups=given)


def test_read_state_dask_of_an_empty_state(tmp_path):
    led = Ledger(tmp_path / "led", create=True)
    empty = frame().iloc[:0][["id", "hash", "p"]]
    led.commit(1, empty, {}, empty, {})
    ddf = led.read_state_dask(1)
    assert ddf.npartitions == 1
    back = ddf.compute()
    assert len(back) == 0 and back.dtypes.tolist() == ["int64", "uint64", "float64"]

"""Streaming Parquet writes under a distributed client (:func:`dpriv.io.write_parquet`).

Each partition of a Dask frame is computed once on a worker and fetched in pieces of at most
``PIECE_ROWS`` rows that never straddle a row group, so the client holds one piece, not one
partition. A module of its own: the
``client`` fixture stays current for the rest of a module, and the partition-order tests of
tests/test_ledger_stream.py count the partitions computed in this process.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_ledger_stream import (  # noqa: F401
    CUTS,
    N,
    R,
    dask_frame,
    failing_dask_frame,
    frame,
    no_temp_files,
)

from dpriv.io import write_parquet


@pytest.mark.parametrize("piece", [1, 3, 4, 100])
def test_on_a_cluster_pieces_give_the_same_bytes_and_the_client_holds_one_piece(
    client, tmp_path, object_strings, monkeypatch, piece
):
    """Each partition is computed once on a worker and fetched in pieces of at most
    ``PIECE_ROWS`` rows rounded down to whole row groups (at least one), cut at the partitions'
    and the row groups' boundaries: the bytes are those of the pandas write, and the tables
    that reach the client are exactly those pieces, in order."""
    from distributed import Client

    import dpriv.parquet_pieces as io_mod

    df = frame()
    write_parquet(tmp_path / "pandas.parquet", df, row_group_size=R)
    monkeypatch.setattr(io_mod, "PIECE_ROWS", piece)
    fetched: list[int] = []
    real = Client._gather

    async def spy(self, futures, *args, **kwargs):
        result = await real(self, futures, *args, **kwargs)
        fetched.extend(
            len(r) for r in (result if isinstance(result, list) else [result]) if hasattr(r, "num_rows")
        )
        return result

    monkeypatch.setattr(Client, "_gather", spy)
    for n, cuts in CUTS.items():
        fetched.clear()
        path = tmp_path / f"dask{n}.parquet"
        assert write_parquet(path, dask_frame(df, cuts), row_group_size=R) == N
        assert path.read_bytes() == (tmp_path / "pandas.parquet").read_bytes(), f"{n} partitions"
        # the pieces, by an independent cut: rows grouped by (partition, row // step)
        step = R * max(1, piece // R)
        bounds = np.array([0, *cuts, N])
        part = np.searchsorted(bounds, np.arange(N), side="right") - 1
        _, sizes = np.unique(part * N + np.arange(N) // step, return_counts=True)
        assert fetched == sizes.tolist(), f"{n} partitions"


def test_on_a_cluster_a_failing_partition_leaves_the_old_file(client, tmp_path, monkeypatch):
    import dpriv.parquet_pieces as io_mod

    monkeypatch.setattr(io_mod, "PIECE_ROWS", 2)
    path = tmp_path / "x.parquet"
    path.write_bytes(b"old")
    ddf = failing_dask_frame(frame(), fail_at=2, computed=[])
    with pytest.raises(RuntimeError, match="partition 2 failed"):
        write_parquet(path, ddf, row_group_size=2)
    assert path.read_bytes() == b"old"
    assert no_temp_files(tmp_path)


def test_on_a_cluster_the_workers_convert_and_the_client_gets_only_the_written_columns(
    client, tmp_path, object_strings, monkeypatch
):
    """The pieces reach the client as Arrow tables of the written columns (converted on the
    workers; a private ``_`` helper column never leaves them), gathered from the workers
    directly (the fixture's LocalCluster, made in this process), and the file is the pandas
    write's, byte for byte."""
    import pyarrow as pa
    from distributed import Client

    import dpriv.parquet_pieces as pieces

    df = frame()
    write_parquet(tmp_path / "pandas.parquet", df, row_group_size=R)
    monkeypatch.setattr(pieces, "PIECE_ROWS", 3)
    fetched: list = []
    directs: list = []
    real = Client._gather

    async def spy(self, futures, *args, **kwargs):
        result = await real(self, futures, *args, **kwargs)
        fetched.extend(r for r in (result if isinstance(result, list) else [result]) if hasattr(r, "__len__"))
        directs.extend([kwargs.get("direct")] * (hasattr(result, "num_rows")))
        return result

    monkeypatch.setattr(Client, "_gather", spy)
    private = df.assign(_order=np.arange(N, dtype="uint64")[::-1])
    path = tmp_path / "dask.parquet"
    assert write_parquet(path, dask_frame(private, CUTS[7]), row_group_size=R, drop_private=True) == N
    assert path.read_bytes() == (tmp_path / "pandas.parquet").read_bytes()
    tables = [r for r in fetched if not isinstance(r, int | list)]
    assert tables and all(isinstance(t, pa.Table) for t in tables)
    assert all(t.column_names == list(df.columns) for t in tables)
    assert sum(len(t) for t in tables) == N
    assert directs == [True] * len(tables)

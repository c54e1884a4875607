"""The one pandas-or-Dask dispatch (dpriv._dispatch)."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv._dispatch import is_dask, map_frame, meta_of, to_pandas


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(6, dtype=np.int64), "b": list("xyzxyz")})


def _double(frame: pd.DataFrame, factor: int) -> pd.DataFrame:
    return frame.assign(a=frame["a"] * factor)


def test_is_dask_tells_collections_from_pandas_and_numpy():
    df = _frame()
    assert not is_dask(df) and not is_dask(df["a"]) and not is_dask(df["a"].to_numpy())
    ddf = dd.from_pandas(df, npartitions=2)
    assert is_dask(ddf) and is_dask(ddf["a"])


def test_map_frame_runs_the_kernel_on_pandas_and_per_partition_on_dask():
    df = _frame()
    out = map_frame(_double, df, 3)
    assert out["a"].tolist() == [0, 3, 6, 9, 12, 15]
    ddf = dd.from_pandas(df, npartitions=3)
    lazy = map_frame(_double, ddf, 3, meta=meta_of(ddf))
    assert is_dask(lazy) and lazy.npartitions == 3
    got = to_pandas(lazy)
    pd.testing.assert_series_equal(got["a"], out["a"])  # int64 kept; dask may store b as string
    assert got["b"].tolist() == out["b"].tolist()
    with pytest.raises(TypeError, match="needs meta"):
        map_frame(_double, ddf, 3)


def test_meta_of_is_empty_with_the_dtypes_and_to_pandas_passes_pandas_through():
    df = _frame()
    for frame in (df, dd.from_pandas(df, npartitions=2)):
        meta = meta_of(frame)
        assert isinstance(meta, pd.DataFrame) and len(meta) == 0
        assert list(meta.columns) == ["a", "b"] and meta["a"].dtype == np.int64
    assert to_pandas(df) is df


def _big_frame(n: int = 300_000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    words = np.array(["liver_1", "hiv_2", "deceased"], dtype=object)
    return pd.DataFrame({"a": np.arange(n, dtype=np.int64), "b": rng.random(n), "s": rng.choice(words, n)})


def test_to_dask_without_a_client_is_from_pandas():
    from dpriv._dispatch import to_dask

    df = _frame()
    out = to_dask(df, 4)
    assert out.npartitions == 4
    pd.testing.assert_frame_equal(out.compute(), dd.from_pandas(df, npartitions=4, sort=False).compute())


def test_to_dask_scatters_the_chunks_under_a_client_and_sends_no_large_graph(client):
    """A pandas frame handed to Dask under a distributed client: from_pandas embeds its bytes
    in the graph (Dask warns above its threshold, here lowered to 1 MB); to_dask's graph holds
    the keys of scattered chunks. Same rows, index, order and dtypes as from_pandas."""
    import warnings

    import dask

    from dpriv._dispatch import to_dask

    df = _big_frame()
    plain = dd.from_pandas(df, npartitions=3, sort=False)
    with (
        warnings.catch_warnings(record=True) as caught,
        dask.config.set({"distributed.admin.large-graph-warning-threshold": "1MB"}),
    ):
        warnings.simplefilter("always")
        out = to_dask(df, 3)
        got = out.compute()
        assert [w for w in caught if "large graph" in str(w.message)] == []
        plain.compute()  # the warning this test would see with from_pandas
        assert any("large graph" in str(w.message) for w in caught)
    assert out.npartitions == 3 and out.dtypes.to_dict() == plain.dtypes.to_dict()
    pd.testing.assert_frame_equal(got, plain.compute())
    assert [len(p) for p in out.partitions] == [100_000] * 3


_PICKED = {"a": "int64", "b": "int64"}


def _pick(part, values):
    return part.assign(b=values[part["a"].to_numpy()])


def test_shared_is_a_future_only_when_the_client_runs_the_graph(client):
    """Under a client the tables travel as a future; with ``dask.config.set(scheduler="sync")``
    the graph runs in this process, where a future is a missing dependency: the object itself."""
    import dask
    from distributed import Future

    from dpriv._dispatch import shared

    frame = dd.from_pandas(pd.DataFrame({"a": [1, 2, 3]}), npartitions=1)
    obj = np.arange(5)
    out = shared(obj, frame)
    assert isinstance(out, Future)
    np.testing.assert_array_equal(frame.map_partitions(_pick, out, meta=_PICKED)["b"].compute(), [1, 2, 3])
    with dask.config.set(scheduler="sync"):
        assert shared(obj, frame) is obj
        got = frame.map_partitions(_pick, shared(obj, frame), meta=_PICKED)["b"].compute()
    np.testing.assert_array_equal(got, [1, 2, 3])


def test_to_dask_puts_an_empty_one_part_frame_in_the_graph_without_a_scatter(client):
    """A first release's empty state goes to Dask as one partition: no scatter (a round trip to
    the cluster for nothing kept out of the graph), the dtypes ``from_pandas`` gives; a frame
    with rows, or of several partitions, is still scattered."""
    from unittest import mock

    from distributed import Client

    from dpriv._dispatch import to_dask

    empty = _frame().iloc[:0]
    with mock.patch.object(Client, "scatter", autospec=True, side_effect=Client.scatter) as scatter:
        out = to_dask(empty, 1)
        assert scatter.call_count == 0
        to_dask(_frame(), 1)
        to_dask(empty, 2)
        assert scatter.call_count == 2
    plain = dd.from_pandas(empty, npartitions=1, sort=False)
    assert out.npartitions == 1 and out.dtypes.to_dict() == plain.dtypes.to_dict()
    pd.testing.assert_frame_equal(out.compute(), plain.compute())

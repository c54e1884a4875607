"""KPR's Dask path as one small Delayed graph (dpriv.metrics.kpr_delayed, issue 13): the same
counts as the Dask DataFrame path it replaces (dpriv.metrics.kpr_dask.dask_counts) and as the
pandas kernel, for any partitioning (empty partitions included), in ~2 P + 3 tasks."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.metrics.kpr_dask import dask_counts
from dpriv.metrics.kpr_delayed import delayed_counts
from dpriv.metrics.kpr_kernel import Setup, pandas_counts
from dpriv.metrics.kpr_validation import validate_kpr


def tables(rng: np.random.Generator, n: int, n_syn: int):
    """Ages (float with NaN, few values: duplicated profiles), weights (one decimal), a nullable
    integer code with missing values and a text column with missing values."""

    def one(m: int) -> pd.DataFrame:
        age = rng.integers(20, 30, m).astype(float)
        age[rng.random(m) < 0.1] = np.nan
        code = pd.array(rng.integers(1, 4, m), dtype="Int64")
        code[rng.random(m) < 0.1] = pd.NA
        sex = rng.choice(np.array(["F", "M", None], dtype=object), m, p=[0.45, 0.45, 0.1])
        return pd.DataFrame({"age": age, "w": np.round(rng.normal(70, 15, m), 1), "code": code, "sex": sex})

    return one(n), one(n_syn)


def setup_of(o, a, known) -> Setup:
    known_t, numeric = validate_kpr(o, a, known, 0.05, 0.1, 1)
    return Setup(known_t, numeric, 0.05, 0.1, 1)


def with_empty(frame: pd.DataFrame, n: int) -> dd.DataFrame:
    """``frame`` in ``n`` partitions plus an empty one in the middle."""
    bounds = np.linspace(0, len(frame), n + 1).astype(int)
    parts = [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    parts.insert(1, frame.iloc[:0])
    return dd.from_delayed([dask.delayed(p) for p in parts], meta=frame.iloc[:0], verify_meta=False)


@pytest.mark.parametrize(
    "seed, known",
    [(0, ["age", "w", "sex"]), (1, ["age", "code"]), (2, ["w", "sex"]), (3, ["age", "w", "code", "sex"])],
)
def test_the_counts_of_both_dask_paths_and_the_pandas_kernel_are_equal(seed, known):
    rng = np.random.default_rng(seed)
    o, a = tables(rng, 300, 260)
    setup = setup_of(o, a, known)
    want = pandas_counts(o, a, setup)
    assert 0 < want.n_unique <= want.n and want.n_b1 > 0  # cases where the counts matter
    assert want.n_matched > 0 or len(known) < 3
    with dask.config.set(scheduler="sync"):
        for po, pa in ((1, 1), (3, 2)):
            do, da = dd.from_pandas(o, npartitions=po), dd.from_pandas(a, npartitions=pa)
            got = delayed_counts(do, da, setup)
            assert got == dask_counts(do, da, setup)
            assert got == want
        assert delayed_counts(with_empty(o, 3), with_empty(a, 2), setup) == want
        assert delayed_counts(dd.from_pandas(o, npartitions=2), a, setup) == want  # mixed inputs


def test_an_avatar_table_of_no_rows_and_no_unique_original():
    o = pd.DataFrame({"x": [1.0, 1.0, 2.0, 2.0, 3.0]})  # U = {3.0}
    a = pd.DataFrame({"x": [3.0, 9.0, 9.0]})  # B1: the bins of 3.0 (once); 9.0 twice
    setup = setup_of(o, a, ["x"])
    with dask.config.set(scheduler="sync"):
        got = delayed_counts(dd.from_pandas(o, npartitions=2), dd.from_pandas(a, npartitions=2), setup)
        assert (got.n, got.n_synthetic, got.n_unique, got.n_b1, got.n_matched) == (5, 3, 1, 1, 1)
        none = delayed_counts(
            dd.from_pandas(o, npartitions=2), dd.from_pandas(a.iloc[:0], npartitions=1), setup
        )
        assert (none.n_synthetic, none.n_b1, none.n_matched) == (0, 0, 0)
        dup = pd.DataFrame({"x": [1.0, 1.0]})
        zero = delayed_counts(dd.from_pandas(dup, npartitions=2), dd.from_pandas(a, npartitions=1), setup)
        assert (zero.n, zero.n_unique, zero.n_matched) == (2, 0, 0)


def test_the_graph_has_two_tasks_per_partition_and_three_more(monkeypatch):
    """8 original and 8 avatar partitions, numeric variables only: 8 profile counts + U + its
    grids + 8 avatar counts + the match = 19 tasks (the Dask DataFrame path had ~100)."""
    rng = np.random.default_rng(5)
    o, a = tables(rng, 800, 800)
    setup = setup_of(o, a, ["age", "w"])
    do = dd.from_pandas(o, npartitions=8).persist(scheduler="sync")
    da = dd.from_pandas(a, npartitions=8).persist(scheduler="sync")
    inputs = {
        k for f in (do, da) for d in f[list(setup.known)].to_delayed() for k in dict(d.__dask_graph__())
    }
    seen = []
    real = dask.compute

    def counting(*args, **kwargs):
        seen.append({k for d in args for k in dict(d.__dask_graph__())})
        return real(*args, scheduler="sync")

    monkeypatch.setattr(dask, "compute", counting)
    delayed_counts(do, da, setup)
    assert len(seen) == 1
    assert len(seen[0] - inputs) == 8 + 1 + 1 + 8 + 1


def test_more_partitions_than_one_split_go_to_the_dataframe_path(monkeypatch):
    """Over 16 partitions the profile counts are spread over several tasks (split_out), not one."""
    import dpriv.metrics.kpr_delayed as mod

    rng = np.random.default_rng(6)
    o, a = tables(rng, 200, 200)
    setup = setup_of(o, a, ["age", "w"])
    calls = []
    monkeypatch.setattr(mod, "dask_counts", lambda *args: calls.append(args[0].npartitions) or "frame path")
    with dask.config.set(scheduler="sync"):
        assert delayed_counts(dd.from_pandas(o, npartitions=17), a, setup) == "frame path"
        assert delayed_counts(dd.from_pandas(o, npartitions=16), a, setup) == pandas_counts(o, a, setup)
    assert calls == [17]

"""One large view of the paper setting built partition by partition in Dask (issue "Scale out",
item 2): dpriv.datasets.medical_view_dask, write_medical_view and ``generate medical --partitions``."""

import pickle

import dask
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import (
    AGE_RANGE,
    CLASS_MAP,
    GENDER_RANGE,
    TERMINAL,
    VALUES,
    VIEW_BLOCK_ROWS,
    WEIGHT_RANGE,
    medical_history,
    medical_knowledge,
    medical_view_dask,
    write_history,
    write_medical_view,
)
from dpriv.errors import InputError
from dpriv.io import read_table
from dpriv.knowledge.tables import MarkovTables

COLUMNS = ["respondent_id", "view", "age", "gender", "weight", "exam_result"]
N = 200_000  # 4 blocks of 65,536 rows (the last one partial)


@pytest.fixture(scope="module")
def big() -> pd.DataFrame:
    with dask.config.set(scheduler="threads"):
        return medical_view_dask(N, npartitions=3, seed=0).compute()


def test_ids_unique_and_contiguous_across_partitions() -> None:
    frame = medical_view_dask(N, npartitions=3, seed=0)
    assert frame.npartitions == 3
    parts = [frame.get_partition(p).compute() for p in range(frame.npartitions)]
    assert sum(len(p) for p in parts) == N
    expected_next = 1
    for p in parts:
        ids = p["respondent_id"].to_numpy()
        assert len(ids) > 0
        assert np.array_equal(ids, np.arange(expected_next, expected_next + len(ids)))
        expected_next += len(ids)
        assert len(p) % VIEW_BLOCK_ROWS == 0 or p is parts[-1]  # whole blocks
    assert expected_next == N + 1
    # the index is the 0-based row number and the divisions are known and right
    assert frame.known_divisions
    assert list(frame.divisions) == [int(p.index[0]) for p in parts] + [N - 1]
    assert all(np.array_equal(p.index, p["respondent_id"] - 1) for p in parts)


def test_schema_ranges_and_domain(big: pd.DataFrame) -> None:
    assert list(big.columns) == COLUMNS
    for col in COLUMNS[:-1]:
        assert big[col].dtype == np.int64, col
    assert len(big) == N and big["respondent_id"].is_unique
    assert (big["view"] == 1).all()
    for col, (lo, hi) in (("age", AGE_RANGE), ("gender", GENDER_RANGE), ("weight", WEIGHT_RANGE)):
        assert big[col].min() == lo and big[col].max() == hi, col
    assert pd.api.types.is_string_dtype(big["exam_result"])
    assert set(big["exam_result"]) <= set(VALUES)
    # BK^sv: a first result is never terminal, and every stage value occurs in 200k rows
    assert not big["exam_result"].isin(TERMINAL).any()
    assert big["exam_result"].nunique() == len(VALUES) - len(TERMINAL)
    # the meta (what Dask announces) is what the partitions hold
    meta = medical_view_dask(N, npartitions=3, seed=0)._meta
    assert meta.dtypes.to_dict() == big.dtypes.to_dict()


def test_view_number() -> None:
    one = medical_view_dask(1000, seed=0, view=1).compute()
    three = medical_view_dask(1000, seed=0, view=3).compute()
    assert (three["view"] == 3).all() and three["view"].dtype == np.int64
    assert not one[["age", "gender", "weight", "exam_result"]].equals(
        three[["age", "gender", "weight", "exam_result"]]
    )


def test_deterministic_and_seed_dependent(big: pd.DataFrame) -> None:
    again = medical_view_dask(N, npartitions=3, seed=0).compute(scheduler="sync")
    pd.testing.assert_frame_equal(again, big)
    other = medical_view_dask(N, npartitions=3, seed=1).compute()
    assert not other[["age", "exam_result"]].equals(big[["age", "exam_result"]])
    assert (other["age"].to_numpy() != big["age"].to_numpy()).mean() > 0.9
    assert (other["exam_result"].to_numpy() != big["exam_result"].to_numpy()).mean() > 0.5


def test_independent_of_npartitions(big: pd.DataFrame) -> None:
    for npartitions in (1, 2, 4, 50):
        frame = medical_view_dask(N, npartitions=npartitions, seed=0)
        assert frame.npartitions == min(npartitions, -(-N // VIEW_BLOCK_ROWS))
        pd.testing.assert_frame_equal(frame.compute(), big)
    # a shorter view is a prefix of a longer one (the blocks it shares are the same)
    short = medical_view_dask(100_000, npartitions=2, seed=0).compute()
    pd.testing.assert_frame_equal(short, big.iloc[:100_000])


def test_default_partitions_and_bad_arguments() -> None:
    assert medical_view_dask(1, seed=0).npartitions == 1
    assert medical_view_dask(3 * 2**20 + 5, seed=0).npartitions == 4  # about 2**20 rows each
    for kwargs in (
        {"n_rows": 0},
        {"n_rows": 2.5},
        {"n_rows": 10, "npartitions": 0},
        {"n_rows": 10, "seed": -1},
    ):
        with pytest.raises(InputError):
            medical_view_dask(**kwargs)
    with pytest.raises(InputError):
        medical_view_dask(10, view=0)


def test_nothing_proportional_to_rows_on_the_client() -> None:
    """10^9 rows: only the task graph is built on the client, and it stays small."""
    frame = medical_view_dask(10**9, npartitions=64, seed=0)
    assert frame.npartitions == 64
    graph = dict(frame.__dask_graph__())
    assert len(pickle.dumps(graph)) < 200_000


def test_model_is_the_generators() -> None:
    for seed in (0, 5):
        exact = medical_history(2, 20, seed=seed).knowledge
        mine = medical_knowledge(seed)
        assert all(np.array_equal(a, b) for a, b in zip(exact.tables, mine.tables))


def _chi2_per_class(frame: pd.DataFrame, bk_sv: np.ndarray) -> tuple[float, int, int]:
    """Pearson chi-square of the result counts per knowledge class against ``bk_sv`` (18, 19)
    -> (statistic, degrees of freedom, count of results where bk_sv says probability 0)."""
    cls = CLASS_MAP.classify(frame)
    res = pd.Categorical(frame["exam_result"], categories=list(VALUES)).codes
    counts = np.zeros(bk_sv.shape)
    np.add.at(counts, (cls, res), 1)
    stat, dof, impossible = 0.0, 0, 0
    for c in range(bk_sv.shape[0]):
        p = bk_sv[c]
        ok = p > 0
        expected = counts[c].sum() * p[ok]
        stat += float(((counts[c, ok] - expected) ** 2 / expected).sum())
        dof += int(ok.sum()) - 1
        impossible += int(counts[c, ~ok].sum())
    return stat, dof, impossible


def test_result_distribution_per_class_is_bk_sv(big: pd.DataFrame) -> None:
    bk_sv = medical_knowledge(0).tables[0][:, 0, :]  # (18, 19)
    stat, dof, impossible = _chi2_per_class(big, bk_sv)
    assert impossible == 0
    assert stats.chi2.sf(stat, dof) > 1e-3, (stat, dof)
    # the test has power: another seed's BK^sv is rejected outright
    stat_other, dof_other, _ = _chi2_per_class(big, medical_knowledge(1).tables[0][:, 0, :])
    assert stats.chi2.sf(stat_other, dof_other) < 1e-12
    # and the QIs are uniform: each of the 18 classes holds about 1/18 of the rows
    per_class = np.bincount(CLASS_MAP.classify(big), minlength=18)
    assert stats.chisquare(per_class).pvalue > 1e-3


@pytest.mark.slow
def test_write_medical_view_matches_write_history(tmp_path) -> None:
    small = medical_history(1, 50, seed=3)
    write_history(tmp_path / "seq", small)
    out = tmp_path / "big"
    write_history(out, small)  # a history.parquet *file* that the dataset must replace
    with dask.config.set(scheduler="threads"):
        policy = write_medical_view(out, 70_000, npartitions=2, seed=3, overwrite=True)
        write_medical_view(out, 70_000, npartitions=2, seed=3, overwrite=True)  # no stale files
    assert policy == out / "policy.toml"
    assert (out / "history.parquet").is_dir()
    assert sorted(f.name for f in (out / "history.parquet").iterdir()) == ["part.0.parquet", "part.1.parquet"]
    # same policy and knowledge files as the in-process generator of one view with that seed
    assert policy.read_text() == (tmp_path / "seq" / "policy.toml").read_text()
    for name in ("dk", "dk-1", "dk-2", "dk-3"):
        a = MarkovTables.load(tmp_path / "seq" / "knowledge" / f"{name}.npz")
        b = MarkovTables.load(out / "knowledge" / f"{name}.npz")
        assert all(np.array_equal(x, y) for x, y in zip(a.tables, b.tables)), name
    got = read_table(str(out / "history.parquet")).compute()
    lazy = medical_view_dask(70_000, seed=3)
    want = lazy.compute().reset_index(drop=True)
    assert want.dtypes.equals(lazy._meta.dtypes)  # meta was honest
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want)


def test_cli_generate_partitioned(tmp_path, scheduler) -> None:
    out = tmp_path / "g"
    res = CliRunner().invoke(
        app,
        [
            "generate", "medical", "--views", "1", "--view-size", "140000", "--partitions", "3",
            "--seed", "2", "--out", str(out), "--scheduler", scheduler,
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "140000 tuples" in res.output and "3 Parquet files" in res.output
    assert (out / "policy.toml").is_file()
    # the four tables and the record of what generate wrote (what --force may replace)
    names = {f.name for f in (out / "knowledge").iterdir()}
    assert names == {"dk.npz", "dk-1.npz", "dk-2.npz", "dk-3.npz", ".dpriv-outputs"}
    frame = read_table(str(out / "history.parquet"))
    assert frame.npartitions == 3
    got = frame.compute()
    assert list(got.columns) == COLUMNS
    assert len(got) == 140_000
    want = medical_view_dask(140_000, seed=2).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want)


def test_cli_partitioned_needs_one_view(tmp_path) -> None:
    out = tmp_path / "g"
    res = CliRunner().invoke(app, ["generate", "medical", "--partitions", "2", "--out", str(out)])
    assert res.exit_code == 2
    assert "--views 1" in res.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"n_rows": "10"}, "n_rows must be an integer >= 1, got '10'"),  # int("10") != "10": was a ValueError
        ({"n_rows": True}, "n_rows must be an integer >= 1, got True"),  # was taken for 1 row
        ({"n_rows": float("nan")}, "n_rows must be an integer >= 1, got nan"),  # was a ValueError of int()
        ({"n_rows": 10, "npartitions": None, "view": None}, "view must be an integer >= 1, got None"),
        ({"n_rows": 10, "seed": 1.5}, "seed must be an integer >= 0, got 1.5"),
    ],
)
def test_every_generator_argument_is_checked_by_one_rule(kwargs, said) -> None:
    """medical_view_dask, medical_knowledge (its seed), write_medical_view and pbc_policy share
    dpriv.datasets.arguments.check_whole: an InputError naming the argument and the value."""
    with pytest.raises(InputError) as err:
        medical_view_dask(**kwargs)
    assert str(err.value) == said
    # a whole float and a NumPy integer are whole numbers: the same view as the int
    pd.testing.assert_frame_equal(
        medical_view_dask(np.int64(50), seed=0, npartitions=1.0).compute(),
        medical_view_dask(50, seed=0, npartitions=1).compute(),
    )

"""The experiment's tables are stamped with the releases of their settings' ledgers, and read back
only with them (dpriv.experiment_files.read_tables): tables of two runs are never mixed."""

import shutil

import pandas as pd
import pytest

from dpriv.attack_stamp import STAMP, prefix_digests
from dpriv.errors import InputError
from dpriv.experiment import run_experiment
from dpriv.ledger import Ledger

pytestmark = pytest.mark.slow  # two experiments (~40 s on a shared machine)

GRID = {"jsreduce": [{"t": 1.0, "j": 0.8}]}
SETTING = "jsreduce_t1.0_j0.8"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two experiments of the same grid and sizes on histories of other seeds: (folder, tables)."""
    out = []
    for seed in (0, 1):
        folder = tmp_path_factory.mktemp(f"seed{seed}")
        kw = {"views": 2, "view_size": 60, "grid": GRID, "knowledge": ("dk",), "seed": seed}
        out.append((folder, run_experiment(folder, **kw, say=lambda _: None)))
    return out


def _copy(folder, tmp_path):
    copy = tmp_path / "exp"
    shutil.copytree(folder, copy)
    return copy


def test_each_row_is_stamped_with_the_releases_it_was_computed_on(runs):
    (folder, tables), (other, _) = runs
    digests = prefix_digests(Ledger(folder / "ledgers" / SETTING))
    assert len(digests) == 2 and digests != prefix_digests(Ledger(other / "ledgers" / SETTING))
    written = {key: pd.read_csv(folder / f"{key}.csv", dtype={STAMP: str}) for key in tables}
    assert written["runs"][STAMP].tolist() == [digests[1], digests[2]]
    assert written["gains"][STAMP].tolist() == [digests[r] for r in written["gains"]["release"]]
    retro = written["retro"]  # a retrospective row depends on releases 1..as_of, not 1..release
    assert retro[["release", "as_of"]].values.tolist() == [[1, 1], [1, 2], [2, 2]]
    assert retro[STAMP].tolist() == [digests[1], digests[2], digests[2]]
    assert written["frontier"][STAMP].tolist() == [digests[2]]  # over every release
    from dpriv.experiment import read_tables

    read = read_tables(folder)
    assert list(read) == ["runs", "gains", "retro", "frontier"]
    for key, frame in read.items():
        assert frame[STAMP].tolist() == tables[key][STAMP].tolist() == written[key][STAMP].tolist()
        pd.testing.assert_frame_equal(frame, written[key], check_dtype=False)


@pytest.mark.parametrize("key", ["gains", "frontier"])
def test_a_table_of_another_run_is_refused(runs, tmp_path, key):
    """A table copied from another run of the same grid (same columns, same settings, other
    data) was read along with this run's ledgers and tables as one experiment."""
    from dpriv.experiment import read_tables

    (folder, _), (other, _) = runs
    copy = _copy(folder, tmp_path)
    shutil.copy(other / f"{key}.csv", copy / f"{key}.csv")
    with pytest.raises(
        InputError, match=rf"{key}\.csv line 2: its views_sha .* is not that of the releases"
    ) as err:
        read_tables(copy)
    assert f"ledgers/{SETTING}" in str(err.value)
    assert f"run dpriv experiment paper --out {copy} again" in str(err.value)


def test_a_blank_or_missing_stamp_is_refused(runs, tmp_path):
    from dpriv.experiment import read_tables

    folder, _ = runs[0]
    copy = _copy(folder, tmp_path)
    retro = pd.read_csv(copy / "retro.csv", dtype={STAMP: str})
    retro.loc[2, STAMP] = None
    retro.to_csv(copy / "retro.csv", index=False)
    with pytest.raises(InputError, match=r"retro\.csv line 4: its views_sha .* is blank"):
        read_tables(copy)
    retro.drop(columns=[STAMP]).to_csv(copy / "retro.csv", index=False)  # a table of before the stamp
    with pytest.raises(InputError, match=r"retro\.csv lacks column\(s\) \['views_sha'\]"):
        read_tables(copy)
    (copy / "retro.csv").unlink()
    with pytest.raises(InputError, match=r"retro\.csv is missing"):
        read_tables(copy)


def test_a_row_naming_a_release_its_ledger_does_not_hold_is_refused(runs, tmp_path):
    from dpriv.experiment import read_tables

    folder, _ = runs[0]
    copy = _copy(folder, tmp_path)
    frame = pd.read_csv(copy / "runs.csv", dtype={STAMP: str})
    frame.loc[1, "release"] = 3
    frame.to_csv(copy / "runs.csv", index=False)
    with pytest.raises(
        InputError, match=rf"runs\.csv line 3: .* names releases that .*{SETTING} does not hold"
    ):
        read_tables(copy)

"""How often a release reads its Dask history (issue 13): a one-view history is read once past
the check of its time column, its checks, digests and release served by that one read, and it
releases the same ledger bytes as the same rows given as pandas; a history of several views stays
lazy (each view a filter of it)."""

import dask
import dask.dataframe as dd
import pandas as pd
import pytest
from conftest import ledger_files

import dpriv.release as release_mod
from dpriv.input_checks import checked_history
from dpriv.release import release_history

_LOADS: list[int] = []


def _load(part: int, frame: pd.DataFrame, size: int) -> pd.DataFrame:
    """Partition ``part`` of ``frame``, each load counted (as a Parquet reader would read it)."""
    _LOADS.append(part)
    return frame.iloc[part * size : (part + 1) * size]


def _counted(frame: pd.DataFrame, nparts: int) -> dd.DataFrame:
    size = -(-len(frame) // nparts)
    return dd.from_map(
        _load, range(nparts), frame=frame, size=size, meta=frame.iloc[:0], enforce_metadata=False
    )


@pytest.fixture(scope="module")
def one_view(hist_4x300):
    mh, policy = hist_4x300
    return mh.history[mh.history[policy.time] == 1].reset_index(drop=True), policy


@pytest.mark.parametrize("on_dask", [False, True])
def test_one_view_history_read_once_same_ledger(one_view, tmp_path, on_dask):
    view, policy = one_view
    release_history(view, policy, tmp_path / "pandas")
    _LOADS.clear()
    # on_dask: the Dask path forced (the view is small), else released in process from one read
    forced = {"SMALL_VIEW_ROWS": 0} if on_dask else {}
    with dask.config.set(scheduler="synchronous"), pytest.MonkeyPatch.context() as mp:
        for name, value in forced.items():
            mp.setattr(release_mod, name, value)
        release_history(_counted(view, 3), policy, tmp_path / "dask", npartitions=2)
    # each partition read twice: for the time column's check, then once for all the rest
    assert sorted(_LOADS) == [0, 0, 1, 1, 2, 2]
    if not on_dask:  # the Dask path cuts its own Hilbert ranges: same groups, bytes compared elsewhere
        assert ledger_files(tmp_path / "dask") == ledger_files(tmp_path / "pandas")


def test_several_views_stay_lazy(hist_4x300):
    mh, policy = hist_4x300
    two = mh.history[mh.history[policy.time] <= 2].reset_index(drop=True)
    _LOADS.clear()
    with dask.config.set(scheduler="synchronous"):
        checked = checked_history(_counted(two, 2), policy, until=1)
        assert checked.indices == [1]
        loads = len(_LOADS)  # the time column's check
        checked.history.map_partitions(len).compute()
    assert len(_LOADS) == loads + 2  # not persisted: a pass reads the partitions again
    _LOADS.clear()
    with dask.config.set(scheduler="synchronous"):
        checked = checked_history(_counted(two[two[policy.time] == 1], 2), policy)
        loads = len(_LOADS)
        assert loads == 4 and checked.indices == [1]  # the time column's check, then the persisted read
        checked.history.map_partitions(len).compute()
    assert len(_LOADS) == loads  # persisted: read no more

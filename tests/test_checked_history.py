"""``checked_history`` (the history a release reads): its column checks run once, before the
Parquet footers are read, and refuse as ``check_history`` refuses (hand-made histories)."""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pytest

import dpriv.input_checks as ic
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy

FIELDS = {"id": "rid", "qi": ["age"], "sensitive": "s", "time": "view", "k": 2, "t": 1.0, "j": 5.0}
POLICY = ReleasePolicy(**FIELDS)


def _history(views: list[int]) -> pd.DataFrame:
    rows = [(v, r, 40 + r, "ab"[r % 2]) for v in views for r in range(4)]
    return pd.DataFrame(rows, columns=["view", "rid", "age", "s"])


def _counted(monkeypatch) -> list[object]:
    calls: list[object] = []
    real = ic.missing_columns

    def counting(columns, policy, frame=None):
        calls.append(columns)
        return real(columns, policy, frame)

    monkeypatch.setattr(ic, "missing_columns", counting)
    return calls


@pytest.mark.parametrize("views", [[1], [2, 1, 2]])
def test_the_columns_are_checked_once_on_a_parquet_history(views, tmp_path, monkeypatch):
    _history(views).to_parquet(tmp_path / "h.parquet")
    calls = _counted(monkeypatch)
    checked = ic.checked_history(dd.read_parquet(tmp_path / "h.parquet"), POLICY)
    assert checked.indices == sorted(set(views)) and len(calls) == 1
    assert len(checked.history.compute()) == 4 * len(views)


def test_a_pandas_history_is_checked_once_and_cut_at_until(monkeypatch):
    calls = _counted(monkeypatch)
    checked = ic.checked_history(_history([1, 2, 3]), POLICY, until=2)
    assert checked.indices == [1, 2] and len(calls) == 1 and len(checked.history) == 12


def test_refusals_are_those_of_check_history(tmp_path):
    no_s = _history([1]).drop(columns="s")
    no_s.to_parquet(tmp_path / "no_s.parquet")
    with pytest.raises(InputError, match=r"missing column\(s\) \['s'\]"):
        ic.checked_history(dd.read_parquet(tmp_path / "no_s.parquet"), POLICY)
    no_view = _history([1]).drop(columns="view")
    with pytest.raises(InputError, match="missing time column 'view'"):
        ic.checked_history(no_view, POLICY)
    with pytest.raises(PolicyError, match="a history needs a time column"):
        ic.checked_history(_history([1]), ReleasePolicy(**{**FIELDS, "time": None}))


def test_the_footers_are_asked_only_about_a_time_column_the_history_has(tmp_path, monkeypatch):
    """A policy without a time column, or a history without it, is refused before the footers
    are asked anything; a history that has it is asked about that column once."""
    _history([1]).to_parquet(tmp_path / "h.parquet")
    asked: list[object] = []
    real = ic.one_value  # dpriv.part_footers.one_value, as checked_history finds it
    monkeypatch.setattr(ic, "one_value", lambda frame, column: asked.append(column) or real(frame, column))
    history = dd.read_parquet(tmp_path / "h.parquet")
    with pytest.raises(PolicyError, match="a history needs a time column"):
        ic.checked_history(history, ReleasePolicy(**{**FIELDS, "time": None}))
    with pytest.raises(InputError, match="missing time column 'view'"):
        ic.checked_history(history.drop(columns="view"), POLICY)
    assert asked == []
    assert ic.checked_history(history, POLICY).indices == [1]
    assert asked == ["view"]


def test_one_value_of_a_column_the_history_lacks_is_false_without_a_footer_read(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from dpriv.part_footers import one_value

    _history([1]).to_parquet(tmp_path / "h.parquet")
    history = dd.read_parquet(tmp_path / "h.parquet")
    reads: list[object] = []
    real = pq.read_metadata
    monkeypatch.setattr(pq, "read_metadata", lambda *a, **k: reads.append(a) or real(*a, **k))
    assert one_value(history, "week") is False and one_value(history, None) is False
    assert reads == []
    assert one_value(history, "view") is True and len(reads) == 1  # the spy sees a footer read

"""A weekly batch job's history folder (session 43, user D): one Parquet file per week, or the
parts Dask writes.

* A folder written by Dask (``ddf.to_parquet(folder)``: its unnamed index stored as
  ``__null_dask_index__``, and empty parts where a partition held no row) was an internal error
  (``KeyError: "['__null_dask_index__'] not in index"``, exit 1); it is released as the same rows
  in one file are, byte for byte.
* A week's file with no row (an export that found nothing, or failed) was a silent exit 0
  ``nothing to release``; it is refused by name (exit 2, ledger unchanged), while a writer's empty
  parts (``part.0.parquet``) are still read as parts of one table.
"""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pytest
from test_cli import assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history


@pytest.fixture(scope="module")
def weeks(tmp_path_factory):
    """3 generated views x 60, their policy (nothing suppressed at these sizes) and the history."""
    out = tmp_path_factory.mktemp("weeks")
    mh = medical_history(n_views=3, view_size=60, seed=4)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.6, "j": 0.9, "max_suppression": 1.0}})
    return out, mh.history


def _release(history, ledger, policy) -> object:
    return CliRunner().invoke(
        app, ["release", str(history), "--ledger", str(ledger), "--policy", str(policy), "--no-cluster"]
    )


def _week_files(root, frame: pd.DataFrame, views=(1, 2, 3)):
    root.mkdir()
    for v in views:
        frame[frame["view"] == v].reset_index(drop=True).to_parquet(root / f"week{v}.parquet", index=False)
    return root


def _files(ledger) -> dict:
    return {p: p.read_bytes() for p in sorted(ledger.rglob("*.parquet"))}


def test_a_dask_written_folder_with_empty_parts_is_released_as_the_one_file(weeks, tmp_path):
    out, frame = weeks
    policy = out / "policy.toml"
    # an empty first partition (a filter that left it nothing) and Dask's unnamed index
    parts = dd.concat([dd.from_pandas(frame.iloc[:0], npartitions=1), dd.from_pandas(frame, npartitions=3)])
    parts.to_parquet(tmp_path / "dask")
    names = sorted(p.name for p in (tmp_path / "dask").glob("*.parquet"))
    assert names[0] == "part.0.parquet" and len(pd.read_parquet(tmp_path / "dask" / names[0])) == 0
    assert "__null_dask_index__" in pd.read_parquet(tmp_path / "dask" / names[1]).reset_index().columns
    res = _release(tmp_path / "dask", tmp_path / "from-dask", policy)
    assert res.exit_code == 0, res.output
    assert _release(out / "history.parquet", tmp_path / "from-file", policy).exit_code == 0
    got = {p.relative_to(tmp_path / "from-dask"): b for p, b in _files(tmp_path / "from-dask").items()}
    want = {p.relative_to(tmp_path / "from-file"): b for p, b in _files(tmp_path / "from-file").items()}
    assert len(want) == 6 and got == want  # 3 views and 3 states, the same bytes


def test_a_week_file_with_no_row_is_refused_by_name_and_the_ledger_stays(weeks, tmp_path):
    out, frame = weeks
    folder = _week_files(tmp_path / "h", frame, views=(1, 2))
    assert _release(folder, tmp_path / "led", out / "policy.toml").exit_code == 0
    frame.iloc[:0].to_parquet(folder / "week3.parquet", index=False)  # this week's export: no row
    before = tree(tmp_path)
    res = _release(folder, tmp_path / "led", out / "policy.toml")
    assert_refused(
        res,
        rf"{folder}/week3\.parquet holds no row \(its columns only\)",
        r"export that week again",
        r"a week with no data has no view: move the file out of the folder",
    )
    assert "nothing to release" not in res.output
    assert tree(tmp_path) == before  # nothing written, the ledger at release 2

"""A bad row of a history given as a Parquet folder is named in its own file (s34): the messages
said ``row 251 of DIR`` (the row of the whole folder), which no file shows; now
``row 117 of DIR/part.1.parquet``, the files taken in Dask's order (``part.2`` before ``part.10``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_cli import assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.parquet_files import folder_rows

#: The parts of the folder and the history rows each holds (natural order of the names, which is
#: not the text order: part.10 sorts before part.2 as text).
PARTS = {"part.1.parquet": (0, 50), "part.2.parquet": (50, 90), "part.10.parquet": (90, 120)}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """2 generated views x 60 and their policy; the history split into the PARTS of a folder."""
    out = tmp_path_factory.mktemp("folder")
    mh = medical_history(n_views=2, view_size=60, seed=0)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.6, "j": 0.9, "max_suppression": 1.0}})
    return out, mh.history.assign(age=mh.history["age"].astype(float))


def _folder(root, frame: pd.DataFrame):
    root.mkdir()
    for name, (a, b) in PARTS.items():
        frame.iloc[a:b].to_parquet(root / name, index=False)
    return root


def test_folder_rows_places_rows_in_their_files_in_dask_order(history, tmp_path):
    _, frame = history
    folder = _folder(tmp_path / "h", frame)
    got = folder_rows(str(folder), [0, 49, 50, 89, 90, 119])
    assert got == [
        (f"{folder}/part.1.parquet", 0),
        (f"{folder}/part.1.parquet", 49),
        (f"{folder}/part.2.parquet", 0),
        (f"{folder}/part.2.parquet", 39),
        (f"{folder}/part.10.parquet", 0),
        (f"{folder}/part.10.parquet", 29),
    ]
    assert folder_rows(str(folder), [120]) is None  # past the last row
    assert folder_rows(str(folder / "part.1.parquet"), [0]) is None  # a file: named as before


@pytest.mark.parametrize(("row", "name", "in_file"), [(95, "part.10.parquet", 6), (60, "part.2.parquet", 11)])
def test_a_bad_row_of_a_history_folder_is_named_in_its_file(history, tmp_path, row, name, in_file):
    out, frame = history
    bad = frame.copy()
    bad.loc[row, "age"] = np.nan
    folder = _folder(tmp_path / "h", bad)
    before = tree(tmp_path)
    res = CliRunner().invoke(
        app, ["release", str(folder), "--ledger", str(tmp_path / "led"), "--policy", str(out / "policy.toml")]
    )
    view = bad.loc[row, "view"]
    assert_refused(
        res,
        r"column 'age' has missing values",
        rf"1 row: row {in_file} of {folder}/{name} \(view={view}\) "
        r"\(the first row of a file is row 1\)",
    )
    assert f"of {folder} " not in res.output and f"row {row + 1} " not in res.output
    assert tree(tmp_path) == before  # nothing written

"""A Parquet input written from a frame indexed by the respondent id
(``df.set_index("respondent_id").to_parquet(...)``, a common pandas habit) keeps the id: its named
index levels are read as ordinary columns (Dask's reader dropped them, and with pandas >= 3.1 a
consecutive id stored only as a range in the metadata failed at compute), and the CLI releases
the same bytes as from the same data with the id as a column. pandas' unnamed row labels are
still not read."""

import pandas as pd
import pytest
from conftest import random_view
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.io import read_table

POLICY = ["--qi", "age,gender,weight", "--sensitive", "exam_result", "--k", "2", "--t", "1", "--j", "10"]


def _run(*args) -> None:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output


def test_release_of_a_history_indexed_by_id_gives_the_bytes_of_the_id_as_a_column(tmp_path):
    write_history(tmp_path, medical_history(n_views=2, view_size=100, seed=3))
    history = pd.read_parquet(tmp_path / "history.parquet")
    history.set_index("respondent_id").to_parquet(tmp_path / "indexed.parquet")  # ids repeat: a column
    history.to_parquet(tmp_path / "column.parquet", index=False)
    for name in ("indexed", "column"):
        _run("release", tmp_path / f"{name}.parquet", "--ledger", tmp_path / name, "--no-cluster",
             "--id", "respondent_id", "--time", "view", *POLICY)  # fmt: skip
    for i in ("1", "2"):
        for file in (f"releases/{i}/view.parquet", f"state/{i}/state.parquet"):
            assert (tmp_path / "indexed" / file).read_bytes() == (tmp_path / "column" / file).read_bytes()
    state = pd.read_parquet(tmp_path / "indexed/state/2/state.parquet")
    assert set(state["respondent_id"]) == set(history["respondent_id"])


@pytest.mark.parametrize("ids", ["consecutive", "scattered"])
def test_anonymize_of_a_view_indexed_by_id_gives_the_bytes_of_the_id_as_a_column(tmp_path, ids):
    view = random_view(60, seed=1)
    # pandas >= 3.1 keeps consecutive ids only as a range in the file's metadata, others as a column
    view["respondent_id"] = 1000 + view["respondent_id"] * (1 if ids == "consecutive" else 7) % 61
    view.set_index("respondent_id").to_parquet(tmp_path / "indexed.parquet")
    view.to_parquet(tmp_path / "column.parquet", index=False)
    for name in ("indexed", "column"):
        _run("anonymize", tmp_path / f"{name}.parquet", "--out", tmp_path / f"{name}-out.parquet",
             "--no-cluster", "--id", "respondent_id", *POLICY)  # fmt: skip
    # the released rows are ordered by the id: wrong or lost ids would give other bytes
    assert (tmp_path / "indexed-out.parquet").read_bytes() == (tmp_path / "column-out.parquet").read_bytes()


def test_an_unnamed_index_of_a_filtered_frame_is_still_not_read(tmp_path):
    view = random_view(30, seed=2)
    kept = view[view["age"] > 55]  # its index (row labels 3, 7, ...) is no RangeIndex from 0
    kept.to_parquet(tmp_path / "kept.parquet")
    frame = read_table(str(tmp_path / "kept.parquet"))
    assert list(frame.columns) == list(view.columns)
    got = frame.compute()
    assert got.to_dict("list") == kept.to_dict("list")
    assert list(got.index) == list(kept.index)  # as before: the labels stay the index, not data


def test_both_named_levels_of_a_multi_index_are_read_as_columns_first(tmp_path):
    view = random_view(20, seed=3).assign(day=pd.date_range("2024-01-01", periods=20))
    view.set_index(["respondent_id", "day"]).to_parquet(tmp_path / "m.parquet")
    got = read_table(str(tmp_path / "m.parquet")).compute()
    assert list(got.columns) == ["respondent_id", "day", "age", "gender", "weight", "exam_result"]
    assert got["respondent_id"].tolist() == view["respondent_id"].tolist()
    assert got["day"].tolist() == view["day"].tolist()
    assert got["exam_result"].tolist() == view["exam_result"].tolist()


def test_ids_kept_as_ranges_in_a_folder_start_again_in_each_file(tmp_path):
    (tmp_path / "f").mkdir()
    for i, (start, step) in enumerate([(10, 7), (500, 1), (3, 2)]):  # part.10 is read after part.2
        index = pd.RangeIndex(start, start + step * (4 + i), step, name="respondent_id")
        pd.DataFrame({"age": range(4 + i)}, index=index).to_parquet(
            tmp_path / "f" / f"part.{[0, 2, 10][i]}.parquet"
        )
    got = read_table(str(tmp_path / "f")).compute()
    assert got["respondent_id"].tolist() == [10, 17, 24, 31, 500, 501, 502, 503, 504, 3, 5, 7, 9, 11, 13]
    assert got["age"].tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5]


def test_a_folder_whose_files_store_the_index_differently_is_refused_by_name(tmp_path):
    (tmp_path / "f").mkdir()
    pd.DataFrame({"age": [1, 2, 3]}, index=pd.Index([10, 17, 30], name="respondent_id")).to_parquet(
        tmp_path / "f" / "part.0.parquet"
    )
    pd.DataFrame({"age": [4, 5]}, index=pd.RangeIndex(12, 14, name="respondent_id")).to_parquet(
        tmp_path / "f" / "part.1.parquet"
    )
    with pytest.raises(InputError, match=r"store their index differently .*part\.1\.parquet.*reset_index"):
        read_table(str(tmp_path / "f"))

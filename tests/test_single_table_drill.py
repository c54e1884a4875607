"""A statistics office with one table (session 43, user C): the Mondrian baselines ran only
under ``dpriv release``, which wants a history; a table without a time column was told to
``set [columns] time`` and nothing about what a one-table user writes there. The message now
names ``dpriv anonymize --method`` (session 44) and how one table becomes a history of one view,
and that history releases under every baseline with its promise kept (checked here with pandas)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_cli import assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app

FLAGS = ["--qi", "age,sex", "--sensitive", "income", "--k", "4"]


def _table(n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["Female", "Male"], n),
            "income": rng.choice(["<=50K", ">50K"], n, p=[0.7, 0.3]),
        }
    )


def test_one_table_given_to_release_is_told_how_to_make_it_a_history_of_one_view(tmp_path):
    _table().assign(rid=range(80)).to_csv(tmp_path / "t.csv", index=False)
    before = tree(tmp_path)
    res = CliRunner().invoke(
        app,
        [
            "release",
            str(tmp_path / "t.csv"),
            "--ledger",
            str(tmp_path / "L"),
            "--id",
            "rid",
            *FLAGS,
            "--method",
            "mondrian-l",
        ],  # fmt: skip
    )
    assert_refused(
        res,
        r"a history needs a time column: set \[columns\] time \(e\.g\. \"view\"\) or --time C",
        r"One table is released by dpriv anonymize, with JS-reduce or a Mondrian baseline \(--method "
        r"mondrian-l; --add-row-id for a table without ids\); into a ledger it is a history of one view: add "
        r"a column of 1s \(pandas: frame\.assign\(view=1\)\)",
    )
    assert tree(tmp_path) == before


def test_the_table_as_a_history_of_one_view_releases_under_mondrian_l_with_its_promise_kept(tmp_path):
    table = _table()
    table.assign(rid=range(len(table)), view=1).to_csv(tmp_path / "t1.csv", index=False)
    (tmp_path / "p.toml").write_text("[privacy]\nl = 2\n")
    res = CliRunner().invoke(
        app, ["release", str(tmp_path / "t1.csv"), "--ledger", str(tmp_path / "L"), "--policy",
              str(tmp_path / "p.toml"), "--id", "rid", "--time", "view", *FLAGS, "--method", "mondrian-l"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    view = pd.read_parquet(tmp_path / "L/releases/1/view.parquet")
    groups = view.groupby("qi_group")
    assert groups.size().min() >= 4  # k
    assert groups["income"].nunique().min() >= 2  # distinct l-diversity, l = 2
    assert sorted(view["income"]) == sorted(table["income"])  # nothing suppressed, S as it was
    box = groups[["age_min", "age_max"]].first()
    ages = np.sort(table["age"].to_numpy())  # each box holds at least its size of the table's ages
    inside = np.searchsorted(ages, box["age_max"], "right") - np.searchsorted(ages, box["age_min"], "left")
    assert (inside >= groups.size().loc[box.index].to_numpy()).all()

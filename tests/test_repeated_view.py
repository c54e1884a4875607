"""A view that holds exactly the rows of an earlier one is refused before anything is written.

A new user's drill (session 31) sent week 4's file again as week 5 of a weekly job: ``dpriv
release`` committed it (exit 0), the manifest recording the same ``input_sha`` twice. The slip
is now refused with exit 2, naming both views; ``--allow-repeated-view`` releases weeks that
really are the same.
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from loose_history import write_loose
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.ledger import Ledger
from dpriv.ledger_checks import check_repeated
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def repeated(history: pd.DataFrame, copy: int, as_view: int) -> pd.DataFrame:
    """``history`` with view ``as_view`` replaced by view ``copy``'s rows (renumbered)."""
    again = history[history["view"] == copy].assign(view=as_view)
    return pd.concat([history[history["view"] != as_view], again], ignore_index=True)


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A ledger of releases 1 and 2 of a 3-view history, and that history with view 3 = view 2."""
    base = tmp_path_factory.mktemp("repeat")
    write_loose(base, n_views=3, view_size=80, seed=3)
    hist = pd.read_parquet(base / "history.parquet")
    hist[hist["view"] <= 2].to_parquet(base / "h12.parquet", index=False)
    repeated(hist, 2, 3).to_parquet(base / "again.parquet", index=False)
    res = run("release", base / "h12.parquet", "--ledger", base / "L", "--policy", base / "policy.toml")
    assert res.exit_code == 0, res.output
    return base


def test_last_weeks_file_sent_again_is_refused_and_writes_nothing(released, tmp_path):
    root = tmp_path / "L"
    shutil.copytree(released / "L", root)
    before = snapshot(root)
    res = run("release", released / "again.parquet", "--ledger", root)
    assert res.exit_code == 2, res.output
    assert "view 3 holds exactly the rows of view 2" in res.output
    assert "--allow-repeated-view" in res.output
    digest = Ledger(root).committed()[1]["input_sha"]
    assert digest in res.output  # the fingerprint both views share
    assert snapshot(root) == before


def test_the_flag_releases_it_and_a_later_resume_needs_no_flag(released, tmp_path):
    root = tmp_path / "L"
    shutil.copytree(released / "L", root)
    res = run("release", released / "again.parquet", "--ledger", root, "--allow-repeated-view")
    assert res.exit_code == 0, res.output
    shas = [r["input_sha"] for r in Ledger(root).committed()]
    assert len(shas) == 3 and shas[1] == shas[2]
    # a week 4 later: the committed repeat is history, not a new slip
    hist = pd.read_parquet(released / "again.parquet")
    week4 = hist[hist["view"] == 1].iloc[1:].assign(view=4)  # view 1 less one tuple: not a copy
    more = pd.concat([hist, week4], ignore_index=True)
    more.to_parquet(tmp_path / "more.parquet", index=False)
    res = run("release", tmp_path / "more.parquet", "--ledger", root)
    assert res.exit_code == 0, res.output
    assert Ledger(root).last_index() == 4


def test_a_first_release_of_a_history_with_a_copied_view_makes_no_ledger(tmp_path):
    write_loose(tmp_path, n_views=3, view_size=60, seed=5)
    history = repeated(pd.read_parquet(tmp_path / "history.parquet"), 1, 3)
    policy = ReleasePolicy.from_toml(tmp_path / "policy.toml")
    with pytest.raises(InputError, match=r"view 3 holds exactly the rows of view 1"):
        release_history(history, policy, tmp_path / "L")
    assert not (tmp_path / "L").exists()


def test_check_repeated_names_the_first_copy_and_skips_unknown_digests():
    check_repeated({1: "", 2: "", 3: "a"}, set())  # no digest recorded (an early ledger): not compared
    check_repeated({1: "a", 2: "a", 3: "b"}, {1, 2})  # the repeat is committed already
    with pytest.raises(InputError, match=r"view 4 holds exactly the rows of view 1 .*fingerprint a\)"):
        check_repeated({1: "a", 2: "b", 3: "c", 4: "a"}, {1, 2})
    with pytest.raises(InputError, match=r"view 3 holds exactly the rows of view 2"):
        check_repeated({1: "a", 2: "b", 3: "b"}, set())

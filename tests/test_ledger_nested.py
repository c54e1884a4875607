"""A ledger inside another one (a weekly-batch drill): ``dpriv release ... --ledger
wk/ledger/releases/9`` wrote a whole ledger, its sensitive ``state/`` included, among the
public files of wk/ledger, whose next run then failed on "files dpriv did not write". A new
ledger inside an existing one is refused before anything is written, in the CLI and in Python."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import LedgerError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

POLICY = {"id": "pid", "time": "week", "qi": ["age"], "sensitive": "s", "k": 3, "t": 1.0, "j": 10.0}


def weeks(n: int = 2) -> pd.DataFrame:
    """Weeks 1..n of 30 respondents each (week w the same whatever n)."""
    rng = [np.random.default_rng(w) for w in range(1, n + 1)]
    return pd.concat(
        pd.DataFrame(
            {"pid": np.arange(30), "week": w, "age": r.integers(30, 60, 30), "s": r.choice(list("abc"), 30)}
        )
        for w, r in enumerate(rng, start=1)
    )


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def outer(tmp_path):
    """A ledger holding two releases."""
    release_history(weeks(), ReleasePolicy.from_dict(POLICY), tmp_path / "wk" / "ledger")
    return tmp_path / "wk" / "ledger"


@pytest.mark.parametrize("inner", ["releases/9", "releases/2/new", "state/new", "attack/x", "more"])
def test_a_new_ledger_inside_a_ledger_is_refused_and_nothing_is_written(outer, inner):
    before = snapshot(outer)
    with pytest.raises(LedgerError, match=rf"{outer / inner} lies inside the release ledger {outer}, "):
        Ledger(outer / inner, create=True)
    with pytest.raises(LedgerError, match=rf"give {outer} itself to release into that ledger, or a folder"):
        release_history(weeks(), ReleasePolicy.from_dict(POLICY), outer / inner)
    assert snapshot(outer) == before and not (outer / inner).exists()
    Ledger(outer, create=True).unlock()  # the ledger itself still opens (and its parent's folders)
    release_history(weeks(3), ReleasePolicy.from_dict(POLICY), outer)  # its next week is released
    assert Ledger(outer).last_index() == 3


def test_release_history_refuses_a_nested_ledger_before_it_reads_or_checks_the_views(outer, tmp_path):
    """A drill: release_history into L/releases/9 with a respondent twice in week 3 said
    "duplicate 'pid' within one view" (the views were checked first): fixing the data would only
    have led to the nested-ledger refusal. Refused first, as dpriv release does; a history file
    that does not exist is not even looked for."""
    bad = weeks(3)
    bad.iloc[65, 0] = bad.iloc[64, 0]  # a respondent twice in week 3
    before, inner = snapshot(outer), outer / "releases" / "9"
    for history in (bad, tmp_path / "no-such-history.parquet"):
        with pytest.raises(LedgerError, match=f"^the ledger {re.escape(str(inner))} lies inside "):
            release_history(history, ReleasePolicy.from_dict(POLICY), inner)
    assert snapshot(outer) == before


def test_the_cli_refuses_ledger_inside_a_ledger_with_exit_2_naming_both(outer, tmp_path):
    weeks(3).to_parquet(tmp_path / "upto3.parquet")
    columns = '[columns]\nid = "pid"\ntime = "week"\nqi = ["age"]\nsensitive = "s"\n'
    (tmp_path / "p.toml").write_text(columns + "[privacy]\nk = 3\nt = 1.0\nj = 10.0\n")
    before = snapshot(outer)
    inner = outer / "releases" / "9"
    args = [
        "release",
        str(tmp_path / "upto3.parquet"),
        "--ledger",
        str(inner),
        "--policy",
        str(tmp_path / "p.toml"),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert lines == [
        f"error: --ledger {inner} lies inside the release ledger {outer}, whose files are the record of "
        "what was released: a ledger there would put its sensitive state/ among that ledger's files and "
        f"block its next release; nothing was written: give {outer} itself to release into that ledger, "
        "or a folder outside it for a new ledger"
    ], res.output
    assert snapshot(outer) == before and not inner.exists()


def test_a_folder_holding_a_ledger_is_no_new_ledger(outer):
    """The other way round: a new ledger whose folder holds a ledger further down is refused as a
    folder that is not empty (a ledger is made only in an empty or new folder)."""
    parent = outer.parent
    before = snapshot(parent)
    with pytest.raises(LedgerError, match=rf"{parent} is not empty and is not a ledger"):
        Ledger(parent, create=True)
    assert snapshot(parent) == before


def test_a_ledger_an_earlier_dpriv_made_inside_is_named_as_a_ledger_not_as_a_users_files(outer, tmp_path):
    """The drill's next weekly run said the ledger held "releases/9/.dpriv-lock,
    releases/9/manifest.json, ... which dpriv did not write": it was dpriv's own nested ledger."""
    release_history(weeks(), ReleasePolicy.from_dict(POLICY), tmp_path / "elsewhere")
    shutil.move(tmp_path / "elsewhere", outer / "releases" / "9")  # where a dpriv before the refusal put it
    before = snapshot(outer)
    with pytest.raises(LedgerError) as exc:
        release_history(weeks(3), ReleasePolicy.from_dict(POLICY), outer)
    assert str(exc.value) == (
        f"the ledger {outer} holds another release ledger (releases/9, made inside it by an earlier dpriv) "
        "where releases 3 and later go; nothing was written and none of its files was removed: move "
        f"releases/9 out of {outer} (a ledger of its own: keep its state/ private), then run the "
        "command again"
    )
    assert snapshot(outer) == before

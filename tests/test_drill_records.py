"""A new user's drill (session 33) on what a ledger records and what dpriv's messages say.

``dpriv export`` of a raw history blamed the missing metrics, not the table; ``dpriv export
--out LEDGER/attack/a.csv`` wrote its copy of a view into the ledger's record (only ``dpriv
attack`` and ``report`` results belong in ``attack/``); ``dpriv attack`` given another history
printed respondent ids beside their true sensitive values (logs keep them). An edited
``metrics.json`` is in ``test_ledger_damage.py``. Refusals: exit 2, nothing written.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from loose_history import write_loose
from test_cli import assert_refused
from test_cli_safety import snapshot
from typer.testing import CliRunner

from dpriv.attack import attack
from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.interchange import to_interchange
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A generated history of 2 views x 80, its ledger ``L`` (with an ``attack/`` folder, as
    ``dpriv demo`` leaves it) and ``wrong.parquet``: the same rows, the sensitive values
    shuffled within each view."""
    base = tmp_path_factory.mktemp("records")
    mh = write_loose(base, n_views=2, view_size=80, seed=3).mh
    release_history(mh.history, ReleasePolicy.from_toml(base / "policy.toml"), base / "L")
    (base / "L" / "attack").mkdir()
    wrong = mh.history.copy()
    wrong["exam_result"] = wrong.groupby("view")["exam_result"].transform(
        lambda s: s.sample(frac=1, random_state=1).to_numpy()
    )
    assert (wrong["exam_result"] != mh.history["exam_result"]).any()
    wrong.to_parquet(base / "wrong.parquet", index=False)
    return base


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_export_of_a_history_says_it_is_not_a_released_view(released, tmp_path):
    """Was "the number of suppressed tuples is unknown (no metrics)"; only --suppressed omit
    told that the table is no released view."""
    history, out = released / "history.parquet", tmp_path / "h.csv"
    not_a_view = (re.escape(str(history)), r"a released view starts with 'qi_group'")
    for extra in ((), ("--metrics", released / "L" / "releases" / "1" / "metrics.json")):
        said = assert_refused(run("export", history, "--out", out, *extra), *not_a_view)
        assert "suppressed" not in said and "metrics" not in said
    said = assert_refused(run("export", history, "--out", out, "--policy", released / "policy.toml"))
    assert "policy's released format is ['qi_group'" in said and "suppressed" not in said
    assert not out.exists()
    # the library says the same first
    with pytest.raises(InputError, match="a released view starts with 'qi_group'"):
        to_interchange(pd.read_parquet(history))


def test_export_into_a_ledger_is_refused_even_into_its_attack_folder(released, tmp_path):
    """``--out LEDGER/attack/a.csv`` was written: attack/ holds the results the report reads."""
    led = released / "L"
    before = snapshot(led)
    for target in (led / "attack" / "a.csv", led / "a.csv", led / "releases" / "1" / "a.csv"):
        res = run("export", "--ledger", led, "--view", 1, "--out", target)
        said = assert_refused(res, "lies inside the release ledger", "nothing was written",
                              "choose a path outside the ledger")  # fmt: skip
        says_why = "its attack/ folder takes only the results of dpriv attack" in said
        assert says_why == (target.parent.name == "attack")
        res = run("export", led / "releases" / "1" / "view.parquet", "--out", target)  # by path too
        assert_refused(res, "lies inside the release ledger")
    assert snapshot(led) == before
    res = run("export", "--ledger", led, "--view", 1, "--out", tmp_path / "a.csv")
    assert res.exit_code == 0, res.output


def test_attack_on_another_history_names_no_respondent_and_no_value(released):
    """Was: "... (those holding ['liver_2', ...]: respondent_id [89, 91, 185, 200] ...)". The
    ledger's digest of each view (input_sha) says which view is not the one released."""
    led = released / "L"
    policy = ReleasePolicy.from_toml(released / "policy.toml")
    before = snapshot(led)
    res = run("attack", led, "--history", released / "wrong.parquet", "--knowledge", "dk",
              "--policy", released / "policy.toml")  # fmt: skip
    said = assert_refused(res, r"view 1 of the history is not the one released into .*L",
                          "give the history that was released")  # fmt: skip
    with pytest.raises(InputError) as err:
        attack(led, pd.read_parquet(released / "wrong.parquet"), policy, "dk", deductions=False)
    for text in (said, str(err.value)):
        assert "is not the one released" in text
        assert not [v for v in policy.sensitive_domain if str(v) in text], text
        assert "respondent_id" not in text and not re.search(r"\[\d+(, \d+)*", text)
    assert snapshot(led) == before

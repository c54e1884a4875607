"""A scheduled release's ledger: a new one is said, and refused with --existing-ledger
(dpriv.ledger_expect); a history older than the ledger is warned of."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from loose_history import release, write_loose
from test_cli import tree

from dpriv.errors import LedgerError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("gen"), n_views=2, view_size=60).folder


def test_a_new_ledger_is_said_once_and_not_when_resumed(history, tmp_path):
    """A missing --ledger (an unmounted share) silently became a new ledger: every week was
    released again from view 1 and nothing in the log said so."""
    led = tmp_path / "ledger"  # the parent: an empty mount point
    res = release(history, led)
    assert res.exit_code == 0, res.output
    notes = [line for line in res.output.splitlines() if "new ledger" in line]
    assert notes == [f"note: starting a new ledger at {led} (no manifest.json there): releases from view 1"]
    assert [r["index"] for r in Ledger(led).committed()] == [1, 2]
    res = release(history, led)
    assert res.exit_code == 0, res.output
    assert "new ledger" not in res.output


@pytest.mark.parametrize("made", ["missing", "empty"])
def test_existing_ledger_refuses_a_missing_or_empty_folder(history, tmp_path, made):
    led = tmp_path / "share" / "ledger"
    if made == "empty":
        led.mkdir(parents=True)
    before = tree(tmp_path)
    res = release(history, led, "--existing-ledger")
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    what = "does not exist" if made == "missing" else "is an empty folder"
    assert errors == [
        f"error: --existing-ledger: the ledger {led} {what}: nothing was written. Is its file system "
        "mounted, is the path (an environment variable) set? A new ledger's first release is run "
        "without --existing-ledger"
    ]
    assert tree(tmp_path) == before  # nothing made, not even the folder
    assert "Traceback" not in res.output


def test_existing_ledger_resumes_a_ledger_that_holds_releases(history, tmp_path):
    led = tmp_path / "led"
    assert release(history, led).exit_code == 0  # the first week: run without the flag
    res = release(history, led, "--existing-ledger")
    assert res.exit_code == 0, res.output
    assert "nothing to release: the ledger already holds releases 1..2" in res.output


def test_existing_ledger_refuses_a_ledger_without_a_committed_release(history, tmp_path):
    led = tmp_path / "led"
    Ledger(led, create=True)  # a first run that failed before its commit
    res = release(history, led, "--existing-ledger")
    assert res.exit_code == 2, res.output
    assert f"the ledger {led} is a ledger that holds no committed release" in res.output
    assert Ledger(led).committed() == []


def test_release_history_existing_ledger_refuses_a_missing_folder(history, tmp_path):
    frame = pd.read_parquet(history / "history.parquet")
    pol = ReleasePolicy.read_toml(history / "policy.toml", {})
    led = tmp_path / "nowhere"
    with pytest.raises(LedgerError, match=r"existing_ledger=True: the ledger .*nowhere does not exist"):
        release_history(frame, pol, led, existing_ledger=True)
    assert not led.exists()


def _first_view(history, tmp_path):
    """The history's view 1 alone: last month's export where this week's was expected."""
    pol = ReleasePolicy.read_toml(history / "policy.toml", {})
    frame = pd.read_parquet(history / "history.parquet")
    path = tmp_path / "old.parquet"
    frame[frame[pol.time] == 1].to_parquet(path, index=False)
    return path


STALE = (
    "the history's views stop at 1 but the ledger already holds releases 1..2: is it an old or "
    "incomplete export? No new week arrived"
)


def test_a_history_older_than_the_ledger_is_a_warning(history, tmp_path):
    """A failed upstream export (fewer views than the ledger holds) ended with exit 0 and
    only 'nothing to release': it looked like success."""
    led = tmp_path / "led"
    assert release(history, led).exit_code == 0
    res = release(history, led, data=_first_view(history, tmp_path))
    assert res.exit_code == 0, res.output
    assert [line for line in res.output.splitlines() if line.startswith("warning:")] == [f"warning: {STALE}"]
    assert "nothing to release: the ledger already holds releases 1..2" in res.output
    res = release(history, led)  # last week's file again (a retry): nothing to warn of
    assert res.exit_code == 0 and "warning:" not in res.output, res.output


def test_existing_ledger_refuses_a_history_older_than_the_ledger(history, tmp_path):
    led = tmp_path / "led"
    assert release(history, led).exit_code == 0
    before = tree(led)
    res = release(history, led, "--existing-ledger", data=_first_view(history, tmp_path))
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {STALE}; nothing was released: give the history that holds view 3 (dpriv release "
        "--existing-ledger, release_history(..., existing_ledger=True), refuses a history older than "
        "the ledger)"
    ]
    assert tree(led) == before


def test_release_history_warns_of_a_history_older_than_the_ledger(history, tmp_path):
    pol = ReleasePolicy.read_toml(history / "policy.toml", {})
    led = tmp_path / "led"
    release_history(pd.read_parquet(history / "history.parquet"), pol, led)
    old = pd.read_parquet(_first_view(history, tmp_path))
    with pytest.warns(UserWarning, match=re.escape(STALE)) as got:
        assert release_history(old, pol, led).last_index() == 2
    assert got[0].filename == __file__  # the user's line named

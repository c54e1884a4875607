"""dpriv removes from the next release's folders only what its own killed writer recorded
writing there (dpriv/ledger_written.py): a user's file named like dpriv's own output
(view.parquet, metrics.json, part-00000.parquet) was removed silently as a leftover."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_ledger_safety import commit, killed_commit, snapshot

import dpriv.ledger as ledger_mod
from dpriv.errors import LedgerError
from dpriv.ledger import Ledger
from dpriv.ledger_written import WRITTEN

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "led", create=True)
    commit(led, 1)
    return led


@pytest.mark.parametrize(
    "where",
    [
        "releases/2/view.parquet",
        "releases/2/metrics.json",
        "state/2/part-00000.parquet",
        "state/2/state.parquet",
    ],
)
def test_a_users_file_named_like_dprivs_output_is_refused_never_removed(ledger, where):
    root = ledger.root
    (root / where).parent.mkdir(parents=True)
    (root / where).write_bytes(b"PAR1 the user's own file")
    before = snapshot(root)
    with pytest.raises(LedgerError) as err:
        Ledger(root, create=True)
    name = where.rsplit("/", 1)[1]
    assert f"holds {where}, which dpriv did not write, where release 2 goes" in str(err.value)
    assert f"{name} is named like a file dpriv writes, but {WRITTEN} records no interrupted" in str(err.value)
    assert snapshot(root) == before


def test_a_killed_commits_file_the_user_then_replaced_is_refused(ledger, monkeypatch):
    root = ledger.root
    killed_commit(ledger, 2, monkeypatch)
    (root / "releases" / "2" / "metrics.json").write_text('{"mine": 1}')  # the user's now
    before = snapshot(root)
    with pytest.raises(LedgerError) as err:
        Ledger(root, create=True)
    said = str(err.value)
    assert "holds files of the uncommitted release 2 (releases/2/metrics.json) that are not the ones" in said
    assert f"remove or move away {root / 'releases' / '2'} by hand" in said and "did not write" not in said
    assert snapshot(root) == before  # the killed writer's other files stay too: nothing removed
    (root / "releases" / "2" / "metrics.json").unlink()  # the user moves it away
    led = Ledger(root, create=True)
    commit(led, 2)
    assert led.last_index() == 2 and not (root / WRITTEN).exists()


def test_a_file_the_record_names_but_the_user_edited_is_said_to_be_changed(ledger, monkeypatch):
    """The record names releases/2/metrics.json; the message said it records no interrupted
    release writing it, and 'nothing was written or removed' while the same open removed a
    killed writer's temp file."""
    root = ledger.root
    killed_commit(ledger, 2, monkeypatch)
    (root / "releases" / "2" / "metrics.json").write_text('{"mine": 1}')  # edited after the kill
    temp = root / "releases" / ".view.parquet.abcdefgh.dpriv-tmp"
    temp.write_bytes(b"half a file")
    with pytest.raises(LedgerError) as err:
        Ledger(root, create=True)
    said = str(err.value)
    assert "releases/2/metrics.json changed since that run wrote it (another size or modification" in said
    assert "records no interrupted" not in said and "or removed" not in said and "copies" not in said
    assert "nothing was written and none of these files was removed" in said and not temp.exists()


def test_a_copied_ledger_of_a_killed_commit_is_refused_as_a_copy_with_the_folders_to_remove(
    ledger, monkeypatch, tmp_path
):
    """Restored with cp -a after a kill: the files are the killed run's bytes, sizes and times
    under other inodes. Refused (a copy is not what the record names), but the message said they
    were files "which dpriv did not write" and that metrics.json "was changed since"."""
    killed_commit(ledger, 2, monkeypatch)
    copy = tmp_path / "restored"
    shutil.copytree(ledger.root, copy, copy_function=shutil.copy2)  # keeps sizes and mtimes (ns)
    before = snapshot(copy)
    with pytest.raises(LedgerError) as err:
        Ledger(copy, create=True)
    said = str(err.value)
    assert (
        "holds files of the uncommitted release 2 (releases/2/metrics.json, releases/2/view.parquet, "
        "state/2/state.parquet) that are not the ones this ledger's interrupted run recorded writing"
    ) in said
    assert "they are copies, with the recorded sizes and modification times but other inodes" in said
    assert f"remove or move away {copy / 'releases' / '2'} and {copy / 'state' / '2'} by hand" in said
    assert "did not write" not in said and "changed since" not in said
    assert snapshot(copy) == before  # still refused: nothing removed
    shutil.rmtree(copy / "releases" / "2")  # as the message says
    shutil.rmtree(copy / "state" / "2")
    led = Ledger(copy, create=True)
    commit(led, 2)
    assert led.last_index() == 2 and not (copy / WRITTEN).exists()


def test_a_record_of_a_release_committed_since_is_dropped_at_the_next_open(ledger, monkeypatch):
    """Killed between the manifest and the removal of the record: the record would stay for ever
    (nothing to release, so no next release's folders to clean up)."""
    root = ledger.root
    monkeypatch.setattr(ledger_mod, "forget_written", lambda *args, **kwargs: None)
    commit(ledger, 2)
    assert json.loads((root / WRITTEN).read_text())["index"] == 2
    monkeypatch.undo()
    Ledger(root, create=True, prepare=False)
    assert not (root / WRITTEN).exists() and (root / "releases" / "2" / "view.parquet").exists()
    assert Ledger(root).read_view(2)["s"].tolist() == ["a", "b"]


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    import pandas as pd
    from dpriv.ledger import Ledger

    def commit(led, index):
        view = pd.DataFrame({"qi_group": [1, 1], "age_min": [3, 3], "s": ["a", "b"]})
        state = pd.DataFrame({"respondent_id": [index, index + 100], "n_post": [1, 1]})
        led.commit(index, view, {"n_released": 2}, state, {"input_sha": f"sha{index}"})

    led = Ledger(sys.argv[1], create=True)
    commit(led, 1)
    Ledger._write_manifest = lambda self, manifest: os.kill(os.getpid(), signal.SIGKILL)
    commit(led, 2)
    """
)


@pytest.mark.slow
def test_a_release_sigkilled_before_its_manifest_resumes_to_the_same_bytes(tmp_path):
    root = tmp_path / "led"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(root)], env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False
    )
    assert proc.returncode == -signal.SIGKILL
    assert (root / "releases" / "2" / "view.parquet").exists() and (root / WRITTEN).exists()
    led = Ledger(root, create=True)  # the next run: the killed writer's files are its own
    assert Ledger(root).last_index() == 1 and not (root / "releases" / "2").exists()
    commit(led, 2)
    clean = Ledger(tmp_path / "clean", create=True)
    commit(clean, 1)
    commit(clean, 2)
    assert snapshot(root) == snapshot(clean.root)

"""The ledger's clean-up removes what dpriv's own writers left and nothing else.

Opening a ledger for a release removes temp files (``.<name>.<8 random characters>.dpriv-tmp``) and
dpriv's own files of the one release that can be half written (the last committed index + 1);
a file dpriv does not write, in that release's folders or in any later one, is never removed:
the release is refused (LedgerError, exit 2 on the CLI) with the file named. A commit that
fails or is interrupted removes what it wrote itself.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from conftest import forget_digests

import dpriv.ledger as ledger_mod
from dpriv.errors import InputError, LedgerError, PolicyError
from dpriv.io import atomic_write
from dpriv.ledger import Ledger
from dpriv.ledger_written import WRITTEN
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def commit(led: Ledger, index: int) -> None:
    view = pd.DataFrame({"qi_group": [1, 1], "age_min": [3, 3], "s": ["a", "b"]})
    state = pd.DataFrame({"respondent_id": [index, index + 100], "n_post": [1, 1]})
    led.commit(index, view, {"n_released": 2}, state, {"input_sha": f"sha{index}"})


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "led", create=True)
    commit(led, 1)
    return led


def test_a_real_temp_name_is_recognised_and_a_users_dotfile_is_not(tmp_path):
    with open(tmp_path / "view.parquet", "wb"):
        pass
    seen = []
    real = os.replace
    with mock.patch("dpriv.io.os.replace", lambda a, b: (seen.append(Path(a).name), real(a, b))):
        atomic_write(tmp_path / "view.parquet", b"PAR1")  # the name dpriv's writer really uses
    assert len(seen) == 1 and ledger_mod.is_temp(tmp_path / seen[0])
    # names of the user's that merely look random (8 characters of [a-z0-9_]) were removed
    users = (".notes.bak", ".view.parquet.orig", ".config", ".a.b.c.txt", ".notes.20241205",
             ".env.template", ".snapshots.versions", ".view.parquet.a1b2c3d4")  # fmt: skip
    for user in users:
        assert not ledger_mod.is_temp(tmp_path / user), user


def test_release_keeps_a_users_dotfiles_in_the_ledger_and_its_subfolders(ledger):
    """Every open of a ledger (each dpriv release, even with nothing to release) removed them."""
    root = ledger.root
    (root / ".notes.20241205").write_text("n")
    (root / ".snapshots.versions").mkdir()
    (root / ".snapshots.versions" / "v1.txt").write_text("v")
    (root / "attack").mkdir()
    (root / "attack" / ".readme.original").write_text("r")
    (root / ".manifest.json.zz99yy88.dpriv-tmp").write_bytes(b"{")  # a killed writer's: removed
    Ledger(root, create=True)
    assert (root / ".notes.20241205").read_text() == "n"
    assert (root / ".snapshots.versions" / "v1.txt").read_text() == "v"
    assert (root / "attack" / ".readme.original").read_text() == "r"
    assert not (root / ".manifest.json.zz99yy88.dpriv-tmp").exists()


def test_a_failed_first_release_leaves_the_users_folder_as_it_was(tmp_path, monkeypatch):
    """An empty folder kept an empty manifest.json; one holding a dotfile lost it."""
    hist = pd.DataFrame({"rid": range(12), "view": 1, "age": range(30, 42), "s": list("abc") * 4})
    policy = ReleasePolicy(id="rid", time="view", qi=["age"], sensitive="s", k=3, t=1, j=10,
                           knowledge={"defender": "ie"})  # fmt: skip

    def refused(*args, **kwargs):  # a release refused after the ledger was opened (suppression)
        raise PolicyError("suppressed 60 % of view 1")

    monkeypatch.setattr("dpriv.release.release_view", refused)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PolicyError, match="suppressed 60 %"):
        release_history(hist, policy, empty)
    assert empty.is_dir() and list(empty.iterdir()) == []
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / ".thesis.20241205").write_text("t")
    with pytest.raises(LedgerError, match="is not empty and is not a ledger"):
        release_history(hist, policy, mine)
    assert [p.name for p in mine.iterdir()] == [".thesis.20241205"]
    new = tmp_path / "new"
    with pytest.raises(PolicyError, match="suppressed 60 %"):
        release_history(hist, policy, new)
    assert not new.exists()


def killed_commit(led: Ledger, index: int, monkeypatch) -> None:
    """Commit release ``index`` as a run SIGKILLed just before its manifest: its files renamed
    into place and recorded, its own clean-up never run."""

    class Killed(BaseException):
        pass

    def die(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(ledger_mod, "remove_written", lambda *args, **kwargs: None)
        m.setattr(Ledger, "_write_manifest", die)
        with pytest.raises(Killed):
            commit(led, index)


def test_opening_removes_own_leftovers_of_the_next_release_only(ledger, monkeypatch):
    root = ledger.root
    killed_commit(ledger, 2, monkeypatch)
    assert (root / "releases" / "2" / "view.parquet").exists() and (root / WRITTEN).exists()
    (root / "releases" / "2" / ".metrics.json.ab12cd34.dpriv-tmp").write_bytes(b"{")
    (root / ".manifest.json.zz99yy88.dpriv-tmp").write_bytes(b'{"releases": [')
    (root / ".notes.bak").write_text("mine")  # a dotfile of the user's: not a temp file
    Ledger(root, create=True)
    assert not (root / "releases" / "2").exists() and not (root / "state" / "2").exists()
    assert not (root / ".manifest.json.zz99yy88.dpriv-tmp").exists() and not (root / WRITTEN).exists()
    assert (root / ".notes.bak").read_text() == "mine"
    assert (root / "releases" / "1" / "view.parquet").exists()  # committed: untouched


@pytest.mark.parametrize(
    "where, named",
    [
        ("releases/2/notes.txt", "releases/2/notes.txt"),
        ("state/2/keep.txt", "state/2/keep.txt"),
        ("releases/2/sub/x.csv", "releases/2/sub"),  # a folder is named as a whole
    ],
)
def test_a_users_file_where_the_next_release_goes_is_refused_and_nothing_removed(
    ledger, monkeypatch, where, named
):
    root = ledger.root
    killed_commit(ledger, 2, monkeypatch)  # its files would go
    (root / where).parent.mkdir(parents=True, exist_ok=True)
    (root / where).write_text("mine")
    before = snapshot(root)
    with pytest.raises(
        LedgerError,
        match=rf"holds {named}.*did not write.*nothing was written and none of these files was removed",
    ):
        Ledger(root, create=True)
    assert snapshot(root) == before


def test_a_users_file_in_a_later_releases_folder_is_refused_before_the_first_commit(ledger):
    """Found only at its release's commit, a user's file two releases ahead was refused after
    the releases before it were committed, with "nothing was written"."""
    root = ledger.root
    for sub, name in (("releases/7", "notes.txt"), ("state/9", "keep.txt"), ("releases/3", "view.parquet")):
        (root / sub).mkdir(parents=True)
        (root / sub / name).write_text("mine")
    (root / "releases" / "5").mkdir()  # an empty folder holds nothing to mix in
    before = snapshot(root)
    with pytest.raises(LedgerError) as err:
        Ledger(root, create=True)  # prepares release 2: before its commit
    said = str(err.value)
    assert "holds releases/3/view.parquet, releases/7/notes.txt, state/9/keep.txt, which dpriv" in said
    assert "where releases 2 and later go" in said and "records no interrupted" not in said
    assert snapshot(root) == before and ledger.last_index() == 1
    for p in (root / "releases/3/view.parquet", root / "releases/7/notes.txt", root / "state/9/keep.txt"):
        p.unlink()  # the user moves them out
    led = Ledger(root, create=True)
    commit(led, 2)
    (root / "releases" / "3" / "extra.txt").write_text("mine too")
    with pytest.raises(
        LedgerError, match="holds releases/3/extra.txt, which dpriv did not write, where release 3"
    ):
        commit(led, 3)
    assert led.last_index() == 2 and (root / "releases" / "3" / "extra.txt").read_text() == "mine too"


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
@pytest.mark.parametrize("where", ["write_record", "Ledger._write_manifest"])  # before, after the renames
def test_a_commit_that_fails_leaves_nothing_of_its_release(ledger, monkeypatch, failure, where):
    before = snapshot(ledger.root)

    def fail(*args, **kwargs):
        raise failure("stop")

    monkeypatch.setattr(f"dpriv.ledger.{where}", fail)
    with pytest.raises(failure):
        commit(ledger, 2)
    assert snapshot(ledger.root) == before
    assert not (ledger.root / "releases" / "2").exists() and not (ledger.root / "state" / "2").exists()
    assert json.loads((ledger.root / "manifest.json").read_text())["releases"][-1]["index"] == 1


def _raise_interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def _raise_like_a_kernel(*args, **kwargs):
    """What Ctrl-C inside a numba kernel gives: a SystemError caused by the KeyboardInterrupt."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        raise SystemError("CPUDispatcher(<function k>) returned a result with an exception set") from exc


@pytest.mark.parametrize("raiser", [_raise_interrupt, _raise_like_a_kernel])
def test_ctrl_c_exits_130_with_one_line_and_no_internal_error(tmp_path, monkeypatch, raiser):
    from typer.testing import CliRunner

    import dpriv.datasets
    from dpriv.cli import app

    monkeypatch.setattr(dpriv.datasets, "medical_history", raiser)
    res = CliRunner().invoke(app, ["generate", "medical", "--out", str(tmp_path / "g"), "--views", "2"])
    assert res.exit_code == 130, res.output
    assert "interrupted (Ctrl-C)" in res.output and "internal error" not in res.output
    assert "Traceback" not in res.output


def test_a_system_error_of_its_own_is_still_an_internal_error(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import dpriv.datasets
    from dpriv.cli import app

    def broken(*args, **kwargs):
        raise SystemError("a bug")

    monkeypatch.setattr(dpriv.datasets, "medical_history", broken)
    res = CliRunner().invoke(app, ["generate", "medical", "--out", str(tmp_path / "g"), "--views", "2"])
    assert res.exit_code == 1 and "internal error: SystemError: a bug" in res.output


@pytest.mark.parametrize("text", ['{"mine": 1}', "[1, 2]", '{"releases": [{"x": 1}]}', '{"releases": 3}'])
def test_a_json_file_named_manifest_that_is_not_a_ledgers_is_refused_untouched(tmp_path, text):
    root = tmp_path / "led"
    root.mkdir()
    (root / "manifest.json").write_text(text)
    with pytest.raises(LedgerError, match="is not a dpriv ledger's manifest"):
        Ledger(root, create=True)
    assert (root / "manifest.json").read_text() == text and len(list(root.iterdir())) == 1


@pytest.mark.parametrize("command", [["generate", "medical"], ["demo"]])
def test_generate_and_demo_into_a_file_are_refused_with_exit_2(tmp_path, command):
    from typer.testing import CliRunner

    from dpriv.cli import app

    target = tmp_path / "G"
    target.write_text("mine")
    res = CliRunner().invoke(app, [*command, "--out", str(target), "--views", "2", "--view-size", "50"])
    assert res.exit_code == 2, res.output
    assert "is a file, not a folder" in res.output and target.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["G"]


def test_policy_messages_say_what_to_write():
    from dpriv.errors import PolicyError
    from dpriv.policy import ReleasePolicy

    with pytest.raises(
        PolicyError, match=r"qi: missing: set qi under \[columns\] in the policy file, or pass --qi"
    ):
        ReleasePolicy.from_dict({"sensitive": "s"})
    with pytest.raises(PolicyError, match=r"qi: must be a list, e.g. qi = \[\"a\", \"b\"\], got 'age'"):
        ReleasePolicy.from_dict({"qi": "age", "sensitive": "s"})
    for j in (float("inf"), float("nan"), -1.0):  # inf was accepted (and written as Infinity)
        with pytest.raises(PolicyError, match=r"j: must be a number in \[0, inf\)"):
            ReleasePolicy.from_dict({"qi": ["age"], "sensitive": "s", "j": j})


def test_a_parquet_file_without_its_suffix_is_read_as_parquet(tmp_path):
    from dpriv.io import read_table

    frame = pd.DataFrame({"respondent_id": [1, 2], "age": [40, 50], "s": ["a", "b"]})
    frame.to_parquet(tmp_path / "hist")
    got = read_table(str(tmp_path / "hist")).compute()
    assert got.to_dict("list") == frame.to_dict("list")
    (tmp_path / "h.csv").write_text("respondent_id,age,s\n1,40,a\n")  # a CSV is still a CSV
    assert read_table(str(tmp_path / "h.csv")).compute()["age"].tolist() == [40]


@pytest.mark.parametrize(
    "qi, sensitive, named",
    [
        (["age", "qi_group"], "s", "qi_group"),
        (["weight_min", "weight"], "s", "weight_min"),
        (["age"], "age_max", "age_max"),
    ],
)
def test_a_column_named_like_a_released_column_is_refused(qi, sensitive, named):
    from dpriv.errors import PolicyError
    from dpriv.policy import ReleasePolicy

    with pytest.raises(PolicyError, match=rf"column '{named}' has the name of a released column"):
        ReleasePolicy.from_dict({"qi": qi, "sensitive": sensitive})


def test_every_column_named_like_a_released_column_is_named_in_one_message(tmp_path):
    from typer.testing import CliRunner

    from dpriv.cli import app
    from dpriv.errors import PolicyError
    from dpriv.policy import ReleasePolicy

    clashes = (
        r"columns 'qi_group' \(the QI-group label\), 'weight_min' \(a bound of the QI 'weight'\), "
        r"'age_max' \(a bound of the QI 'age'\) have the names of released columns; rename these "
        r"columns in the input \(and in the policy\)"
    )
    with pytest.raises(PolicyError, match=clashes):
        ReleasePolicy.from_dict({"qi": ["age", "qi_group", "weight_min", "weight"], "sensitive": "age_max"})
    frame = pd.DataFrame(
        {"rid": [1, 2], "age": [40, 50], "qi_group": [1, 2], "weight_min": [60, 70], "weight": [61, 71]}
    )
    frame.assign(age_max=["a", "b"]).to_csv(tmp_path / "in.csv", index=False)
    args = ["anonymize", str(tmp_path / "in.csv"), "--out", str(tmp_path / "o.csv"), "--id", "rid"]
    args += ["--qi", "age,qi_group,weight_min,weight", "--sensitive", "age_max"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and re.search(clashes, res.output), res.output
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("qi, sensitive", [("age,weight", "_s"), ("_hidden,weight", "s")])
def test_a_column_named_like_a_helper_column_is_refused_before_anything_is_written(tmp_path, qi, sensitive):
    """dpriv's helper columns start with '_' and are never written: a QI or sensitive column
    named so went missing from the release (a KeyError, or a failed verification)."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    cols = {"rid": range(10), "age": range(40, 50), "_hidden": range(10), "weight": range(60, 70)}
    pd.DataFrame({**cols, sensitive: list("ab") * 5}).to_csv(tmp_path / "in.csv", index=False)
    args = ["anonymize", str(tmp_path / "in.csv"), "--out", str(tmp_path / "o.csv"), "--id", "rid"]
    res = CliRunner().invoke(app, [*args, "--qi", qi, "--sensitive", sensitive, "--k", "2"])
    named = "_s" if sensitive == "_s" else "_hidden"
    assert res.exit_code == 2 and f"column(s) ['{named}'] start with '_'" in res.output, res.output
    assert "rename them in the input" in res.output
    assert not (tmp_path / "o.csv").exists()


def test_a_demo_of_views_smaller_than_k_writes_nothing(tmp_path):
    from typer.testing import CliRunner

    from dpriv.cli import app

    res = CliRunner().invoke(app, ["demo", "--views", "1", "--view-size", "3", "--out", str(tmp_path / "D")])
    assert res.exit_code == 2 and "--view-size 3 is smaller than the demo's k = 5" in res.output
    assert not (tmp_path / "D").exists()


def test_a_demo_that_cannot_finish_is_refused_before_it_generates_anything(tmp_path):
    """A drill: ``--scheduler garbage`` was refused after the history was generated into --out,
    and an --out under a file or in /proc ended in exit 1 (NotADirectoryError, FileNotFoundError)."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    def demo(*args):
        return CliRunner().invoke(app, ["demo", "--views", "1", "--view-size", "50", *map(str, args)])

    res = demo("--out", tmp_path / "D", "--scheduler", "garbage")
    assert res.exit_code == 2 and "--scheduler garbage: cannot reach a Dask scheduler" in res.output
    (tmp_path / "G").write_text("mine")
    res = demo("--out", tmp_path / "G" / "sub")
    assert res.exit_code == 2 and f"{tmp_path / 'G'} is a file, not a folder" in res.output, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["G"] and (tmp_path / "G").read_text() == "mine"
    if Path("/proc/self").is_dir():  # Linux: nobody, root included, can create a file in /proc
        res = demo("--out", "/proc/dpriv-demo")
        assert res.exit_code == 2 and "dpriv cannot write in folder /proc" in res.output, res.output


def test_a_run_with_nothing_to_release_leaves_a_users_file_where_the_next_release_goes(tmp_path):
    from loose_history import write_loose
    from typer.testing import CliRunner

    from dpriv.cli import app

    write_loose(tmp_path, n_views=2, view_size=80, seed=3)
    hist = pd.read_parquet(tmp_path / "history.parquet")
    hist[hist["view"] == 1].to_parquet(tmp_path / "h1.parquet", index=False)
    root = tmp_path / "L"

    def release(history):
        args = [
            "release",
            str(tmp_path / history),
            "--ledger",
            str(root),
            "--policy",
            str(tmp_path / "policy.toml"),
        ]
        return CliRunner().invoke(app, args)

    assert release("h1.parquet").exit_code == 0
    (root / "releases" / "2").mkdir()
    (root / "releases" / "2" / "notes.txt").write_text("mine")
    before = snapshot(root)
    res = release("h1.parquet")  # release 1 is committed: nothing to write, so nothing to refuse
    assert res.exit_code == 0, res.output
    assert "nothing to release: the ledger already holds releases 1..1" in res.output
    assert snapshot(root) == before
    res = release("history.parquet")  # release 2 would go there: refused, the file named, kept
    assert res.exit_code == 2, res.output
    assert "releases/2/notes.txt, which dpriv did not write" in res.output
    assert snapshot(root) == before


def test_reading_a_release_the_ledger_does_not_hold_says_so(ledger):
    """read_view gave FileNotFoundError, read_metrics called the ledger damaged, read_state said
    release 99 was committed."""
    for read in (ledger.read_view, ledger.read_metrics, ledger.read_state):
        with pytest.raises(LedgerError, match=r"has no release 99: it holds releases 1\.\.1"):
            read(99)
    (ledger.release_dir(1) / "view.parquet").unlink()
    with pytest.raises(LedgerError, match=r"view\.parquet is missing: the ledger is damaged"):
        ledger.read_view(1)
    assert len(ledger.read_state(1)) == 2


def test_a_second_writer_is_refused_while_the_first_holds_the_ledger(ledger):
    """Two dpriv release runs at once committed release 11 twice (a manifest every later command
    refused), or the second's clean-up removed the first's temp file mid-write."""
    root = ledger.root
    first = Ledger(root, create=True, lock=True)  # dpriv release holds the ledger
    (root / "releases" / "2").mkdir()
    writing = root / "releases" / "2" / ".view.parquet.ab12cd34.dpriv-tmp"
    writing.write_bytes(b"PAR1 being written")  # the first writer's file, mid-write
    with pytest.raises(LedgerError, match=r"another dpriv command is writing the ledger .*wait"):
        Ledger(root, create=True, lock=True)
    assert writing.exists()
    first.unlock()  # the first writer is done (or died: the kernel drops its lock)
    second = Ledger(root, create=True, lock=True)
    assert not writing.exists()  # now a killed writer's leftover
    second.unlock()
    Ledger(root).read_view(1)  # readers never take the lock


def test_a_first_commit_that_fails_leaves_no_policy_behind(tmp_path, monkeypatch):
    """A full disk while the first manifest was written left policy.json next to an empty
    manifest: it pinned a policy nothing was released under ('the policy differs ...')."""
    led = Ledger(tmp_path / "led", create=True, lock=True)
    led.check_policy({"k": 5, "t": 0.5})

    def full(manifest):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(led, "_write_manifest", full)
    with pytest.raises(OSError, match="No space left"):
        commit(led, 1)
    assert not (led.root / "policy.json").exists() and led.last_index() == 0
    led.unlock()
    # a first commit killed between the two writes (SIGKILL: no except ran): removed on opening
    (led.root / "policy.json").write_text('{"k": 5, "t": 0.5}')
    Ledger(led.root, create=True)
    assert not (led.root / "policy.json").exists()


def test_a_metrics_file_with_text_for_a_number_is_named(ledger):
    """report: internal ValueError (could not convert string to float: 'x'). (A ledger written
    since records the file's SHA-256 and refuses any edit: this one is from before.)"""
    forget_digests(ledger.root, "metrics_sha256")
    path = ledger.release_dir(1) / "metrics.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "t_achieved": "x"}))
    with pytest.raises(LedgerError, match=r"holds no release's metrics \(t_achieved = 'x' is not"):
        ledger.read_metrics(1)
    for bad, said in [({"n_released": True}, "n_released = True"),
                      ({"t_achieved": float("inf")}, "t_achieved = inf"),
                      ({"confident_share": "x"}, "confident_share = 'x'"),
                      ({"seconds": {"rbk": "x"}}, "seconds.rbk = 'x'")]:  # fmt: skip
        path.write_text(json.dumps(bad))
        with pytest.raises(LedgerError, match=rf"{re.escape(said)} is not a finite number"):
            ledger.read_metrics(1)
    path.write_text(json.dumps({"confident_precision": float("nan"), "seconds": 1.5}))
    assert ledger.read_metrics(1).n_released is None  # NaN: a measure not defined, as written
    path.write_text(json.dumps({"n_released": 2, "t_achieved": 0.25, "k_achieved": None}))
    assert ledger.read_metrics(1).t_achieved == 0.25


def test_a_writer_refused_at_the_lock_leaves_the_other_writers_new_ledger_alone(tmp_path):
    """Two first releases into one new folder: the refused one removed the folder (manifest,
    lock, the other's temp files) while the other was writing; both failed."""
    from dpriv.ledger_files import LedgerBusy, discard_new_ledger

    root, held = tmp_path / "new", []

    @discard_new_ledger
    def second_writer(history, policy, ledger_dir):
        held.append(Ledger(ledger_dir, create=True, lock=True))  # the first arrives meanwhile
        Ledger(ledger_dir, create=True, lock=True)

    with pytest.raises(LedgerBusy):
        second_writer(None, None, root)
    assert (root / "manifest.json").is_file() and (root / ".dpriv-lock").is_file()
    held[0].unlock()


def test_a_lock_that_cannot_be_one_is_named(tmp_path, monkeypatch):
    import errno
    import fcntl

    root = tmp_path / "L"
    root.mkdir()
    (root / ".dpriv-lock").mkdir()
    with pytest.raises(LedgerError, match=r"\.dpriv-lock is not dpriv's lock file \(a folder or a link\)"):
        Ledger(root, create=True, lock=True)  # was IsADirectoryError, exit 1
    (root / ".dpriv-lock").rmdir()
    (root / ".dpriv-lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LedgerError, match="not dpriv's lock file"):
        Ledger(root, create=True, lock=True)
    assert not (tmp_path / "elsewhere").exists()  # a link was followed: a file made outside
    (root / ".dpriv-lock").unlink()

    def unsupported(fd, how):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", unsupported)
    with pytest.raises(LedgerError, match="the file system has no file locks") as refused:
        Ledger(root, create=True, lock=True)
    assert "another dpriv command" not in str(refused.value)


def test_a_weekly_job_whose_first_week_fixed_the_domains_is_told_to_declare_them(tmp_path):
    """The drill's cron job: a policy without [domains], week 1 released, then weeks 1-2 where
    week 2 holds older patients: the ledger refused the inferred domains as 'a new policy' with
    no way forward for a weekly job. Since session 41 the undeclared domains are the ledger's
    recorded ones, so week 2's rows are named, with the way forward (correct them, or a new
    ledger whose policy declares [domains] covering every week); a policy that declares other
    domains is still refused as another policy, each domain shown."""
    rng = np.random.default_rng(0)

    def week(w, lo, hi):
        return pd.DataFrame({"pid": [f"P{w}-{i}" for i in range(40)], "week": w,
                             "age": rng.integers(lo, hi, 40), "s": rng.choice(list("abc"), 40)})  # fmt: skip

    pol = ReleasePolicy.from_dict(
        {"id": "pid", "time": "week", "qi": ["age"], "sensitive": "s", "k": 3, "t": 1.0, "j": 10.0}
    )
    first = week(1, 30, 60)
    release_history(first, pol, tmp_path / "led")
    before = snapshot(tmp_path / "led")
    both = pd.concat([first, week(2, 20, 90)], ignore_index=True)
    lo, hi = int(first["age"].min()), int(first["age"].max())
    wide, wide_hi = int(both["age"].min()), int(both["age"].max())
    with pytest.raises(
        InputError,
        match=rf"week = 2: QI 'age' has values \[.*\] outside its inferred domain \[{lo}, {hi}\]: correct "
        r"the data .*declaring \[domains\] that cover every week's values",
    ):
        release_history(both, pol, tmp_path / "led")
    assert snapshot(tmp_path / "led") == before
    declared = pol.with_overrides(domains={"age": [wide, wide_hi]}, kinds={"age": "numeric"})
    with pytest.raises(  # the columns whose domain differs, not the dict cut at 60 characters
        LedgerError, match=rf"domain of 'age': \[{lo}, {hi}\] recorded, \[{wide}, {wide_hi}\] given\)"
    ):
        release_history(both, declared, tmp_path / "led")
    assert snapshot(tmp_path / "led") == before
    dated = pol.with_overrides(qi=["adm"], kinds={"adm": "date"})
    days = pd.Timestamp("2020-03-01") + pd.to_timedelta(first["age"], unit="D")
    release_history(first.assign(adm=days), dated, tmp_path / "dated")
    later = both.assign(adm=pd.Timestamp("2020-03-01") + pd.to_timedelta(both["age"], unit="D"))
    shown = (pd.Timestamp("2020-03-01") + pd.to_timedelta([lo, hi], unit="D")).strftime("%Y-%m-%d")
    wide_days = (pd.Timestamp("2020-03-01") + pd.to_timedelta([wide, wide_hi], unit="D")).date
    dated_wide = dated.with_overrides(domains={"adm": list(wide_days)})
    with pytest.raises(LedgerError, match=rf"domain of 'adm': \[\"{shown[0]}\", \"{shown[1]}\"\] recorded"):
        release_history(later, dated_wide, tmp_path / "dated")

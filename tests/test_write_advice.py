"""A failed write said the same for every command: "choose a folder you can write to (--out FILE
where the command has it; a ledger keeps its last committed release)". ``dpriv release`` has no
--out, ``dpriv attack`` writes into the ledger's attack/ folder unless given one: the advice now
fits the command. And ``dpriv attack`` on a read-only ledger ran the whole attack before failing
to write its result: the folder is now checked before the work (exit 2, nothing written).

The read-only file system is a bind mount in a mount namespace of its own (``unshare -m``, as
root), as in tests/test_read_only_ledger.py: permission bits would not stop root."""

import errno
import os
import subprocess
import sys

import pytest
import typer
from test_read_only_ledger import ROOT, _can_mount_read_only, _files
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.cli.common import command
from dpriv.datasets import medical_history, write_history

LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}


def said(name: str, code: int, capsys) -> str:
    """The error line of a command called ``name`` whose write fails with ``code``."""

    def failing(debug: bool = False) -> None:
        raise OSError(code, os.strerror(code), "/data/L/state/part.parquet")

    failing.__name__ = name
    with pytest.raises(typer.Exit) as ended:
        command(failing)()
    assert ended.value.exit_code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_release_is_not_told_of_an_out_option(capsys, code):
    err = said("release", code, capsys)
    assert "writing /data/L/state/part.parquet; " in err
    assert "--out" not in err
    first = "free space on the ledger's disk" if code == errno.ENOSPC else "make the ledger's folder writable"
    assert (
        f"; {first} (or copy the ledger to a folder you can write to) and run the same command again" in err
    )
    assert "the ledger keeps its last committed release (dpriv status LEDGER)" in err


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES])
def test_an_attack_is_told_of_its_out_option_and_the_ledgers_attack_folder(capsys, code):
    err = said("attack", code, capsys)
    assert "give --out FILE in a folder you can write to (without --out the result goes into the " in err
    assert "ledger's attack/ folder); the ledger's releases are untouched" in err
    assert ("free space, or give --out" in err) == (code == errno.ENOSPC)
    assert "last committed release" not in err


def test_a_command_with_out_is_told_of_it_and_one_without_is_not(capsys):
    assert (
        said("anonymize", errno.ENOSPC, capsys)
        .rstrip()
        .endswith("; free space or choose a folder you can write to (--out)")
    )
    err = said("verify", errno.EROFS, capsys)
    assert err.rstrip().endswith("; choose a folder you can write to") and "ledger" not in err


@pytest.mark.slow
def test_an_attack_on_a_read_only_ledger_is_refused_before_the_attack(tmp_path):
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no read-only bind mount here (unshare -m needs root)")
    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = write_history(tmp_path, mh, policy_extra=LOOSE)
    led = tmp_path / "L"
    res = CliRunner().invoke(app, ["release", str(tmp_path / "history.parquet"), "--ledger", str(led),
                                   "--policy", str(policy)])  # fmt: skip
    assert res.exit_code == 0, res.output
    before = _files(led)
    argv = [sys.executable, "-m", "dpriv", "attack", led, "--history", tmp_path / "history.parquet",
            "--knowledge", "dk", "--policy", policy]  # fmt: skip
    quoted = " ".join(f"'{a}'" for a in argv)
    script = f"mount --bind '{led}' '{led}' && mount -o remount,ro,bind '{led}' && exec {quoted}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert (
        f"error: the ledger's attack/ folder: dpriv cannot write in folder {led} (Read-only file system); "
        "give --out FILE in a folder you can write to, or make the ledger's folder writable: nothing was "
        "written"
    ) in done.stderr
    assert "adversary_gain" not in done.stdout  # refused before the attack ran
    assert _files(led) == before

"""A failed write said the same for every command: "choose a folder you can write to (--out FILE
where the command has it; a ledger keeps its last committed release)". ``dpriv release`` has no
--out, ``dpriv attack`` writes into the ledger's attack/ folder unless given one: the advice now
fits the command. And ``dpriv attack`` on a read-only ledger ran the whole attack before failing
to write its result: the folder is now checked before the work (exit 2, nothing written).

The read-only file system: tests/read_only_mount.py."""

import errno
import os

import pytest
import typer
from read_only_mount import dpriv_read_only, files, released_ledger, skip_without_read_only_mount

from dpriv.cli.common import command


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
    skip_without_read_only_mount(tmp_path)
    led, policy, history = released_ledger(tmp_path, n_views=2, released=2)
    before = files(led)
    done = dpriv_read_only(led, "attack", led, "--history", history, "--knowledge", "dk", "--policy", policy)
    assert done.returncode == 2, done.stderr
    assert (
        f"error: the ledger's attack/ folder: dpriv cannot write in folder {led} (Read-only file system); "
        "give --out DIR/gain_dk.csv in a folder DIR you can write to (dpriv report "
        f"{led} --attack-dir DIR then shows it), or make the ledger's folder writable: nothing was written"
    ) in done.stderr
    assert "adversary_gain" not in done.stdout  # refused before the attack ran
    assert files(led) == before

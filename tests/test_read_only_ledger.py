"""An operator's drill (s36, F8): ``dpriv release`` on a read-only copy of a ledger that holds
every view of the history already (nothing to release, nothing to write) exited 2, "dpriv cannot
write in folder ...": the writing probe and the lock came before the views were known. It is now
checked as on a writable ledger (exit 0, "nothing to release"); a view left to release is still
refused before any work (dpriv/cli/read_only.py, dpriv.ledger_files.hold_lock).

The read-only file system: tests/read_only_mount.py."""

import pytest
from read_only_mount import dpriv_read_only, files, released_ledger, skip_without_read_only_mount


@pytest.mark.slow
def test_a_read_only_ledger_with_nothing_left_to_release_is_checked_and_exits_0(tmp_path):
    skip_without_read_only_mount(tmp_path)
    led, policy, two = released_ledger(tmp_path, n_views=3, released=2)
    before = files(led)

    done = dpriv_read_only(led, "release", two, "--ledger", led, "--policy", policy)
    assert done.returncode == 0, done.stderr
    assert "nothing to release: the ledger already holds releases 1..2" in done.stdout
    assert "cannot write" not in done.stderr

    history = tmp_path / "history.parquet"  # view 3 left: it would write
    more = dpriv_read_only(led, "release", history, "--ledger", led, "--policy", policy)
    assert more.returncode == 2, more.stderr
    assert f"error: --ledger: dpriv cannot write in folder {led} (Read-only file system)" in more.stderr
    assert "tuples" not in more.stderr  # refused before the status line and any release work
    assert files(led) == before


@pytest.mark.slow
def test_a_read_only_ledger_with_a_view_left_is_told_to_be_made_writable_not_replaced(tmp_path):
    """A fresh user's drill (s40, 1): the refusal said "choose a folder you can write to", which
    starts a second ledger (every view released again, a second copy of state/). An existing
    ledger is told to make its folder writable or to copy the whole folder and release there."""
    skip_without_read_only_mount(tmp_path)
    led, policy, _ = released_ledger(tmp_path, n_views=2, released=1)
    before = files(led)
    more = dpriv_read_only(led, "release", tmp_path / "history.parquet", "--ledger", led, "--policy", policy)
    assert more.returncode == 2, more.stderr
    assert (
        f"(Read-only file system); make the ledger's folder writable and run the same command again (the "
        f"ledger keeps its last committed release: dpriv status {led}), or copy the whole ledger folder "
        f"somewhere writable (cp -a {led} COPY) and release with --ledger COPY; not a new --ledger folder"
    ) in more.stderr
    assert "choose a folder you can write to" not in more.stderr
    assert files(led) == before


def test_a_new_ledger_in_a_read_only_folder_keeps_the_advice_to_choose_another(tmp_path):
    """A guard (passes on the old code by design): a new ledger has nothing to lose, so another
    folder is the right advice there."""
    skip_without_read_only_mount(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    history = tmp_path / "h.parquet"
    history.write_bytes(b"not read: refused before")
    done = dpriv_read_only(ro, "release", history, "--ledger", ro / "new")
    assert done.returncode == 2, done.stderr
    assert f"error: --ledger: dpriv cannot write in folder {ro} (Read-only file system); choose a folder" in (
        done.stderr
    )
    assert "make the ledger's folder writable" not in done.stderr

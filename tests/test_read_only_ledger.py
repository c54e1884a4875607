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

"""A ``--ledger`` that is a symbolic link to nothing (a share not mounted) is refused by name, exit 2,
nothing created through it (s46 drill: ``dpriv release`` exited 1, "internal error:
FileExistsError")."""

import pandas as pd
import pytest
from test_cli import assert_refused
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import LedgerError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

FRAME = pd.DataFrame(
    {"rid": [1, 2, 3, 4], "view": [1, 1, 1, 1], "age": [30, 31, 32, 33], "s": ["a", "b", "a", "b"]}
)
ARGS = ["--id", "rid", "--time", "view", "--qi", "age", "--sensitive", "s", "--k", "2", "--t", "1"]


@pytest.fixture
def link(tmp_path):
    made = tmp_path / "L"
    made.symlink_to(tmp_path / "share" / "ledger")  # /mnt/share/ledger, the share not mounted
    return made


def test_release_into_a_broken_link_is_refused(tmp_path, link):
    src = tmp_path / "h.csv"
    FRAME.to_csv(src, index=False)
    res = CliRunner().invoke(app, ["release", str(src), "--ledger", str(link), *ARGS, "--no-cluster"])
    assert_refused(res, rf"--ledger {link} is a broken symbolic link \(to {tmp_path}/share/ledger\)", "mount")
    assert link.is_symlink() and not (tmp_path / "share").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["L", "h.csv"]


def test_release_history_into_a_broken_link_is_refused(tmp_path, link):
    policy = ReleasePolicy(id="rid", time="view", qi=["age"], sensitive="s", k=2, t=1.0)
    with pytest.raises(LedgerError, match="is a broken symbolic link .* not a ledger folder"):
        release_history(FRAME, policy, link)
    assert link.is_symlink() and not (tmp_path / "share").exists()

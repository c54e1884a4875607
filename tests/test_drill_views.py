"""An operator's drill (s33): a history file holding only week 2, released into a ledger holding
weeks 1 and 2, printed "600 tuples, no view left to release: no Dask cluster started" and then
refused the history for its missing week 1: two lines saying opposite things. The history's
release indices are now checked before the status line counts the views left to release.
"""

import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger

LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # as the command line has it (dask's, pandas 3.1)
@pytest.mark.parametrize("held", [0, 2])
def test_a_history_of_week_2_only_is_refused_without_counting_its_views(tmp_path, held):
    """Into a new ledger or one holding both weeks: one answer, the refusal."""
    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = write_history(tmp_path, mh, policy_extra=LOOSE)
    led = tmp_path / "L"
    if held:
        args = ["release", str(tmp_path / "history.parquet"), "--ledger", str(led), "--policy", str(policy)]
        assert CliRunner().invoke(app, args).exit_code == 0
    week2 = tmp_path / "week2.parquet"
    mh.history[mh.history["view"] == 2].to_parquet(week2, index=False)
    res = CliRunner().invoke(app, ["release", str(week2), "--ledger", str(led), "--policy", str(policy)])
    assert res.exit_code == 2, res.output
    said = [line for line in res.output.splitlines() if not line.startswith(("  ", "effective policy"))]
    assert said == [
        "error: time column 'view' must hold consecutive release indices 1..n; found [2]: a history "
        "holds every view from the first on (a ledger skips the views it has already released), so add "
        "the missing views, or renumber the views if they were numbered wrongly"
    ]
    if held:
        assert [r["index"] for r in Ledger(led).committed()] == [1, 2]
    else:
        assert not led.exists()

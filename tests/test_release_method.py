"""``dpriv release --method`` is checked before anything is printed or read."""

from __future__ import annotations

from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history


def test_an_unknown_method_is_refused_before_the_policy_is_printed_or_the_history_read(tmp_path):
    """The drill: ``--method nonsense`` printed the effective policy with "method: nonsense" and
    scanned the history ("1200 tuples, views still to release ...") before refusing."""
    mh = medical_history(n_views=2, view_size=30, seed=0)
    policy = write_history(tmp_path / "data", mh)
    history = tmp_path / "data" / "history.parquet"
    args = ["release", str(history), "--ledger", str(tmp_path / "led"), "--policy", str(policy)]
    res = CliRunner().invoke(app, [*args, "--method", "nonsense"])
    assert res.exit_code == 2
    assert res.output == (
        "error: unknown method 'nonsense'; choose one of "
        "['jsreduce', 'mondrian-l', 'mondrian-t', 'mondrian-bt', 'histogram']\n"
    )
    assert not (tmp_path / "led").exists()

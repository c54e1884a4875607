"""RBK-closeness (``policy.rbk_closeness``) through a whole release: recorded, binding, and
refused where it would be ignored. The per-group rule is tested in tests/test_criteria.py
(by hand), tests/test_greedy_reference.py (the scan and the repair against plain Python) and
tests/test_topdown.py (the split; releases through the verifier, any number of partitions)."""

import json

import pytest

from dpriv.datasets import medical_history, write_history
from dpriv.errors import PolicyError
from dpriv.experiment import EXITS
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    out = tmp_path_factory.mktemp("rbk")
    mh = medical_history(n_views=3, view_size=400, attendance=0.7, seed=3)
    base = ReleasePolicy.from_toml(write_history(out, mh), t=0.45, j=1.5, max_suppression=1.0)
    return out, mh, base.with_overrides(grouping="topdown", exit_values=EXITS)


def _metrics(ledger, i):
    return json.loads((ledger.release_dir(i) / "metrics.json").read_text())


@pytest.mark.parametrize("c", [0.15, 0.3])
def test_every_release_records_its_largest_distance_within_the_bound(history, c):
    out, mh, policy = history
    bounded = release_history(mh.history, policy.with_overrides(rbk_closeness=c), out / f"led-{c}")
    plain = release_history(mh.history, policy, out / f"plain-{c}")
    for i in (1, 2, 3):
        got, free = _metrics(bounded, i), _metrics(plain, i)
        assert got["ok"] and 0.0 <= got["rbk_closeness_achieved"] <= c + 1e-9
        assert "rbk_closeness_achieved" not in free  # off: the record is as before
    # the bound binds on this history: it keeps boxes whole that the split would cut
    semi = [sum(_metrics(led, i)["average_semiperimeter"] for i in (1, 2, 3)) for led in (bounded, plain)]
    assert semi[0] > semi[1]
    assert json.loads((bounded.root / "policy.json").read_text())["rbk_closeness"] == c


def test_a_baseline_release_with_the_bound_is_refused_before_anything_is_written(history):
    out, mh, policy = history
    with pytest.raises(PolicyError, match="rbk_closeness is applied by JS-reduce's grouping"):
        release_history(
            mh.history, policy.with_overrides(rbk_closeness=0.3), out / "refused", method="mondrian-t"
        )
    assert not (out / "refused").exists()


def test_the_report_shows_the_largest_distance_and_marks_a_release_beyond_the_bound(history):
    from dpriv.report.explain import verdicts
    from dpriv.report.tables import release_frame

    out, mh, policy = history
    led = release_history(mh.history, policy.with_overrides(rbk_closeness=0.3), out / "report")
    frame = release_frame(led)
    assert frame["rbk_closeness"].between(0.0, 0.3 + 1e-9).all()
    stored = json.loads((led.root / "policy.json").read_text())
    checks = verdicts(frame, stored)
    assert all("rbk_closeness" in [c.name for c in v.checks] and v.within for v in checks)
    frame.loc[1, "rbk_closeness"] = 0.31  # a metrics.json beyond the bound
    assert [v.beyond for v in verdicts(frame, stored)] == [[], ["rbk_closeness"], []]


def test_the_anatomy_format_keeps_the_bound_too(history):
    from dpriv.experiment import ANATOMY

    out, mh, policy = history
    led = release_history(mh.history, policy.with_overrides(**ANATOMY, rbk_closeness=0.2), out / "anatomy")
    for i in (1, 2, 3):
        got = _metrics(led, i)
        assert got["ok"] and got["rbk_closeness_achieved"] <= 0.2 + 1e-9


def test_the_release_command_shows_the_largest_distance_when_the_policy_sets_the_bound(tmp_path):
    from typer.testing import CliRunner

    from dpriv.cli import app

    mh = medical_history(n_views=2, view_size=200, attendance=0.7, seed=3)
    rows = {}
    for c in (None, 0.3):
        extra = {"k": 5, "t": 0.45, "j": 1.5, "max_suppression": 1.0} | ({"rbk_closeness": c} if c else {})
        out = write_history(tmp_path / str(c), mh, policy_extra={"privacy": extra})
        res = CliRunner().invoke(
            app,
            [
                "release",
                str(out.parent / "history.parquet"),
                "--ledger",
                str(out.parent / "led"),
                "--policy",
                str(out),
            ],
        )
        assert res.exit_code == 0, res.output
        lines = [
            line.split()
            for line in res.stdout.splitlines()
            if line.split()[:1] in (["release"], ["1"], ["2"])
        ]
        rows[c] = {i: dict(zip(lines[0], r)) for i, r in enumerate(lines[1:], 1)}
    assert "max_tv" not in rows[None][1]  # off: the table is as before
    for i in (1, 2):
        recorded = _metrics(Ledger(tmp_path / "0.3" / "led"), i)["rbk_closeness_achieved"]
        assert rows[0.3][i]["max_tv"] == f"{recorded:.4f}" and float(rows[0.3][i]["max_tv"]) <= 0.3


def test_verify_of_a_view_says_the_bound_is_not_checked_there(tmp_path):
    """The drill: ``dpriv verify`` of a view with a policy setting rbk_closeness printed
    ``ok: True`` without a word that the bound (which needs the members' priors) went unchecked."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    mh = medical_history(n_views=1, view_size=200, attendance=1.0, seed=3)
    privacy = {"k": 5, "t": 0.45, "j": 1.5, "max_suppression": 1.0}
    plain = write_history(tmp_path / "p", mh, policy_extra={"privacy": privacy})
    bound = write_history(tmp_path / "b", mh, policy_extra={"privacy": privacy | {"rbk_closeness": 0.01}})
    history = str(plain.parent / "history.parquet")
    runner = CliRunner()
    led = tmp_path / "p" / "led"
    assert (
        runner.invoke(app, ["release", history, "--ledger", str(led), "--policy", str(plain)]).exit_code == 0
    )
    args = ["verify", str(led / "releases" / "1" / "view.parquet"), "--original", history, "--view", "1"]
    res = runner.invoke(app, [*args, "--policy", str(bound)])
    assert res.exit_code == 0, res.output
    assert "note: rbk_closeness = 0.01 is not checked here" in res.stderr
    plain_run = runner.invoke(app, [*args, "--policy", str(plain)])
    assert "note: rbk_closeness" not in plain_run.stderr  # j's note is its own

"""The paper adversary's two revision readings on a real ledger: ``attack(..., revision=)``
and ``dpriv attack --revision`` (issue 11, item 5)."""

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.attack import attack, attack_steps
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    out = tmp_path_factory.mktemp("revision")
    mh = medical_history(n_views=6, view_size=300, attendance=0.7, seed=5)
    path = write_history(out, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    policy = ReleasePolicy.from_toml(path, t=1.0, j=1.0, k=4, npartitions=1, max_suppression=1.0)
    led = release_history(mh.history, policy, out / "led")
    return out, mh, policy, led


@pytest.mark.slow
def test_history_reading_equals_the_window_while_the_window_holds_every_posterior(ledger):
    """Order-3 DK: up to release 4 nobody has more than 3 posteriors, so (E5) over allowed
    histories and (E7) give the same priors (exact model: non-zero rows = reachable contexts;
    gaps skipped without an attendance); later they differ."""
    _, mh, policy, led = ledger
    win = list(attack_steps(led, mh.history, policy, "dk", deductions=False))
    his = list(attack_steps(led, mh.history, policy, "dk", deductions=False, revision="history"))
    assert [s.release for s in his] == [1, 2, 3, 4, 5, 6]
    for w, h in zip(win[:4], his[:4]):
        np.testing.assert_array_equal(w.respondents, h.respondents)
        np.testing.assert_allclose(h.priors, w.priors, rtol=0, atol=1e-10)
    late = [np.abs(h.priors - w.priors).max() for w, h in zip(win[4:], his[4:])]
    assert max(late) > 1e-3
    for h in his:
        assert np.isfinite(h.priors).all()
        np.testing.assert_allclose(h.priors.sum(axis=1), 1, atol=1e-12)
        np.testing.assert_allclose(h.posteriors.sum(axis=1), 1, atol=1e-12)


def test_time_aware_gaps_change_only_respondents_with_a_gap(ledger):
    """With the attendance, a missing week steps the weekly chain; a respondent released at
    every release since her first keeps the gap-free prior, one with a gap does not."""
    _, mh, policy, led = ledger
    plain = list(attack_steps(led, mh.history, policy, "dk", deductions=False, revision="history"))
    timed = list(
        attack_steps(led, mh.history, policy, "dk", deductions=False, revision="history", attendance=0.7)
    )
    kept: dict = {}  # respondent -> releases she was released in so far
    moved, checked, same_so_far = 0, 0, True
    for p, t in zip(plain, timed):
        np.testing.assert_array_equal(p.respondents, t.respondents)
        gap = np.array([bool(kept.get(r)) and len(kept[r]) < p.release - min(kept[r]) for r in p.respondents])
        if same_so_far:  # every earlier posterior equal: only a gap of her own moves a prior
            np.testing.assert_allclose(t.priors[~gap], p.priors[~gap], rtol=0, atol=1e-12)
            checked += 1
            if gap.any():
                moved += int((np.abs(t.priors[gap] - p.priors[gap]).max(axis=1) > 1e-6).sum())
        same_so_far = same_so_far and np.allclose(t.posteriors, p.posteriors, rtol=0, atol=1e-12)
        for r in p.respondents:
            kept.setdefault(r, set()).add(p.release)
    assert checked >= 3
    assert moved > 0


@pytest.mark.slow
def test_attack_revision_options(ledger):
    _, mh, policy, led = ledger
    window = attack(led, mh.history, policy, "dk", deductions=False)
    pd.testing.assert_frame_equal(
        attack(led, mh.history, policy, "dk", deductions=False, revision="window"), window
    )
    history = attack(led, mh.history, policy, "dk", deductions=False, revision="history")
    assert list(history.columns) == list(window.columns)
    np.testing.assert_allclose(history["adversary_gain"][:4], window["adversary_gain"][:4], atol=1e-10)
    # snapshot: no revision at all, both readings are BK^sv
    pd.testing.assert_frame_equal(
        attack(led, mh.history, policy, "snapshot", deductions=False, revision="history"),
        attack(led, mh.history, policy, "snapshot", deductions=False),
    )
    with pytest.raises(PolicyError, match="unknown revision 'e5'; valid: window, history"):
        attack(led, mh.history, policy, "dk", revision="e5")
    with pytest.raises(PolicyError, match="retrospective adversary always sums"):
        attack(led, mh.history, policy, "dk", adversary="retrospective", revision="window")
    with pytest.raises(PolicyError, match="unknown revision"):
        attack_steps(led, mh.history, policy, "dk", revision="E7")


def test_cli_revision(ledger):
    out, mh, policy, led = ledger
    hist = out / "history.parquet"
    args = ["attack", str(out / "led"), "--history", str(hist), "--policy", str(out / "policy.toml")]
    res = CliRunner().invoke(
        app,
        [*args, "--knowledge", "dk", "--no-deductions", "--revision", "history", "--out", str(out / "h.csv")],
    )
    assert res.exit_code == 0, res.output
    got = pd.read_csv(out / "h.csv")
    expected = attack(led, mh.history, policy, "dk", deductions=False, revision="history")
    np.testing.assert_allclose(got["adversary_gain"], expected["adversary_gain"], rtol=1e-12)
    res = CliRunner().invoke(
        app, [*args, "--knowledge", "dk", "--revision", "e7", "--out", str(out / "x.csv")]
    )
    assert res.exit_code == 2 and "unknown revision 'e7'" in res.output
    assert not (out / "x.csv").exists()


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('qi = ["age", "gender", "weight"]', 'qi = ["age", "gender"]', "qi: 'weight' only in the ledger's"),
        (
            'qi = ["age", "gender", "weight"]',
            'qi = ["weight", "age", "gender"]',
            "qi: the same values in another order (['age', 'gender', 'weight'] recorded",
        ),
        (
            "weight = [60, 89]",
            "weight = [50, 99]",
            "domains.weight: 60, 89 only in the ledger's; 50, 99 only in",
        ),
    ],
)
def test_cli_refuses_a_policy_that_reads_the_releases_differently(ledger, old, new, named):
    """``--policy`` with other QIs (or QIs in another order: the Hilbert key's) or another
    domain than the ledger was released with would read the published boxes wrongly: attack
    and verify exit 2 naming the field, nothing written. Other thresholds (this file's k 5,
    t 0.3, j 0.1 against the release's k 4, t 1, j 1) are accepted (test_cli_revision)."""
    out, *_ = ledger
    text = (out / "policy.toml").read_text()
    assert old in text
    if "weight" not in new:  # the domain of a column that is no longer a QI is refused on its own
        text = text.replace("weight = [60, 89]\n", "")
    edited = out / f"edited-{len(new)}.toml"
    edited.write_text(text.replace(old, new))
    target = out / f"refused-{len(new)}.csv"
    common = ["--history", str(out / "history.parquet"), "--policy", str(edited)]
    res = CliRunner().invoke(
        app,
        ["attack", str(out / "led"), *common, "--knowledge", "dk", "--no-deductions", "--out", str(target)],
    )
    assert res.exit_code == 2, res.output
    assert named in res.output and str(edited) in res.output and "omit --policy" in res.output
    assert not target.exists()
    res = CliRunner().invoke(app, ["verify", "--ledger", str(out / "led"), "--view", "2", *common])
    assert res.exit_code == 2 and named in res.output, res.output

"""The release gate against the retrospective adversary (dpriv/gate.py; issue 12, direction 6)."""

import json
import warnings

import numpy as np
import pytest

import dpriv.gate as gate_mod
from dpriv.attack import attack
from dpriv.datasets import medical_history, write_history
from dpriv.errors import PolicyError
from dpriv.gate_lever import tightened
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate")
    mh = medical_history(n_views=3, view_size=300, seed=2)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, npartitions=2, max_suppression=1.0)
    return mh, policy


@pytest.fixture(scope="module")
def open_gate(setting, tmp_path_factory):
    """A history released under a gate that always holds (bound 1): its measured gains."""
    mh, policy = setting
    led_dir = tmp_path_factory.mktemp("open") / "led"
    release_history(mh.history, policy.with_overrides(retro_max_gain=1.0), led_dir)
    metrics = {i: json.loads((led_dir / "releases" / str(i) / "metrics.json").read_text()) for i in (1, 2, 3)}
    gates = {i: m["gate"] for i, m in metrics.items()}
    return led_dir, gates


@pytest.mark.slow
@pytest.mark.parametrize("attendance", [None, 0.5])
def test_gate_reads_the_release_as_the_retrospective_attack_reads_the_ledger(
    setting, tmp_path, monkeypatch, attendance
):
    """Without deductions the gate's gains as of each release equal `dpriv attack --adversary
    retrospective` on the committed ledger (its as_of rows): the release about to be committed
    is read as the attack reads it from the ledger."""
    mh, policy = setting
    monkeypatch.setattr(gate_mod, "deductions_available", lambda: False)
    seen = {}
    real_check = gate_mod.RetroGate.check

    def spy(self, *args):
        out = real_check(self, *args)
        seen[out.as_of] = out.gains
        return out

    monkeypatch.setattr(gate_mod.RetroGate, "check", spy)
    led = tmp_path / "led"
    release_history(mh.history, policy.with_overrides(retro_max_gain=1.0, retro_attendance=attendance), led)
    rows = attack(
        led, mh.history, policy, "dk", adversary="retrospective", deductions=False, attendance=attendance
    )
    assert sorted(seen) == [1, 2, 3]
    for a, gains in seen.items():
        expected = rows[rows["as_of"] == a].set_index("release")["adversary_gain"]
        assert sorted(gains) == sorted(expected.index.tolist())
        got = [gains[i] for i in expected.index]
        np.testing.assert_allclose(got, expected.to_numpy(), rtol=0, atol=1e-12)


def test_gate_record_in_metrics_and_no_gate_keeps_old_fingerprints(setting, open_gate, tmp_path):
    mh, policy = setting
    led_dir, gates = open_gate
    for i, g in gates.items():
        assert g["retro_max_gain"] == 1.0 and g["regroupings"] == 0
        assert (g["k_used"], g["t_used"], g["j_used"]) == (policy.k, policy.t, policy.j)
        assert g["worst_release"] in range(1, i + 1)
        assert -1.0 <= g["max_gain"] <= 1.0 and 0.0 <= g["confident_share"] <= 1.0
    # the gain of release 1 as of 1 is the paper adversary's gain of release 1 (with masks)
    paper = attack(led_dir, mh.history, policy, "dk")
    first = float(paper.loc[paper.release == 1, "adversary_gain"].iloc[0])
    assert gates[1]["max_gain"] == pytest.approx(first, abs=1e-6)
    # no gate: no "gate" key and the fingerprint has no retro_* keys (older ledgers match)
    assert "retro_max_gain" not in policy.fingerprint() and "retro_retries" not in policy.fingerprint()
    assert "retro_max_gain" in policy.with_overrides(retro_max_gain=0.1).fingerprint()
    plain = tmp_path / "plain"
    release_history(mh.history, policy, plain, until=1)
    assert "gate" not in json.loads((plain / "releases" / "1" / "metrics.json").read_text())
    # the gate changes nothing of what is published when it holds
    view = ("releases", "1", "view.parquet")
    assert plain.joinpath(*view).read_bytes() == led_dir.joinpath(*view).read_bytes()


@pytest.fixture(scope="module")
def midway(open_gate) -> float:
    """A bound between the largest gain as of release 1 and as of release 2."""
    _, gates = open_gate
    g1, g2 = gates[1]["max_gain"], gates[2]["max_gain"]
    assert g2 > g1, "release 2 raises the retrospective gain on this seeded history"
    return round((g1 + g2) / 2, 6)


def test_a_release_above_the_bound_is_refused_and_nothing_is_written(setting, midway, tmp_path):
    mh, policy = setting
    bound, led = midway, tmp_path / "led"
    strict = policy.with_overrides(retro_max_gain=bound, retro_retries=0)
    with pytest.raises(PolicyError) as err:
        release_history(mh.history, strict, led)
    msg = str(err.value)
    assert "release 2 refused by the release gate" in msg and f"retro_max_gain = {bound:g}" in msg
    assert "nothing was written" in msg
    # release 1 is committed: raising retro_max_gain on this ledger would be refused as a new policy
    assert "(release 1 is committed: a ledger keeps the policy it was started with" in msg
    assert "--ledger NEW" in msg
    assert [r["index"] for r in Ledger(led).committed()] == [1]
    assert not (led / "releases" / "2").exists() and not (led / "state" / "2").exists()


@pytest.mark.slow
def test_regrouping_with_a_smaller_j_until_the_gate_holds(setting, open_gate, midway, tmp_path):
    """With retries the gate regroups release 2 with j halved until its gains are within the
    bound (on this seeded history one or more halvings suffice): committed with a smaller j."""
    mh, policy = setting
    bound, led = midway, tmp_path / "led"
    g2 = open_gate[1][2]["max_gain"]
    gated = policy.with_overrides(retro_max_gain=bound, retro_retries=3)
    release_history(mh.history, gated, led, until=2)
    g = json.loads((led / "releases" / "2" / "metrics.json").read_text())
    assert g["gate"]["regroupings"] >= 1 and g["gate"]["j_used"] == 0.8 / 2 ** g["gate"]["regroupings"]
    assert g["gate"]["max_gain"] <= bound < g2
    assert g["ok"]
    # the report names the regroupings (and shows the gate's columns only for a gated ledger)
    from dpriv.report import release_frame, write_report

    frame = release_frame(led)
    assert frame["regroupings"].tolist() == [0, g["gate"]["regroupings"]]
    page = write_report(led, tmp_path / "r.html").read_text()
    assert 'data-key="gate.regroupings"' in page and 'data-key="gate.max_gain"' in page
    plain = tmp_path / "plain"
    release_history(mh.history, policy, plain, until=1)
    assert "gate." not in write_report(plain, tmp_path / "p.html").read_text()


@pytest.mark.slow
def test_regrouping_with_rbk_closeness_bounds_release_2_until_the_gate_holds(
    setting, open_gate, midway, tmp_path
):
    """The lever rbk_closeness: release 2 regrouped with the bound 0.4, then 0.2, ... until the
    gate holds; the committed release keeps the bound it was grouped with (recorded, verified)."""
    mh, policy = setting
    g1, g2 = open_gate[1][1]["max_gain"], open_gate[1][2]["max_gain"]
    # a bound just under release 2's own gain (the lever lowers it less far than j, which
    # suppresses: on this history release 2 cannot go below ~0.073 with release 1 as published)
    bound, led = round(g2 - 0.05 * (g2 - g1), 6), tmp_path / "led"
    gated = policy.with_overrides(retro_max_gain=bound, retro_retries=4, retro_lever="rbk_closeness")
    release_history(mh.history, gated, led, until=2)
    m = json.loads((led / "releases" / "2" / "metrics.json").read_text())
    n = m["gate"]["regroupings"]
    assert n >= 1 and m["gate"]["rbk_closeness_used"] == 0.4 / 2 ** (n - 1)
    assert m["gate"]["j_used"] == 0.8 and m["gate"]["max_gain"] <= bound < g2
    assert m["ok"] and m["rbk_closeness_achieved"] <= m["gate"]["rbk_closeness_used"] + 1e-9
    assert (
        "rbk_closeness_used" not in json.loads((led / "releases" / "1" / "metrics.json").read_text())["gate"]
    )


@pytest.mark.slow
def test_cli_release_gate_refuses_with_exit_2_and_writes_nothing(setting, open_gate, cli, tmp_path):
    mh, policy = setting
    _, gates = open_gate
    hist = tmp_path / "h"
    path = write_history(hist, mh)
    bound = gates[1]["max_gain"] / 4  # release 1 itself is above it, even regrouped twice
    led = tmp_path / "led"
    res = cli("release", hist / "history.parquet", "--ledger", led, "--policy", path,
              "--t", "0.5", "--j", "0.8", "--retro-max-gain", bound)  # fmt: skip
    assert res.exit_code == 2, res.output
    # the policy file's max_suppression (0.05) stops the regrouping first: both are named
    assert "release 1 refused by the release gate" in res.output
    assert "regrouped with k = 5, t = 0.5, j = " in res.output and "exceeds max_suppression" in res.output
    assert "--ledger NEW" not in res.output  # nothing committed: the same ledger takes a new policy
    assert "retro_max_gain" in res.output  # the effective policy lists it with its source
    assert not (led / "releases").exists() or not any((led / "releases").iterdir())
    res = cli("release", hist / "history.parquet", "--ledger", led, "--policy", path, "--retro-max-gain", 0)
    assert res.exit_code == 2, res.output
    assert "error: --retro-max-gain must be a number in (0, 1], not '0'" in res.output  # one line


@pytest.mark.slow
def test_text_ids_are_gated_and_read_as_the_attack_reads_them(setting, tmp_path, monkeypatch):
    """The gate's list of withheld ids took the id column's dtype, which numpy cannot make of
    pandas' text dtype (pandas 3: every gated release of text ids stopped with a TypeError)."""
    mh, policy = setting
    monkeypatch.setattr(gate_mod, "deductions_available", lambda: False)
    text = mh.history.assign(respondent_id="p" + mh.history["respondent_id"].astype(str))
    led = release_history(text, policy.with_overrides(retro_max_gain=1.0), tmp_path / "led")
    rows = attack(led, text, policy, "dk", adversary="retrospective", deductions=False)
    for i in (1, 2, 3):
        got = json.loads((led.root / "releases" / str(i) / "metrics.json").read_text())["gate"]
        worst = rows[rows["as_of"] == i].set_index("release")["adversary_gain"]
        assert got["worst_release"] == worst.idxmax()
        assert got["max_gain"] == pytest.approx(worst.max(), abs=1e-6)


def test_a_resumed_gated_history_equals_an_uninterrupted_one(setting, open_gate, tmp_path):
    """On resume the gate reads the committed releases back from the ledger (RetroGate.from_ledger):
    release 3's check and bytes equal those of the uninterrupted run."""
    mh, policy = setting
    led_dir, gates = open_gate
    led = tmp_path / "led"
    gated = policy.with_overrides(retro_max_gain=1.0)
    release_history(mh.history, gated, led, until=2)
    release_history(mh.history, gated, led)
    got = json.loads((led / "releases" / "3" / "metrics.json").read_text())["gate"]
    drop = lambda g: {k: v for k, v in g.items() if k != "seconds"}  # noqa: E731
    assert drop(got) == drop(gates[3])
    view = ("releases", "3", "view.parquet")
    assert led.joinpath(*view).read_bytes() == led_dir.joinpath(*view).read_bytes()


def test_gate_on_an_anatomy_release_reads_its_sensitive_table(setting, tmp_path, monkeypatch):
    mh, policy = setting
    monkeypatch.setattr(gate_mod, "deductions_available", lambda: False)
    anatomy = policy.with_overrides(release_format="anatomy")
    led = tmp_path / "led"
    release_history(mh.history, anatomy.with_overrides(retro_max_gain=1.0), led, until=2)
    gate = json.loads((led / "releases" / "2" / "metrics.json").read_text())["gate"]
    rows = attack(led, mh.history, anatomy, "dk", adversary="retrospective", deductions=False)
    as_of_2 = rows[rows["as_of"] == 2]
    assert gate["max_gain"] == pytest.approx(float(as_of_2["adversary_gain"].max()), abs=1e-6)
    assert gate["worst_release"] == int(as_of_2.loc[as_of_2["adversary_gain"].idxmax(), "release"])


@pytest.mark.parametrize(
    ("lever", "expected"),
    [("j", {"j": 0.2}), ("t", {"t": 0.125}), ("k", {"k": 20}), ("rbk_closeness", {"rbk_closeness": 0.2})],
)
def test_each_lever_tightens_its_parameter(setting, lever, expected):
    _, policy = setting
    p = policy.with_overrides(retro_max_gain=0.1, retro_lever=lever)
    twice = tightened(tightened(p))
    assert {k: getattr(twice, k) for k in expected} == expected
    others = {"k", "t", "j"} - set(expected)
    assert all(getattr(twice, k) == getattr(policy, k) for k in others)


def test_the_report_shows_the_gate_and_its_verdict(open_gate):
    from dpriv.report import release_frame
    from dpriv.report.explain import verdicts

    led_dir, gates = open_gate
    frame = release_frame(led_dir)
    assert frame["retro_gain"].tolist() == [gates[i]["max_gain"] for i in (1, 2, 3)]
    assert frame["regroupings"].tolist() == [gates[i]["regroupings"] for i in (1, 2, 3)]
    policy = json.loads((led_dir / "policy.json").read_text())
    checks = [[c for c in v.checks if c.name == "retro_gain"] for v in verdicts(frame, policy)]
    assert [(c[0].threshold, c[0].within) for c in checks] == [(1.0, True)] * 3


def test_gate_keys_without_the_bound_are_named_in_a_warning(setting):
    _, policy = setting
    with pytest.warns(UserWarning, match=r"^retro_attendance, retro_lever set but the release gate is off"):
        policy.with_overrides(retro_lever="k", retro_attendance=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy.with_overrides(retro_lever="k", retro_max_gain=0.1)  # the gate is on: silent
        policy.with_overrides(retro_retries=2)  # the default: nothing set


def test_a_lever_the_method_does_not_use_is_refused_before_anything_is_written(setting, tmp_path):
    mh, policy = setting
    gated = policy.with_overrides(retro_max_gain=0.1)  # retro_lever "j" by default
    with pytest.raises(PolicyError, match="method 'mondrian-l' does not use j"):
        release_history(mh.history, gated, tmp_path / "a", method="mondrian-l")
    with pytest.raises(PolicyError, match=r"retro_lever = \"k\" \(or one of \['k', 't'\]\)"):
        release_history(mh.history, gated, tmp_path / "b", method="mondrian-t")
    with pytest.raises(PolicyError, match="method 'mondrian-t' does not use rbk_closeness"):
        release_history(
            mh.history, gated.with_overrides(retro_lever="rbk_closeness"), tmp_path / "c", method="mondrian-t"
        )
    assert not any((tmp_path / d).exists() for d in "abc")


def test_refusal_says_what_can_help():
    """An earlier, published release read again cannot be lowered by regrouping the new one:
    the message says so instead of advising a smaller j."""
    used = {"k": 5, "t": 0.5, "j": 0.2}
    earlier = gate_mod.GateCheck(3, {1: 0.05, 2: 0.2, 3: 0.1}, 0.0, 0.15, used, 2, 0.1)
    msg = gate_mod.refusal(earlier)
    assert "gain 0.2000 on release 2 as of release 3" in msg
    assert "regrouped 2 time(s), k = 5, t = 0.5, j = 0.2" in msg
    assert "release 2 is published already" in msg and "new ledger" in msg
    assert "(releases 1..2 are committed: a ledger keeps the policy" in msg and "--ledger NEW" in msg
    own = gate_mod.GateCheck(3, {1: 0.05, 2: 0.1, 3: 0.2}, 0.0, 0.15, {**used, "j": 0.8}, 0, 0.1)
    msg = gate_mod.refusal(own)
    assert "published already" not in msg and "more retro_retries" in msg and "regrouped" not in msg


def test_worst_names_the_release_and_gain_of_the_largest_finite_gain():
    """Ties go to the earliest release, NaN gains are passed over; none finite: as_of and NaN."""
    used = {"k": 5, "t": 0.5, "j": 0.2}
    check = gate_mod.GateCheck(4, {1: 0.1, 2: 0.3, 3: 0.3, 4: float("nan")}, 0.0, 0.25, used, 0, 0.1)
    assert check.worst == gate_mod.WorstGain(release=2, gain=0.3)
    assert (check.worst.release, check.worst.gain) == (2, 0.3)
    assert not check.ok  # 0.3 > 0.25
    blank = gate_mod.GateCheck(3, {1: float("nan"), 2: float("inf")}, 0.0, 0.25, used, 0, 0.1)
    assert blank.worst.release == 3 and np.isnan(blank.worst.gain)
    assert blank.ok  # nothing finite to hold against the bound
    assert blank.as_record()["worst_release"] == 3 and blank.as_record()["max_gain"] is None

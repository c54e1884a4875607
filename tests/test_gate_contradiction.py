"""The release gate when the defender's model rules out what a release publishes (mined knowledge:
its tables never saw a value or transition): the check has no certain deductions, warns once and
reads the posteriors alone, as the attack does (dpriv/adversary/masks.py); release_history stopped
at release 2 with an uncaught NoAssignment before."""

import json
import warnings

import numpy as np
import pytest

import dpriv.gate as gate_mod
from dpriv.adversary.deductions import deduce
from dpriv.adversary.retro_last import read_whole_windows
from dpriv.adversary.tail import tail_risk
from dpriv.datasets import medical_history, write_history
from dpriv.gate_deductions import GateDeductions
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from tests.test_deductions import EXIT, as_sets, tables
from tests.test_deductions_prefix import assert_same
from tests.test_gate_deductions import R1, R2, R3

RULED_OUT = "the adversary's model rules out what release"
# the gate's model may change at the next release: the loss is that check's, not "from this release on"
GATE_LOSS = "no exact deductions in the gate's check of release 2 (a later check tries again"
# a is always followed by x and x is terminal: nobody is seen twice (R1, R2's respondent 1 is)
NO_RETURN = tables("ax", {"a": 0.5, "x": 0.5}, {"a": {"x": 1.0}})


def test_a_contradicted_check_allows_everything_and_the_next_starts_from_the_last_deduced():
    gd = GateDeductions(None)
    assert as_sets(gd.masks([R1], EXIT, "r1")[0], "ax") == ["ax", "ax"]
    gd.accept("r1")
    assert gd.certain
    with pytest.warns(UserWarning, match=f"^{RULED_OUT} 2 published .*no exact deductions") as rec:
        got = gd.masks([R1, R2], NO_RETURN, "r2")
    said = [str(w.message) for w in rec if RULED_OUT in str(w.message)]
    assert len(said) == 1 and GATE_LOSS in said[0] and "from this release on" not in said[0], said
    assert not gd.certain
    assert [m.shape for m in got] == [(2, 2), (2, 2)] and all(m.all() for m in got)
    gd.accept("r2")
    assert len(gd.committed.observed) == 1  # release 2's check deduced nothing: release 1's stays
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: a later contradiction is not warned about again
        assert all(m.all() for m in gd.masks([R1, R2, R3], NO_RETURN, "r3 under NO_RETURN"))
        # the model of release 3 allows what was published: its deductions again, started from
        # release 1's (release 2 has none), the same as from scratch
        masks = gd.masks([R1, R2, R3], EXIT, "r3")
    assert gd.certain  # this check deduced again
    assert gd.contradicted == [2, 3] and gd.started == 1
    want = deduce([R1, R2, R3], EXIT, attendance=None)
    assert_same(gd.last[1].deductions, want)
    assert as_sets(masks[0], "ax") == ["a", "x"]  # r1 comes back at 2: not the terminal x
    for a, b in zip(masks, want.allowed):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    """A 3-view history whose defender mines its model (IE): release 2's tables, mined from view 1
    alone, rule out what release 2 publishes, and release 3's what releases 1-3 do."""
    out = tmp_path_factory.mktemp("gate-ie")
    mh = medical_history(n_views=3, view_size=150, seed=4)
    privacy = {"k": 3, "t": 1.0, "j": 10.0, "max_suppression": 1.0}
    extra = {"knowledge": {"defender": "ie"}, "privacy": privacy}
    return mh, write_history(out, mh, extra), out


REAL = gate_mod.RetroGate.check, gate_mod.RetroGate.evidence  # not the spies of an earlier run


@pytest.mark.slow
def test_a_model_that_rules_out_a_release_reads_the_posteriors_alone(mined, tmp_path, monkeypatch):
    mh, path, _ = mined
    policy = ReleasePolicy.from_toml(path, retro_max_gain=0.2)
    checks, gates = [], []
    real_check, real_evidence = REAL

    def evidence(self, candidate, model):
        observed, masks = real_evidence(self, candidate, model)
        checks.append({"observed": observed, "tables": model, "masks": masks})
        gates.append(self)
        return observed, masks

    def check(self, *args):
        out = real_check(self, *args)
        checks[-1]["gains"] = out.gains
        return out

    monkeypatch.setattr(gate_mod.RetroGate, "evidence", evidence)
    monkeypatch.setattr(gate_mod.RetroGate, "check", check)
    led = tmp_path / "led"
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        release_history(mh.history, policy, led)
    said = [str(w.message) for w in rec if RULED_OUT in str(w.message)]
    assert len(said) == 1 and said[0].startswith(f"{RULED_OUT} 2 published"), said
    assert GATE_LOSS in said[0] and "from this release on" not in said[0], said
    assert gates[-1].deduced.contradicted == [2, 3]
    records = [
        json.loads((led / "releases" / str(i) / "metrics.json").read_text())["gate"] for i in (1, 2, 3)
    ]
    # release 1's check had its deductions: its record is as before, without the entry
    assert "exact_deductions" not in records[0] and list(records[0])[-1] == "seconds"
    assert [r.get("exact_deductions") for r in records[1:]] == [False, False]
    assert [c["observed"][-1].index for c in checks] == [1, 2, 3]  # no regrouping: one check each
    for c in checks[1:]:
        assert all(m.all() for m in c["masks"])
        # the gains of the posteriors alone: read from release 1 with every value allowed
        ones = [np.ones((o.respondent.size, c["tables"].n_values), dtype=bool) for o in c["observed"]]
        last = read_whole_windows(c["observed"], c["tables"], ones, policy.retro_attendance)
        want = {
            o.index: tail_risk(p, o.truth, o.frequencies(), m).adversary_gain
            for o, p, m in zip(c["observed"], last.posteriors, ones)
        }
        assert c["gains"].keys() == want.keys()
        np.testing.assert_allclose(list(c["gains"].values()), list(want.values()), rtol=0, atol=1e-12)
        metrics = led / "releases" / str(c["observed"][-1].index) / "metrics.json"
        gate = json.loads(metrics.read_text())["gate"]
        assert gate["max_gain"] == pytest.approx(max(want.values()), abs=1e-4)
    assert max(checks[-1]["gains"].values()) > 0.05  # release 3 is read: not a gain of nothing


@pytest.mark.slow
def test_cli_release_warns_once_and_commits(mined, cli, tmp_path):
    mh, path, out = mined
    led = tmp_path / "led"
    res = cli("release", out / "history.parquet", "--ledger", led, "--policy", path, "--retro-max-gain", 0.2)
    assert res.exit_code == 0, res.output
    assert res.output.count(f"warning: {RULED_OUT} 2 published") == 1, res.output
    assert res.output.count(RULED_OUT) == 1
    assert sorted(p.name for p in (led / "releases").iterdir()) == ["1", "2", "3"]

"""The release gate's deductions started from those of the committed releases, and the exit table
from each prefix's (issue 13, performance): the same masks, gains and counts as from scratch; a
model whose support changed between releases (mined knowledge) is deduced from scratch."""

import json

import numpy as np
import pytest

import dpriv.adversary.masks as masks_mod
import dpriv.gate as gate_mod
from dpriv.adversary.deductions import chain_support, deduce
from dpriv.adversary.exits import exit_deductions
from dpriv.adversary.masks import deduce_started
from dpriv.adversary.support import same_moves
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.gate_deductions import GateDeductions
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.sources import adversary_knowledge
from tests.test_deductions import EXIT, as_sets, release, tables
from tests.test_deductions_prefix import assert_same
from tests.test_exit_guard import hand  # noqa: F401 (a fixture)

# the same zeros as EXIT (x terminal), other probabilities: the same support
EXIT_AGAIN = tables("ax", {"a": 0.5, "x": 0.5}, {"a": {"a": 0.1, "x": 0.9}})
# x is followed by a: no terminal value, a respondent seen again may have been x
OPEN = tables("ax", {"a": 0.7, "x": 0.3}, {"a": {"a": 0.6, "x": 0.4}, "x": {"a": 1.0}})

R1 = release(1, "ax", [(1, 0, "a"), (2, 0, "x")])
R2 = release(2, "ax", [(1, 0, "a"), (3, 0, "a")])
R3 = release(3, "ax", [(1, 0, "a"), (3, 0, "x")])


def committed(models):
    """GateDeductions after checking and accepting R1, R1-R2, ... with ``models[k]`` at release k + 1."""
    gd, rels = GateDeductions(None), [R1, R2, R3]
    for k, model in enumerate(models):
        key = object()
        gd(rels[: k + 1], model, key)
        gd.accept(key)
    return gd


def test_a_check_starts_from_the_committed_releases_and_narrows_them():
    # release 1 alone: r1 and r2 share {a, x}; r1 is back at 2, so she was not at the terminal x
    gd = committed([EXIT])
    assert as_sets(gd.committed.deductions.allowed[0], "ax") == ["ax", "ax"]
    for model in (EXIT, EXIT_AGAIN):  # the same tables, or others with the same support
        started = gd.started
        got = gd([R1, R2], model, object())
        assert gd.started == started + 1
        assert as_sets(got.allowed[0], "ax") == ["a", "x"]
        assert_same(got, deduce([R1, R2], model, attendance=None))


def test_a_check_not_accepted_does_not_start_the_next():
    gd = committed([EXIT])
    gd([R1, R2], EXIT, "refused")
    gd.accept("another")  # not the last checked: the start stays release 1's
    assert len(gd.committed.observed) == 1
    gd.accept("refused")  # its check is forgotten once another key is accepted
    assert len(gd.committed.observed) == 1


def test_tables_whose_support_changed_are_deduced_from_scratch():
    # releases 1-2 committed under EXIT: release 1 reads a, x. With OPEN at release 3 (x is no
    # longer terminal) nothing of release 1 is certain: started from the committed deductions the
    # masks would stay a, x (what the equality tests catch), so the check starts from scratch
    gd = committed([EXIT, EXIT])
    assert as_sets(gd.committed.deductions.allowed[0], "ax") == ["a", "x"]
    wrong = deduce([R1, R2, R3], OPEN, attendance=None, start=gd.committed.deductions)
    assert as_sets(wrong.allowed[0], "ax") == ["a", "x"]
    got = gd([R1, R2, R3], OPEN, object())
    assert gd.started == 1  # release 2's check only
    assert as_sets(got.allowed[0], "ax") == ["ax", "ax"]
    assert_same(got, deduce([R1, R2, R3], OPEN, attendance=None))


def test_same_moves_compares_each_tuple_s_moves():
    exit_, again, open_ = (chain_support(t) for t in (EXIT, EXIT_AGAIN, OPEN))
    cls = np.zeros(3, np.int64)
    assert same_moves(exit_, cls, again, cls)
    assert not same_moves(exit_, cls, open_, cls)
    assert not same_moves(exit_, cls, again, cls[:2])
    assert same_moves(exit_, cls[:0], again, cls[:0])


def test_a_started_run_that_contradicts_is_raised_as_from_scratch():
    # r2 is absent from view 2, which examined every active respondent: with attendance 1 an
    # exit at a, which is not terminal
    obs = [release(1, "ax", [(1, 0, "a"), (2, 0, "a")]), R2]
    first = deduce(obs[:1], EXIT, attendance=1.0)
    with pytest.raises(InputError, match="contradict") as started:
        deduce_started(obs, EXIT, 1.0, chain_support(EXIT), first)
    with pytest.raises(InputError, match="contradict") as scratch:
        deduce(obs, EXIT, attendance=1.0)
    assert str(started.value) == str(scratch.value)


def test_a_started_run_that_does_not_converge_is_run_again(monkeypatch):
    import dpriv.adversary.deductions as ded

    real, calls = ded.deduce, []

    def capped(*args, **kwargs):  # the started run stops after one round
        calls.append("start" in kwargs)
        return real(*args, **kwargs, max_rounds=0 if "start" in kwargs else 100)

    monkeypatch.setattr(ded, "deduce", capped)
    d, seconds = deduce_started([R1, R2], EXIT, None, chain_support(EXIT), real([R1], EXIT, attendance=None))
    assert calls == [True, False] and d.converged and seconds >= d.seconds
    assert_same(d, real([R1, R2], EXIT, attendance=None))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate-ded")
    mh = medical_history(n_views=4, view_size=200, seed=3)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, npartitions=2, max_suppression=1.0)
    return mh, policy


REAL = gate_mod.RetroGate.check, gate_mod.RetroGate.evidence  # not the spies of an earlier run


def gated_run(mh, policy, led, monkeypatch, incremental):
    """Every check's gains and masks, the number of started checks, and the released bytes."""
    monkeypatch.setattr(GateDeductions, "incremental", incremental)
    checks, gates = [], []
    real_check, real_evidence = REAL

    def check(self, *args):
        out = real_check(self, *args)
        checks[-1]["gains"] = out.gains
        gates.append(self)
        return out

    def evidence(self, candidate, tables):
        observed, masks = real_evidence(self, candidate, tables)
        checks.append({"as_of": candidate.index, "masks": masks})
        return observed, masks

    monkeypatch.setattr(gate_mod.RetroGate, "check", check)
    monkeypatch.setattr(gate_mod.RetroGate, "evidence", evidence)
    release_history(mh.history, policy, led)
    released = sorted(p for p in (led / "releases").rglob("*") if p.is_file() and p.name != "metrics.json")
    data = {p.relative_to(led).as_posix(): p.read_bytes() for p in released}
    gate = {}
    for i in range(1, 5):
        g = json.loads((led / "releases" / str(i) / "metrics.json").read_text())["gate"]
        gate[i] = {k: v for k, v in g.items() if k != "seconds"}
    return checks, gates[-1].deduced.started, data, gate


@pytest.mark.slow
@pytest.mark.parametrize(
    "models, gate",
    [
        ("dk dk dk dk", {"retro_max_gain": 1.0}),
        ("dk dk dk dk", {"retro_posterior_bound": 0.9, "retro_attendance": 0.5}),  # withholding passes
        ("dk dk dk-1 dk-1", {"retro_max_gain": 1.0}),  # the defender's model changes at release 3
    ],
)
def test_gate_checks_equal_those_from_scratch(small, tmp_path, monkeypatch, models, gate):
    mh, policy = small
    policy = policy.with_overrides(**gate)
    by_release = {i: adversary_knowledge(name, policy).tables_before(mh.history, policy, i) for i, name in
                  enumerate(models.split(), 1)}  # fmt: skip
    real = gate_mod.RetroGate.release
    monkeypatch.setattr(
        gate_mod.RetroGate, "release", lambda self, run, orig, i, _: real(self, run, orig, i, by_release[i])
    )
    new = gated_run(mh, policy, tmp_path / "new", monkeypatch, True)
    old = gated_run(mh, policy, tmp_path / "old", monkeypatch, False)
    assert old[1] == 0 and len(new[0]) == len(old[0]) >= 4
    for a, b in zip(new[0], old[0]):
        assert a["as_of"] == b["as_of"] and a["gains"] == b["gains"]
        assert len(a["masks"]) == len(b["masks"]) == a["as_of"]
        for x, y in zip(a["masks"], b["masks"]):
            np.testing.assert_array_equal(x, y)
    assert new[2] == old[2] and new[3] == old[3]
    # every check after release 1 starts from the committed releases, but not across a change of
    # model (dk-1 has other contexts than dk): the checks of release 3 then start from scratch
    changed = models.split()[2] != models.split()[1]
    assert new[1] == sum(c["as_of"] > 1 and not (changed and c["as_of"] == 3) for c in new[0])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:view .* holds one value only")
def test_exit_table_equals_the_one_from_scratch(hand, monkeypatch):  # noqa: F811
    out, history, policy = hand
    led = release_history(history, policy, out / "exits")
    got = exit_deductions(led, history, policy)
    assert got["n_certain"].sum() > 0  # later releases narrow earlier ones
    calls = []

    def scratch(releases, tables, attendance, support, head):
        calls.append(head is not None)
        d = deduce(releases, tables, attendance=attendance, support=support)
        return d, d.seconds

    monkeypatch.setattr(masks_mod, "deduce_started", scratch)
    want = exit_deductions(led, history, policy)
    assert calls == [False, True, True]  # the table above was read with head starts
    assert got.equals(want)

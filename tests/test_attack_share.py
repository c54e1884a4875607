"""Two attacks of one ledger sharing their reading and deductions (issue 13, performance):
dpriv.attack_share, deduce(start=...), MasksAsOf(start=...). Results the same to the last bit."""

import numpy as np
import pandas as pd
import pytest

import dpriv.adversary.deductions as deductions_module
from dpriv.adversary.deductions import deduce
from dpriv.adversary.exits import exit_deductions
from dpriv.adversary.masks import MasksAsOf
from dpriv.attack import attack
from dpriv.attack_input import linkage_rows, read_attack
from dpriv.attack_share import AttackShare
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from tests.test_deductions import CYCLE, EXIT, as_sets, cycle_history, own_releases, release


def test_head_start_reaches_the_masks_of_the_presence_channel():
    # view 2 suppressed 2 tuples: without attendance 1 nothing is certain at 3 (bc, bc); with it
    # r1 had exactly one hidden exam (c) and r2 is b. Started from the weaker masks, the same.
    r1, r2 = cycle_history(2)
    r3 = release(3, "abc", [(1, 0, "c"), (2, 0, "b")])
    weak = deduce([r1, r2, r3], CYCLE, attendance=None)
    assert as_sets(weak.allowed[2], "abc") == ["bc", "bc"] and weak.converged and not weak.presence
    head = deduce([r1, r2, r3], CYCLE, attendance=1.0, start=weak)
    assert as_sets(head.allowed[2], "abc") == ["c", "b"] and head.presence
    assert as_sets(weak.allowed[2], "abc") == ["bc", "bc"]  # the start is left as it was


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_head_start_equals_the_fixed_point_from_scratch(seed):
    mh = medical_history(n_views=6, view_size=60, attendance=1.0, seed=seed)
    rels = own_releases(mh, np.random.default_rng(seed), supp_rate=0.05, max_group=3)
    weak = deduce(rels, mh.knowledge, attendance=0.7)
    full = deduce(rels, mh.knowledge, attendance=1.0)
    head = deduce(rels, mh.knowledge, attendance=1.0, start=weak)
    for a, b in zip(full.allowed, head.allowed):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(full.exited, head.exited):
        np.testing.assert_array_equal(a, b)
    assert head.n_certain.tolist() == full.n_certain.tolist()


def test_a_start_that_does_not_fit_is_refused():
    r1, r2 = cycle_history(2)
    r3 = release(3, "abc", [(1, 0, "c"), (2, 0, "b")])
    full = deduce([r1, r2, r3], CYCLE, attendance=1.0)
    with pytest.raises(InputError, match="presence channel"):  # it knows more than this call
        deduce([r1, r2, r3], CYCLE, attendance=None, start=full)
    assert as_sets(deduce([r1, r2, r3], CYCLE, attendance=1.0, start=full).allowed[2], "abc") == ["c", "b"]
    with pytest.raises(InputError, match="shapes"):
        deduce([r1, r2], CYCLE, attendance=1.0, start=deduce([r1, r2, r3], CYCLE, attendance=None))
    weak = MasksAsOf([r1, r2, r3], CYCLE, None)
    with pytest.raises(InputError, match="same releases"):
        MasksAsOf([r1, r2, r3], CYCLE, 1.0, start=MasksAsOf([r1, r2], CYCLE, None))
    with pytest.raises(InputError, match="presence channel"):
        MasksAsOf([r1, r2, r3], CYCLE, None, start=MasksAsOf([r1, r2, r3], CYCLE, 1.0))
    assert as_sets(MasksAsOf(weak.observed, CYCLE, 1.0, start=weak)(2)[2], "abc") == ["c", "b"]


def test_a_contradiction_with_a_head_start_is_the_one_without():
    # r2 is absent from a view that examined every active respondent yet not terminal: only the
    # presence channel sees the contradiction; the masks started from those without it say so
    # as the masks from scratch do (nothing certain, warned; deduce itself raises it)
    obs = [release(1, "ax", [(1, 0, "a"), (2, 0, "a")]), release(2, "ax", [(1, 0, "a"), (3, 0, "a")])]
    weak = MasksAsOf(obs, EXIT, None)
    assert as_sets(weak(1)[0], "ax") == ["a", "a"]  # no contradiction without it
    with pytest.raises(InputError, match="contradict"):
        deduce(obs, EXIT, attendance=1.0)
    for masks in (MasksAsOf(obs, EXIT, 1.0), MasksAsOf(obs, EXIT, 1.0, start=weak)):
        with pytest.warns(UserWarning, match="model rules out what release 2 published"):
            assert [as_sets(m, "ax") for m in masks(1)] == [["ax", "ax"], ["ax", "ax"]]
        assert masks.contradicted == [2]


@pytest.fixture(scope="module")
def ledger_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("share")
    mh = medical_history(n_views=5, view_size=150, seed=7)
    policy = ReleasePolicy.from_toml(write_history(root / "data", mh), t=1.0, j=1.0, k=3, max_suppression=0.3)
    led = release_history(mh.history, policy, root / "ledger", method="mondrian-l")
    return led, mh, policy


def _fresh_deductions(monkeypatch):
    """Count the fixed points run from scratch (no head start)."""
    calls = []
    real = deductions_module.deduce

    def counted(*args, **kwargs):
        calls.append(kwargs.get("start") is None)
        return real(*args, **kwargs)

    monkeypatch.setattr(deductions_module, "deduce", counted)
    return calls


def test_shared_attacks_give_the_frames_of_unshared_ones(ledger_run, monkeypatch):
    led, mh, policy = ledger_run
    alone = attack(led, mh.history, policy, "dk")
    alone_retro = attack(led, mh.history, policy, "dk", adversary="retrospective", attendance=1.0)
    calls = _fresh_deductions(monkeypatch)
    share = AttackShare()
    paper = attack(led, mh.history, policy, "dk", share=share)
    retro = attack(led, mh.history, policy, "dk", adversary="retrospective", attendance=1.0, share=share)
    pd.testing.assert_frame_equal(paper, alone, check_exact=True)
    pd.testing.assert_frame_equal(retro, alone_retro, check_exact=True)
    assert share.reads == 1  # the releases were read once
    n = len(led.committed())
    # the paper adversary ran the fixed point of the first prefix from scratch, each other from
    # the prefix before; the retrospective one started each from the paper adversary's
    # (attendance 1 adds the presence channel)
    assert calls == [True] + [False] * (n - 1) + [False] * n
    # a third attack of the same presence channel takes the deductions as they are
    again = attack(led, mh.history, policy, "dk", attendance=0.5, share=share)
    pd.testing.assert_frame_equal(again, alone, check_exact=True)
    assert share.reads == 1 and len(calls) == 2 * n


def test_a_share_given_other_arguments_reads_afresh(ledger_run):
    led, mh, policy = ledger_run
    share = AttackShare()
    first = attack(led, mh.history, policy, "dk", share=share)
    other = mh.history.copy()
    second = attack(led, other, policy, "dk", share=share)
    assert share.reads == 2  # another history object: not taken for the same one
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    snap = attack(led, other, policy, "snapshot", share=share)
    assert share.reads == 2  # another knowledge: the same releases, not read again
    pd.testing.assert_frame_equal(snap, attack(led, other, policy, "snapshot"), check_exact=True)
    attack(led, mh.history, policy, "snapshot", share=share)
    assert share.reads == 3  # the first history again: another object than the last one
    with pytest.raises(
        InputError, match=r"attack\(\) takes ledger as a Ledger or the ledger.s folder .*not int 3"
    ):
        attack(3, other, policy, "snapshot", share=share)


@pytest.mark.slow
def test_attacks_of_other_knowledge_take_the_releases_read_and_their_own_tables(ledger_run, monkeypatch):
    # experiment paper: four knowledge kinds, then the retrospective adversary and the exit counts
    # of the same ledger through one share; each frame the one an unshared call gives
    led, mh, policy = ledger_run
    share = AttackShare()
    for kind in ("snapshot", "dk", "dk-1", "dk-2"):
        got = attack(led, mh.history, policy, kind, deductions=False, share=share)
        pd.testing.assert_frame_equal(
            got, attack(led, mh.history, policy, kind, deductions=False), check_exact=True
        )
    assert share.reads == 1
    retro = attack(led, mh.history, policy, "dk", adversary="retrospective", attendance=0.5, share=share)
    alone = attack(led, mh.history, policy, "dk", adversary="retrospective", attendance=0.5)
    pd.testing.assert_frame_equal(retro, alone, check_exact=True)
    # the exit counts take the retrospective adversary's deductions: no fixed point run again
    calls = _fresh_deductions(monkeypatch)
    exits = exit_deductions(led, mh.history, policy, "dk", attendance=0.5, share=share)
    assert calls == [] and share.reads == 1
    monkeypatch.undo()
    pd.testing.assert_frame_equal(exits, exit_deductions(led, mh.history, policy, "dk", attendance=0.5))
    assert exits["n_certain"].sum() > 0  # (deductions to compare: not all zero)
    # the pinned shares of the experiment, from the releases the share read (the history as the
    # attack normalises it): those of the raw history's reading
    raw = read_attack(led, mh.history, policy, "snapshot", None)
    shared = share.input(led, mh.history, policy, "snapshot", None)
    assert linkage_rows(shared.reads, shared.policy) == linkage_rows(raw.reads, raw.policy)
    with pytest.raises(PolicyError, match="unknown adversary knowledge 'dk-9'"):  # as without a share
        attack(led, mh.history, policy, "dk-9", share=share)
    assert share.reads == 1


@pytest.mark.slow
def test_the_experiments_attacks_of_a_setting_read_the_ledger_once(ledger_run, monkeypatch):
    # dpriv experiment paper per setting: pinned shares, 4 paper kinds, the retrospective adversary
    # and its exit counts; shared (one reading, the retrospective deductions reused) or each alone
    import dpriv.attack_share as share_module
    from dpriv.experiment import attack_setting

    led, mh, policy = ledger_run
    real, reads = share_module.read_attack, []

    def counted(*args):
        reads.append(args[3])
        return real(*args)

    monkeypatch.setattr(share_module, "read_attack", counted)
    alone = attack_setting(led, mh.history, policy, attendance=0.5, shared=False)
    assert reads == ["snapshot", "snapshot", "dk", "dk-1", "dk-2", "dk", "dk"]
    del reads[:]
    fresh = _fresh_deductions(monkeypatch)
    got = attack_setting(led, mh.history, policy, attendance=0.5)
    assert reads == ["snapshot"]
    n = len(led.committed())
    assert fresh == [True] + [False] * (n - 1)  # one chain of prefixes, for the retro and the exits
    assert got.pinned == alone.pinned and list(got.gains) == ["snapshot", "dk", "dk-1", "dk-2"]
    for kind, frame in alone.gains.items():
        pd.testing.assert_frame_equal(got.gains[kind], frame, check_exact=True)
    pd.testing.assert_frame_equal(got.retro, alone.retro, check_exact=True)
    assert got.retro["n_certain"].sum() > 0

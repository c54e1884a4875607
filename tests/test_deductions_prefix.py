"""The deductions of each prefix started from those of the prefix before (issue 13, performance):
deduce(start=<deductions of releases[:p]>) and MasksAsOf(incremental=True). A later release only
narrows the masks of earlier ones, so the masks are those from scratch, to the last bit."""

import dataclasses
import functools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpriv.attack_share as attack_share_module
from dpriv.adversary.deductions import deduce
from dpriv.adversary.masks import MasksAsOf
from dpriv.attack import attack
from dpriv.attack_share import AttackShare
from dpriv.datasets import medical_history
from dpriv.errors import InputError
from tests.test_attack_share import ledger_run  # noqa: F401 (a fixture)
from tests.test_deductions import CYCLE, EXIT, as_sets, cycle_history, own_releases, release


def assert_same(a, b):
    assert len(a.allowed) == len(b.allowed)
    for x, y in zip(a.allowed, b.allowed):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(a.exited, b.exited):
        np.testing.assert_array_equal(x, y)
    assert a.n_certain.tolist() == b.n_certain.tolist() and a.presence == b.presence


def test_a_later_release_narrows_an_earlier_one_from_the_prefix_start():
    # release 1 alone: r1 and r2 share {a, x}, nothing certain; r1 is back at 2, so she was not
    # at the terminal x: r1 a, r2 x. Started from release 1's masks, the same.
    r1 = release(1, "ax", [(1, 0, "a"), (2, 0, "x")])
    r2 = release(2, "ax", [(1, 0, "a"), (3, 0, "a")])
    alone = deduce([r1], EXIT, attendance=None)
    assert as_sets(alone.allowed[0], "ax") == ["ax", "ax"]
    head = deduce([r1, r2], EXIT, attendance=None, start=alone)
    assert as_sets(head.allowed[0], "ax") == ["a", "x"]
    assert_same(head, deduce([r1, r2], EXIT, attendance=None))
    assert as_sets(alone.allowed[0], "ax") == ["ax", "ax"]  # the start is left as it was


def test_a_gap_bound_from_a_later_release_reaches_back():
    # view 2 suppressed 2 tuples; release 3 narrows release 1 and 2 only with attendance 1 (the
    # gap bound of r1's tuple at 3); started from the prefix with or without presence, the same
    r1, r2 = cycle_history(2)
    r3 = release(3, "abc", [(1, 0, "c"), (2, 0, "b")])
    for start_att in (None, 1.0):
        start = deduce([r1, r2], CYCLE, attendance=start_att)
        head = deduce([r1, r2, r3], CYCLE, attendance=1.0, start=start)
        assert as_sets(head.allowed[2], "abc") == ["c", "b"]
        assert_same(head, deduce([r1, r2, r3], CYCLE, attendance=1.0))


def test_an_exit_at_the_start_s_last_release_is_checked_again():
    # r2 is absent from view 2, which examined every active respondent (a newcomer, nothing
    # suppressed), yet a is not terminal: a contradiction that only the exit at release 1 (the
    # prefix's last release, not re-read otherwise: r2 has no tuple at 2) shows
    obs = [release(1, "ax", [(1, 0, "a"), (2, 0, "a")]), release(2, "ax", [(1, 0, "a"), (3, 0, "a")])]
    first = deduce(obs[:1], EXIT, attendance=1.0)
    assert not first.exited[0].any()  # nothing after release 1 yet
    with pytest.raises(InputError, match="contradict"):
        deduce(obs, EXIT, attendance=1.0, start=first)
    masks = MasksAsOf(obs, EXIT, 1.0)
    assert as_sets(masks(0)[0], "ax") == ["a", "a"]
    # started from release 1's or from scratch: nothing certain as of release 2 (warned)
    for prefix in (masks, MasksAsOf(obs, EXIT, 1.0, incremental=False)):
        # the attack's model is fixed: what it rules out stays ruled out (the gate's says less)
        with pytest.warns(UserWarning, match="rules out what release 2 published.*from this release on"):
            assert [m.all() for m in prefix(1)] == [True, True]
        assert prefix.contradicted == [2]


def test_a_start_too_narrow_gives_other_masks():
    # what the equality tests would catch if a later release could widen earlier masks: release 1
    # started from its masks as of release 2 (narrower) keeps them, unlike from scratch
    r1 = release(1, "ax", [(1, 0, "a"), (2, 0, "x")])
    r2 = release(2, "ax", [(1, 0, "a"), (3, 0, "a")])
    later = deduce([r1, r2], EXIT, attendance=None)
    narrow = dataclasses.replace(later, allowed=later.allowed[:1], exited=later.exited[:1])
    wrong = deduce([r1], EXIT, attendance=None, start=narrow)
    assert as_sets(wrong.allowed[0], "ax") == ["a", "x"]
    assert as_sets(deduce([r1], EXIT, attendance=None).allowed[0], "ax") == ["ax", "ax"]


def test_starts_that_do_not_fit_are_refused():
    r1, r2 = cycle_history(2)
    r3 = release(3, "abc", [(1, 0, "c"), (2, 0, "b")])
    with pytest.raises(InputError, match="shapes"):
        deduce([r1, r2], CYCLE, attendance=1.0, start=deduce([r1, r2, r3], CYCLE, attendance=None))
    with pytest.raises(InputError, match="shapes"):  # not a prefix: other releases
        deduce([r1, r2], CYCLE, attendance=1.0, start=deduce([r1, r3], CYCLE, attendance=None))
    with pytest.raises(InputError, match="presence channel"):
        deduce([r1, r2, r3], CYCLE, attendance=None, start=deduce([r1, r2], CYCLE, attendance=1.0))
    stopped = dataclasses.replace(deduce([r1, r2], CYCLE, attendance=None), converged=False)
    with pytest.raises(InputError, match="converged"):
        deduce([r1, r2, r3], CYCLE, attendance=None, start=stopped)


def _every_prefix(rels, tables, attendance, weak_attendance):
    """Masks of every prefix, incremental or not, alone or started from a weaker adversary's."""
    runs = {}
    for incremental in (True, False):
        weak = MasksAsOf(rels, tables, weak_attendance, incremental=incremental)
        for k in range(len(rels)):
            weak(k)
        alone = MasksAsOf(rels, tables, attendance, incremental=incremental)
        started = MasksAsOf(rels, tables, attendance, start=weak, incremental=incremental)
        runs[incremental] = [(weak(k), alone(k), started(k)) for k in range(len(rels))]
    return runs


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    attendance=st.sampled_from([1.0, 0.6]),
    supp_rate=st.sampled_from([0.0, 0.05, 0.3]),
    max_group=st.integers(1, 6),
    det=st.sampled_from([0.9, 1.0]),
)
def test_every_prefix_from_the_one_before_equals_from_scratch(seed, attendance, supp_rate, max_group, det):
    mh = medical_history(n_views=6, view_size=50, attendance=attendance, det=det, seed=seed)
    rels = own_releases(mh, np.random.default_rng(seed), supp_rate=supp_rate, max_group=max_group)
    runs = _every_prefix(rels, mh.knowledge, attendance, None)
    for new, old in zip(runs[True], runs[False]):
        for a, b in zip(new, old):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("seed", [5, 17])
def test_random_groupings_with_suppression_and_exits(seed):
    # attendance 1: exits (presence) and gap bounds; larger views than the property test
    mh = medical_history(n_views=7, view_size=120, attendance=1.0, seed=seed)
    rng = np.random.default_rng(seed)
    hiding = own_releases(mh, rng, supp_rate=0.03, max_group=4)
    rels = [
        r if k % 3 == 1 else c
        for k, (r, c) in enumerate(zip(hiding, own_releases(mh, rng, supp_rate=0, max_group=4)))
    ]
    narrowed = 0
    prev = None
    for k in range(len(rels)):
        scratch = deduce(rels[: k + 1], mh.knowledge, attendance=1.0)
        if prev is not None:
            assert_same(deduce(rels[: k + 1], mh.knowledge, attendance=1.0, start=prev), scratch)
            narrowed += sum(int((p != s).sum()) for p, s in zip(prev.allowed, scratch.allowed))
        prev = scratch
    assert narrowed > 0  # later releases did narrow earlier masks, or the test proves little
    assert sum(int(e.sum()) for e in prev.exited) > 0  # and the presence channel marked exits


def test_masks_as_of_starts_each_prefix_from_the_one_before(monkeypatch):
    r1, r2 = cycle_history(2)
    obs = [r1, r2, release(3, "abc", [(1, 0, "c"), (2, 0, "b")])]
    starts = []
    real = deduce

    def counted(*args, **kwargs):
        start = kwargs.get("start")
        starts.append(None if start is None else (len(start.allowed), start.presence))
        return real(*args, **kwargs)

    import dpriv.adversary.deductions as deductions_module

    monkeypatch.setattr(deductions_module, "deduce", counted)
    masks = MasksAsOf(obs, CYCLE, 1.0)
    assert as_sets(masks(2)[2], "abc") == ["c", "b"]  # no shorter prefix yet: from scratch
    assert as_sets(masks(0)[0], "abc") == ["a"] and as_sets(masks(1)[1], "abc") == ["c"]
    assert starts == [None, None, (1, True)]
    again = MasksAsOf(obs, CYCLE, 1.0)
    assert [again(k)[k].sum() for k in range(3)] == [1, 1, 2]
    assert starts[3:] == [None, (1, True), (2, True)]
    # given a weaker adversary's masks, each prefix starts from theirs of the same prefix
    weak = MasksAsOf(obs, CYCLE, None)
    assert [weak(k)[k].sum() for k in range(3)] == [1, 1, 4]  # without presence: bc, bc at 3
    del starts[:]
    strong = MasksAsOf(obs, CYCLE, 1.0, start=weak)
    assert [strong(k)[k].sum() for k in range(3)] == [1, 1, 2]
    assert starts == [(1, False), (2, False), (3, False)]


@pytest.mark.slow
def test_retrospective_frames_are_those_from_scratch(ledger_run, monkeypatch):  # noqa: F811
    led, mh, policy = ledger_run
    share = AttackShare()
    paper = attack(led, mh.history, policy, "dk", share=share)
    retro = attack(led, mh.history, policy, "dk", adversary="retrospective", attendance=1.0, share=share)
    scratch = functools.partial(MasksAsOf, incremental=False)
    monkeypatch.setattr(attack_share_module, "MasksAsOf", scratch)
    share = AttackShare()
    paper_old = attack(led, mh.history, policy, "dk", share=share)
    retro_old = attack(led, mh.history, policy, "dk", adversary="retrospective", attendance=1.0, share=share)
    pd.testing.assert_frame_equal(paper, paper_old, check_exact=True)
    pd.testing.assert_frame_equal(retro, retro_old, check_exact=True)
    alone = attack(led, mh.history, policy, "dk", adversary="retrospective", attendance=1.0)
    pd.testing.assert_frame_equal(retro, alone, check_exact=True)

"""Retrospective adversary, group Ω with masks and tail risk (dpriv.adversary)."""

import numpy as np
import pytest

from dpriv.adversary.groups import group_posterior, released_codes
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.reading import observed_from_steps
from dpriv.adversary.retrospective import retrospective_attack, retrospective_posteriors
from dpriv.adversary.smoothing import ABS, OBS
from dpriv.adversary.tail import tail_risk
from dpriv.attack import attack_steps
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.knowledge.posterior import omega_posterior
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from tests.test_adversary_smoothing import M, brute_force, hand_tables

# ----------------------------------------------------------------------------- tail risk


def test_tail_risk_hand_computed_four_tuples():
    post = np.array([[0.95, 0.05, 0], [0.92, 0.08, 0], [0.5, 0.5, 0], [0, 0, 1.0]])
    truth = np.array([0, 1, 1, 2])
    base = np.array([0.5, 0.25, 0.5, 0.25])
    mask = np.array([[1, 1, 0], [1, 1, 0], [1, 1, 1], [0, 0, 1]], dtype=bool)
    r = tail_risk(post, truth, base, mask)
    # gains 0.45, -0.17, 0, 0.75; claims >= 0.9: t0 (right), t1 (wrong), t3 (right)
    assert r.n_tuples == 4
    assert r.adversary_gain == pytest.approx((0.45 - 0.17 + 0 + 0.75) / 4, abs=1e-15)
    assert r.n_confident == 3
    assert r.confident_share == 0.5
    assert r.confident_precision == pytest.approx(2 / 3)
    assert r.max_posterior == 1.0
    assert r.n_certain == 1
    assert tail_risk(post, truth, base).n_certain is None
    # the (n, M) baseline form reads the truth's column
    full = np.zeros((4, 3))
    full[np.arange(4), truth] = base
    assert tail_risk(post, truth, full).adversary_gain == r.adversary_gain


def test_tail_risk_without_claims_or_tuples():
    r = tail_risk(np.full((2, 2), 0.5), np.array([0, 1]), np.array([0.5, 0.5]))
    assert r.n_confident == 0 and r.confident_share == 0 and np.isnan(r.confident_precision)
    assert r.adversary_gain == 0.0
    e = tail_risk(np.zeros((0, 3)), np.zeros(0, int), np.zeros(0))
    assert e.n_tuples == 0 and np.isnan(e.adversary_gain) and np.isnan(e.max_posterior)
    with pytest.raises(InputError, match="threshold"):
        tail_risk(np.full((2, 2), 0.5), np.array([0, 1]), np.array([0.5, 0.5]), threshold=0.4)


# ----------------------------------------------------------------------------- group Ω


def test_group_posterior_equals_omega_and_respects_masks():
    rng = np.random.default_rng(0)
    group = np.array([1, 0, 1, 1, 0, 2])
    truth = np.array([0, 2, 1, 0, 2, 3])
    counts = np.zeros((3, 4), int)
    np.add.at(counts, (group, truth), 1)
    s = released_codes(group, counts)
    assert np.array_equal(np.sort(s[group == 1]), [0, 0, 1])
    priors = rng.dirichlet(np.ones(4), size=6)
    np.testing.assert_array_equal(
        group_posterior(group, counts, priors), omega_posterior(group, truth, priors)
    )
    mask = np.ones((6, 4), bool)
    mask[0] = [True, False, False, False]  # tuple 0 pinned to its true value 0
    post = group_posterior(group, counts, priors, mask)
    np.testing.assert_allclose(post[0], [1, 0, 0, 0])
    np.testing.assert_allclose(post.sum(axis=1), 1)
    assert (post[~mask] == 0).all()
    with pytest.raises(InputError, match="group sizes"):
        group_posterior(group, counts[:2], priors[:4])


# ----------------------------------------------------------------------------- retrospective vs reference


def _world(seed, n_releases=3):
    """Six respondents of two classes over ``n_releases`` releases of groups of 2-3; values
    drawn from the hand tables (order 2), one respondent exits, one skips a release."""
    rng = np.random.default_rng(seed)
    tables = hand_tables(2, seed=seed)
    cls = np.array([0, 1, 0, 1, 1, 0])
    ctx = {r: [] for r in range(6)}
    rels = []
    for i in range(n_releases):
        members = [r for r in range(6) if not (i == 1 and r == 5) and not (ctx[r] and ctx[r][-1] == 3)]
        vals = []
        for r in members:
            row = tables.predict(np.array([cls[r]]), np.array([([-1] * 2 + ctx[r])[-2:]]))[0]
            v = int(rng.choice(M, p=row))
            ctx[r].append(v)
            vals.append(v)
        members, vals = np.array(members), np.array(vals)
        perm = rng.permutation(members.size)
        members, vals = members[perm], vals[perm]
        group = (np.arange(members.size) * 2) // members.size  # two groups
        counts = np.zeros((2, M), int)
        np.add.at(counts, (group, vals), 1)
        rels.append(
            ObservedRelease(i + 1, members + 100, group, counts, cls[members], vals, n_suppressed=i % 2)
        )
    return tables, rels


def _reference(tables, rels, attendance, allowed):
    """The retrospective adversary by brute force: enumeration of each respondent's histories
    for predictions and cavities, omega_posterior for the groups."""
    emission = {}  # (respondent, release position) -> vector
    first = {}
    cls = {}
    for p, o in enumerate(rels):
        for r, c in zip(o.respondent, o.cls):
            first.setdefault(r, p)
            cls[r] = c
    sigma = [o.n_suppressed / (o.respondent.size + o.n_suppressed) for o in rels]
    cur = {}  # the masks as of the current release

    def steps_of(r, a, ones_at=None):
        out, where = [], {}
        for p in range(first[r], a + 1):
            if r in rels[p].respondent:
                where[p] = len(out)
                row = list(rels[p].respondent).index(r)
                e = np.ones(M) if p == ones_at else emission[(r, p)] * cur[p][row]
                out.append((OBS, e, 0.0))
            elif attendance is not None:
                out.append((ABS, np.zeros(M), sigma[p]))
        return out, where

    result = []
    for a, o in enumerate(rels):
        masks = allowed(a) if callable(allowed) else allowed
        for i in range(a + 1):
            cur[i] = np.ones((rels[i].respondent.size, M), bool) if masks is None else masks[i]
        pred = np.zeros((o.respondent.size, M))
        for k, r in enumerate(o.respondent):
            st, where = steps_of(r, a, ones_at=a)
            pred[k] = brute_force(tables, cls[r], st, q=attendance, omit=True)[where[a]]
        post = omega_posterior(o.group, o.truth, pred * cur[a])
        for k, r in enumerate(o.respondent):
            emission[(r, a)] = np.where(pred[k] > 0, post[k] / np.where(pred[k] > 0, pred[k], 1), post[k])
        snap = []
        for i in range(a + 1):
            oi = rels[i]
            cav = np.zeros((oi.respondent.size, M))
            for k, r in enumerate(oi.respondent):
                st, where = steps_of(r, a)
                cav[k] = brute_force(tables, cls[r], st, q=attendance, omit=True)[where[i]]
            snap.append(omega_posterior(oi.group, oi.truth, cav * cur[i]))
        result.append(snap)
    return result


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("attendance", [None, 0.7])
def test_retrospective_equals_brute_force_reference(seed, attendance):
    tables, rels = _world(seed)
    want = _reference(tables, rels, attendance, None)
    got = list(retrospective_posteriors(rels, tables, attendance=attendance))
    assert [g.as_of for g in got] == [1, 2, 3]
    for g, w in zip(got, want):
        assert g.releases == tuple(range(1, g.as_of + 1))
        for a, b in zip(g.posteriors, w):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_retrospective_with_masks_equals_reference_and_never_leaves_the_mask():
    tables, rels = _world(4)
    rng = np.random.default_rng(9)
    allowed = []
    for o in rels:
        mk = rng.uniform(size=(o.respondent.size, M)) < 0.7
        mk[np.arange(o.respondent.size), o.truth] = True  # a mask never excludes the truth
        allowed.append(mk)
    want = _reference(tables, rels, None, allowed)
    got = list(retrospective_posteriors(rels, tables, allowed=allowed))
    for g, w in zip(got, want):
        for k, (a, b) in enumerate(zip(g.posteriors, w)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
            assert (a[~allowed[k]] == 0).all()


def test_masks_known_as_of_each_release_equal_the_reference():
    """Deductions that tighten as releases come out: allowed(k) removes k - i more wrong
    values from release i (never the truth); earlier evidence is tightened in place."""
    tables, rels = _world(5)
    rng = np.random.default_rng(2)
    orders = [np.array([rng.permutation([v for v in range(M) if v != t]) for t in o.truth]) for o in rels]

    def allowed(k):
        out = []
        for i in range(k + 1):
            mk = np.ones((rels[i].respondent.size, M), bool)
            drop = orders[i][:, : k - i + 1]
            np.put_along_axis(mk, drop, False, axis=1)
            out.append(mk)
        return out

    want = _reference(tables, rels, 0.8, allowed)
    got = list(retrospective_posteriors(rels, tables, allowed=allowed, attendance=0.8))
    for g, w in zip(got, want):
        assert len(g.allowed) == len(g.posteriors)
        for a, b, mk in zip(g.posteriors, w, g.allowed):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
            assert (a[~mk] == 0).all()
    rows = retrospective_attack(rels, tables, allowed=allowed, attendance=0.8)
    certain = {(r["release"], r["as_of"]): r["n_certain"] for r in rows}
    assert certain[(1, 3)] == rels[0].truth.size  # 3 of the 4 values dropped: all certain
    assert certain[(1, 1)] == 0


def test_retrospective_rows_and_input_errors():
    tables, rels = _world(1)
    rows = retrospective_attack(rels, tables)
    assert [(r["release"], r["as_of"]) for r in rows] == [(1, 1), (1, 2), (2, 2), (1, 3), (2, 3), (3, 3)]
    assert all(r["n_certain"] is None and r["n_tuples"] == len(rels[r["release"] - 1].truth) for r in rows)
    with pytest.raises(InputError, match="increasing"):
        list(retrospective_posteriors(rels[::-1], tables))
    with pytest.raises(InputError, match="attendance"):
        list(retrospective_posteriors(rels, tables, attendance=1.5))
    with pytest.raises(InputError, match="allowed"):
        list(retrospective_posteriors(rels, tables, allowed=[np.ones((1, M), bool)] * 3))


# ----------------------------------------------------------------------------- a real ledger


@pytest.fixture(scope="module")
def ledger_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("retro")
    mh = medical_history(n_views=4, view_size=300, seed=3)
    path = write_history(out, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    policy = ReleasePolicy.from_toml(path, t=1.0, j=1.0, k=4, npartitions=1, max_suppression=1.0)
    led = release_history(mh.history, policy, out / "led")
    steps = list(attack_steps(led, mh.history, policy, "dk", deductions=False))
    observed = observed_from_steps(
        steps, mh.history, policy.id, policy.time, mh.knowledge.classes, len(mh.values)
    )
    return mh, steps, observed


def test_as_of_the_first_release_is_the_paper_adversary(ledger_run):
    mh, steps, observed = ledger_run
    first = next(retrospective_posteriors(observed, mh.knowledge))
    np.testing.assert_allclose(first.posteriors[0], steps[0].posteriors, rtol=0, atol=1e-12)
    rows = retrospective_attack(observed, mh.knowledge)
    assert rows[0]["adversary_gain"] == pytest.approx(steps[0].adversary_gain, abs=1e-12)


@pytest.mark.parametrize("attendance", [None, 1.0])
def test_posteriors_are_distributions_on_what_the_model_allows(ledger_run, attendance):
    mh, steps, observed = ledger_run
    for snap in retrospective_posteriors(observed, mh.knowledge, attendance=attendance):
        for i, post in zip(snap.releases, snap.posteriors):
            o = observed[i - 1]
            assert np.isfinite(post).all() and (post >= 0).all()
            np.testing.assert_allclose(post.sum(axis=1), 1, atol=1e-12)
            assert (post[o.counts[o.group] == 0] == 0).all()  # values absent from the group
    rows = retrospective_attack(observed, mh.knowledge, attendance=attendance)
    assert len(rows) == 4 * 5 // 2
    assert all(-1 <= r["adversary_gain"] <= 1 and 0 <= r["confident_share"] <= 1 for r in rows)

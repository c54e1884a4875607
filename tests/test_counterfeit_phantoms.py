"""Phantom members in the Ω step (group_posterior ``phantoms``): counterfeit tuples whose count per
group is published and whose values follow a known rule (issue 12, direction 4;
docs/results/counterfeit-study/)."""

import itertools

import numpy as np
import pytest

from dpriv.adversary.groups import group_posterior, masked_omega
from dpriv.errors import InputError
from dpriv.knowledge.posterior import exact_product_posterior

PRIORS = np.array([[0.8, 0.1, 0.1], [0.4, 0.4, 0.2], [0.2, 0.6, 0.2]])  # docs/algorithms.md §1.3
RULE = np.array([0.5, 0.25, 0.25])  # the counterfeits' distribution


def bayes(priors: np.ndarray, rule: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The members' exact posterior when the n members draw from their priors and c counterfeits
    i.i.d. from ``rule``, given the published multiset ``counts``: every value vector of the
    n + c tuples with that multiset, weighted by its probability."""
    n, m = priors.shape
    post = np.zeros((n, m))
    for x in itertools.product(range(m), repeat=int(counts.sum())):
        if np.array_equal(np.bincount(x, minlength=m), counts):
            w = np.prod(priors[np.arange(n), x[:n]]) * np.prod(rule[list(x[n:])])
            post[np.arange(n), x[:n]] += w
    return post / post.sum(axis=1, keepdims=True)


def test_the_phantom_model_is_the_random_worlds_posterior_of_the_group_with_phantom_rows():
    counts = np.array([3, 2, 0])
    exact = bayes(PRIORS, RULE, counts)
    rows = np.vstack([PRIORS, RULE, RULE])
    e4 = exact_product_posterior(np.repeat(np.arange(3), counts), rows)[:3]
    np.testing.assert_allclose(exact, e4, atol=1e-12)
    # by hand, r1: a with weight .8 * (P(a,b,b | r2, r3, 2 phantoms)), here 58/63
    assert exact[0, 0] == pytest.approx(58 / 63)


def test_phantom_omega_is_near_the_exact_posterior_on_the_test_vector():
    counts = np.array([[3, 2, 0]])
    post = group_posterior(
        np.zeros(3, np.int64), counts, PRIORS, phantoms=np.array([2]), phantom_priors=RULE[None]
    )
    exact = bayes(PRIORS, RULE, counts[0])
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    assert np.abs(post - exact).max() < 0.065  # Ω's usual gap to (E4) (0.05 on §1.3's vector)
    np.testing.assert_allclose(post[0], [8 / 9, 1 / 9, 0])  # (E14): a 3*.8/(1.4+1), b 2*.1/(1.1+.5)
    assert (post[:, 2] == 0).all()


def test_phantoms_with_the_members_prior_give_the_published_frequencies():
    counts = np.array([[4, 1, 1], [0, 2, 2]])
    group = np.array([0, 0, 0, 1, 1])
    same = np.array([[0.5, 0.3, 0.2]] * 5)
    post = group_posterior(group, counts, same, phantoms=np.array([3, 2]), phantom_priors=same[:2])
    np.testing.assert_allclose(post[:3], np.tile([4 / 6, 1 / 6, 1 / 6], (3, 1)))
    np.testing.assert_allclose(post[3:], np.tile([0, 0.5, 0.5], (2, 1)))


def test_phantoms_are_omega_over_the_extended_group_and_hold_only_the_rules_values():
    counts = np.array([[2, 1, 1], [1, 1, 2]])
    group = np.array([1, 0, 1, 0, 1])
    priors = np.random.default_rng(3).dirichlet(np.ones(3), 5)
    rule = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    post = group_posterior(group, counts, priors, phantoms=np.array([2, 1]), phantom_priors=rule)
    both = np.array([1, 0, 1, 0, 1, 0, 0, 1])
    s = np.empty(8, np.int64)
    for g in (0, 1):
        s[both == g] = np.repeat(np.arange(3), counts[g])
    rows = np.vstack([priors, rule[[0, 0, 1]]])
    want = masked_omega(both, s, rows, np.vstack([np.ones((5, 3), bool), rows[5:] > 0]))[:5]
    np.testing.assert_allclose(post, want)
    # group 0's phantoms cannot hold a: its two a go to its two members, in Ω's shares
    assert (post[[1, 3], 0] > priors[[1, 3], 0]).all()


def test_no_phantoms_is_the_plain_omega():
    counts = np.array([[2, 1, 0]])
    plain = group_posterior(np.zeros(3, np.int64), counts, PRIORS)
    zero = group_posterior(
        np.zeros(3, np.int64), counts, PRIORS, phantoms=np.array([0]), phantom_priors=RULE[None]
    )
    np.testing.assert_allclose(plain, zero)


@pytest.mark.parametrize(
    "phantoms, rule, match",
    [
        (np.array([1]), None, "phantom_priors"),
        (np.array([-1]), RULE[None], ">= 0"),
        (np.array([1, 1]), RULE[None], "phantoms must have shape"),
        (np.array([3]), RULE[None], "group sizes differ"),
    ],
)
def test_bad_phantoms_are_refused(phantoms, rule, match):
    with pytest.raises(InputError, match=match):
        group_posterior(
            np.zeros(3, np.int64), np.array([[3, 2, 0]]), PRIORS, phantoms=phantoms, phantom_priors=rule
        )

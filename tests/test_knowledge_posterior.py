import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.errors import InputError, PolicyError
from dpriv.knowledge.posterior import (
    closed_form_sum_posterior,
    exact_product_posterior,
    exact_sum_posterior,
    omega_posterior,
)

# docs/algorithms.md §1.3 test vector: values a, a, b over (a, b, c)
S_VEC = np.array([0, 0, 1])
PRIORS_VEC = np.array([[0.8, 0.1, 0.1], [0.4, 0.4, 0.2], [0.2, 0.6, 0.2]])
OMEGA_VEC = [[0.9263, 0.0737, 0], [0.6111, 0.3889, 0], [0.3438, 0.6562, 0]]
PRODUCT_VEC = [[0.9697, 0.0303, 0], [0.7576, 0.2424, 0], [0.2727, 0.7273, 0]]
SUM_VEC = [[0.8205, 0.1795, 0], [0.6410, 0.3590, 0], [0.5385, 0.4615, 0]]


def test_spec_vector_omega():
    got = omega_posterior(np.zeros(3, dtype=np.int64), S_VEC, PRIORS_VEC)
    np.testing.assert_allclose(got, OMEGA_VEC, atol=5e-5)


def test_spec_vector_exact_product():
    np.testing.assert_allclose(exact_product_posterior(S_VEC, PRIORS_VEC), PRODUCT_VEC, atol=5e-5)


@pytest.mark.parametrize("fn", [exact_sum_posterior, closed_form_sum_posterior])
def test_spec_vector_exact_sum(fn):
    np.testing.assert_allclose(fn(S_VEC, PRIORS_VEC), SUM_VEC, atol=5e-5)


def _random_group(draw, kmax=6):
    k = draw(st.integers(1, kmax))
    m = draw(st.integers(1, 4))
    s = np.array(draw(st.lists(st.integers(0, m - 1), min_size=k, max_size=k)))
    raw = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=k * m, max_size=k * m))).reshape(k, m)
    return s, raw / raw.sum(axis=1, keepdims=True)


@st.composite
def groups_st(draw):
    return _random_group(draw)


@settings(max_examples=60, deadline=None)
@given(groups_st())
def test_closed_form_matches_enumeration(group):
    s, priors = group
    np.testing.assert_allclose(
        closed_form_sum_posterior(s, priors), exact_sum_posterior(s, priors), atol=1e-10
    )


@settings(max_examples=40, deadline=None)
@given(groups_st())
def test_exact_posteriors_are_distributions_on_group_values(group):
    s, priors = group
    absent = np.bincount(s, minlength=priors.shape[1]) == 0
    for fn in (exact_product_posterior, exact_sum_posterior, omega_posterior_one):
        post = fn(s, priors)
        np.testing.assert_allclose(post.sum(axis=1), 1.0)
        assert (post[:, absent] == 0).all()
        assert (post >= 0).all()


def omega_posterior_one(s, priors):
    return omega_posterior(np.zeros(len(s), dtype=np.int64), s, priors)


def test_enumeration_refuses_large_groups():
    s = np.zeros(9, dtype=np.int64)
    p = np.full((9, 2), 0.5)
    with pytest.raises(PolicyError, match="omega"):
        exact_product_posterior(s, p)
    with pytest.raises(PolicyError):
        exact_sum_posterior(s, p)
    # the closed form has no limit
    np.testing.assert_allclose(closed_form_sum_posterior(s, p), [[1.0, 0.0]] * 9)


def test_exact_degenerate_falls_back_to_frequencies():
    s = np.array([0, 1])
    priors = np.array([[0.0, 1.0], [0.0, 1.0]])  # every product configuration has degree 0
    post = exact_product_posterior(s, priors)
    np.testing.assert_allclose(post, [[0.5, 0.5], [0.5, 0.5]])


def test_omega_equal_priors_give_frequencies():
    rng = np.random.default_rng(1)
    s = rng.integers(0, 4, size=7)
    prior = rng.dirichlet(np.ones(4))
    post = omega_posterior(np.zeros(7, dtype=np.int64), s, np.tile(prior, (7, 1)))
    freq = np.bincount(s, minlength=4) / 7
    np.testing.assert_allclose(post, np.tile(freq, (7, 1)), atol=1e-12)


def test_omega_column_sums_equal_counts_before_normalisation():
    # Σ_t ω(t,s) = n_E(s): recover ω by the definition and check it, and check the output
    # is ω row-normalised.
    rng = np.random.default_rng(2)
    s = rng.integers(0, 5, size=9)
    pri = rng.dirichlet(np.ones(5), size=9)
    counts = np.bincount(s, minlength=5)
    omega = counts * pri / pri.sum(axis=0)
    np.testing.assert_allclose(omega.sum(axis=0), counts)
    post = omega_posterior(np.zeros(9, dtype=np.int64), s, pri)
    np.testing.assert_allclose(post, omega / omega.sum(axis=1, keepdims=True))


def test_omega_zero_guard_tiny_column():
    s = np.array([0, 1, 1])
    priors = np.array([[1e-300, 1.0, 0.0], [1e-300, 0.5, 0.5], [1e-300, 0.5, 0.5]])
    post = omega_posterior(np.zeros(3, dtype=np.int64), s, priors)
    assert np.isfinite(post).all()
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    assert (post[:, 2] == 0).all()
    # guarded column: ω(t, a) = n_E(a)/|E| = 1/3 for every t; ω(t, b) = 2 Π[t,b]/2
    np.testing.assert_allclose(post[0], [0.25, 0.75, 0])
    np.testing.assert_allclose(post[1], [0.4, 0.6, 0])


def test_omega_nonfinite_and_zero_rows_fall_back_to_frequencies():
    s = np.array([0, 1, 0, 1])
    groups = np.array([7, 7, 3, 3])
    priors = np.array([[np.nan, 0.5], [0.5, 0.5], [0.0, 1.0], [0.0, 1.0]])
    post = omega_posterior(groups, s, priors)
    # group 7 has a NaN column sum -> guarded to frequencies for value 0; row 0 finite
    assert np.isfinite(post).all()
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    # group 3: column 0 sums to 0 -> ω(t,0) = 1/2; column 1: ω = Π[t,1]/2 * 1
    np.testing.assert_allclose(post[2], [0.5, 0.5])
    # a row of all zeros in a group whose columns are fine elsewhere
    post2 = omega_posterior(
        np.zeros(3, int), np.array([0, 1, 1]), np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    )
    np.testing.assert_allclose(post2[0], [1 / 3, 2 / 3])


def test_omega_many_groups_equals_per_group_loop():
    rng = np.random.default_rng(3)
    n, m = 400, 6
    groups = rng.choice(np.array([-5, 2, 9, 40, 1000, 3]), size=n)  # unsorted, non-contiguous
    s = rng.integers(0, m, size=n)
    pri = rng.dirichlet(np.full(m, 0.3), size=n)
    pri[rng.random((n, m)) < 0.2] = 0.0
    got = omega_posterior(groups, s, pri)
    for g in np.unique(groups):
        rows = groups == g
        np.testing.assert_allclose(
            got[rows], omega_posterior(np.zeros(rows.sum(), int), s[rows], pri[rows]), atol=1e-14
        )
    np.testing.assert_allclose(got.sum(axis=1), 1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_omega_grouped_input_gives_the_bits_of_the_sorting_path(n, m, seed):
    """Rows already in group order take the path that moves nothing; the same rows with the
    labels negated (groups in reverse, each group's rows in the same order) take the sorting
    path: both give the same bits, row for row (zero columns included)."""
    rng = np.random.default_rng(seed)
    groups = np.sort(rng.integers(0, max(n // 3, 1), size=n))
    s = rng.integers(0, m, size=n)
    pri = rng.dirichlet(np.full(m, 0.5), size=n)
    pri[rng.random((n, m)) < 0.3] = 0.0
    got = omega_posterior(groups, s, pri)
    assert np.array_equal(got, omega_posterior(-groups, s, pri), equal_nan=True)
    assert np.allclose(got.sum(axis=1), 1.0)


def test_omega_input_errors():
    with pytest.raises(InputError, match="0..2"):
        omega_posterior(np.zeros(2, int), np.array([0, 3]), np.full((2, 3), 1 / 3))
    with pytest.raises(InputError, match="shape"):
        omega_posterior(np.zeros(3, int), np.array([0, 1]), np.full((2, 3), 1 / 3))
    assert omega_posterior(np.zeros(0, int), np.zeros(0, int), np.zeros((0, 3))).shape == (0, 3)

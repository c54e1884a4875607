import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dpriv.divergence import (
    EQUAL,
    ORDERED,
    emd,
    emd_num_den,
    emd_within,
    group_js,
    js_divergence,
)

X = [0.5, 0.5, 0, 0]
Y = [0, 0.5, 0.5, 0]
Z = [0, 0.5, 0, 0.5]


def test_js_spec_vectors():
    # docs/algorithms.md §1.5 (dit documentation), base 2
    assert js_divergence(np.array([X, Y])) == pytest.approx(0.5)
    assert js_divergence(np.array([X, Y]), np.array([0.75, 0.25])) == pytest.approx(0.405639, abs=1e-6)
    assert js_divergence(np.array([X, Y, Z])) == pytest.approx(0.792481, abs=1e-6)
    assert js_divergence(np.array([X, Y, Z]), np.array([0.5, 0.25, 0.25])) == pytest.approx(0.75)


def test_js_incremental_sums_equal_direct_form():
    rng = np.random.default_rng(0)
    d = rng.dirichlet(np.ones(19), size=7)
    assert group_js(d) == pytest.approx(js_divergence(d), abs=1e-12)


def test_js_constant_and_single():
    assert js_divergence(np.array([[1.0, 0.0]] * 4)) == 0.0
    assert group_js(np.array([[0.2, 0.8]])) == 0.0


def test_emd_boundary_ordered_quarter_is_accepted():
    # group (1/2, 1/2, 0) of size 2 vs view (1/3, 1/3, 1/3) of size 3: ordered EMD = 0.25
    num, den = emd_num_den(np.array([1, 1, 0]), 2, np.array([1, 1, 1]), 3, ORDERED)
    assert num / den == 0.25
    assert emd_within(num, den, 0.25)
    assert not emd_within(num, den, 0.2499)
    # plain float arithmetic on the distributions overshoots, which is why counts are used
    assert emd([0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3], "ordered") >= 0.25


def test_emd_t_closeness_paper_example():
    # docs/algorithms.md §4.1: salaries 3k..11k, class {3k,4k,5k} vs uniform -> 0.375, {6k,8k,11k} -> 0.1667
    view = np.ones(9, dtype=np.int64)
    g1 = np.zeros(9, dtype=np.int64)
    g1[[0, 1, 2]] = 1
    g2 = np.zeros(9, dtype=np.int64)
    g2[[3, 5, 8]] = 1
    n1, d1 = emd_num_den(g1, 3, view, 9, ORDERED)
    n2, d2 = emd_num_den(g2, 3, view, 9, ORDERED)
    assert n1 / d1 == pytest.approx(0.375)
    assert n2 / d2 == pytest.approx(1 / 6)


def test_emd_constant_sensitive_is_zero():
    assert emd_num_den(np.array([4]), 4, np.array([10]), 10, ORDERED) == (0, 1)
    num, den = emd_num_den(np.array([4, 0]), 4, np.array([10, 0]), 10, EQUAL)
    assert num == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(0, 10_000), st.sampled_from(["equal", "ordered"]))
def test_emd_closed_forms_match_linear_program(m, seed, ground):
    # (E17) solved as a transport LP is the oracle for (E18) and (E19)
    rng = np.random.default_rng(seed)
    gc = rng.integers(0, 5, m)
    gc[0] += 1
    vc = gc + rng.integers(0, 5, m)
    num, den = emd_num_den(gc, gc.sum(), vc, vc.sum(), GROUND_CODE[ground])
    p, q = gc / gc.sum(), vc / vc.sum()
    i, j = np.meshgrid(range(m), range(m), indexing="ij")
    d = (i != j).astype(float) if ground == "equal" else np.abs(i - j) / (m - 1)
    a_eq = np.zeros((2 * m, m * m))
    for a in range(m):
        a_eq[a, a * m : (a + 1) * m] = 1  # mass leaving a
        a_eq[m + a, a::m] = 1  # mass arriving at a
    res = linprog(d.ravel(), A_eq=a_eq, b_eq=np.concatenate([p, q]), bounds=(0, None))
    assert num / den == pytest.approx(res.fun, abs=1e-9)
    assert emd(p, q, ground) == pytest.approx(res.fun, abs=1e-9)


GROUND_CODE = {"equal": EQUAL, "ordered": ORDERED}


@given(st.integers(1, 25), st.integers(0, 10_000), st.sampled_from([1.0, -1.0]), st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_js_from_sums_with_is_bit_identical_to_the_array_form(m, seed, sign, u):
    """The kernels' allocation-free form must decide exactly as the array expression did:
    the releases stay byte for byte the same (the sums of random distributions, one added or
    taken away)."""
    from dpriv.divergence import entropy, js_from_sums, js_from_sums_with

    rng = np.random.default_rng(seed)
    dists = rng.dirichlet(np.ones(m), size=u + 1)
    dists[rng.random(dists.shape) < 0.3] = 0.0  # zeros: the 0 log 0 = 0 branch
    sum_p = dists[:u].sum(axis=0)
    extra = dists[u]
    sum_h = float(sum(entropy(d, 2.0) for d in dists[:u]))
    size = u + 1 if sign > 0 else u - 1
    expected = js_from_sums(sum_p + sign * extra, sum_h, size, 2.0)
    got = js_from_sums_with(sum_p, sign, extra, sum_h, size, 2.0)
    assert got == expected  # exact, not approx
    assert got == js_from_sums(sum_p + extra if sign > 0 else sum_p - extra, sum_h, size, 2.0)

"""The verify and pk kernels take a shortcut on parts sorted by (label, id), as the release
hands them over (no hash, sort or (n, M) gather): the shortcut must give what the general
path gives on the same rows in any order, and what a plain reference gives."""

import numpy as np
import pandas as pd
import pytest

from dpriv.anonymity.format_check import _not_constant
from dpriv.anonymity.membership import _first_rows
from dpriv.group_table import js_per_group
from dpriv.knowledge.posterior import omega_posterior
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP, LABEL, SCODE
from dpriv.state import group_posteriors


def _distinct(values: list) -> int:
    """Distinct values, every missing one (None, NaN) counted as one value."""
    return len({"<missing>" if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in values})


@pytest.mark.parametrize("seed", range(30))
def test_groups_with_more_than_one_value_are_found_on_sorted_and_shuffled_rows(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30))
    frame = pd.DataFrame(
        {
            GROUP: np.sort(rng.integers(0, 6, n)) * 1_000_003,
            "a_min": rng.integers(0, 2, n),
            "b_min": np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 2, n).astype(float)),
            "c": pd.Series(rng.choice(np.array(["{x}", "{y}", None], dtype=object), n), dtype=object),
        }
    )
    cols = ["a_min", "b_min", "c"]
    want = {c: sorted(g for g, rows in frame.groupby(GROUP)[c] if _distinct(list(rows)) > 1) for c in cols}
    for rows in (frame, frame.sample(frac=1, random_state=seed)):  # sorted: the shortcut
        assert {c: list(bad) for c, bad in _not_constant(rows, cols)} == want


def test_first_row_of_each_group():
    frame = pd.DataFrame({GROUP: [3, 3, 8, 9, 9, 9], "x": [1, 2, 3, 4, 5, 6]}, index=[5, 4, 3, 2, 1, 0])
    pd.testing.assert_frame_equal(_first_rows(frame), frame.iloc[[0, 2, 3]])
    shuffled = frame.iloc[[3, 0, 2, 1, 4, 5]]
    pd.testing.assert_frame_equal(_first_rows(shuffled), shuffled.iloc[[0, 1, 2]])


def _js_reference(priors: np.ndarray) -> float:
    """Equal-weight JS (E8), natural log: entropy of the mean minus the mean of the entropies."""

    def h(p):
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    return h(priors.mean(axis=0)) - float(np.mean([h(p) for p in priors]))


def test_js_per_group_of_sorted_labels_matches_a_reference():
    rng = np.random.default_rng(1)
    labels = np.sort(rng.integers(0, 12, 200)) * 7919
    priors = rng.dirichlet(np.ones(4), 200)
    got = js_per_group(priors, pd.Series(labels), np.e)
    assert list(got.index) == sorted(set(labels.tolist()))
    for g, value in got.items():
        assert value == pytest.approx(_js_reference(priors[labels == g]), abs=1e-12)
    perm = rng.permutation(200)  # the general path: the same per-group values
    np.testing.assert_allclose(js_per_group(priors[perm], labels[perm], np.e), got, rtol=0, atol=1e-12)


def test_posteriors_of_sorted_and_shuffled_parts_are_the_same_bits():
    policy = ReleasePolicy(id="pid", time="t", qi=["age"], sensitive="s", domains={"s": ["a", "b", "c"]})
    rng = np.random.default_rng(2)
    n = 300
    prior = rng.dirichlet(np.ones(3), n)
    prior[:5] = [0.0, 0.5, 0.5]  # a group whose prior mass on "a" is 0 (the Ω zero guard)
    frame = pd.DataFrame({policy.id: np.arange(n) * 3, LABEL: np.r_[[0] * 5, rng.integers(1, 40, n - 5)]})
    frame[SCODE] = np.r_[[0] * 5, rng.integers(0, 3, n - 5)]
    frame = frame.assign(**{c: prior[:, i] for i, c in enumerate(policy.prior_columns)})
    frame = frame.sort_values([LABEL, policy.id], kind="stable").reset_index(drop=True)
    fast = group_posteriors(frame, policy)
    slow = group_posteriors(frame.sample(frac=1, random_state=0), policy)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    guarded = fast[fast[LABEL] == 0]  # the guard gives the group's frequencies: all "a"
    assert (guarded["post__a"] == 1.0).all()
    # a row whose prior is not a number gets its group's frequencies
    post = omega_posterior(
        np.zeros(2, dtype=np.int64), np.array([0, 1]), np.array([[np.nan] * 3, [0.2, 0.3, 0.5]])
    )
    np.testing.assert_array_equal(post[0], [0.5, 0.5, 0.0])

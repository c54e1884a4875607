import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.errors import InputError
from dpriv.knowledge.prior import class_prior, kernel_prior, kernel_prior_dask, tuple_prior
from dpriv.knowledge.tables import ClassMap, single_class_map

CM = ClassMap(("age", "gender"), ((50.0,), ("F", "M")), (True, False))  # 4 classes


def test_class_prior_hand_case():
    frame = pd.DataFrame({"age": [45, 47, 55, 60, 48, 70], "gender": ["F", "F", "F", "M", "M", "M"]})
    s = np.array([0, 1, 2, 2, 1, 0])
    # classes: (age<50,F)=0, (age<50,M)=1, (>=50,F)=2, (>=50,M)=3
    prior = class_prior(frame, CM, s, 3)
    np.testing.assert_allclose(
        prior,
        [[0.5, 0.5, 0], [0, 1, 0], [0, 0, 1], [0.5, 0, 0.5]],
    )
    smooth = class_prior(frame, CM, s, 3, alpha=1.0)
    np.testing.assert_allclose(smooth[0], [2 / 5, 2 / 5, 1 / 5])
    per_tuple = tuple_prior(frame, CM, prior)
    np.testing.assert_allclose(per_tuple[3], [0.5, 0, 0.5])
    assert per_tuple.shape == (6, 3)


def test_class_prior_empty_class_and_single_class():
    frame = pd.DataFrame({"age": [45, 47], "gender": ["F", "F"]})
    prior = class_prior(frame, CM, np.array([0, 1]), 2)
    np.testing.assert_allclose(prior, [[0.5, 0.5]] * 4)  # empty classes: global frequencies
    glob = class_prior(frame, single_class_map(), np.array([0, 0]), 2)
    np.testing.assert_allclose(glob, [[1.0, 0.0]])
    with pytest.raises(InputError, match="gender"):
        class_prior(frame.drop(columns="gender"), CM, np.array([0, 1]), 2)
    with pytest.raises(InputError, match="0..1"):
        class_prior(frame, CM, np.array([0, 2]), 2)


def brute_force_kernel_prior(q, s, m, b, include_self=True):
    u = np.abs(q[:, None, :] - q[None, :, :]) / b
    k = np.prod(np.where(u < 1, 0.75 * (1 - u**2), 0.0), axis=2)
    if not include_self:
        np.fill_diagonal(k, 0.0)
    num = k @ np.eye(m)[s]
    den = k.sum(axis=1)
    glob = np.bincount(s, minlength=m) / len(s)
    out = np.where(den[:, None] > 0, num / np.where(den > 0, den, 1)[:, None], glob)
    return out / out.sum(axis=1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    m_qi=st.integers(1, 3),
    m=st.integers(1, 5),
    b=st.sampled_from([0.05, 0.2, 0.3, 0.5, 1.0, 2.0]),
    seed=st.integers(0, 2**31),
    grid=st.booleans(),
    include_self=st.booleans(),
)
def test_kernel_prior_matches_bruteforce(n, m_qi, m, b, seed, grid, include_self):
    rng = np.random.default_rng(seed)
    q = rng.random((n, m_qi))
    if grid:  # values on a lattice: exact ties and distances equal to B
        q = np.round(q * 10) / 10
    s = rng.integers(0, m, size=n)
    got = kernel_prior(q, s, m, b, include_self=include_self)
    expect = brute_force_kernel_prior(q, s, m, b, include_self)
    np.testing.assert_allclose(got, expect, atol=1e-12)


def test_kernel_prior_per_attribute_bandwidth_and_duplicates():
    rng = np.random.default_rng(5)
    q = rng.random((300, 2))
    q[150:] = q[:150]  # duplicated QI vectors (with possibly different values)
    s = rng.integers(0, 4, size=300)
    b = np.array([0.1, 0.4])
    got = kernel_prior(q, s, 4, b)
    u = np.abs(q[:, None, :] - q[None, :, :]) / b
    k = np.prod(np.where(u < 1, 0.75 * (1 - u**2), 0.0), axis=2)
    np.testing.assert_allclose(got, (k @ np.eye(4)[s]) / k.sum(axis=1, keepdims=True), atol=1e-12)


def test_kernel_prior_limits():
    rng = np.random.default_rng(0)
    q = rng.random((50, 2))
    s = rng.integers(0, 3, size=50)
    # B tiny: only the tuple itself -> indicator of its own value
    np.testing.assert_allclose(kernel_prior(q, s, 3, 1e-9), np.eye(3)[s])
    with pytest.raises(InputError, match="normalised"):
        kernel_prior(q * 2, s, 3, 0.3)
    with pytest.raises(InputError, match="bandwidth"):
        kernel_prior(q, s, 3, 0.0)


@pytest.mark.parametrize("include_self", [True, False])
def test_kernel_prior_dask_matches_numpy(include_self):
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(9)
    n = 400
    frame = pd.DataFrame(
        {
            "age": np.round(rng.random(n) * 29) / 29,  # discrete QIs as in the paper
            "weight": np.round(rng.random(n) * 29) / 29,
            "s": rng.integers(0, 5, size=n),
        }
    )
    expect = kernel_prior(
        frame[["age", "weight"]].to_numpy(), frame["s"].to_numpy(), 5, 0.2, include_self=include_self
    )
    ddf = dd.from_pandas(frame, npartitions=4)
    got = kernel_prior_dask(
        ddf, ["age", "weight"], "s", 5, 0.2, include_self=include_self, value_names=list("abcde")
    ).compute(scheduler="sync")
    assert list(got.columns) == [f"p__{v}" for v in "abcde"]
    np.testing.assert_allclose(got.loc[frame.index].to_numpy(), expect, atol=1e-12)

"""Property-based checks (hypothesis): every release passes the independent verifier,
holds its tuples, and does not depend on the Hilbert ranges or the Dask path."""

import os

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpriv.anonymity.verify import verify_release
from dpriv.generalize import generalize_view
from dpriv.policy import ReleasePolicy
from dpriv.released import public
from dpriv.validate import validate_view

EXAMPLES = int(os.environ.get("DPRIV_HYPOTHESIS_EXAMPLES", "25"))


@st.composite
def views_and_policies(draw):
    n = draw(st.integers(1, 60))
    m = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    values = [f"s{i}" for i in range(m)]
    priors = rng.dirichlet(np.full(m, draw(st.sampled_from([0.3, 1.0, 20.0]))), n)
    view = pd.DataFrame(
        {
            "rid": rng.permutation(10 * n)[:n],
            "age": rng.integers(20, 30, n),
            "zip": rng.integers(0, 3, n),  # a narrow (possibly constant) numeric QI
            "sex": rng.choice(["F", "M"], n),
            "s": rng.choice(values, n),
        }
    )
    for i, v in enumerate(values):
        view[f"p__{v}"] = priors[:, i]
    policy = ReleasePolicy(
        id="rid",
        qi=["age", "zip", "sex"],
        sensitive="s",
        seed=seed % 1000,
        domains={"age": [20, 29], "zip": [0, 2], "sex": ["F", "M"], "s": values},
        k=draw(st.integers(1, min(5, n))),
        t=draw(st.sampled_from([0.1, 0.3, 0.6, 1.0])),
        j=draw(st.sampled_from([0.05, 0.3, 2.0])),
        emd_ground=draw(st.sampled_from(["equal", "ordered"])),
        group_cap=draw(st.sampled_from([0, 4])),
    )
    return view, policy


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.integers(1, 4))
def test_every_release_passes_the_verifier_and_is_partition_free(case, npartitions):
    check_release(*case, npartitions)


@pytest.mark.slow
@pytest.mark.heavy
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.integers(1, 4))
def test_thousand_releases_pass_the_verifier(case, npartitions):
    check_release(*case, npartitions)


def check_release(view, policy, npartitions):
    summary = validate_view(view, policy)
    out = generalize_view(view, policy, summary, npartitions=npartitions)
    assert len(out.released) + out.n_suppressed == len(view)
    report = verify_release(public(out.released), policy, view_counts=summary.s_counts, assigned=out.assigned)
    assert report.ok, report.problems  # k, t, j and every tuple inside its group's box
    one = generalize_view(view, policy, summary, npartitions=1)
    pd.testing.assert_frame_equal(out.released, one.released)
    with dask.config.set(scheduler="sync"):
        lazy = generalize_view(dd.from_pandas(view, npartitions=2), policy, summary, npartitions=npartitions)
        got = lazy.released.compute().reset_index(drop=True)
    assert got.dtypes.equals(lazy.released._meta.dtypes)  # meta was honest
    pd.testing.assert_frame_equal(got, one.released)

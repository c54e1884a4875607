"""The pk step computes the Ω posteriors once per part (dpriv.pk_step): the state's
posteriors and the tail risk read the same table, with the numbers of the two separate
computations they replace."""

import numpy as np
import pandas as pd
import pytest

import dpriv.state as state_mod
from dpriv.datasets import medical_history, write_history
from dpriv.metrics.defender_tail import tail_part
from dpriv.pk_step import posteriors_with_truth, tail_of_posteriors, without_truth
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.released import LABEL, SCODE
from dpriv.state import group_posteriors


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    out = tmp_path_factory.mktemp("hist")
    mh = medical_history(n_views=2, view_size=200, seed=4)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, max_suppression=1.0)
    return mh, policy


def membership(policy: ReleasePolicy, n: int = 240, seed: int = 0) -> pd.DataFrame:
    """Whole QI-groups in a shuffled row order; half the rows have a prior peaked on their
    true value (so that some posteriors pass 0.9), the others a flat-ish one."""
    rng = np.random.default_rng(seed)
    m = len(policy.sensitive_domain)
    s = rng.integers(0, m, n)
    prior = rng.dirichlet(np.ones(m), n)
    peaked = rng.random(n) < 0.5
    prior[peaked] = 0.001
    prior[peaked, s[peaked]] = 1.0
    prior /= prior.sum(axis=1, keepdims=True)
    frame = pd.DataFrame(
        {policy.id: rng.permutation(10 * n)[:n], LABEL: rng.integers(0, 30, n) * 7919, SCODE: s}
    )
    return frame.assign(**{c: prior[:, i] for i, c in enumerate(policy.prior_columns)})


def test_one_table_gives_the_state_posteriors_and_the_tail(setting):
    _, policy = setting
    asg = membership(policy)
    posts = posteriors_with_truth(asg, policy)
    pd.testing.assert_frame_equal(without_truth(posts), group_posteriors(asg, policy))
    # the carried truth is each row's own (rows of posts are in (label, id) order)
    truth = asg.set_index(policy.id)[SCODE]
    assert (posts[SCODE].to_numpy() == truth.loc[posts[policy.id]].to_numpy()).all()
    tail = tail_of_posteriors(posts, policy)
    pd.testing.assert_frame_equal(tail, tail_part(asg, policy))
    assert tail["n_confident"].iloc[0] > 0 and 0 < tail["n_right"].iloc[0] <= tail["n_confident"].iloc[0]
    assert tail["n_tuples"].iloc[0] == len(asg)
    empty = tail_of_posteriors(posteriors_with_truth(asg.iloc[:0], policy), policy)
    pd.testing.assert_frame_equal(empty, tail_part(asg.iloc[:0], policy))


def test_a_release_runs_omega_once_per_part(setting, tmp_path, monkeypatch):
    mh, policy = setting
    calls = []
    real = state_mod.omega_posterior

    def counting(labels, *args, **kwargs):
        calls.append(len(labels))
        return real(labels, *args, **kwargs)

    monkeypatch.setattr(state_mod, "omega_posterior", counting)
    led = release_history(mh.history, policy, tmp_path / "led", npartitions=2)  # in process
    kept = [led.read_metrics(i)["n_original"] - led.read_metrics(i)["n_suppressed"] for i in (1, 2)]
    assert calls == kept  # one Ω over the kept tuples per release (was two)

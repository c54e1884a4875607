"""The pk step computes the Ω posteriors once per part (dpriv.pk_step): the state's
posteriors and the tail risk read the same table, with the numbers of the two separate
computations they replace."""

import numpy as np
import pandas as pd
import pytest
from peaked_priors import peaked_priors

import dpriv.state as state_mod
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
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
    s, prior = peaked_priors(rng, n, m)
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


@pytest.mark.parametrize("by_row", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_the_tail_counts_equal_a_row_by_row_count(setting, seed, by_row):
    """The tail read column by column equals counting row by row: confident rows (largest
    posterior >= 0.9, ties at exactly 0.9 included), right ones (>= 0.9 on the truth) and the
    largest posterior on the truth; rows of posts in any order, values held row by row (as
    the pk table's block) or column by column."""
    _, policy = setting
    m, rng = len(policy.sensitive_domain), np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    post = rng.dirichlet(np.full(m, 0.05), n)  # peaked rows: many above 0.9
    tie = rng.random(n) < 0.3
    post[tie] = 0.1 / (m - 1)
    post[tie, rng.integers(0, m, n)[tie]] = 0.9  # exactly at the threshold
    truth = rng.integers(0, m, n)
    truth[::3] = post[::3].argmax(axis=1)  # a third right on their largest value
    names = [f"post__{v}" for v in policy.sensitive_domain]
    posts = pd.DataFrame(post if by_row else np.asfortranarray(post), columns=names, copy=False)
    posts[SCODE] = truth
    confident = right = 0
    top = -1.0
    for row, code in zip(post.tolist(), truth.tolist()):
        confident += max(row) >= 0.9
        right += row[code] >= 0.9
        top = max(top, row[code])
    got = tail_of_posteriors(posts, policy).iloc[0]
    assert (got["n_tuples"], got["n_confident"], got["n_right"]) == (n, confident, right)
    assert got["max_posterior"] == top


def test_the_tail_of_no_rows_and_of_a_code_outside_the_domain(setting):
    _, policy = setting
    m = len(policy.sensitive_domain)
    posts = pd.DataFrame({f"post__{v}": [1.0 / m] for v in policy.sensitive_domain}).assign(**{SCODE: [m]})
    with pytest.raises(InputError, match=f"0..{m - 1}"):
        tail_of_posteriors(posts, policy)
    empty = tail_of_posteriors(posts.iloc[:0], policy).iloc[0]
    assert empty[["n_tuples", "n_confident", "n_right"]].tolist() == [0, 0, 0]
    assert np.isnan(empty["max_posterior"])


def test_a_row_with_a_nan_posterior_is_not_confident(setting):
    """As a row maximum is NaN there, a value >= 0.9 beside a NaN makes no confident claim
    (the claim on the truth still counts as right)."""
    _, policy = setting
    m = len(policy.sensitive_domain)
    post = np.zeros((3, m))
    post[0, :2] = [np.nan, 0.95]
    post[1, 1] = 0.97  # confident and right
    post[2, 0] = 0.5
    for values in (post, np.asfortranarray(post)):
        posts = pd.DataFrame(values, columns=[f"post__{v}" for v in policy.sensitive_domain], copy=False)
        got = tail_of_posteriors(posts.assign(**{SCODE: [1, 1, 0]}), policy).iloc[0]
        assert got[["n_tuples", "n_confident", "n_right"]].tolist() == [3, 1, 2]
        assert got["max_posterior"] == 0.97

import numpy as np
import pytest

from dpriv.baselines import baseline_view
from dpriv.datasets import medical_history, write_history
from dpriv.divergence import js_rows
from dpriv.errors import LedgerError, PolicyError
from dpriv.hilbert import unit_coords
from dpriv.knowledge.posterior import omega_posterior
from dpriv.knowledge.prior import kernel_prior
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.validate import codes


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    mh = medical_history(n_views=2, view_size=300, seed=3)
    return mh, ReleasePolicy.from_toml(write_history(tmp_path_factory.mktemp("h"), mh), max_suppression=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["mondrian-l", "mondrian-t", "mondrian-bt"])
def test_each_baseline_releases_a_history_that_meets_its_model(setting, tmp_path, method):
    mh, policy = setting
    led = release_history(mh.history, policy, tmp_path / "led", method=method)
    for i in (1, 2):
        m = led.read_metrics(i)
        assert m["k_achieved"] >= policy.k and m["n_suppressed"] == 0
        if method == "mondrian-l":
            assert m["l_achieved"] >= policy.l
        if method == "mondrian-t":
            assert m["t_achieved"] <= policy.t
    with pytest.raises(LedgerError, match="method"):
        release_history(mh.history, policy, tmp_path / "led", method="jsreduce")


def test_bt_groups_keep_every_posterior_near_its_kernel_prior(setting):
    mh, policy = setting
    view = mh.history[mh.history.view == 1].reset_index(drop=True)
    out = baseline_view(view, policy.with_overrides(), "mondrian-bt")
    a = out.assigned
    s = codes(a[policy.sensitive], policy.sensitive_domain)
    # independent recomputation of (E16) on the released groups
    full_s = codes(view[policy.sensitive], policy.sensitive_domain)
    priors_all = kernel_prior(unit_coords(view, policy), full_s, len(policy.sensitive_domain), policy.bt_b)
    pos = view.reset_index().set_index(policy.id).loc[a[policy.id], "index"].to_numpy()
    priors = priors_all[pos]
    post = omega_posterior(a["_label"].to_numpy(), s, priors)
    assert (js_rows(priors, post) <= policy.bt_t + 1e-12).all()
    assert np.bincount(np.unique(a["_label"], return_inverse=True)[1]).min() >= policy.k


def test_unknown_method(setting, tmp_path):
    mh, policy = setting
    with pytest.raises(PolicyError, match="mondrian-bt"):
        release_history(mh.history, policy, tmp_path / "led", method="anatomy")
    assert not (tmp_path / "led").exists()

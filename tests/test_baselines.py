import numpy as np
import pytest

from dpriv.baselines import baseline_view
from dpriv.datasets import medical_history, write_history
from dpriv.divergence import js_rows
from dpriv.errors import InputError, LedgerError, PolicyError
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


def test_histogram_releases_each_view_as_one_group_with_its_range_and_counts(setting, tmp_path):
    mh, policy = setting
    led = release_history(mh.history, policy, tmp_path / "led", method="histogram")
    for i in (1, 2):
        view = mh.history[mh.history.view == i]
        out, m = led.read_view(i), led.read_metrics(i)
        assert m["n_groups"] == 1 and m["n_suppressed"] == 0 and out["qi_group"].nunique() == 1
        for q in policy.qi:  # every box is the view's own range
            assert set(out[f"{q}_min"]) == {view[q].min()} and set(out[f"{q}_max"]) == {view[q].max()}
        counts = view[policy.sensitive].value_counts().to_dict()
        assert out[policy.sensitive].value_counts().to_dict() == counts
        assert m["t_achieved"] == pytest.approx(0.0, abs=1e-12)  # the group's distribution is the view's


def test_histogram_gives_the_gate_no_parameter_to_regroup_with(setting, tmp_path):
    mh, policy = setting
    gated = policy.with_overrides(retro_max_gain=0.2)
    with pytest.raises(PolicyError, match="'histogram' releases each view as one QI-group.*remove retro_max"):
        release_history(mh.history, gated, tmp_path / "led", method="histogram")
    assert not (tmp_path / "led").exists()


@pytest.mark.parametrize("method", ["mondrian-l", "histogram"])
def test_a_baseline_suppresses_a_view_smaller_than_k_when_told_to(setting, tmp_path, method):
    # small_view = "suppress" used to end in "k = 5 is larger than the view ... set small_view =
    # 'suppress'" for the baselines, which had been set
    mh, policy = setting
    h = mh.history
    h = h[(h.view != 2) | h[policy.id].isin(h[h.view == 2][policy.id].iloc[:3])].reset_index(drop=True)
    led = release_history(h, policy.with_overrides(small_view="suppress"), tmp_path / "led", method=method)
    assert [led.read_metrics(i)["n_suppressed"] for i in (1, 2)] == [0, 3]
    assert len(led.read_view(1)) == (h.view == 1).sum() and len(led.read_view(2)) == 0
    assert list(led.read_view(2).columns) == list(led.read_view(1).columns)


def test_a_baseline_refusal_names_the_view_and_the_new_ledger_it_needs(setting, tmp_path):
    # view 2 holds two sensitive values: no group of it can be 3-diverse. The refusal said only
    # "the input has 2 distinct sensitive values ...; lower l", and a lower l was then refused
    # as another policy on this ledger (release 1 committed)
    mh, policy = setting
    h = mh.history.copy()
    two = h.view == 2
    h.loc[two, policy.sensitive] = np.where(np.arange(two.sum()) % 2, "hiv_2", "hiv_3")
    with pytest.raises(PolicyError) as caught:
        release_history(h, policy.with_overrides(l=3), tmp_path / "led", method="mondrian-l")
    said = str(caught.value)
    assert said.startswith("view 2: the input has 2 distinct sensitive values, fewer than l = 3")
    assert "release 1 is committed" in said and "new ledger" in said
    bt = policy.with_overrides(bt_t=0.0)
    with pytest.raises(PolicyError, match=r"^view 1: .*raise bt_t or bt_b \(\[privacy\], --bt-t, --bt-b\)$"):
        release_history(mh.history, bt, tmp_path / "bt", method="mondrian-bt")


@pytest.mark.parametrize("edit", ["one value", "too few rows"])
def test_an_edited_committed_view_is_named_as_edited_before_what_the_edit_broke(setting, tmp_path, edit):
    # view 2, released, then edited so that it breaks a check: the refusal used to be that
    # check's ("holds one value only: set allow_single_sensitive", "set small_view = suppress"),
    # whose fix the ledger then refused as another policy or as a changed view
    mh, policy = setting
    h = mh.history
    led = release_history(h, policy, tmp_path / "led", method="histogram")
    if edit == "one value":
        h = h.assign(**{policy.sensitive: h[policy.sensitive].where(h.view != 2, "hiv_2")})
    else:
        h = h[(h.view != 2) | h[policy.id].isin(h[h.view == 2][policy.id].iloc[:3])]
    before = (tmp_path / "led" / "manifest.json").read_bytes()
    with pytest.raises(InputError, match="view 2 differs from the one committed in the ledger"):
        release_history(h, policy, tmp_path / "led", method="histogram")
    assert (tmp_path / "led" / "manifest.json").read_bytes() == before and led.last_index() == 2

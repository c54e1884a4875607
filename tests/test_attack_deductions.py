"""Both adversaries with the exact deductions as masks (dpriv.attack + dpriv.adversary.deductions)."""

import numpy as np
import pytest

from dpriv.adversary.deductions import deduce
from dpriv.adversary.retrospective import retrospective_posteriors
from dpriv.attack import attack, attack_steps
from dpriv.attack_input import observed_releases as _observed
from dpriv.attack_input import read_releases as _read
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("ded")
    mh = medical_history(n_views=4, view_size=200, seed=5)
    policy = ReleasePolicy.from_toml(write_history(root / "data", mh), t=1.0, j=1.0, k=3, max_suppression=1.0)
    led = release_history(mh.history, policy, root / "ledger", method="mondrian-l")
    return led, mh, policy


@pytest.mark.slow
def test_paper_adversary_masks_are_aligned_certain_and_respected(small):
    led, mh, policy = small
    steps = list(attack_steps(led, mh.history, policy, "dk", deductions=True, attendance=1.0))
    observed = _observed(
        _read(Ledger(led.root), [s.release for s in steps], mh.history, policy), policy, mh.knowledge.classes
    )
    for k, st in enumerate(steps):
        # the mask of release k is what releases 1..k allow, aligned on the step's tuples
        want = deduce(observed[: k + 1], mh.knowledge, attendance=1.0).allowed[k]
        np.testing.assert_array_equal(st.allowed, want)
        assert st.allowed[np.arange(st.s_true.size), st.s_true].all()  # never excludes the truth
        assert (st.posteriors[~st.allowed] == 0).all()
        np.testing.assert_allclose(st.posteriors.sum(axis=1), 1, atol=1e-12)
    frame = attack(led, mh.history, policy, "dk", deductions=True, attendance=1.0)
    assert frame["n_certain"].tolist() == [int((s.allowed.sum(axis=1) == 1).sum()) for s in steps]
    assert frame["n_certain"].sum() > 0  # Mondrian-l groups with few values: some certain


def test_retrospective_with_deductions_starts_as_the_paper_adversary_and_gains(small):
    led, mh, policy = small
    paper = attack(led, mh.history, policy, "dk", deductions=True, attendance=1.0)
    retro = attack(led, mh.history, policy, "dk", adversary="retrospective", deductions=True, attendance=1.0)
    assert retro["adversary_gain"].iloc[0] == pytest.approx(paper["adversary_gain"].iloc[0], abs=1e-12)
    last = retro[retro["as_of"] == retro["as_of"].max()].set_index("release")
    # certain deductions only grow with later releases
    first = retro[retro["release"] == retro["as_of"]].set_index("release")
    assert (last["n_certain"] >= first["n_certain"]).all()
    # masks never leave the truth out, so every posterior keeps mass on the truth's mask
    releases = [int(r["index"]) for r in led.committed()]
    observed = _observed(_read(Ledger(led.root), releases, mh.history, policy), policy, mh.knowledge.classes)
    final = deduce(observed, mh.knowledge, attendance=1.0).allowed
    snap = list(retrospective_posteriors(observed, mh.knowledge, allowed=final, attendance=1.0))[-1]
    for post, mask, o in zip(snap.posteriors, final, observed):
        assert (post[~mask] == 0).all()
        assert (post[np.arange(o.truth.size), o.truth] > 0).all()

"""The paper adversary's array state (dpriv.adversary.window_state) against the defender's frame
state (dpriv.state.update_state + dpriv.rbk.revised_priors): the same priors to the last bit."""

import numpy as np
import pandas as pd
import pytest

from dpriv.adversary.window_state import WindowState
from dpriv.attack import attack_steps
from dpriv.attack_input import read_attack
from dpriv.datasets import medical_history, write_history
from dpriv.inputs import attack_history
from dpriv.policy import ReleasePolicy
from dpriv.rbk import revised_priors
from dpriv.release import release_history
from dpriv.released import LABEL
from dpriv.state import empty_state, update_state


def test_a_window_shifts_and_counts_by_hand():
    st = WindowState(np.array(["b", "a", "c", "a"]), n_values=2, window=2)
    a, c = st.rows(["a", "c"])
    st.append(np.array([a]), np.array([[0.1, 0.9]]))
    st.append(np.array([a, c]), np.array([[0.2, 0.8], [0.3, 0.7]]))
    st.append(np.array([a]), np.array([[0.4, 0.6]]))
    assert st.n_post.tolist() == [0, 3, 1]  # b, a, c: ids in order of first appearance
    np.testing.assert_array_equal(st.windows[a], [[0.2, 0.8], [0.4, 0.6]])  # oldest first
    np.testing.assert_array_equal(st.windows[c, 1], [0.3, 0.7])
    assert np.isnan(st.windows[c, 0]).all() and np.isnan(st.windows[st.rows(["b"])[0]]).all()
    with pytest.raises(KeyError, match="1 respondents"):
        st.rows(["a", "z"])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("window")
    mh = medical_history(n_views=5, view_size=150, attendance=0.5, seed=3)
    policy = ReleasePolicy.from_toml(write_history(root / "data", mh), t=1.0, j=0.8, k=3, max_suppression=1.0)
    led = release_history(mh.history, policy, root / "ledger", method="jsreduce")
    return led, mh, policy


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dk", "dk-1", "dk-2"])
def test_the_attack_priors_are_the_frame_states_priors(run, kind):
    led, mh, policy = run
    steps = list(attack_steps(led, mh.history, policy, kind, deductions=False))
    history, pol = attack_history(mh.history, policy)
    inp = read_attack(led, history, pol, kind, None)
    window, state = inp.adv.window, empty_state(inp.policy, inp.adv.window)
    revised = 0
    for read, step in zip(inp.reads, steps, strict=True):
        tables = inp.adv.tables_before(inp.history, inp.policy, read.index)
        want = revised_priors(read.members, state, tables, inp.policy, window)
        np.testing.assert_array_equal(step.priors, want)
        revised += int((want != tables.tables[0][tables.classes.classify(read.members), 0]).any(axis=1).sum())
        assigned = pd.DataFrame({pol.id: read.members[pol.id].to_numpy(), LABEL: step.groups})
        state = update_state(state, assigned, step.posteriors, inp.policy, window, read.index)
    assert revised > 100  # returning respondents were revised, not only given BK^sv

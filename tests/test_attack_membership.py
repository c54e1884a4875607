"""dpriv attack --membership qi (issue 11, item 4), the deductions default, and the defender's
tail risk in metrics.json (issue 11, item 3)."""

import numpy as np
import pytest

from dpriv.attack import LINKAGE_COLUMNS, attack
from dpriv.attack_stamp import STAMP
from dpriv.datasets import medical_history, write_history
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.validate import codes


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory):
    root = tmp_path_factory.mktemp("membership")
    mh = medical_history(n_views=2, view_size=300, seed=2)
    policy = ReleasePolicy.from_toml(write_history(root / "data", mh), t=1.0, j=0.8, k=4, l=2)
    led = {m: release_history(mh.history, policy, root / m, method=m) for m in ("jsreduce", "mondrian-l")}
    return led, mh, policy


@pytest.mark.slow
def test_qi_membership_mondrian_pins_every_released_tuple_jsreduce_fewer(ledgers):
    led, mh, policy = ledgers
    out = {}
    for method, ledger in led.items():
        known = attack(ledger, mh.history, policy, "snapshot", deductions=False)
        qi = attack(ledger, mh.history, policy, "snapshot", deductions=False, membership="qi")
        assert list(qi.columns) == [*known.columns[:-1], *LINKAGE_COLUMNS, STAMP]  # the stamp last
        assert qi[list(known.columns)].equals(known)  # the gains stay the known-membership ones
        np.testing.assert_allclose(qi["share_pinned"], qi["n_pinned"] / qi["n_tuples"])
        out[method] = qi
    mon = out["mondrian-l"]
    # disjoint boxes and nothing suppressed (Mondrian keeps every tuple): everyone is pinned
    assert (mon["n_pinned"] == mon["n_tuples"]).all() and (mon["share_pinned"] == 1.0).all()
    js = out["jsreduce"]
    assert (js["n_pinned"] < js["n_tuples"]).any() and (js["share_pinned"] < 1.0).any()
    retro = attack(
        led["mondrian-l"], mh.history, policy, "snapshot", adversary="retrospective", membership="qi"
    )
    assert (retro["n_pinned"] == retro.merge(mon[["release", "n_tuples"]], on="release")["n_tuples_y"]).all()
    with pytest.raises(PolicyError, match="unknown membership 'all'; valid: known, qi"):
        attack(led["jsreduce"], mh.history, policy, "dk", membership="all")


def test_deductions_are_on_by_default_as_in_the_cli(ledgers):
    led, mh, policy = ledgers
    default = attack(led["mondrian-l"], mh.history, policy, "dk")
    assert default.equals(attack(led["mondrian-l"], mh.history, policy, "dk", deductions=True))
    assert default["n_certain"].notna().all()  # NA only without deductions
    assert attack(led["mondrian-l"], mh.history, policy, "dk", deductions=False)["n_certain"].isna().all()


def test_defender_tail_risk_in_metrics_matches_its_own_state(ledgers):
    led, mh, policy = ledgers
    for ledger in led.values():
        for r in ledger.committed():
            i = r["index"]
            m = ledger.read_metrics(i)
            state = ledger.read_state(i)
            kept = state[state["last_release"] == i]
            window = max(int(c[2 : c.index("__")]) for c in state.columns if c.startswith("pk"))
            post = kept[[f"pk{window}__{v}" for v in policy.sensitive_domain]].to_numpy(dtype=float)
            view = mh.history[mh.history[policy.time] == i].set_index(policy.id)
            truth = codes(view.loc[kept[policy.id], policy.sensitive], policy.sensitive_domain)
            on_truth = post[np.arange(len(kept)), truth]
            claims = post.max(axis=1) >= 0.9
            right = on_truth >= 0.9
            assert m["n_confident"] == int(claims.sum())
            assert m["confident_share"] == pytest.approx(right.sum() / len(kept), abs=1e-12)
            if claims.any():
                assert m["confident_precision"] == pytest.approx(right.sum() / claims.sum(), abs=1e-12)
            else:
                assert m["confident_precision"] is None
            assert m["max_posterior"] == pytest.approx(on_truth.max(), abs=1e-12)

"""The exit guard (dpriv.exit_guard; issue 12, direction 5) and the exit-channel counts
(dpriv.adversary.exits): a hand-made history in which today's release lets the exact
deductions (the real deduction code, the oracle) pin a terminal value and the guarded one does
not; the guard off changes no byte and no fingerprint; guarded releases pass the verifier and
are byte-identical for any number of partitions and on the Dask path."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.adversary.exits import exit_deductions
from dpriv.datasets import medical_history, write_history
from dpriv.errors import PolicyError
from dpriv.exit_guard import exit_codes, guard_exits, one_kind_groups
from dpriv.generalize import generalize_view
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.released import LABEL, public
from dpriv.validate import validate_view
from tests.test_properties import check_release

EXITS = ["deceased", "discharged"]


def test_one_kind_groups_by_hand():
    # columns: a, b, deceased, discharged (exit codes 2, 3)
    counts = np.array([[3, 0, 1, 0], [2, 1, 1, 1], [4, 0, 0, 0], [0, 2, 0, 2], [1, 1, 2, 0]])
    np.testing.assert_array_equal(one_kind_groups(counts, np.array([2, 3])), [True, False, False, True, True])


def test_exit_values_must_be_two_known_values(tmp_path):
    mh = medical_history(n_views=1, view_size=20, seed=0)
    policy = ReleasePolicy.from_toml(write_history(tmp_path, mh))
    with pytest.raises(PolicyError, match="at least two distinct terminal values"):
        policy.with_overrides(exit_values=["deceased"])
    with pytest.raises(PolicyError, match=r"\['dead'\] are not values of the sensitive column 'exam_result'"):
        exit_codes(policy.with_overrides(exit_values=["dead", "deceased"]))
    np.testing.assert_array_equal(exit_codes(policy.with_overrides(exit_values=EXITS)), [17, 18])


def test_off_is_not_in_the_fingerprint(tmp_path):
    mh = medical_history(n_views=1, view_size=20, seed=0)
    policy = ReleasePolicy.from_toml(write_history(tmp_path, mh))
    assert "exit_values" not in policy.fingerprint()
    assert policy.with_overrides(exit_values=EXITS).fingerprint()["exit_values"] == EXITS


def _hand_history():
    """Six respondents of one knowledge class (age < 55, weight < 70, gender 1): all at liver_2
    in view 1; in view 2, respondent 1 dies and 4 is discharged; 2, 3, 5, 6 stay at liver_2 and
    come back in view 3. Ages 45-47 and 52-54 put 1-3 and 4-6 at the two ends of the Hilbert
    order: with k 3 (t 1, j 10: no other constraint) view 2 is released as {1, 2, 3}
    (deceased, liver_2 x 2) and {4, 5, 6} (discharged, liver_2 x 2)."""
    age = {1: 45, 2: 46, 3: 47, 4: 54, 5: 53, 6: 52}
    rows = [(r, 1, "liver_2") for r in range(1, 7)]
    rows += [(r, 2, {1: "deceased", 4: "discharged"}.get(r, "liver_2")) for r in range(1, 7)]
    rows += [(r, 3, "liver_2") for r in (2, 3, 5, 6)]
    h = pd.DataFrame(rows, columns=["respondent_id", "view", "exam_result"])
    h["age"] = h["respondent_id"].map(age).astype("int64")
    h["gender"], h["weight"] = np.int64(1), np.int64(65)
    return h[["respondent_id", "view", "age", "gender", "weight", "exam_result"]]


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    out = tmp_path_factory.mktemp("exit")
    mh = medical_history(n_views=2, view_size=50, seed=0)  # the exact model (its knowledge files)
    # views 1 and 3 hold liver_2 only, by design: released with the warning, not refused
    policy = ReleasePolicy.from_toml(
        write_history(out, mh), k=3, t=1.0, j=10.0, max_suppression=1.0, allow_single_sensitive=True
    )
    return out, _hand_history(), policy


@pytest.mark.slow
def test_today_the_deductions_pin_both_exits_and_the_guard_leaves_them_open(hand):
    out, history, policy = hand
    plain = release_history(history, policy, out / "plain")
    view2 = plain.read_view(2)
    # the release of view 2 as designed: two groups, each with one terminal value
    assert sorted(view2.groupby("qi_group")["exam_result"].apply(sorted).tolist()) == [
        ["deceased", "liver_2", "liver_2"],
        ["discharged", "liver_2", "liver_2"],
    ]
    got = exit_deductions(plain, history, policy).set_index(["release", "as_of"])
    # as of release 2 nobody has come back: nothing certain; as of 3, 2, 3, 5, 6 are back, so
    # the deceased falls on 1 and the discharged on 4: both pinned (the real deduction code),
    # and the four who came back then hold the groups' liver_2 (6 certain, 2 of them exits)
    assert got.loc[(2, 2), ["n_certain", "n_exit", "n_exited"]].tolist() == [0, 0, 0]
    assert got.loc[(2, 3), ["n_certain", "n_exit", "n_exited", "n_true_exit"]].tolist() == [6, 2, 2, 2]
    assert got.loc[(2, 3), "n_exit_worst"] == 2

    guarded = release_history(history, policy.with_overrides(exit_values=EXITS), out / "guarded")
    view2 = guarded.read_view(2)
    # merged: one group of six holding both terminal values, nothing suppressed
    assert view2["qi_group"].nunique() == 1 and len(view2) == 6
    assert sorted(view2["exam_result"]) == ["deceased", "discharged", *["liver_2"] * 4]
    assert (view2["age_min"].iloc[0], view2["age_max"].iloc[0]) == (45, 54)
    got = exit_deductions(guarded, history, policy).set_index(["release", "as_of"])
    # 1 and 4 certainly left, but each may be the deceased or the discharged one; the four who
    # came back still hold the only other value of the group (liver_2): 4 certain, no exit
    assert got.loc[(2, 3), ["n_certain", "n_exit", "n_exited", "n_exit_worst"]].tolist() == [4, 0, 2, 0]
    assert guarded.read_metrics(2)["ok"] and guarded.read_metrics(2)["suppression_rate"] == 0.0


def _assigned(policy, prior_b, prior_rest=None):
    """Groups 10 {1: deceased, 2, 3: liver_2} and 20 {4: discharged, 5, 6: liver_2}, priors A =
    (liver_2 1/2, deceased 1/2) for 1-3 and ``prior_b`` for 4-6; group 30 {7, 8: liver_2}, A."""
    dom = policy.sensitive_domain
    a = np.zeros(len(dom))
    a[[dom.index("liver_2"), dom.index("deceased")]] = 0.5
    s = [17, 1, 1, 18, 1, 1, 1, 1]
    frame = pd.DataFrame(
        {
            "respondent_id": np.arange(1, 9),
            "age": [45, 46, 47, 54, 53, 52, 60, 61],
            "gender": 1,
            "weight": 65,
            "_s": np.array(s, dtype=np.int64),
            LABEL: np.array([10, 10, 10, 20, 20, 20, 30, 30], dtype=np.int64),
        }
    )
    r = a if prior_rest is None else prior_rest
    pri = np.array([a, r, r, prior_b, prior_b, prior_b, a, a])
    return pd.concat([frame, pd.DataFrame(pri, columns=policy.prior_columns)], axis=1)


def test_merge_when_j_allows_else_the_exit_tuples_go(hand):
    _, _, policy = hand
    policy = policy.with_overrides(k=2, j=0.1, exit_values=EXITS)
    dom = policy.sensitive_domain
    a = np.zeros(len(dom))
    a[[dom.index("liver_2"), dom.index("deceased")]] = 0.5
    counts = np.bincount(_assigned(policy, a)["_s"], minlength=len(dom))
    # same priors: the union of 10 and 20 has JS 0 <= j: 10 (first in label order) is merged
    # into 20, its only complementary group; nothing suppressed, 30 untouched
    res = guard_exits(_assigned(policy, a), policy, counts)
    assert (res.n_merged, res.n_suppressed, res.n_one_kind) == (1, 0, 2)
    assert res.assigned[LABEL].tolist() == [20, 20, 20, 20, 20, 20, 30, 30]
    # priors B = (liver_2 1/2, discharged 1/2) for 4-6: JS of the union = H(1/2, 1/4, 1/4) - 1
    # = 0.5 bit > j = 0.1, and 30 is no partner (no terminal value): each one-kind group loses
    # its terminal tuple; {2, 3} and {5, 6} keep k 2, t 1 and JS 0
    b = np.zeros(len(dom))
    b[[dom.index("liver_2"), dom.index("discharged")]] = 0.5
    res = guard_exits(_assigned(policy, b), policy, counts)
    assert (res.n_merged, res.n_suppressed, res.n_one_kind) == (0, 2, 2)
    assert res.assigned["respondent_id"].tolist() == [2, 3, 5, 6, 7, 8]
    # 2 and 3 with priors C = (liver_2 1/2, liver_3 1/2), 4-6 with A: the union breaks j, but
    # the deceased tuple (prior A) joins 20 ({A, A, A, A}: JS 0) and {2, 3} keeps JS 0
    c = np.zeros(len(dom))
    c[[dom.index("liver_2"), dom.index("liver_3")]] = 0.5
    res = guard_exits(_assigned(policy, a, prior_rest=c), policy, counts)
    assert (res.n_merged, res.n_moved, res.n_suppressed) == (0, 1, 0)
    assert res.assigned[LABEL].tolist() == [20, 10, 10, 20, 20, 20, 30, 30]
    # exchange: 1 (A) in 10 with 2, 3 at D = (liver_2 1/2, liver_4 1/2); 20 = {4: C, 5: A, 6: C};
    # j = 0.48 bit. JS of a mix of A and C (or D) with shares (l, 1 - l) is H2(l) / 2: 0.459 at
    # 1/3, 0.5 at 1/2. Merging (A, D, D, C, A, C: 0.79) and moving 1 into 20 (C, A, C, A: 0.5)
    # break j; 1 and 5 (the prior closest to A, liver_2) change places: 10 = {5, 2, 3} (0.459,
    # no terminal value left), 20 = {4, 1, 6} (0.459, deceased and discharged)
    d = np.zeros(len(dom))
    d[[dom.index("liver_2"), dom.index("liver_4")]] = 0.5
    frame = _assigned(policy, c, prior_rest=d)
    frame.loc[4, policy.prior_columns] = a
    res = guard_exits(frame, policy.with_overrides(j=0.48), counts)
    assert (res.n_merged, res.n_moved, res.n_swapped, res.n_suppressed) == (0, 0, 1, 0)
    assert res.assigned[LABEL].tolist() == [20, 10, 10, 20, 10, 20, 30, 30]
    # with k 3 what is left (two tuples) breaks k: 10 loses its deceased tuple and {2, 3} (A)
    # joins the nearest group that keeps the criteria, 30 ({2, 3, 7, 8}: JS 0); {5, 6} (B) would
    # break j there, so 20 is suppressed whole: 1 + 3 tuples
    res = guard_exits(_assigned(policy, b), policy.with_overrides(k=3), counts)
    assert (res.n_merged, res.n_suppressed) == (1, 4)
    assert res.assigned["respondent_id"].tolist() == [2, 3, 7, 8]
    assert res.assigned[LABEL].tolist() == [30, 30, 30, 30]


def test_guard_on_a_view_without_terminal_values_changes_no_byte(medical):
    mh, policy = medical
    view = mh.history[mh.history["view"] == 1].drop(columns="view")
    assert not view["exam_result"].isin(EXITS).any()  # a first exam is never terminal
    off = _released(view, policy.with_overrides(exit_values=[]))
    pd.testing.assert_frame_equal(off, _released(view, policy))


def _released(view, policy):
    from dpriv.release import anonymize

    return anonymize(view, policy).released


@pytest.fixture(scope="module")
def medical(tmp_path_factory):
    out = tmp_path_factory.mktemp("exitmed")
    mh = medical_history(n_views=3, view_size=300, attendance=0.5, seed=1)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, max_suppression=1.0)
    return mh, policy.with_overrides(exit_values=EXITS)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["generalized", "anatomy"])
def test_guarded_ledger_bytes_do_not_depend_on_the_partitions(medical, tmp_path, fmt):
    mh, policy = medical
    policy = policy.with_overrides(release_format=fmt, grouping="topdown" if fmt == "anatomy" else "scan")
    one = release_history(mh.history, policy, tmp_path / "one", npartitions=1)
    release_history(mh.history, policy, tmp_path / "three", npartitions=3)
    files = lambda root: {  # noqa: E731
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "releases").rglob("*"))
        if p.is_file() and p.name != "metrics.json"
    }
    assert files(tmp_path / "one") == files(tmp_path / "three")
    worst = exit_deductions(one, mh.history, policy)
    assert (worst["n_exit_worst"] == 0).all() and (worst["n_exit"] == 0).all()
    for i in (2, 3):
        released = one.read_sensitive(i) if fmt == "anatomy" else one.read_view(i)
        assert one.read_metrics(i)["ok"]
        if fmt == "generalized":  # every group holding an exit holds both kinds
            kinds = released[released["exam_result"].isin(EXITS)].groupby("qi_group")["exam_result"].nunique()
            assert (kinds == 2).all() and len(kinds) > 0


@pytest.mark.slow
def test_guarded_view_passes_the_verifier_and_the_dask_path(medical):
    mh, policy = medical
    view = mh.history[mh.history["view"] == 3].drop(columns="view").reset_index(drop=True)
    policy, _ = policy.resolve(view)
    # one-shot priors of the class (the release loop's first-timers)
    from dpriv.state import attach_priors

    summary = validate_view(view, policy)
    with_p = attach_priors(view, policy, "class", n_rows=summary.n_rows, notes=[])
    for n in (1, 2, 5):
        check_release(with_p, policy, n)
    plain = generalize_view(with_p, policy.with_overrides(exit_values=[]), summary, npartitions=2)
    guarded = generalize_view(with_p, policy, summary, npartitions=2)
    assert public(plain.released)["qi_group"].nunique() > public(guarded.released)["qi_group"].nunique()
    with dask.config.set(scheduler="sync"):
        lazy = generalize_view(dd.from_pandas(with_p, npartitions=3), policy, summary, npartitions=2)
        assert lazy.released.compute().reset_index(drop=True).equals(guarded.released)


def test_guard_exits_without_exit_values_returns_the_same_frame():
    frame = pd.DataFrame({LABEL: [1, 1], "_s": [0, 1]})
    policy = ReleasePolicy(qi=["a"], sensitive="s", domains={"a": [0, 1], "s": ["x", "y"]})
    res = guard_exits(frame, policy, np.array([1, 1]))
    assert res.assigned is frame and (res.n_suppressed, res.n_merged, res.n_one_kind) == (0, 0, 0)


def _with_everyone_back(led, history, policy):
    """The releases of ``led`` as the adversary observes them, plus the defender's worst future: a
    release in which every respondent who did not exit comes back (each in a group of her own,
    at her last true value), and the model's tables."""
    from dpriv.adversary.observed import ObservedRelease
    from dpriv.attack_input import last_tables, observed_releases, read_attack
    from dpriv.inputs import attack_history

    history, policy = attack_history(history, policy)
    inp = read_attack(led, history, policy, "dk", None)
    reads, policy = inp.reads, inp.policy
    tables = last_tables(reads, history, policy, inp.adv)
    obs = observed_releases(reads, policy, tables.classes)
    dom = policy.sensitive_domain
    last = history.sort_values("view").groupby("respondent_id").tail(1)
    seen = np.unique(np.concatenate([o.respondent for o in obs]))
    back = last[last["respondent_id"].isin(seen) & ~last["exam_result"].isin(EXITS)]
    s = np.array([dom.index(v) for v in back["exam_result"]], dtype=np.int64)
    counts = np.zeros((len(back), len(dom)), dtype=np.int64)
    counts[np.arange(len(back)), s] = 1
    future = ObservedRelease(
        index=obs[-1].index + 1,
        respondent=back["respondent_id"].to_numpy(),
        group=np.arange(len(back), dtype=np.int64),
        counts=counts,
        cls=tables.classes.classify(back),
        truth=s,
        n_suppressed=0,
    )
    return [*obs, future], tables


@pytest.mark.slow
def test_worst_future_pins_every_one_kind_exit_and_none_under_the_guard(medical, tmp_path):
    # the real deduction code as the oracle: once everyone who did not exit is back, today's
    # ledger has each terminal tuple of a one-kind group pinned (n_exit_worst is attained); the
    # guarded one has none pinned (its one-kind count is 0 by construction)
    from dpriv.adversary.deductions import deduce

    mh, policy = medical
    for guarded in (False, True):
        pol = policy if guarded else policy.with_overrides(exit_values=[])
        led = release_history(mh.history, pol, tmp_path / str(guarded))
        obs, tables = _with_everyone_back(led, mh.history, pol)
        d = deduce(obs, tables, attendance=None)
        worst = exit_deductions(led, mh.history, pol).query("as_of == release")["n_exit_worst"].to_numpy()
        n_exit = d.n_exit[:-1]
        if guarded:
            assert (worst == 0).all() and (n_exit == 0).all()
        else:
            assert worst.sum() > 0
            assert (n_exit >= worst).all()


@pytest.mark.parametrize("method", ["mondrian-bt", "mondrian-l"])
def test_mondrian_with_the_guard_keeps_its_model_and_leaves_no_one_kind_group(medical, method):
    from dpriv.baselines import baseline_view, bt_allowable

    mh, policy = medical
    view = mh.history[mh.history["view"] == 3].drop(columns="view").reset_index(drop=True)
    policy, _ = policy.resolve(view)
    plain = baseline_view(view, policy.with_overrides(exit_values=[]), method)
    out = baseline_view(view, policy, method)
    dom = policy.sensitive_domain
    exits = exit_codes(policy)

    def counts(assigned):
        g = assigned.groupby(LABEL)["_s"].apply(lambda s: np.bincount(s, minlength=len(dom)))
        return np.stack(g.to_list())

    assert one_kind_groups(counts(plain.assigned), exits).any()  # something to fix
    c = counts(out.assigned)
    assert not one_kind_groups(c, exits).any()
    assert (c.sum(axis=1) >= policy.k).all() and len(out.released) + out.n_suppressed == len(view)
    if method == "mondrian-l":
        assert ((c > 0).sum(axis=1) >= policy.l).all()
    else:  # every merged group still (B,t)-private, checked on its rows
        ok = bt_allowable(view, policy)
        for _, rows in out.assigned.groupby(LABEL).groups.items():
            assert ok(np.sort(np.asarray(rows)))
    # the released view is the assignment's: same groups, same sizes
    sizes = out.released.groupby("qi_group").size().sort_index()
    assert sizes.tolist() == out.assigned.groupby(LABEL).size().sort_index().tolist()


def test_the_suppression_refusal_names_the_exit_guard_when_it_is_on(tmp_path):
    # a history whose terminal tuples no group can hide: the guard suppresses them, and the
    # refusal said only "relax k, t or j", which does not help (the helper's drill)
    from dpriv.datasets import medical_history, write_history
    from dpriv.errors import PolicyError
    from dpriv.policy import ReleasePolicy
    from dpriv.policy_fix import relax_hint
    from dpriv.release import release_history

    mh = medical_history(n_views=3, view_size=60, seed=0)
    policy = ReleasePolicy.from_toml(write_history(tmp_path / "h", mh))
    assert "exit_values" not in relax_hint(policy.with_overrides(exit_values=[]))
    guarded = policy.with_overrides(exit_values=["deceased", "discharged"], max_suppression=0.0)
    hist = mh.history.assign(exam_result=mh.history["exam_result"].replace("discharged", "deceased"))
    with pytest.raises(PolicyError, match=r"relax k, t or j, or drop values from exit_values") as caught:
        release_history(hist, guarded, tmp_path / "led", method="histogram")
    assert "exceeds max_suppression" in str(caught.value)

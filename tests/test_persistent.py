"""Persistent QI-groups (dpriv.anonymity.persistent, ``persistent_groups = true``): hand-computed
plans (a unit kept as it is, merged with its Hilbert neighbour, dissolved; newcomers left to
the scan), the state's persistent group, a property over random views (verifier, Hilbert
ranges, Dask path), and whole histories: byte identity over partitions and paths, resume =
uninterrupted, and the option off changes no byte and no fingerprint."""

import hashlib
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpriv.release as release_mod
from dpriv._random import keyed
from dpriv.anonymity.persistent import PGROUP, PNEXT, UnitPlan, apply_plan, plan_units, unit_stats, with_next
from dpriv.datasets import medical_history, write_history
from dpriv.errors import LedgerError, PolicyError
from dpriv.hilbert.keys import HKEY, TIE
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.released import LABEL, SCODE
from dpriv.state import advance_state, empty_state, group_posteriors, nullable_state
from tests.test_properties import check_release, views_and_policies

EXAMPLES = int(os.environ.get("DPRIV_HYPOTHESIS_EXAMPLES", "25"))
A, B = [1.0, 0.0], [0.0, 1.0]
POLICY = ReleasePolicy(
    id="rid", qi=["age"], sensitive="s", domains={"age": [0, 9], "s": ["a", "b"]},
    k=2, t=0.0, j=0.1, persistent_groups=True,
)  # fmt: skip


def rows(pgroups, s, priors, hkeys=None):
    """Keyed rows (as Generalize sees them) of one view on QI ``age`` = the row number."""
    n = len(s)
    hkeys = np.arange(n) if hkeys is None else np.asarray(hkeys)
    frame = pd.DataFrame(
        {
            "rid": np.arange(n) + 100,
            "age": np.arange(n),
            PGROUP: pd.array(pgroups, dtype="Int64"),
            HKEY: hkeys.astype(np.uint64),
            TIE: (np.arange(n) + 7).astype(np.uint64),
            SCODE: np.asarray(s, dtype=np.int64),
        }
    )
    for i, c in enumerate(POLICY.prior_columns):
        frame[c] = np.asarray(priors, dtype=float)[:, i]
    return frame


def label_of(ties):
    return int(keyed(np.array([min(ties)], np.uint64), POLICY.seed, "label")[0] >> np.uint64(1))


def test_a_unit_that_keeps_k_t_j_stays_one_group_and_keeps_its_persistent_group():
    # units 11 = rows 0,1 (s a,b; EMD to the view's (3/5, 2/5) = 1/10 <= t; priors alike: JS 0)
    # and 22 = rows 2,3 (same): each is a QI-group as it is; row 4 is a newcomer (left to the scan)
    frame = rows([11, 11, 22, 22, None], [0, 1, 0, 1, 0], [A] * 5)
    policy = POLICY.with_overrides(t=0.1)
    plan = plan_units(unit_stats(frame, policy), policy, np.array([3, 2]))
    assert plan.n_groups == 2
    assert plan.units.set_index(PGROUP)[LABEL].to_dict() == {11: label_of([7, 8]), 22: label_of([9, 10])}
    got = apply_plan(frame, plan.units)[LABEL].tolist()
    assert got == [label_of([7, 8])] * 2 + [label_of([9, 10])] * 2 + [-1]
    assert plan.next_of.to_dict() == {label_of([7, 8]): 11, label_of([9, 10]): 22}
    # the group's statistics for the repair: counts, size, first (key, tie) in Hilbert order
    first = plan.stats.set_index(LABEL).loc[label_of([9, 10])]
    assert (first["counts0"], first["counts1"], first["sizes"], first[HKEY], first[TIE]) == (1, 1, 2, 2, 9)


def test_a_unit_breaking_k_or_t_is_merged_with_its_next_unit_in_hilbert_order():
    # unit 5 = row 0 alone (|Q| = 1 < k), unit 6 = rows 1,2 (s b,b: EMD 1/2 > t = 0); their
    # union {a,b,b} still breaks t; with unit 7 = row 3 (s a) the union {a,b,b,a} holds:
    # one group of four, its persistent group the anchor unit's (5), labelled by tie 7
    frame = rows([5, 6, 6, 7], [0, 1, 1, 0], [A] * 4)
    plan = plan_units(unit_stats(frame, POLICY), POLICY, np.array([2, 2]))
    assert plan.n_groups == 1
    assert set(apply_plan(frame, plan.units)[LABEL]) == {label_of([7])}
    assert plan.next_of.to_dict() == {label_of([7]): 5}
    assert int(plan.stats["sizes"].iat[0]) == 4


def test_units_too_unlike_are_dissolved_and_a_unit_need_not_be_contiguous():
    # unit 1 = rows 0,1 (prior A, s a,b): kept. Unit 2 = row 2 (A, s a) alone breaks k; with
    # unit 3 = row 3 (prior B, s b) the union {A, B} has JS 1 bit > j: unit 2 is dissolved
    # (its member goes to the scan) and unit 3 is open at the end; joining group 1 would give
    # priors {A, A, B}: JS 0.918 bit > j, so unit 3 is dissolved too
    frame = rows([1, 1, 2, 3], [0, 1, 0, 1], [A, A, A, B])
    plan = plan_units(unit_stats(frame, POLICY), POLICY, np.array([2, 2]))
    assert apply_plan(frame, plan.units)[LABEL].tolist() == [label_of([7, 8])] * 2 + [-1, -1]
    # with j = 1.5 the JS bound no longer binds: units 2 and 3 form one group {a, b}
    loose = POLICY.with_overrides(j=1.5)
    plan = plan_units(unit_stats(frame, loose), loose, np.array([2, 2]))
    assert apply_plan(frame, plan.units)[LABEL].tolist() == [label_of([7, 8])] * 2 + [label_of([9, 10])] * 2
    # unit 8 = rows 0, 1, 3 (s a,b,b; keys 0, 1, 2) breaks t; unit 9 = row 2 (s a, key 5) follows
    # it in anchor order and the union {a,b,b,a} holds: one group, anchored on unit 8
    frame = rows([8, 8, 9, 8], [0, 1, 0, 1], [A] * 4, hkeys=[0, 1, 5, 2])
    plan = plan_units(unit_stats(frame, POLICY), POLICY, np.array([2, 2]))
    assert set(apply_plan(frame, plan.units)[LABEL]) == {label_of([7])}
    assert plan.next_of.to_dict() == {label_of([7]): 8}


def test_what_is_left_of_an_open_union_after_dissolving_may_close_at_once():
    # unit 1 = row 0 (prior A, s a) alone breaks k; with unit 2 = rows 1,2 (prior B, s a,b) the
    # union has JS 0.918 bit > j: unit 1 is dissolved, and unit 2 alone now holds (EMD to the
    # view's (2/3, 1/3) = 1/6 <= t = 0.2, JS 0): it is one group at once, not left open
    policy = POLICY.with_overrides(t=0.2)
    frame = rows([1, 2, 2], [0, 0, 1], [A, B, B])
    plan = plan_units(unit_stats(frame, policy), policy, np.array([2, 1]))
    assert apply_plan(frame, plan.units)[LABEL].tolist() == [-1] + [label_of([8, 9])] * 2
    assert plan.next_of.to_dict() == {label_of([8, 9]): 2}


def test_a_last_unit_breaking_k_joins_the_previous_group_when_k_t_j_still_hold():
    # a view of 10 tuples, half a (the other 5 are newcomers, not shown). Unit 4 = rows 0..3
    # (s a,b,a,b): EMD 0, kept; unit 5 = row 4 (s a) alone breaks k, nothing follows; the
    # union {a,b,a,b,a} has EMD 1/10 <= t = 0.2 and JS 0: unit 5 joins group 4
    policy = POLICY.with_overrides(t=0.2)
    frame = rows([4, 4, 4, 4, 5], [0, 1, 0, 1, 0], [A] * 5)
    plan = plan_units(unit_stats(frame, policy), policy, np.array([5, 5]))
    assert set(apply_plan(frame, plan.units)[LABEL]) == {label_of([7, 8, 9, 10])}
    assert int(plan.stats["sizes"].iat[0]) == 5
    # with t = 0.05 the union breaks t: unit 5 is dissolved
    policy = POLICY.with_overrides(t=0.05)
    plan = plan_units(unit_stats(frame, policy), policy, np.array([5, 5]))
    assert apply_plan(frame, plan.units)[LABEL].tolist() == [label_of([7, 8, 9, 10])] * 4 + [-1]


def test_next_persistent_group_own_for_kept_units_anchor_for_placed_rows_else_the_label():
    big = 2**62 + 1  # a unit group's release label: units 2**60 + 5 (its anchor) and 2**59 + 9
    plan = UnitPlan(
        units=pd.DataFrame(
            {PGROUP: np.array([2**60 + 5, 2**59 + 9, 2**58 + 1]), LABEL: np.array([big, big, -1])}
        ),
        stats=pd.DataFrame(),
        next_of=pd.Series({big: 2**60 + 5}, dtype=np.int64),
    )
    assigned = pd.DataFrame(
        {
            LABEL: np.array([big, big, big, 17, 2**61 + 3], dtype=np.int64),
            PGROUP: pd.array([2**60 + 5, 2**59 + 9, None, 2**58 + 1, None], dtype="Int64"),
        }
    )
    # kept members keep their own (exact 63-bit ids); a row placed into the unit group joins
    # its anchor; a member of a dissolved unit and a newcomer in scan groups start new ones
    assert with_next(assigned, plan)[PNEXT].tolist() == [2**60 + 5, 2**59 + 9, 2**60 + 5, 17, 2**61 + 3]


def test_the_state_keeps_the_persistent_group_of_absent_and_suppressed_respondents():
    state = empty_state(POLICY, 1)
    assert PGROUP in state.columns and PGROUP not in empty_state(
        POLICY.with_overrides(persistent_groups=False), 1
    )
    state = pd.DataFrame(
        {"rid": [1, 2, 3], "n_post": [1, 1, 1], "last_release": [1, 1, 1], "last_group": [9, 9, 9],
         PGROUP: [2**62 + 3, 2**62 + 3, 4], "pk0__a": [0.5] * 3, "pk0__b": [0.5] * 3}
    )  # fmt: skip
    assigned = pd.DataFrame(
        {"rid": [1, 5], LABEL: [2**61 + 1, 2**61 + 1], SCODE: [0, 1], "p__a": [0.5, 0.5],
         "p__b": [0.5, 0.5], PNEXT: [2**62 + 3, 2**62 + 3]}
    )  # fmt: skip
    posts = group_posteriors(assigned, POLICY)
    new = advance_state(nullable_state(state).merge(posts, on="rid", how="outer"), POLICY, 1, 2)
    # 1: re-grouped (kept unit); 2, 3: absent (kept); 5: a newcomer placed into 1's group
    assert new.set_index("rid")[PGROUP].to_dict() == {1: 2**62 + 3, 2: 2**62 + 3, 3: 4, 5: 2**62 + 3}
    assert new[PGROUP].dtype == np.int64


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.integers(1, 4), st.integers(0, 2**31), st.sampled_from(["scan", "topdown"]))
def test_releases_with_persistent_groups_pass_the_verifier_and_are_partition_free(
    case, npartitions, seed, grouping
):
    view, policy = case
    rng = np.random.default_rng(seed)
    pg = rng.integers(-1, 4, len(view)).astype(object)
    pg[pg == -1] = None  # newcomers
    view = view.assign(**{PGROUP: pd.array(list(pg), dtype="Int64")})
    check_release(view, policy.with_overrides(persistent_groups=True, grouping=grouping), npartitions)


# -- whole histories ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def history(tmp_path_factory):
    out = tmp_path_factory.mktemp("persist")
    mh = medical_history(n_views=4, view_size=400, seed=1, attendance=0.5)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, max_suppression=1.0)
    return mh, policy


def digests(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "metrics.json"  # metrics carry the seconds
    }


def states(ledger, n):
    return [ledger.read_state(i).sort_values("respondent_id").reset_index(drop=True) for i in range(1, n + 1)]


@pytest.mark.slow
def test_persistent_histories_are_identical_for_any_partitions_and_path_and_resume(
    history, tmp_path, monkeypatch
):
    mh, policy = history
    on = policy.with_overrides(persistent_groups=True)
    one = release_history(mh.history, on, tmp_path / "one", npartitions=1)
    three = release_history(mh.history, on, tmp_path / "three", npartitions=3)
    for i in range(1, 5):
        pd.testing.assert_frame_equal(one.read_view(i), three.read_view(i))
    for a, b in zip(states(one, 4), states(three, 4)):
        pd.testing.assert_frame_equal(a, b)
    release_history(mh.history, on, tmp_path / "resumed", npartitions=1, until=2)
    resumed = release_history(mh.history, on, tmp_path / "resumed", npartitions=1)
    assert digests(tmp_path / "resumed") == digests(tmp_path / "one")
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", -1)  # the Dask path
    dask_led = release_history(mh.history, on, tmp_path / "dask", npartitions=2)
    for i in range(1, 5):
        pd.testing.assert_frame_equal(dask_led.read_view(i), one.read_view(i))
    for a, b in zip(states(dask_led, 4), states(one, 4)):
        pd.testing.assert_frame_equal(a, b)
    assert resumed.read_metrics(4)["ok"]


def test_returners_of_one_persistent_group_share_a_qi_group_while_it_persists(history, tmp_path):
    mh, policy = history
    led = release_history(mh.history, policy.with_overrides(persistent_groups=True), tmp_path / "l")
    before, after = (led.read_state(i).set_index("respondent_id") for i in (1, 2))
    returned = after[after["last_release"] == 2]
    back = returned.join(before[[PGROUP]].add_suffix("_1"), how="inner")
    stayed = back[back[PGROUP] == back[f"{PGROUP}_1"]]
    assert len(stayed) >= 50  # 70 returners of this small history stay in their group
    # one persistent group before and after -> one QI-group at release 2
    assert (stayed.groupby(PGROUP)["last_group"].nunique() == 1).all()
    # and a persistent group's id is the release-1 label of a QI-group of its members
    assert set(back[f"{PGROUP}_1"]) <= set(before["last_group"])


def test_off_changes_no_byte_and_no_fingerprint_and_mondrian_refuses_it(history, tmp_path):
    mh, policy = history
    assert "persistent_groups" not in policy.fingerprint()
    assert policy.with_overrides(persistent_groups=True).fingerprint()["persistent_groups"] is True
    off = release_history(mh.history, policy, tmp_path / "off", npartitions=1, until=2)
    assert PGROUP not in off.read_state(2).columns
    on = release_history(mh.history, policy.with_overrides(persistent_groups=True), tmp_path / "on", until=2)
    assert PGROUP in on.read_state(2).columns
    with pytest.raises(PolicyError, match="persistent_groups"):
        release_history(
            mh.history, policy.with_overrides(persistent_groups=True), tmp_path / "m", method="mondrian-t"
        )
    assert not (tmp_path / "m").exists()
    with pytest.raises(LedgerError, match="persistent_groups"):  # the ledger keeps its setting
        release_history(mh.history, policy, tmp_path / "on")
    assert Ledger(tmp_path / "on").last_index() == 2

"""The one table of privacy criteria (dpriv.criteria): every criterion checked by one suite."""

import numpy as np
import pandas as pd
import pytest

from dpriv.criteria import (
    GUARANTEES,
    REGISTRY,
    DistinctL,
    JSBound,
    KAnonymity,
    RBKCloseness,
    TCloseness,
    breaks,
    criteria_for,
    group_statistics,
    keeps,
    promised,
    refuse_ignored,
    tv_per_group,
)
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy

DOM = ["a", "b", "c", "d"]
VIEW_COUNTS = np.array([3, 3, 2, 2])


def groups() -> pd.DataFrame:
    """Group table of four groups: sizes 2, 3, 3, 2; distinct 1, 3, 2, 2."""
    rel = pd.DataFrame(
        {
            "qi_group": [1, 1, 2, 2, 2, 3, 3, 3, 4, 4],
            "s": ["a", "a", "a", "b", "c", "b", "b", "d", "c", "d"],
        }
    )
    g = group_statistics(rel, [], "s", DOM, VIEW_COUNTS, "ordered")
    return g.assign(js=[0.0, 0.05, 0.2, np.nan])


CASES = [KAnonymity(3), DistinctL(2), TCloseness(0.25, "ordered", tuple(VIEW_COUNTS)), JSBound(0.1)]


@pytest.mark.parametrize("crit", CASES, ids=lambda c: c.name)
def test_check_criterion(crit):
    g = groups()
    holds = crit.holds(g)
    assert holds.dtype == bool and holds.shape == (len(g),)
    values = crit.values(g)
    achieved = crit.achieved(g)
    known = ~np.isnan(values.astype(float))
    # the achieved value is the worst group's; it breaks the threshold iff a group fails
    assert achieved == (values[known].min() if crit.lower_bound else values[known].max())
    assert crit.breaks(achieved) == (not holds[known].all())
    # a group holds iff its value is on the right side of the threshold (inclusive)
    side = values[known] >= crit.threshold if crit.lower_bound else values[known] <= crit.threshold
    if crit.name != "j":  # j adds a tolerance; NaN JS never holds
        assert (holds[known] == side).all()
    else:
        assert not holds[~known].any()
    assert crit.name in REGISTRY and crit.needs


@pytest.mark.parametrize("crit", CASES[:3], ids=lambda c: c.name)
def test_one_group_check_agrees_with_the_table(crit):
    rel = groups()
    counts = [np.array([2, 0, 0, 0]), np.array([1, 1, 1, 0]), np.array([0, 2, 0, 1]), np.array([0, 0, 1, 1])]
    assert [crit.holds_counts(c) for c in counts] == crit.holds(rel).tolist()


def test_exact_emd_boundary_is_inclusive():
    g = groups()
    assert (g["emd_num"][1], g["emd_den"][1]) == (9, 90)  # EMD of group 2 is exactly 0.1
    assert TCloseness(0.1).holds(g).tolist() == [False, True, False, False]
    assert not TCloseness(0.0999).holds(g)[1]


def test_guarantees_and_policy_thresholds():
    policy = ReleasePolicy(qi=["x"], sensitive="s", k=4, l=2, t=0.2, j=0.3)
    assert [c.name for c in criteria_for(policy)] == ["k", "t", "j"]
    assert [c.threshold for c in criteria_for(policy)] == [4, 0.2, 0.3]
    assert [c.name for c in criteria_for(policy, "mondrian-l")] == ["k", "l"]
    assert all(set(names) <= set(REGISTRY) for names in GUARANTEES.values())
    with pytest.raises(PolicyError, match="unknown method"):
        criteria_for(policy, "datafly")
    # what the report marks red: the method's guarantees, RBK-closeness for JS-reduce when set
    assert promised("jsreduce") == ("k", "t", "j")
    assert promised("jsreduce", 0.2) == ("k", "t", "j", "rbk_closeness")
    assert promised("mondrian-t", 0.2) == ("k", "t")
    assert promised("datafly") == ("k",)
    assert breaks("k", 3, 4) and not breaks("k", 4, 4)
    assert breaks("t", 0.2 + 1e-6, 0.2) and not breaks("t", 0.2, 0.2)
    assert not breaks("j", None, 0.1) and not breaks("k", 3, None)


def test_k_holds_size_is_the_count_check_mondrian_cuts_with():
    k5 = KAnonymity(5)
    assert [k5.holds_size(n) for n in (0, 4, 5, 6)] == [False, False, True, True]
    # the same decision as on a group's sensitive counts (5 tuples / 4 tuples)
    assert k5.holds_counts(np.array([2, 0, 3])) and not k5.holds_counts(np.array([2, 0, 2]))


def test_mondrian_cuts_only_where_both_halves_meet_k():
    from dpriv.anonymity import mondrian_groups

    # 1-D grid 0..9, lower-median cuts: k = 5 admits one cut (5 | 5), k = 6 none; with
    # k = 2 each half of 5 is cut again into 2 | 3
    grid = np.arange(10, dtype=np.int64).reshape(-1, 1)
    s = np.zeros(10, dtype=np.int64)
    for k, sizes in ((5, [5, 5]), (6, [10]), (2, [2, 2, 3, 3])):
        labels = mondrian_groups(grid, s, np.array([10]), k=k, model="k")
        assert sorted(np.bincount(labels).tolist()) == sizes, k


def test_an_upper_bound_criterion_holds_at_its_threshold_and_breaks_only_beyond_tolerance():
    """The generic upper-bound path (a criterion bounding its statistic from above, as a new
    one would, without overriding ``holds``): inclusive at the threshold; ``breaks`` tolerates
    1e-9 above it (the float values of metrics.json), not more."""
    from dataclasses import dataclass

    from dpriv.criteria import Criterion

    @dataclass(frozen=True)
    class MaxSize(Criterion, name="max_size", needs="size", monotone=False, lower_bound=False, column="size"):
        threshold: float

    g = groups()  # sizes 2, 3, 3, 2
    assert MaxSize(3).holds(g).tolist() == [True, True, True, True]
    assert MaxSize(2).holds(g).tolist() == [True, False, False, True]
    assert MaxSize(3).achieved(g) == 3
    assert not MaxSize(0.3).breaks(0.3 + 1e-9) and MaxSize(0.3).breaks(0.3 + 2e-9)


def test_rbk_closeness_by_hand():
    """Group 1 holds a, a, b; its members' priors sum to (1.5, 0.5, 1): the distance is
    (|2 - 1.5| + |1 - 0.5| + |0 - 1|) / (2 * 3) = 1/3. Group 2 holds b, c with priors summing
    to (0, 1, 1): 0. Rows given out of group order."""
    priors = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    s = np.array([1, 0, 2, 0, 1])
    labels = np.array([2, 1, 2, 1, 1])
    got = tv_per_group(priors, s, labels)
    assert got.index.tolist() == [1, 2]
    np.testing.assert_allclose(got.to_numpy(), [1 / 3, 0.0], rtol=0, atol=1e-15)
    crit = RBKCloseness(1 / 3)
    table = pd.DataFrame({"rbk_tv": [1 / 3 + 5e-10, 1 / 3 + 2e-9, np.nan]})
    assert crit.holds(table).tolist() == [True, False, False]  # tolerance 1e-9; no priors: fails
    counts, sums = np.array([2, 1, 0]), np.array([1.5, 0.5, 1.0])
    assert keeps((crit,), counts, sums) and not keeps((RBKCloseness(0.33),), counts, sums)
    assert keeps((RBKCloseness(0.33),), counts)  # no prior sums: not checked (as j)
    assert breaks("rbk_closeness", 0.34, 0.33) and not breaks("rbk_closeness", 0.33, 0.33)


def test_rbk_closeness_is_promised_by_jsreduce_only_when_set():
    policy = ReleasePolicy(qi=["x"], sensitive="s", k=4, t=0.2, j=0.3)
    assert "rbk_closeness" not in [c.name for c in criteria_for(policy)]
    bounded = policy.with_overrides(rbk_closeness=0.25)
    assert [(c.name, c.threshold) for c in criteria_for(bounded)][-1] == ("rbk_closeness", 0.25)
    assert [c.name for c in criteria_for(bounded, "mondrian-t")] == ["k", "t"]
    assert "rbk_closeness" in bounded.fingerprint() and "rbk_closeness" not in policy.fingerprint()


def test_a_baseline_with_rbk_closeness_is_refused():
    policy = ReleasePolicy(qi=["x"], sensitive="s", rbk_closeness=0.3)
    refuse_ignored(policy, "jsreduce")
    refuse_ignored(ReleasePolicy(qi=["x"], sensitive="s"), "mondrian-t")
    with pytest.raises(PolicyError, match="^rbk_closeness is applied by JS-reduce's .* method 'mondrian-t'"):
        refuse_ignored(policy, "mondrian-t")
    with pytest.raises(PolicyError, match="^posterior_bound is applied .* remove posterior_bound from"):
        refuse_ignored(ReleasePolicy(qi=["x"], sensitive="s", posterior_bound=0.9), "mondrian-l")

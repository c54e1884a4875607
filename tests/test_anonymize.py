import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv._random import keyed, stable_hash
from dpriv.divergence import emd, group_js
from dpriv.generalize import generalize_view
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL
from dpriv.validate import validate_view

VALUES = ["a", "b", "c", "d"]


def make_view(n=600, seed=0, spread=0.6):
    """Respondents whose prior depends on the QIs, so that j binds."""
    rng = np.random.default_rng(seed)
    age = rng.integers(45, 75, n)
    weight = rng.integers(60, 90, n)
    base = np.stack(
        [np.ones(n), 1 + spread * (age - 45) / 10, 1 + spread * (weight - 60) / 10, np.ones(n) * 2],
        1,
    )
    priors = base / base.sum(1, keepdims=True)
    s = np.array([rng.choice(4, p=p) for p in priors])
    df = pd.DataFrame(
        {
            "respondent_id": rng.permutation(n) + 1000,
            "age": age,
            "gender": rng.integers(1, 3, n),
            "weight": weight,
            "exam": np.array(VALUES)[s],
        }
    )
    for i, v in enumerate(VALUES):
        df[f"p__{v}"] = priors[:, i]
    return df


POLICY = ReleasePolicy(
    qi=["age", "gender", "weight"],
    sensitive="exam",
    k=4,
    t=0.3,
    j=0.02,
    seed=3,
    domains={"age": [45, 74], "gender": [1, 2], "weight": [60, 89], "exam": VALUES},
)


def run(view, policy=POLICY, **kw):
    return generalize_view(view, policy, validate_view(view, policy), **kw)


def test_release_format_and_no_identifying_columns():
    view = make_view()
    out = run(view)
    assert list(out.released.columns) == [
        "qi_group",
        "age_min",
        "age_max",
        "gender_min",
        "gender_max",
        "weight_min",
        "weight_max",
        "exam",
        "_order",  # the private seeded key of the rows inside a group; dropped before publishing
    ]
    assert len(out.released) + out.n_suppressed == len(view)
    # written order: by QI-group label, then by the seeded key inside each group
    keys = out.released[["qi_group", "_order"]].to_numpy(np.uint64)
    assert (np.diff(keys[:, 0].astype(np.int64)) >= 0).all()
    same = np.diff(keys[:, 0].astype(np.int64)) == 0
    assert (np.diff(keys[:, 1])[same] > 0).all()
    # the groups come in label order, which is neither the input order nor the Hilbert order:
    # the first input row of each group, taken in released order, is not monotone
    first_input = (
        view.reset_index()
        .merge(out.assigned[["respondent_id", LABEL]], on="respondent_id")
        .groupby(LABEL)["index"]
        .min()
    )
    in_released_order = first_input.loc[pd.unique(out.released["qi_group"])].to_numpy()
    assert not (np.diff(in_released_order) > 0).all()
    assert abs(np.corrcoef(in_released_order, np.arange(len(in_released_order)))[0, 1]) < 0.3


def test_every_group_meets_k_t_j_and_holds_its_tuples():
    view = make_view()
    out = run(view)
    p_view = view["exam"].value_counts(normalize=True).reindex(VALUES, fill_value=0).to_numpy()
    assigned = out.assigned
    assert len(assigned) == len(out.released)
    for label, g in assigned.groupby(LABEL):
        assert len(g) >= POLICY.k
        p_group = g["exam"].value_counts(normalize=True).reindex(VALUES, fill_value=0).to_numpy()
        assert emd(p_group, p_view) <= POLICY.t + 1e-12
        assert group_js(g[[f"p__{v}" for v in VALUES]].to_numpy()) <= POLICY.j + 1e-12
        rel = out.released[out.released.qi_group == label]
        for q in POLICY.qi:  # intervals are the true min and max of the group
            assert (rel[f"{q}_min"] == g[q].min()).all() and (rel[f"{q}_max"] == g[q].max()).all()
        assert sorted(rel["exam"]) == sorted(g["exam"])


@pytest.mark.slow
@pytest.mark.parametrize("npartitions", [1, 2, 7])
def test_dask_release_matches_pandas_on_same_ranges(npartitions):
    view = make_view(seed=1)
    lazy = run(dd.from_pandas(view, npartitions=3), npartitions=npartitions)
    assert dask.is_dask_collection(lazy.released)
    with dask.config.set(scheduler="sync"):
        got = lazy.released.compute()
    expected = run(view, divisions=lazy.divisions)
    assert expected.n_suppressed == lazy.n_suppressed
    assert got.dtypes.equals(lazy.released._meta.dtypes)  # meta was honest
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.released)


@pytest.mark.parametrize("id_dtype", ["int64", "object", "string[pyarrow]"])
def test_dask_grouping_meta_is_honest_for_every_id_dtype(id_dtype):
    # the chained scan's meta is verified (no verify_meta=False): each partition's dtypes,
    # string ids included, are those the meta announces
    view = make_view(seed=4)
    if id_dtype != "int64":
        view["respondent_id"] = ("r" + view["respondent_id"].astype(str)).astype(id_dtype)
    lazy = run(dd.from_pandas(view, npartitions=3), npartitions=2)
    with dask.config.set(scheduler="sync"):
        got = lazy.assigned.compute()
    assert got.dtypes.equals(lazy.assigned._meta.dtypes)


def test_same_seed_same_bytes_other_seed_other_labels():
    view = make_view(seed=2)
    a, b = run(view).released, run(view.sample(frac=1, random_state=5)).released
    pd.testing.assert_frame_equal(a, b)  # input row order does not matter
    c = run(view, POLICY.with_overrides(seed=4)).released
    assert set(a.qi_group).isdisjoint(set(c.qi_group))


def test_cap_keeps_an_outlier_from_swallowing_the_view():
    view = make_view(n=400, seed=3, spread=0.0)  # identical priors: JS = 0 everywhere ...
    view.loc[view.index[:10], [f"p__{v}" for v in VALUES]] = [
        1.0,
        0.0,
        0.0,
        0.0,
    ]  # ... but 10 outliers
    literal = run(view, POLICY.with_overrides(group_cap=10_000))
    capped = run(view)  # cap = max(8k, 64) = 64
    largest = capped.released["qi_group"].value_counts().max()
    assert literal.released["qi_group"].value_counts().max() > 200  # one group took most of the view
    assert largest <= 2 * 64
    assert capped.n_suppressed <= 12  # the outliers, at most, are left out


def test_eight_ranges_give_the_same_release_as_one():
    # the scan is chained over the ranges and the repair is global: the tolerance
    # (1 pp suppression, 1 % semiperimeter) holds with equality
    view = make_view(n=5000, seed=4)
    one, eight = run(view, npartitions=1), run(view, npartitions=8)
    assert len(eight.divisions) == 9
    assert one.n_suppressed == eight.n_suppressed
    pd.testing.assert_frame_equal(one.released, eight.released)


def test_prior_key_adds_the_expected_rank_of_s_as_a_hilbert_dimension():
    from dpriv.hilbert import hilbert_keys

    view = make_view(n=4)
    view[["age", "gender", "weight"]] = [50, 1, 70]  # same QIs everywhere
    view[[f"p__{v}" for v in VALUES]] = [[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0.5, 0, 0, 0.5]]
    plain = hilbert_keys(view, POLICY)
    assert len(set(plain)) == 1
    keyed = hilbert_keys(view, POLICY.with_overrides(prior_key=True))
    assert keyed[0] == keyed[1] and len(set(keyed)) == 3


def test_balanced_divisions_cut_the_exact_histogram_into_near_equal_ranges():
    from dpriv.hilbert import balanced_divisions

    rng = np.random.default_rng(0)
    keys = np.sort(rng.choice(2**15, 1800, replace=False)).astype(np.uint64)
    hist = pd.Series(rng.integers(100, 1000, len(keys)), index=keys)
    div = balanced_divisions(hist, 12)
    assert div[0] == keys[0] and div[-1] == keys[-1] and list(div) == sorted(set(div))
    part = np.searchsorted(np.asarray(div[1:-1], dtype=np.uint64), keys, side="right")  # set_index rule
    sizes = np.bincount(part, weights=hist.to_numpy())
    assert len(sizes) == 12 and sizes.max() / sizes.min() <= 1.5


def test_row_order_and_labels_cannot_be_predicted_from_ids_and_the_seed():
    """The seed is stored in the ledger; an attacker who knows the ids must not be able to
    line them up with the released rows (order) or name a member of a group (label)."""
    view = make_view(seed=5)
    out = run(view)
    rel, asg = out.released, out.assigned
    ids = asg["respondent_id"].to_numpy()
    # the attack that worked when the keys were f(id, seed): sort the kept ids by the key
    guess = asg.iloc[np.argsort(keyed(stable_hash(ids), POLICY.seed, "order"), kind="stable")]
    p = rel["exam"].value_counts(normalize=True)
    chance = float((p**2).sum())  # two random rows share a value
    assert (guess["exam"].to_numpy() == rel["exam"].to_numpy()).mean() < chance + 0.1
    ties = keyed(stable_hash(view["respondent_id"].to_numpy()), POLICY.seed, "tie")
    named = set((keyed(ties, POLICY.seed, "label") >> np.uint64(1)).astype(np.int64).tolist())
    assert named.isdisjoint(set(rel["qi_group"].tolist()))
    # one sensitive value changed anywhere re-keys the whole order; the same view does not
    other = view.copy()
    other.loc[0, "exam"] = next(v for v in VALUES if v != other.loc[0, "exam"])
    rekeyed = run(other).released
    assert set(rekeyed["qi_group"]).isdisjoint(set(rel["qi_group"]))
    pd.testing.assert_frame_equal(run(view).released, rel)

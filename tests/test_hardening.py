"""Issue "Hardening": faults reported against peer anonymization tools, checked on dpriv.

Each test asserts the right value for one fault (NaN QIs reported as k-anonymous, divisions
by zero on constant columns, silent NaN handling, a lone record published unchanged, Hilbert
keys of floats / missing values, categorical Cartesian blow-ups, knowledge reset for
returning respondents, KPR ratios with a zero denominator), plus the security properties of
a released view and of the ledger, and unusual input files and column names.
Tests already in test_release.py / test_cli.py are not repeated here.
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from conftest import random_view

import dpriv.release as release_mod
from dpriv import hilbert
from dpriv.anonymity.mondrian import mondrian_groups, mondrian_view, qi_grid_of
from dpriv.anonymity.verify import verify_release
from dpriv.datasets import medical_history, write_history
from dpriv.divergence import emd, group_js, js_divergence
from dpriv.errors import InputError, PolicyError
from dpriv.generalize import generalize_view
from dpriv.hilbert import HKEY, TIE, add_keys, hilbert_keys, keyed_meta, unit_coords
from dpriv.input_checks import resolve_policy
from dpriv.io import read_table
from dpriv.knowledge.revision import revise
from dpriv.ledger import Ledger
from dpriv.metrics.kpr import kpr
from dpriv.metrics.release import utility_domains
from dpriv.metrics.utility import utility_metrics
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history
from dpriv.released import LABEL, apply_qig, public, qig_table, secret_policy
from dpriv.state import attach_priors
from dpriv.validate import validate_view

HIDDEN = {"respondent_id", HKEY, TIE, LABEL, "_s", "_order"}


# -- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def medical(tmp_path_factory):
    """A small generated history (5 views x 200) and its policy with the exact DK."""
    out = tmp_path_factory.mktemp("medical")
    mh = medical_history(n_views=5, view_size=200, seed=3)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, npartitions=2, max_suppression=1.0)
    return mh, policy


def small_view(n: int = 60, seed: int = 0, sensitive=None) -> pd.DataFrame:
    return random_view(n, seed, id="rid", qi=("age", "weight", "gender"), sensitive="s", values=sensitive)


LOOSE = ReleasePolicy(id="rid", qi=["age", "weight", "gender"], sensitive="s", k=3, t=0.9, j=5.0)


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# == 1a. NaN QI: never reported as k-anonymous ===================================================
AGES_NAN = pd.DataFrame({"rid": [1, 2, 3, 4], "age": [30, 30, 30, np.nan], "s": ["a", "b", "c", "a"]})
POL_AGE = ReleasePolicy(id="rid", qi=["age"], sensitive="s", k=3, t=1.0, j=10.0)


@pytest.mark.parametrize("frame", ["pandas", "dask"])
def test_nan_qi_is_refused_by_validate_and_anonymize(frame):
    view = AGES_NAN if frame == "pandas" else dd.from_pandas(AGES_NAN, npartitions=2)
    resolved = POL_AGE.with_overrides(domains={"age": [0, 100], "s": ["a", "b", "c"]})
    with pytest.raises(InputError, match=r"column 'age' has missing values.*\(1 row: row 3\)"):
        validate_view(view, resolved)
    with pytest.raises(InputError, match=r"column 'age' has missing values"):
        anonymize(view, POL_AGE)  # domains inferred from the data: NaN is not dropped silently


@pytest.mark.parametrize("dtype", ["Int64", "Float64", "int64[pyarrow]"])
def test_a_missing_value_in_a_nullable_numeric_qi_is_refused_by_name(dtype):
    """pd.NA in an Int64 / Float64 / Arrow QI was an internal TypeError (boolean value of NA)."""
    view = AGES_NAN.astype({"age": dtype})
    assert view["age"].isna().sum() == 1
    resolved = POL_AGE.with_overrides(domains={"age": [0, 100], "s": ["a", "b", "c"]})
    with pytest.raises(InputError, match=r"column 'age' has missing values.*\(1 row: row 3\)"):
        validate_view(view, resolved)
    with pytest.raises(InputError, match=r"column 'age' has missing values"):
        anonymize(view, POL_AGE)


def test_nan_qi_is_refused_by_release_and_nothing_is_written(medical, tmp_path):
    mh, policy = medical
    hist = mh.history.astype({"age": "float64"})
    hist.loc[hist.index[hist.view == 2][3], "age"] = np.nan
    with pytest.raises(InputError, match=r"view = 2: column 'age' has missing values"):
        release_history(hist, policy, tmp_path / "led")
    assert not (tmp_path / "led").exists()


@pytest.mark.parametrize(
    "labels, lo",
    [
        ([7, 7, 7, 7], [30, 30, 30, np.nan]),  # the NaN row inside the group
        ([7, 7, 7, 8], [30, 30, 30, np.nan]),  # the NaN row as its own group
        (None, [30, 30, 30, np.nan]),  # no group column: the verifier groups by QI values
    ],
)
def test_verifier_never_reports_k3_on_a_view_with_a_nan_qi(labels, lo):
    released = pd.DataFrame({"age_min": lo, "age_max": lo, "s": ["a", "b", "c", "a"]})
    if labels is not None:
        released.insert(0, "qi_group", labels)
    policy = POL_AGE.with_overrides(domains={"age": [0, 100], "s": ["a", "b", "c"]})
    report = verify_release(released, policy, view_counts=np.array([2, 1, 1]))
    assert not report.ok
    assert report.k_achieved != 3  # pyCANON-style "k = 3" (NaN row dropped by groupby) never appears
    assert any("missing" in p for p in report.problems)


# == 1b. constant columns: no division by zero ====================================================
def test_constant_sensitive_column_gives_emd_0_and_js_0_without_warnings():
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        one = np.array([1.0])
        assert emd(one, one) == 0.0 and emd(one, one, "ordered") == 0.0
        assert js_divergence(np.array([[1.0], [1.0], [1.0]])) == 0.0
        assert group_js(np.array([[1.0, 0.0], [1.0, 0.0]])) == 0.0
    view = small_view(sensitive=["a"] * 60)
    with pytest.raises(PolicyError, match=r"'s' holds one value only \('a'\).*allow_single_sensitive"):
        anonymize(view, LOOSE.with_overrides(t=0.0, j=0.0))
    # allowed by the policy: released with one loud warning and no numeric warning at all
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="raise"):
        warnings.simplefilter("always")
        res = anonymize(view, LOOSE.with_overrides(t=0.0, j=0.0, allow_single_sensitive=True))
    assert [str(w.message) for w in caught if "l = 1" in str(w.message)] and all(
        "l = 1" in str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)
    )
    m = res.metrics
    assert m["t_achieved"] == 0.0 and m["j_achieved"] == 0.0
    assert m["n_suppressed"] == 0 and m["k_achieved"] >= 3
    assert (res.released["s"] == "a").all()


def test_constant_qi_column_no_division_by_zero_in_grid_unit_coords_and_mondrian():
    view = small_view().assign(age=50)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        policy, _ = resolve_policy(view, LOOSE)
        assert policy.domains["age"] == [50, 50]
        # Hilbert grid: a degenerate domain puts every value on coordinate 0
        g = hilbert.grid_coords(view["age"].to_numpy(), 50, 50, hilbert.grid_bits(policy))
        assert g.dtype == np.uint64 and (g == 0).all()
        assert (hilbert.grid_codes(np.zeros(5, dtype=np.int64), 1, 8) == 0).all()
        keys = hilbert_keys(view, policy)
        assert keys.dtype == np.uint64 and len(np.unique(keys)) > 1
        u = unit_coords(view, policy)
        assert np.isfinite(u).all() and (u[:, 0] == 0).all()
        # Mondrian's normalised widths: the constant QI has width 0 and is never cut
        grid, widths = qi_grid_of(view, policy)
        assert widths[0] == 0
        s = pd.Index(policy.sensitive_domain).get_indexer(view["s"]).astype(np.int64)
        groups = mondrian_groups(grid, s, np.bincount(s, minlength=3), k=3, model="k", widths=widths)
        assert np.bincount(groups).min() >= 3
        rel = mondrian_view(view, policy, model="l", l=2).released
        assert (rel["age_min"] == 50).all() and (rel["age_max"] == 50).all()
        res = anonymize(view, LOOSE)
        um = utility_metrics(res.released, **utility_domains(res.policy), n_original=60, k=3)
    assert np.isfinite(um["average_semiperimeter"]) and res.metrics["n_suppressed"] == 0
    assert (res.released["age_min"] == 50).all()


# == 1c. a missing sensitive value: refused, never a silent shift of t ==============================
@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_missing_sensitive_value_is_refused(missing, medical, tmp_path):
    view = small_view().astype({"s": object})
    view.loc[7, "s"] = missing
    with pytest.raises(InputError, match=r"column 's' has missing values.*\(1 row: row 7\)"):
        anonymize(view, LOOSE)
    with pytest.raises(InputError, match=r"column 's' has missing values"):
        anonymize(dd.from_pandas(view, npartitions=3), LOOSE)
    mh, policy = medical
    hist = mh.history.astype({"exam_result": object})
    hist.loc[hist.index[hist.view == 3][0], "exam_result"] = missing
    for method in ("jsreduce", "mondrian-t"):
        with pytest.raises(InputError, match=r"view = 3: column 'exam_result' has missing values"):
            release_history(hist, policy, tmp_path / method, method=method)
        assert not (tmp_path / method).exists()


# == 1d. a single record with k = 2: nothing released =============================================
def test_single_record_k2_is_never_released(medical, tmp_path, cli):
    one = small_view(1)
    with pytest.raises(PolicyError, match=r"k = 2 is larger than the view \(1 row\)"):
        anonymize(one, LOOSE.with_overrides(k=2))
    with pytest.raises(PolicyError, match="k = 2 is larger"):
        anonymize(dd.from_pandas(one, npartitions=1), LOOSE.with_overrides(k=2))
    # a history whose view 2 holds one record: refused before release 1 is written
    mh, policy = medical
    hist = mh.history[
        (mh.history.view != 2) | (mh.history.index == mh.history.index[mh.history.view == 2][0])
    ]
    with pytest.raises(PolicyError, match=r"view = 2: k = 5 is larger than the view \(1 row\)"):
        release_history(hist, policy, tmp_path / "led")
    assert not (tmp_path / "led").exists()
    one.to_csv(tmp_path / "one.csv", index=False)
    res = cli(
        "anonymize", tmp_path / "one.csv", "--out", tmp_path / "o.csv", "--id", "rid",
        "--qi", "age,weight,gender", "--sensitive", "s", "--k", "2", "--t", "1", "--j", "5",
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "k = 2 is larger than the view" in res.output
    assert not (tmp_path / "o.csv").exists()


# == 1e. Hilbert keys ============================================================================
KEY_POLICY = ReleasePolicy(
    id="rid",
    qi=["age", "gender"],
    sensitive="s",
    k=2,
    domains={"age": [45, 74], "gender": ["F", "M"], "s": ["a", "b"]},
)


def test_hilbert_keys_leave_the_callers_array_unchanged():
    values = np.array([45.0, 50.5, 74.0, 60.25])
    ints = np.array([45, 74, 60, 45], dtype=np.int64)
    coords = np.array([[0, 3], [2, 1], [3, 3]], dtype=np.uint64)
    noncontig = np.arange(12, dtype=np.uint64).reshape(3, 4)[:, ::2] % 4
    copies = [a.copy() for a in (values, ints, coords, noncontig)]
    hilbert.grid_coords(values, 45, 74, 8)
    hilbert.grid_coords(ints, 45, 74, 8)
    hilbert.grid_codes(ints - 45, 30, 8)
    hilbert.hilbert_index(coords, 2)
    hilbert.hilbert_index(noncontig, 2)
    for a, b in zip((values, ints, coords, noncontig), copies):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    frame = pd.DataFrame(
        {"rid": [1, 2, 3], "age": [45.5, 60.0, 74.0], "gender": ["F", "M", "F"], "s": list("aba")}
    )
    before = frame.copy()
    add_keys(frame, KEY_POLICY)
    pd.testing.assert_frame_equal(frame, before)


def test_float_qi_values_are_put_on_the_grid_explicitly():
    with pytest.raises(InputError, match="integer dtype.*grid_coords"):
        hilbert.hilbert_index(np.array([[1.0, 2.0]]), 4)  # never an implicit float -> int cast
    frame = pd.DataFrame(
        {"rid": range(5), "age": [45.0, 45.4, 45.6, 59.5, 74.0], "gender": list("FMFMF"), "s": list("ababa")}
    )
    bits = hilbert.grid_bits(KEY_POLICY)
    g = hilbert.grid_coords(frame["age"].to_numpy(), 45, 74, bits)
    expected_g = np.rint((frame["age"].to_numpy() - 45) / 29 * (2**bits - 1)).astype(np.uint64)
    np.testing.assert_array_equal(g, expected_g)
    codes_g = hilbert.grid_codes(np.array([0, 1, 0, 1, 0]), 2, bits)
    expected = hilbert.hilbert_index(np.column_stack([g, codes_g]), bits)
    np.testing.assert_array_equal(hilbert_keys(frame, KEY_POLICY), expected)
    # an integer column and the same values as floats give the same keys
    ints = frame.assign(age=[45, 46, 47, 60, 74])
    np.testing.assert_array_equal(
        hilbert_keys(ints, KEY_POLICY), hilbert_keys(ints.astype({"age": "float64"}), KEY_POLICY)
    )


def test_dask_key_column_meta_and_persisted_dtype_are_uint64():
    frame = pd.DataFrame(
        {
            "rid": range(8),
            "age": [45, 50.5, 74, 60, 61, 62, 70, 45],
            "gender": list("FMFMFMFM"),
            "s": list("abababab"),
        }
    )
    ddf = dd.from_pandas(frame, npartitions=3)
    keyed = ddf.map_partitions(add_keys, KEY_POLICY, meta=keyed_meta(ddf._meta, KEY_POLICY))
    assert keyed.dtypes[HKEY] == np.uint64 and keyed._meta[HKEY].dtype == np.uint64
    assert add_keys(frame.iloc[:0], KEY_POLICY)[HKEY].dtype == np.uint64  # the function's own meta
    done = keyed.persist().compute()
    assert done[HKEY].dtype == np.uint64 and done[TIE].dtype == np.uint64
    np.testing.assert_array_equal(done.sort_values("rid")[HKEY].to_numpy(), hilbert_keys(frame, KEY_POLICY))


@pytest.mark.parametrize("column, value", [("age", np.nan), ("gender", None), ("gender", pd.NA)])
def test_missing_value_is_never_mapped_to_key_0(column, value):
    frame = pd.DataFrame(
        {"rid": range(4), "age": [45.0, 50.0, 60.0, 74.0], "gender": list("FMFM"), "s": list("abab")}
    )
    frame = frame.astype({"gender": object})
    frame.loc[2, column] = value
    with pytest.raises(InputError, match="missing|negative"):
        hilbert_keys(frame, KEY_POLICY)
    with pytest.raises(InputError, match="NaN"):
        hilbert.grid_coords(np.array([45.0, np.nan]), 45, 74, 8)
    with pytest.raises(InputError, match="negative"):
        hilbert.grid_codes(np.array([0, -1]), 2, 8)  # pandas' code of a missing category
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(InputError):
        ddf.map_partitions(add_keys, KEY_POLICY, meta=keyed_meta(ddf._meta, KEY_POLICY)).compute()


# == 1f. categorical QIs with unused categories ==================================================
def with_unused_categories(frame: pd.DataFrame, columns: dict[str, list]) -> pd.DataFrame:
    return frame.astype({c: pd.CategoricalDtype(cats) for c, cats in columns.items()})


@pytest.mark.slow
def test_categorical_qi_with_unused_categories_same_release_as_object():
    rng = np.random.default_rng(4)
    n = 400
    view = pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": rng.integers(45, 75, n),
            "gender": rng.choice(["F", "M"], n),
            "city": rng.choice(["x", "y", "z"], n),
            "s": rng.choice(list("abcd"), n),
        }
    )
    policy = ReleasePolicy(id="rid", qi=["age", "gender", "city"], sensitive="s", k=4, t=0.5, j=5.0)
    cat = with_unused_categories(
        view,
        {
            "gender": ["F", "M", *[f"g{i}" for i in range(200)]],
            "city": ["x", "y", "z", *[f"c{i}" for i in range(200)]],
            "s": ["a", "b", "c", "d", "never"],
        },
    )
    plain = anonymize(view, policy)
    for frame in (cat, dd.from_pandas(cat, npartitions=2)):
        res = anonymize(frame, policy)
        assert res.policy.domains == plain.policy.domains  # unused levels never enter a domain
        pd.testing.assert_frame_equal(res.released.reset_index(drop=True), plain.released)
        assert len(res.released) == n - res.metrics["n_suppressed"]
        assert res.metrics["n_groups"] == plain.metrics["n_groups"] <= n // 4
    # a declared domain: same bytes again, and the verifier on categorical released columns
    resolved = plain.policy
    res = anonymize(cat, resolved)
    pd.testing.assert_frame_equal(res.released, plain.released)
    rel_cat = plain.released.astype({"gender": "category", "city": "category"})
    rel_cat = rel_cat.astype({"city": pd.CategoricalDtype([*rel_cat["city"].cat.categories, "{q}", "{r}"])})
    counts = np.bincount(pd.Index(resolved.sensitive_domain).get_indexer(view["s"]), minlength=4)
    a = verify_release(plain.released.drop(columns="qi_group"), resolved, view_counts=counts)
    b = verify_release(rel_cat.drop(columns="qi_group"), resolved, view_counts=counts)
    assert (a.k_achieved, a.t_achieved, a.n_groups) == (b.k_achieved, b.t_achieved, b.n_groups)
    m = utility_metrics(rel_cat, **utility_domains(resolved), n_original=n, k=4)
    assert m["n_groups"] == plain.metrics["n_groups"]


def test_categorical_dtype_history_same_ledger_as_plain(medical, tmp_path):
    mh, policy = medical
    hist = mh.history[mh.history.view <= 2].assign(
        gender=lambda h: h["gender"].map({1: "F", 2: "M"}).astype(object)
    )
    domains = {**policy.domains, "gender": ["F", "M"]}
    policy = policy.with_overrides(domains=domains, knowledge={"defender": "ie"}, base_dir=None)
    cat = with_unused_categories(
        hist,
        {
            "gender": ["F", "M", *[f"g{i}" for i in range(100)]],
            "exam_result": [*policy.sensitive_domain, "unknown"],
        },
    )
    a = release_history(hist, policy, tmp_path / "plain")
    b = release_history(cat, policy, tmp_path / "cat")
    for i in (1, 2):
        pd.testing.assert_frame_equal(a.read_view(i), b.read_view(i))
        pd.testing.assert_frame_equal(a.read_state(i), b.read_state(i))
        assert a.read_metrics(i)["n_groups"] == b.read_metrics(i)["n_groups"]


def test_numeric_qi_stored_as_category_is_released_like_plain_numbers(medical, tmp_path):
    mh, policy = medical
    hist = mh.history[mh.history.view <= 2]
    cat = with_unused_categories(hist, {"gender": [1, 2, *range(3, 60)]})
    a = release_history(hist, policy, tmp_path / "plain")
    b = release_history(cat, policy, tmp_path / "cat")
    for i in (1, 2):
        pd.testing.assert_frame_equal(a.read_view(i), b.read_view(i))


# == 1g. a respondent who leaves for several releases and comes back ===============================
@pytest.mark.slow
def test_returning_respondent_is_revised_from_her_own_last_posteriors(medical, tmp_path, monkeypatch):
    mh, policy = medical
    hist = mh.history
    ids = lambda v: set(hist.loc[hist.view == v, "respondent_id"])  # noqa: E731
    # she is in views 1 and 2, then away for views 3 and 4, and back in view 5
    present = sorted(ids(1) & ids(2) & ids(5))
    assert present, "the generated history should have respondents in views 1, 2 and 5"
    her = present[0]
    away = hist.view.isin([3, 4]) & (hist.respondent_id == her)
    built = hist[~away].reset_index(drop=True)
    parts: dict[int, list[pd.DataFrame]] = {}
    real = release_mod.revised

    def spy(view, state, tables, pol, window, *args):  # the rbk step (in process: pandas, once a view)
        out = real(view, state, tables, pol, window, *args)
        # the time column is dropped before this step (no later step reads it), and a first release
        # looks its priors up after Generalize (dpriv.first_priors): call i is view i + 1, and each
        # one's length is checked against the history's view below
        parts.setdefault(len(parts) + 2, []).append(out.copy())
        return out

    monkeypatch.setattr(release_mod, "revised", spy)
    led = release_history(built, policy, tmp_path / "led")
    seen = {}
    for t, frames in parts.items():
        view_t = pd.concat(frames).drop_duplicates(policy.id).reset_index(drop=True)
        assert len(view_t) == int((built.view == t).sum())
        seen[t] = (view_t, view_t[policy.prior_columns].to_numpy())
    assert led.last_index() == 5
    assert her not in set(seen[3][0]["respondent_id"]) | set(seen[4][0]["respondent_id"])
    # her state row in the ledger after release 4 (the last before she returns)
    state4 = led.read_state(4).set_index("respondent_id")
    assert her in state4.index, "she must have been kept at release 1 or 2"
    row = state4.loc[her]
    assert row["last_release"] in (1, 2) and row["n_post"] >= 1
    assert led.read_state(2).set_index("respondent_id").loc[her].equals(row)  # untouched while away
    tables = mh.knowledge
    window = tables.order
    m = len(policy.sensitive_domain)
    hist_w = np.array([[row[f"pk{w}__{v}"] for v in policy.sensitive_domain] for w in range(window)])
    hist_w = np.nan_to_num(hist_w, nan=1.0 / m)[None]
    view5, rbk5 = seen[5]
    pos = int(np.flatnonzero(view5["respondent_id"].to_numpy() == her)[0])
    cls = tables.classes.classify(view5.iloc[[pos]])
    fallback = tables.tables[0][cls, 0]
    expected = revise(hist_w, np.array([int(row["n_post"])]), cls, tables, fallback)[0]
    np.testing.assert_allclose(rbk5[pos], expected, rtol=0, atol=1e-12)
    assert not np.allclose(rbk5[pos], fallback[0]), "her knowledge was reset to BK^sv"
    # not someone else's: every respondent of view 5 gets the revision of her own state row
    joined = view5[["respondent_id"]].merge(state4.reset_index(), on="respondent_id", how="left")
    cols = [f"pk{w}__{v}" for w in range(window) for v in policy.sensitive_domain]
    all_hist = np.nan_to_num(joined[cols].to_numpy(dtype=float).reshape(len(view5), window, m), nan=1.0 / m)
    all_cls = tables.classes.classify(view5)
    np.testing.assert_allclose(
        rbk5,
        revise(
            all_hist,
            joined["n_post"].fillna(0).to_numpy(np.int64),
            all_cls,
            tables,
            tables.tables[0][all_cls, 0],
        ),
        rtol=0,
        atol=1e-12,
    )
    # and she got a new posterior at release 5 if kept, shifting her own window
    state5 = led.read_state(5).set_index("respondent_id")
    if state5.loc[her, "last_release"] == 5:
        assert state5.loc[her, "n_post"] == row["n_post"] + 1
        for w in range(window - 1):
            for v in policy.sensitive_domain:
                a, b = state5.loc[her, f"pk{w}__{v}"], row[f"pk{w + 1}__{v}"]
                assert (np.isnan(a) and np.isnan(b)) or a == b


# == 1h. KPR and utility ratios with a zero denominator ===========================================
@pytest.mark.parametrize("backend", ["pandas", "dask"])
def test_kpr_is_100_with_a_note_when_no_original_is_unique(backend):
    original = pd.DataFrame({"age": [30.0, 30.0, 41.5, 41.5, 52.0, 52.0] * 3, "sex": list("MMFFMM") * 3})
    synthetic = pd.DataFrame({"age": [30.0, 41.0, 52.5, 60.0], "sex": list("MFMF")})
    if backend == "dask":
        original, synthetic = (
            dd.from_pandas(original, npartitions=2),
            dd.from_pandas(synthetic, npartitions=2),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the low-cardinality KPRWarning is expected here
        res = kpr(original, synthetic, ["age", "sex"])
    assert res.kpr == 100.0 and res.n_unique_original == 0 and res.n_matched == 0 and res.n == 18
    assert "no original record is unique" in res.note
    empty = kpr(
        pd.DataFrame({"sex": list("MF")}), pd.DataFrame({"sex": pd.Series([], dtype=object)}), ["sex"]
    )
    assert empty.kpr == 100.0 and "synthetic table is empty" in empty.note


def test_utility_metrics_of_an_empty_release_are_none_not_zero():
    policy = LOOSE.with_overrides(
        domains={"age": [45, 74], "weight": [60, 89], "gender": ["F", "M"], "s": list("abc")}
    )
    empty = pd.DataFrame(
        {
            "qi_group": pd.Series(dtype="int64"),
            **{c: pd.Series(dtype="float64") for c in ("age_min", "age_max", "weight_min", "weight_max")},
            "gender": pd.Series(dtype=object),
            "s": pd.Series(dtype=object),
        }
    )
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        m = utility_metrics(empty, **utility_domains(policy), n_original=10, k=3, sensitive="s")
        m0 = utility_metrics(empty, **utility_domains(policy), n_original=0, k=3)
        rep = verify_release(empty, policy, view_counts=np.array([4, 3, 3]))
    for key in ("min_group_size", "largest_group", "average_semiperimeter", "gcp_kept", "c_avg"):
        assert m[key] is None and m0[key] is None, key
    assert m["min_distinct_sensitive"] is None
    assert m["suppression_rate"] == 1.0 and m["gcp"] == 1.0  # all suppressed: full loss, defined
    assert m0["suppression_rate"] is None and m0["gcp"] is None
    assert rep.ok and rep.k_achieved is None and rep.t_achieved is None and rep.j_achieved is None


# == 4. security ================================================================================
def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = pd.Series(a).rank().to_numpy()
    rb = pd.Series(b).rank().to_numpy()
    return float(np.corrcoef(ra, rb)[0, 1])


def test_released_row_order_follows_neither_input_nor_hilbert_order():
    rng = np.random.default_rng(11)
    n = 2000
    view = pd.DataFrame(
        {
            "rid": rng.permutation(10 * n)[:n],
            "age": np.sort(rng.integers(45, 75, n)),  # input sorted by age: input order ~ QI order
            "weight": rng.integers(60, 90, n),
            "gender": rng.choice(["F", "M"], n),
            "s": rng.choice(list("abcdef"), n),
        }
    )
    policy, _ = resolve_policy(view, LOOSE.with_overrides(k=5, t=0.5, j=0.5))
    summary = validate_view(view, policy)
    frame = attach_priors(dd.from_pandas(view, npartitions=2), policy)
    result = generalize_view(frame, policy, summary)
    released, assigned = public(result.released.compute()).reset_index(drop=True), result.assigned.compute()
    assert not HIDDEN & set(released.columns) and not {"rid"} & set(released.columns)
    # match released rows to assigned tuples: the public rows of `assigned` in (label, `_order`)
    # order are exactly the released view
    rows = apply_qig(assigned, qig_table(assigned, policy), secret_policy(policy, summary))
    order = np.lexsort((rows["_order"].to_numpy(), rows["qi_group"].to_numpy()))
    pd.testing.assert_frame_equal(rows.drop(columns="_order").iloc[order].reset_index(drop=True), released)
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))  # released row position of each assigned tuple
    input_pos = pd.Index(view["rid"]).get_indexer(assigned["rid"])
    assert len(released) > 0.9 * n
    rho_input = _spearman(position, input_pos)
    rho_hilbert = _spearman(position, assigned[HKEY].to_numpy(np.uint64).astype(float))
    rho_age = _spearman(position, assigned["age"].to_numpy())
    assert max(abs(rho_input), abs(rho_hilbert), abs(rho_age)) < 0.1, (rho_input, rho_hilbert, rho_age)
    # group labels: not monotone in Hilbert order
    first_key = assigned.groupby(LABEL)[HKEY].min().sort_values(kind="stable")
    labels = first_key.index.to_numpy()
    assert len(labels) >= 50
    assert not (np.diff(labels) > 0).all() and not (np.diff(labels) < 0).all()
    assert abs(_spearman(labels, np.arange(len(labels)))) < 0.3
    # the groups come in label order: a group's rows are contiguous, the groups in no QI order
    first_row = (
        pd.Series(np.arange(len(released)))
        .groupby(released["qi_group"].to_numpy())
        .agg(["min", "max", "size"])
    )
    assert (first_row["max"] - first_row["min"] + 1 == first_row["size"]).all()
    mean_age = assigned.groupby(LABEL)["age"].mean().loc[first_row.sort_values("min").index]
    assert abs(_spearman(np.arange(len(mean_age)), mean_age.to_numpy())) < 0.1


def test_ledger_files_hold_no_id_key_or_label_and_state_is_owner_only(medical, tmp_path):
    mh, policy = medical
    old = os.umask(0)  # a permissive umask must not loosen the sensitive state
    try:
        led = release_history(mh.history[mh.history.view <= 3], policy, tmp_path / "led")
        led = release_history(mh.history[mh.history.view <= 3], policy, tmp_path / "led", method="jsreduce")
    finally:
        os.umask(old)
    root = tmp_path / "led"
    for i in (1, 2, 3):
        view_bytes = (led.release_dir(i) / "view.parquet").read_bytes()
        view = led.read_view(i)
        assert not HIDDEN & set(view.columns)
        for word in (b"respondent_id", b"_hkey", b"_tie", b"_label", b"_order", b"__index_level"):
            assert word not in view_bytes, word  # nor in the Parquet schema / pandas metadata
        metrics = (led.release_dir(i) / "metrics.json").read_text()
        assert "respondent_id" not in metrics
        ids = set(mh.history.loc[mh.history.view == i, "respondent_id"])
        assert not any(
            set(view[c]) >= ids for c in view.columns if view[c].dtype.kind in "iu" and c != "qi_group"
        )
    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)  # noqa: E731
    assert mode(root / "state") == 0o700
    for p in (root / "state").rglob("*"):
        assert mode(p) == (0o700 if p.is_dir() else 0o600), p
    for p in (root / "releases").rglob("*"):
        assert not (p.is_file() and mode(p) & 0o002), p  # public but never world-writable


def _traversal_history() -> pd.DataFrame:
    mh = medical_history(n_views=2, view_size=120, seed=2)
    h = mh.history.copy()
    h["respondent_id"] = "../../etc/" + h["respondent_id"].astype(str)
    h["exam_result"] = h["exam_result"].map(lambda s: f"../../{s}/x" if s.startswith("liver") else s)
    return h.rename(columns={"weight": "../../weight", "exam_result": "../s"})


def _traversal_policy(t: float) -> ReleasePolicy:
    """Column names that look like paths (they must never become paths)."""
    return ReleasePolicy(
        id="respondent_id",
        time="view",
        qi=["age", "gender", "../../weight"],
        sensitive="../s",
        k=3,
        t=t,
        j=2.0,
        knowledge={"defender": "ie"},
    )


def test_nothing_is_written_outside_the_ledger_root(tmp_path, monkeypatch):
    h = _traversal_history()
    policy = _traversal_policy(t=0.75)  # t = 0.7 hits the EMD boundary bug below
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    before = tree(tmp_path)
    ledger_arg = Path("x") / ".." / "led"  # a relative --ledger with '..'
    led = release_history(h, policy, ledger_arg)
    assert led.last_index() == 2
    root = (work / "led").resolve()
    created = tree(tmp_path) - before
    outside = [
        p
        for p in created
        if not (tmp_path / p).resolve().is_relative_to(root) and (tmp_path / p) != work / "x"
    ]
    assert outside == [], outside
    # 'x/../led' needs 'x' to exist (POSIX path resolution): at most that empty folder
    assert not (work / "x").exists() or not any((work / "x").iterdir())
    view = led.read_view(1)
    assert not any(str(v).startswith("../../etc") for c in view.columns for v in view[c].astype(str))
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert files == {
        "manifest.json",
        "policy.json",
        ".dpriv-lock",  # the writer's lock (empty)
        *(f"releases/{i}/{f}" for i in (1, 2) for f in ("view.parquet", "metrics.json")),
        *(f"state/{i}/state.parquet" for i in (1, 2)),
    }


def test_emd_boundary_group_is_never_built_then_refused(tmp_path):
    from dpriv.anonymity.generalize import _violation
    from dpriv.divergence import emd_num_den, emd_within

    view_counts = np.array([12, 7, 12, 5, 4, 13, 10, 1, 0, 0, 12, 5, 4, 3, 16, 5, 2, 6, 3], dtype=np.int64)
    group = np.array([1, 0, 2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0], dtype=np.int64)
    num, den = emd_num_den(group, 6, view_counts, 120, 0)
    assert (num, den) == (1008, 1440) and not emd_within(num, den, 0.7)
    priors = np.full(19, 6 / 19)
    violation = _violation(group, 6, priors, 0.0, view_counts, 120, 0.7, 10.0, 1.0, 0, 2.0)
    policy = _traversal_policy(t=0.7)
    led = release_history(_traversal_history(), policy, tmp_path / "led")  # VerificationError today
    assert violation > 0 and led.last_index() == 2


# == 5. unusual input files and column names =====================================================
def test_truncated_parquet_is_an_input_error(medical, tmp_path, cli):
    mh, policy = medical
    mh.history.to_parquet(tmp_path / "h.parquet", index=False)
    data = (tmp_path / "h.parquet").read_bytes()
    for name, cut in [("half", len(data) // 2), ("nomagic", len(data) - 1), ("head", 4), ("empty", 0)]:
        (tmp_path / f"{name}.parquet").write_bytes(data[:cut])
        with pytest.raises(InputError, match=rf"cannot read .*{name}\.parquet"):
            read_table(str(tmp_path / f"{name}.parquet")).compute()
    res = cli(
        "release",
        tmp_path / "half.parquet",
        "--ledger",
        tmp_path / "led",
        "--policy",
        Path(policy.base_dir) / "policy.toml",
    )
    assert res.exit_code == 2 and "cannot read" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "led").exists()


def test_truncated_file_in_a_parquet_folder_is_an_input_error(medical, tmp_path):
    mh, _ = medical
    folder = tmp_path / "hist"
    folder.mkdir()
    mh.history.iloc[:500].to_parquet(folder / "part.0.parquet", index=False)
    mh.history.iloc[500:].to_parquet(folder / "part.1.parquet", index=False)
    data = (folder / "part.1.parquet").read_bytes()
    (folder / "part.1.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"part\.1\.parquet"):
        read_table(str(folder)).compute()


def test_a_parquet_folder_holds_the_parts_of_one_table_only(medical, tmp_path):
    """A drill: a folder holding an original and a released view ended in exit 1 (KeyError), and
    a CSV beside the parts was left out without a word."""
    mh, _ = medical
    folder = tmp_path / "hist"
    folder.mkdir()
    mh.history.iloc[:500].to_parquet(folder / "part.0.parquet", index=False)
    mh.history.iloc[500:900].to_parquet(folder / "part.1.parquet", index=False)
    (folder / "_SUCCESS").write_text("")  # markers and metadata (Spark, Hadoop) are not parts
    (folder / ".part.1.parquet.crc").write_bytes(b"crc")
    assert len(read_table(str(folder)).compute()) == 900
    mh.history.iloc[:10].drop(columns="age").to_parquet(folder / "part.2.parquet", index=False)
    with pytest.raises(InputError, match=r"files of different tables: .*part\.2\.parquet has columns"):
        read_table(str(folder))
    (folder / "part.2.parquet").unlink()
    mh.history.iloc[:10].to_csv(folder / "more.csv", index=False)
    with pytest.raises(InputError, match=r"more\.csv, which is not a Parquet file: .* move that file"):
        read_table(str(folder))


def test_a_ledger_folder_given_as_a_table_is_named_as_such(medical, tmp_path):
    # a fresh user's slip: `dpriv verify LEDGER --original H` read the ledger's Parquet files
    # (views and state) as one table and failed with an internal KeyError
    mh, policy = medical
    folder = tmp_path / "hist"
    folder.mkdir()
    mh.history.iloc[:500].to_parquet(folder / "part.0.parquet", index=False)
    assert len(read_table(str(folder)).compute()) == 500  # a folder of Parquet is a table
    led = release_history(mh.history[mh.history.view == 1], policy, tmp_path / "led")
    with pytest.raises(
        InputError,
        match=r"led is a dpriv ledger .*/led/releases/<i>/view\.parquet, .* --ledger PATH --view I",
    ):
        read_table(str(led.root))


NAMES = {
    "respondent_id": "n° répondant (id)",
    "view": "vue (semaine)",
    "age": "âge (ans)",
    "gender": "genre / sexe",
    "weight": "poids [kg]",
    "exam_result": "résultat d'examen (état)",
}


@pytest.mark.slow
def test_unusual_column_names_work_end_to_end_through_release_history(medical, tmp_path):
    mh, _ = medical
    hist = mh.history[mh.history.view <= 3]
    renamed = hist.rename(columns=NAMES)
    base = dict(k=5, t=0.6, j=1.0, knowledge={"defender": "ie"})
    plain = ReleasePolicy(
        id="respondent_id", time="view", qi=["age", "gender", "weight"], sensitive="exam_result", **base
    )
    odd = ReleasePolicy(
        id=NAMES["respondent_id"],
        time=NAMES["view"],
        qi=[NAMES["age"], NAMES["gender"], NAMES["weight"]],
        sensitive=NAMES["exam_result"],
        **base,
    )
    renamed.to_parquet(tmp_path / "h.parquet", index=False)
    a = release_history(hist, plain, tmp_path / "plain")
    b = release_history(read_table(str(tmp_path / "h.parquet")).compute(), odd, tmp_path / "odd")
    out_names = {
        "qi_group": "qi_group",
        "age_min": NAMES["age"] + "_min",
        "age_max": NAMES["age"] + "_max",
        "gender_min": NAMES["gender"] + "_min",
        "gender_max": NAMES["gender"] + "_max",
        "weight_min": NAMES["weight"] + "_min",
        "weight_max": NAMES["weight"] + "_max",
        "exam_result": NAMES["exam_result"],
    }
    for i in (1, 2, 3):
        va, vb = a.read_view(i), b.read_view(i)
        assert list(vb.columns) == [out_names[c] for c in va.columns]
        pd.testing.assert_frame_equal(va.rename(columns=out_names), vb)
        ma, mb = a.read_metrics(i), b.read_metrics(i)
        assert {k: v for k, v in ma.items() if k != "seconds"} == {
            k: v for k, v in mb.items() if k != "seconds"
        }
        sa, sb = a.read_state(i), b.read_state(i)
        np.testing.assert_array_equal(sa.to_numpy(), sb.to_numpy())
        assert NAMES["respondent_id"] in sb.columns
    assert json.loads((tmp_path / "odd" / "policy.json").read_text())["qi"] == odd.qi
    assert Ledger(tmp_path / "odd").policy().sensitive == NAMES["exam_result"]


def test_multiindex_columns_and_complex_numbers_are_refused_by_name():
    """A ValueError (too many values to unpack) and a misleading domain message before."""
    frame = pd.DataFrame({("a", "rid"): range(6), ("b", "age"): range(6), ("b", "s"): list("ab") * 3})
    frame.columns = pd.MultiIndex.from_tuples(frame.columns)
    with pytest.raises(InputError, match=r"anonymize\(\) takes a view with one level of column names"):
        anonymize(frame, ReleasePolicy(id="a_rid", qi=["b_age"], sensitive="b_s", k=2))
    view = pd.DataFrame({"rid": range(6), "age": np.arange(6) + 1j, "s": list("ab") * 3})
    with pytest.raises(InputError, match=r"column\(s\) \['age'\] hold complex numbers"):
        anonymize(view, ReleasePolicy(id="rid", qi=["age"], sensitive="s", k=2))

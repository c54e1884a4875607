"""The one-shot class prior with many QIs (issue 15): a sparse class table is never built;
the prior falls back to classes on a prefix of the QIs and says so."""

import math

import numpy as np
import pandas as pd
import pytest

import dpriv.priors as priors
from dpriv.policy import ReleasePolicy
from dpriv.priors import DENSE_CLASSES, attach_priors, prior_classes
from dpriv.release import anonymize

LEVELS = ["a", "b", "c", "d"]


def many_qi_view(n_qi: int, n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, ReleasePolicy]:
    """``n_qi`` QIs: every 4th categorical with 4 levels, the others numeric 0..99 (3 bins)."""
    rng = np.random.default_rng(seed)
    sens = rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2])  # drawn first: same S for any n_qi
    cols: dict = {"respondent_id": np.arange(n)}
    domains: dict = {}
    for i in range(n_qi):
        if i % 4 == 3:
            cols[f"c{i}"] = rng.choice(LEVELS, n)
            domains[f"c{i}"] = LEVELS
        else:
            cols[f"q{i}"] = rng.integers(0, 100, n)
            domains[f"q{i}"] = [0, 99]
    cols["s"] = sens
    domains["s"] = ["x", "y", "z"]
    df = pd.DataFrame(cols)
    qi = [c for c in df.columns if c not in ("respondent_id", "s")]
    policy = ReleasePolicy(
        qi=qi, sensitive="s", domains=domains, k=5, t=0.3, j=0.1, max_suppression=1.0, seed=0
    )
    return df, policy


def full_classes(n_qi: int) -> int:
    return math.prod(4 if i % 4 == 3 else 3 for i in range(n_qi))


@pytest.mark.parametrize("n_qi", [12, 16, 40])
def test_sparse_table_falls_back_to_a_prefix_no_larger_than_the_data(n_qi):
    _, policy = many_qi_view(n_qi)
    pc = prior_classes(policy, 600)
    assert pc.n_classes_full == full_classes(n_qi)  # exact, even 3^30 * 4^10 > 2^63
    # at most max(600 // 10, 64) = 64 classes: q0 q1 q2 (27); with c3 it would be 108
    assert pc.classmap.qi == ("q0", "q1", "q2")
    assert pc.classmap.n_classes == 27
    assert pc.fallback is not None and "first 3 QI(s)" in pc.fallback and "(27 classes)" in pc.fallback
    assert f"{n_qi} QIs" in pc.fallback and "600 rows" in pc.fallback
    # more rows allow more classes: 5000 rows -> <= 500 classes -> q0 q1 q2 c3 q4 (324)
    assert prior_classes(policy, 5000).classmap.n_classes == 324


def test_dense_enough_table_is_kept():
    _, policy = many_qi_view(3)  # 27 classes
    pc = prior_classes(policy, 20)  # fewer rows than classes, but under DENSE_CLASSES
    assert 27 <= DENSE_CLASSES and pc.fallback is None and pc.classmap.qi == ("q0", "q1", "q2")
    _, policy = many_qi_view(5)  # 324 classes: kept from 10 rows per class on
    assert prior_classes(policy, 3240).fallback is None
    assert prior_classes(policy, 3239).classmap.qi == ("q0", "q1", "q2", "c3")  # 108 classes


def test_first_qi_alone_too_large_falls_back_to_the_global_distribution():
    policy = ReleasePolicy(
        qi=["zip"],
        sensitive="s",
        domains={"zip": [f"z{i}" for i in range(500)], "s": ["x", "y"]},
        k=2,
    )
    pc = prior_classes(policy, 100)
    assert pc.classmap.qi == () and pc.classmap.n_classes == 1
    assert "no QI" in pc.fallback


def test_attach_priors_40_qis_table_shape_and_warning():
    view, policy = many_qi_view(40)
    seen = {}
    real = priors.prior_from_counts

    def spy(counts, alpha=0.0):
        seen["shape"] = counts.shape
        return real(counts, alpha)

    priors.prior_from_counts = spy
    try:
        with pytest.warns(UserWarning, match="falling back to classes on the first 3 QI"):
            out = attach_priors(view, policy)
    finally:
        priors.prior_from_counts = real
    assert seen["shape"] == (27, 3)  # never 3^30 * 4^10 rows
    p = out[["p__x", "p__y", "p__z"]].to_numpy()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # the prior of a row is the S distribution of its class on the first 3 QIs (thirds)
    key = pd.DataFrame({q: np.searchsorted([33, 66], view[q], side="right") for q in ["q0", "q1", "q2"]})
    grp = view.groupby([key[c] for c in key.columns])["s"].transform(lambda s: (s == "x").mean())
    np.testing.assert_allclose(p[:, 0], grp.to_numpy())


#: Suppression of the same view on its first 3 QIs only (measured: k 5, t 0.3, j 0.1, 600 rows).
SUPPRESSION_3_QI = 0.0


def test_three_qi_reference_suppression():
    view, _ = many_qi_view(12)
    sub, policy = many_qi_view(3)
    assert sub.equals(view[sub.columns])  # the same first 3 QIs and S
    assert anonymize(sub, policy).metrics["suppression_rate"] == pytest.approx(SUPPRESSION_3_QI)


@pytest.mark.parametrize("n_qi", [12, 16, 40])
def test_anonymize_many_qis_reports_the_fallback_and_suppresses_less(n_qi):
    view, policy = many_qi_view(n_qi)
    res = anonymize(view, policy)
    assert any("falling back to classes on the first 3 QI(s)" in n for n in res.notes)
    assert res.metrics["suppression_rate"] < SUPPRESSION_3_QI + 0.05


def test_without_the_fallback_12_qis_suppress_everything(monkeypatch):
    """The failure the fallback fixes: one tuple per class, each its own point-mass prior."""
    view, policy = many_qi_view(12)
    monkeypatch.setattr(priors, "DENSE_CLASSES", 10**9)
    assert anonymize(view, policy).metrics["suppression_rate"] == 1.0

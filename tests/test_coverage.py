"""The original must fit the released boxes (dpriv.anonymity.coverage): ``dpriv verify`` of a
released file, which has no membership. A drill found releases with narrowed boxes, or value
sets swapped, that verified ok (every group's own k, l and t still held)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.anonymity.coverage import WHY, WHY_TIGHT, coverage_problems
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize
from dpriv.view_check import verify_view

POLICY = ReleasePolicy(
    qi=["age", "sex"],
    sensitive="s",
    k=2,
    t=1.0,
    kinds={"sex": "categorical"},
    domains={"age": [0, 100], "sex": ["F", "M"], "s": ["a", "b"]},
)
# groups 10 = {30 F a, 32 M a, 35 F a, 38 F b} and 20 = {50 M b, 55 M b}
ORIGINAL = pd.DataFrame(
    {
        "age": [30, 32, 35, 38, 50, 55],
        "sex": ["F", "M", "F", "F", "M", "M"],
        "s": ["a", "a", "a", "b", "b", "b"],
    }
)


def released(**edits) -> pd.DataFrame:
    rows = pd.DataFrame(
        {
            "qi_group": [10, 10, 10, 10, 20, 20],
            "age_min": [30] * 4 + [50] * 2,
            "age_max": [38] * 4 + [55] * 2,
            "sex": ["{F,M}"] * 4 + ["{M}"] * 2,
            "s": ["a", "a", "a", "b", "b", "b"],
        }
    )
    for col, (group, value) in edits.items():
        rows.loc[rows["qi_group"] == group, col] = value
    return rows


def test_the_true_boxes_fit_and_an_edited_box_is_named_with_its_values():
    assert coverage_problems(released(), ORIGINAL, POLICY) == []
    # group 10 narrowed to [30, 32]: it holds 2 of its 3 a's and none of its b
    got = coverage_problems(released(age_max=(10, 32)), ORIGINAL, POLICY)
    assert got == [
        "QI-group 10: its box holds fewer tuples of the original than the group releases with "
        "s = 'a' (2 < 3), 'b' (0 < 1)",
        WHY,
    ]
    # group 20's value set says F: none of its two M tuples is inside
    got = coverage_problems(released(sex=(20, "{F}")), ORIGINAL, POLICY)
    assert got[0].startswith(
        "QI-group 20: its box holds fewer tuples of the original than the group releases"
    )
    assert got[0].endswith("with s = 'b' (0 < 2)")


def test_two_groups_claiming_the_same_tuple_fail_though_each_alone_fits():
    # each box holds one tuple of age 30, value a, and releases one a: alone each fits (the
    # per-group count), together they need two tuples of the original where there is one
    policy = POLICY.with_overrides(k=1)
    original = pd.DataFrame({"age": [30, 40], "sex": ["F", "F"], "s": ["a", "a"]})
    rel = pd.DataFrame(
        {"qi_group": [1, 2], "age_min": [30, 30], "age_max": [30, 30], "sex": ["{F}", "{F}"], "s": ["a", "a"]}
    )
    got = coverage_problems(rel, original, policy)
    assert got[0].startswith(
        "no assignment of the original's 2 tuples fits the released QI-groups: at most 1 "
    )
    rel.loc[1, ["age_min", "age_max"]] = [40, 40]  # the second group now holds the age-40 tuple
    assert coverage_problems(rel, original, policy) == []
    # [35, 45] holds it too, but no tuple that could be the member reaches 35 or 45: widened
    rel.loc[1, ["age_min", "age_max"]] = [35, 45]
    assert coverage_problems(rel, original, policy) == [
        "QI-group 2: no assignment gives it a member with age = 35 (its age_min)",
        "QI-group 2: no assignment gives it a member with age = 45 (its age_max)",
        WHY_TIGHT,
    ]


def test_a_widened_box_or_value_set_is_named():
    """A drill: a widened box passed (only narrowing was caught), though the format promises the
    members' true minimum and maximum, their values, their lowest common node."""
    assert coverage_problems(released(age_max=(20, 60)), ORIGINAL, POLICY) == [
        "QI-group 20: no assignment gives it a member with age = 60 (its age_max)",
        WHY_TIGHT,
    ]
    # the a-tuples of group 10 are 30 F, 32 M, 35 F; its b-tuple 38 F: 29 is no member's age
    assert coverage_problems(released(age_min=(10, 29)), ORIGINAL, POLICY)[0] == (
        "QI-group 10: no assignment gives it a member with age = 29 (its age_min)"
    )
    # group 20 (50 M b, 55 M b) released as {F,M}: the F tuples have value a, so none fits it
    assert coverage_problems(released(sex=(20, "{F,M}")), ORIGINAL, POLICY) == [
        "QI-group 20: no assignment gives it a member with sex = 'F' (in its value set)",
        WHY_TIGHT,
    ]


def test_a_suppressed_tuple_needs_no_box_but_counts_once():
    # a seventh tuple that no box holds: the one tuple the release leaves out
    extra = pd.concat([ORIGINAL, pd.DataFrame({"age": [90], "sex": ["F"], "s": ["a"]})], ignore_index=True)
    assert coverage_problems(released(), extra, POLICY) == []
    # two groups claim the one tuple of age 30; the age-40 tuple could be the one suppressed,
    # but then the age-90 tuple has no place: 2 of the 3 tuples can be placed
    policy = POLICY.with_overrides(k=1)
    original = pd.DataFrame({"age": [30, 40, 90], "sex": ["F", "F", "F"], "s": ["a", "a", "a"]})
    rel = pd.DataFrame(
        {"qi_group": [1, 2], "age_min": [30, 30], "age_max": [30, 30], "sex": ["{F}", "{F}"], "s": ["a", "a"]}
    )
    got = coverage_problems(rel, original, policy)
    assert got[0].endswith("at most 2 can be placed inside a box with their own s or among the 1 suppressed")


def test_verify_view_and_the_cli_refuse_an_edited_box(tmp_path):
    policy = POLICY.with_overrides(id="rid")
    original = ORIGINAL.assign(rid=range(6))
    report = verify_view(released(age_max=(10, 32)), original, policy)
    assert not report.ok and WHY in report.problems
    assert verify_view(released(), original, policy).ok
    from dpriv.cli import app

    released(age_max=(10, 32)).to_parquet(tmp_path / "r.parquet", index=False)
    original.to_csv(tmp_path / "o.csv", index=False)
    (tmp_path / "p.toml").write_text(
        '[columns]\nid = "rid"\nqi = ["age", "sex"]\nsensitive = "s"\n[privacy]\nk = 2\nt = 1.0\n'
        '[kinds]\nsex = "categorical"\n[domains]\nage = [0, 100]\n'
    )
    args = ["verify", str(tmp_path / "r.parquet"), "--original", str(tmp_path / "o.csv")]
    res = CliRunner().invoke(app, [*args, "--policy", str(tmp_path / "p.toml")])
    assert res.exit_code == 2 and "QI-group 10: its box holds fewer tuples" in res.output, res.output


def _view(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": rng.integers(20, 70, n),
            "weight": rng.normal(70, 9, n).round(1),
            "sex": rng.choice(["F", "M"], n),
            "s": rng.choice(list("abcde"), n),
        }
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_true_release_fits_its_original(seed):
    # no false alarm: what dpriv releases (some tuples suppressed or not) always fits
    view = _view(400, seed)
    policy = dict(id="rid", qi=["age", "weight", "sex"], sensitive="s", k=5, t=0.3, j=1.0, seed=seed)
    policy["kinds"] = {"sex": "categorical"}
    result = anonymize(view, policy)
    assert coverage_problems(result.released, _prepared(view, result.policy), result.policy) == []
    # the same release against another view of the same size does not fit
    assert coverage_problems(result.released, _prepared(_view(400, seed + 10), result.policy), result.policy)


def _prepared(view: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    from dpriv.inputs import prepared

    return prepared(view, policy)[0]


@pytest.mark.parametrize("seed", [0, 3])
def test_the_sorted_candidates_and_the_matrix_give_the_same_edges(seed, monkeypatch):
    import dpriv.anonymity.coverage as cov

    view = _view(300, seed)
    policy = dict(id="rid", qi=["age", "weight", "sex"], sensitive="s", k=4, t=0.5, j=2.0, seed=seed)
    result = anonymize(view, {**policy, "kinds": {"sex": "categorical"}})
    rel, pol = result.released, result.policy
    labels, g = np.unique(rel["qi_group"].to_numpy(), return_inverse=True)
    s_rel = pd.Categorical(rel["s"], categories=pol.sensitive_domain).codes.astype(np.int64)
    s_orig = pd.Categorical(view["s"], categories=pol.sensitive_domain).codes.astype(np.int64)
    pairs = np.unique(g * 5 + s_rel)
    boxes = cov._boxes(rel.iloc[np.unique(g, return_index=True)[1]], _prepared(view, pol), pol)
    edges = {}
    for name, factor in (("sorted", 0), ("matrix", 10**9)):
        monkeypatch.setattr(cov, "SORTED_FACTOR", factor)
        left, right = cov._edges(boxes, s_orig, pairs, 5, labels.size)
        edges[name] = sorted(zip(left.tolist(), right.tolist()))
    assert (
        edges["sorted"] == edges["matrix"] and len(edges["matrix"]) >= len(view) - result.metrics.n_suppressed
    )


def _narrowed(rel: pd.DataFrame, col: str, value) -> pd.DataFrame:
    """``rel`` with column ``col`` of its largest QI-group set to ``value``."""
    big = rel["qi_group"].value_counts().index[0]
    out = rel.copy()
    out.loc[out["qi_group"] == big, col] = value
    return out


def test_date_bounds_and_hierarchy_nodes_are_held_to_the_original(tmp_path):
    rng = np.random.default_rng(4)
    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 300, 120), unit="D")
    view = pd.DataFrame({"rid": range(120), "adm": days, "s": rng.choice(list("abc"), 120)})
    policy = ReleasePolicy(id="rid", qi=["adm"], sensitive="s", k=4, t=1.0, j=10.0, kinds={"adm": "date"})
    res = anonymize(view, policy)
    assert verify_view(res.released, view, res.policy).ok
    edited = _narrowed(res.released, "adm_max", res.released["adm_min"].min())  # one day, the first
    report = verify_view(edited, view, res.policy)
    assert not report.ok and WHY in report.problems, report.problems
    # widened: a group's last day moved one day after its last member's
    rel, label = res.released, res.released["qi_group"].iloc[0]
    day = pd.to_datetime(rel.loc[rel["qi_group"] == label, "adm_max"].iloc[0]) + pd.Timedelta(days=1)
    later = pd.to_datetime(view["adm"]).dt.normalize() == day
    assert not later.any(), "no tuple of the original falls on that day (else it may be a member)"
    edited = rel.copy()
    edited["adm_max"] = edited["adm_max"].astype(object)
    edited.loc[edited["qi_group"] == label, "adm_max"] = day.date()
    report = verify_view(edited, view, res.policy)
    assert report.problems[:2] == [
        f"QI-group {label}: no assignment gives it a member with adm = {day.date()} (its adm_max)",
        WHY_TIGHT,
    ], report.problems
    # a city released as the node of its hierarchy: another country's node admits none of them
    (tmp_path / "city.csv").write_text(
        "Metz;Lorraine;France;*\nNancy;Lorraine;France;*\nBerlin;BB;Germany;*\n"
    )
    view = pd.DataFrame(
        {"rid": range(120), "city": rng.choice(["Metz", "Nancy"], 120), "s": rng.choice(list("abc"), 120)}
    )
    policy = ReleasePolicy(
        id="rid",
        qi=["city"],
        sensitive="s",
        k=4,
        t=1.0,
        j=10.0,
        hierarchies={"city": str(tmp_path / "city.csv")},
    )
    res = anonymize(view, policy)
    assert verify_view(res.released, view, res.policy).ok
    report = verify_view(_narrowed(res.released, "city", "Germany"), view, res.policy)
    assert not report.ok and WHY in report.problems, report.problems
    # widened: a group of Metz tuples released as Lorraine or as the root. Its members could only
    # be Nancy tuples if the Nancy group took a Metz one, which its node does not admit
    original = pd.DataFrame({"city": ["Metz", "Metz", "Nancy", "Nancy"], "s": ["a", "b", "a", "b"]})
    policy = res.policy.with_overrides(k=2)
    rel = pd.DataFrame(
        {"qi_group": [1, 1, 2, 2], "city": ["Metz", "Metz", "Nancy", "Nancy"], "s": list("abab")}
    )
    assert coverage_problems(rel, original, policy) == []
    for node in ("Lorraine", "*"):
        assert coverage_problems(rel.replace({"city": {"Metz": node}}), original, policy) == [
            f"QI-group 1: city is released as {node!r}, but every assignment of the original gives it "
            "members under 'Metz'",
            WHY_TIGHT,
        ]
    # both groups Lorraine: a Metz and a Nancy tuple may swap, so each node is some assignment's
    both = rel.assign(city="Lorraine")
    assert coverage_problems(both, original, policy) == []
    assert coverage_problems(both.assign(city="France"), original, policy)[0].endswith(
        "members under 'Lorraine'"
    )


def test_verify_takes_categorical_as_anonymize_does(tmp_path):
    """A drill: a release made with ``anonymize --categorical sex`` could only be checked with a
    policy file declaring [kinds]; verify now takes the flag, and an edited value set fails."""
    from dpriv.cli import app

    view = _view(200, 5)
    view["sex"] = view["sex"].map({"F": 1, "M": 2})  # coded: numeric unless declared categorical
    view.to_csv(tmp_path / "v.csv", index=False)
    flags = ["--id", "rid", "--qi", "age,weight,sex", "--sensitive", "s", "--k", "4", "--t", "0.5"]
    out = tmp_path / "r.parquet"
    res = CliRunner().invoke(app, ["anonymize", str(tmp_path / "v.csv"), "--out", str(out), *flags,
                                   "--j", "2", "--categorical", "sex"])  # fmt: skip
    assert res.exit_code == 0, res.output
    check = ["verify", str(out), "--original", str(tmp_path / "v.csv"), *flags]
    res = CliRunner().invoke(app, check)
    assert res.exit_code == 2 and "declare it: --categorical sex or [kinds]" in res.output, res.output
    res = CliRunner().invoke(app, [*check, "--categorical", "sex"])
    assert res.exit_code == 0 and "ok: True" in res.output, res.output
    rel = pd.read_parquet(out)
    rel["sex"] = rel["sex"].map({"{1}": "{2}", "{2}": "{1}"}).fillna(rel["sex"])
    rel.to_parquet(tmp_path / "swapped.parquet", index=False)
    check[1] = str(tmp_path / "swapped.parquet")
    res = CliRunner().invoke(app, [*check, "--categorical", "sex"])
    assert res.exit_code == 2 and "its box holds fewer tuples of the original" in res.output, res.output


@pytest.mark.parametrize("seed", [0, 1])
def test_every_method_releases_tight_boxes(seed):
    """No false alarm from the tightness check: each method's true release (the scan, the
    top-down split, the exit guard, the Mondrian baselines, the histogram) fits its original."""
    from dpriv.baselines import METHODS, baseline_view

    view = _view(400, seed)
    base = dict(id="rid", qi=["age", "weight", "sex"], sensitive="s", k=5, t=0.4, j=1.5, seed=seed)
    base["kinds"] = {"sex": "categorical"}
    for extra in ({}, {"grouping": "topdown"}, {"exit_values": ["d", "e"]}):
        res = anonymize(view, {**base, **extra})
        assert coverage_problems(res.released, _prepared(view, res.policy), res.policy) == [], extra
    prepared = _prepared(view, res.policy)
    for method in METHODS[1:]:
        out = baseline_view(prepared, res.policy.with_overrides(exit_values=[]), method)
        assert coverage_problems(out.released, prepared, res.policy) == [], method


def test_groups_that_together_claim_too_few_tuples_are_named():
    """The flow's failure named no group: the groups whose boxes together hold fewer tuples of a
    value than they release are named (each alone fits), with the value and both counts."""
    policy = POLICY.with_overrides(k=1)
    original = pd.DataFrame({"age": [30, 40, 90], "sex": ["F", "F", "F"], "s": ["a", "a", "a"]})
    rel = pd.DataFrame(
        {"qi_group": [1, 2], "age_min": [30, 30], "age_max": [30, 30], "sex": ["{F}", "{F}"], "s": ["a", "a"]}
    )
    got = coverage_problems(rel, original, policy)
    assert got[1:] == [
        "QI-groups 1, 2 release 2 tuples with s = 'a' between them; their boxes hold 1 tuple(s) of the "
        "original with that value",
        WHY,
    ]


def test_a_duplicated_row_is_named_by_its_groups_and_value():
    """A drill: a released row duplicated failed only with "sensitive values ["'b' (4 > 3)"]
    ...", naming no QI-group (the boxes were not checked once the release held more tuples than
    the original). Here the two groups' boxes overlap, so each alone still fits."""
    policy = POLICY.with_overrides(id="rid")
    rel = released(age_max=(10, 55), age_min=(20, 30), sex=(20, "{F,M}"))
    rel = pd.concat([rel, rel.iloc[[4]]], ignore_index=True)  # a b of group 20 twice
    report = verify_view(rel, ORIGINAL.assign(rid=range(6)), policy)
    assert not report.ok
    assert report.problems[-3:] == [
        "the release holds 7 tuples, more than the 6 of the view: a released row was duplicated or "
        "added, or the original is not the view it was made from",
        "QI-groups 10, 20 release 4 tuples with s = 'b' between them; their boxes hold 3 tuple(s) of the "
        "original with that value",
        WHY,
    ]
    assert (
        "sensitive value(s) 'b' (4 > 3) are released more often than the original view holds them: a "
        "released row was duplicated or added" in report.problems[0]
    )


def test_verify_of_a_release_with_a_duplicated_row_names_the_group(tmp_path):
    from dpriv.cli import app

    _view(200, 6).to_csv(tmp_path / "v.csv", index=False)
    flags = ["--id", "rid", "--qi", "age,weight,sex", "--sensitive", "s", "--k", "4", "--t", "0.5"]
    out = tmp_path / "r.parquet"
    res = CliRunner().invoke(
        app, ["anonymize", str(tmp_path / "v.csv"), "--out", str(out), *flags, "--j", "2"]
    )
    assert res.exit_code == 0, res.output
    rel = pd.read_parquet(out)
    row = rel.iloc[[len(rel) // 2]]
    pd.concat([rel, row], ignore_index=True).to_parquet(tmp_path / "dup.parquet", index=False)
    res = CliRunner().invoke(
        app, ["verify", str(tmp_path / "dup.parquet"), "--original", str(tmp_path / "v.csv"), *flags]
    )
    assert res.exit_code == 2, res.output
    fails = [line for line in res.output.splitlines() if "FAIL" in line]
    group, value = row["qi_group"].item(), row["s"].item()
    named = [x for x in fails if str(group) in x]  # its line (with the groups sharing its tuples)
    assert named and all(x.startswith("  FAIL QI-group") and f"s = {value!r}" in x for x in named), fails
    assert any(f"{value!r} (" in x and "released more often" in x for x in fails), fails
    assert not any("[" in x or "np.str_" in x for x in fails), fails

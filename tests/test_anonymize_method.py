"""``dpriv anonymize --method`` (the Mondrian baselines on one table) and the baselines' own
parameters as flags (``--l``, ``--bt-b``, ``--bt-t`` of anonymize and release, ``--l`` of verify).

The hand case: 12 people whose age and zip rise together, so every median cut of strict
Mondrian (on either QI) splits them by id: 12 -> 6 + 6 -> 3 + 3 (a 3 cannot split into two
groups of k = 2). Diseases by id 1..12: flu cold hiv | flu cold hiv | flu flu cold | hiv flu cold.
"""

import json

import pandas as pd
import pytest

ROWS = [
    (1, 20, 100, "flu"),
    (2, 21, 101, "cold"),
    (3, 22, 102, "hiv"),
    (4, 23, 103, "flu"),
    (5, 24, 104, "cold"),
    (6, 30, 200, "hiv"),
    (7, 31, 201, "flu"),
    (8, 32, 202, "flu"),
    (9, 33, 203, "cold"),
    (10, 34, 204, "hiv"),
    (11, 40, 300, "flu"),
    (12, 41, 301, "cold"),
]
COLS = ["--id", "id", "--qi", "age,zip", "--sensitive", "disease", "--k", "2"]


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "people.csv"
    pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"]).to_csv(path, index=False)
    return path


def _boxes(path) -> dict[tuple[int, int], set[str]]:
    """The released groups as {(age_min, age_max): their distinct diseases}."""
    rel = pd.read_csv(path)
    return {
        (int(g.age_min.iloc[0]), int(g.age_max.iloc[0])): set(g.disease)
        for _, g in rel.groupby("qi_group", sort=False)
    }


def test_mondrian_l_groups_as_cut_by_hand_and_l_reaches_the_cut(cli, table, tmp_path):
    # l = 3: {7,8,9} holds flu, flu, cold (2 values), so the cut of 7..12 is not allowable
    out3 = tmp_path / "l3.csv"
    res = cli("anonymize", table, "--out", out3, *COLS, "--method", "mondrian-l", "--l", "3")
    assert res.exit_code == 0, res.output
    assert _boxes(out3) == {
        (20, 22): {"flu", "cold", "hiv"},
        (23, 30): {"flu", "cold", "hiv"},
        (31, 41): {"flu", "cold", "hiv"},
    }
    # l = 2: it is ({7,8,9}: flu, cold; {10,11,12}: hiv, flu, cold)
    out2 = tmp_path / "l2.csv"
    assert cli("anonymize", table, "--out", out2, *COLS, "--method", "mondrian-l", "--l", "2").exit_code == 0
    assert _boxes(out2) == {
        (20, 22): {"flu", "cold", "hiv"},
        (23, 30): {"flu", "cold", "hiv"},
        (31, 33): {"flu", "cold"},
        (34, 41): {"hiv", "flu", "cold"},
    }
    m3, m2 = (json.loads((tmp_path / f"l{i}.csv.metrics.json").read_text()) for i in (3, 2))
    assert (m3["l_achieved"], m3["n_groups"], m2["l_achieved"], m2["n_groups"]) == (3, 3, 2, 4)
    # the summary marks what mondrian-l measures without bounding it; k and l bare
    lines = res.stdout.splitlines()
    assert "            k_achieved: 3" in lines and "            l_achieved: 3" in lines
    assert any(
        x.startswith("            j_achieved: ") and x.endswith("(measured; mondrian-l does not promise j)")
        for x in lines
    )
    # EMD (equal ground) of {flu, cold, hiv} and of {3 flu, 2 cold, 1 hiv} against the view's
    # 5/12, 4/12, 3/12: (1/12 + 1/12) / 2 each
    assert "            t_achieved: 0.0833  (measured; mondrian-l does not promise t)" in lines
    assert "  method: mondrian-l" in res.stderr and "l=3 [flag]" in res.stderr
    # the JS threshold is printed as JS-reduce's, unused here (it read as a bound of this release)
    assert " j=0.1 [default; jsreduce only, unused by mondrian-l] " in res.stderr
    assert " rbk_closeness=- [default; jsreduce only, unused by mondrian-l]" in res.stderr


def test_a_given_j_is_marked_as_unused_by_mondrian_t(cli, table, tmp_path):
    args = ["--method", "mondrian-t", "--t", "0.5", "--j", "0.8"]
    res = cli("anonymize", table, "--out", tmp_path / "t.csv", *COLS, *args)
    assert res.exit_code == 0, res.output
    assert " t=0.5 [flag] j=0.8 [flag; jsreduce only, unused by mondrian-t] " in res.stderr
    assert " persistent_groups=False [default; jsreduce only, unused by mondrian-t] " in res.stderr
    assert " l=3 [default; mondrian-l only] " in res.stderr  # the other baseline's, as before


def test_a_mondrian_cut_in_the_policy_is_marked_as_unused_by_jsreduce(cli, table, tmp_path):
    """The reverse of j under a baseline: the Mondrian baselines' median cut, set in the policy,
    is read by mondrian-l/t/bt alone; JS-reduce (and histogram, one group) print it marked."""
    policy = tmp_path / "p.toml"
    policy.write_text('[privacy]\nmax_suppression = 0.5\n[release]\nmondrian_cut = "relaxed"\n')
    loose = ["--t", "1", "--j", "10"]
    js = cli("anonymize", table, "--out", tmp_path / "js.csv", "--policy", policy, *COLS, *loose)
    assert js.exit_code == 0, js.output
    assert " mondrian_cut=relaxed [file; mondrian-l/t/bt only, unused by jsreduce] " in js.stderr
    assert " j=10.0 [flag] " in js.stderr  # JS-reduce's own: unmarked
    mt = cli(
        "anonymize", table, "--out", tmp_path / "mt.csv", "--policy", policy, *COLS, "--method", "mondrian-t"
    )
    assert mt.exit_code == 0, mt.output
    assert " mondrian_cut=relaxed [file] " in mt.stderr, mt.stderr


@pytest.mark.parametrize(
    ("method", "marked"),
    [
        ("jsreduce", "mondrian_cut=strict [default; mondrian-l/t/bt only, unused by jsreduce]"),
        ("histogram", "mondrian_cut=strict [default; mondrian-l/t/bt only, unused by histogram]"),
        ("mondrian-l", "mondrian_cut=strict [default] "),
        ("mondrian-bt", "mondrian_cut=strict [default] "),
    ],
)
def test_the_printed_policy_marks_the_mondrian_cut_by_method(method, marked):
    from dpriv.cli.effective import EffectivePolicy
    from dpriv.policy import ReleasePolicy

    eff = EffectivePolicy(ReleasePolicy(qi=["age"], sensitive="disease"), method=method)
    assert marked in "\n".join(eff.lines()) + " "


def test_the_independent_verifier_holds_the_release_to_verify_l(cli, table, tmp_path):
    out = tmp_path / "l3.csv"
    assert cli("anonymize", table, "--out", out, *COLS, "--method", "mondrian-l", "--l", "3").exit_code == 0
    (tmp_path / "l3.csv.metrics.json").unlink()  # no recorded method: the flags say it
    check = ["verify", out, "--original", table, *COLS, "--method", "mondrian-l"]
    ok = cli(*check, "--l", "3")
    assert ok.exit_code == 0, ok.output
    assert "l_achieved: 3" in ok.stdout
    # held to l = 4, a group of 3 fails it (as --k 4 would fail its size)
    bad = cli(*check, "--l", "4")
    assert bad.exit_code == 2 and "FAIL" in bad.stdout and "l = 4" in bad.stdout, bad.output


def test_verify_reads_the_method_and_l_that_anonymize_recorded(cli, table, tmp_path):
    out = tmp_path / "l3.csv"
    assert cli("anonymize", table, "--out", out, *COLS, "--method", "mondrian-l", "--l", "3").exit_code == 0
    recorded = json.loads((tmp_path / "l3.csv.metrics.json").read_text())
    assert (recorded["method"], recorded["method_parameters"]) == ("mondrian-l", {"l": 3})
    # no --method, no --l: held to k and l = 3 (as JS-reduce it would fail t = 0.3: EMD 1/12
    # passes, so the proof is the method line and l's source)
    check = ["verify", out, "--original", table, *COLS]
    ok = cli(*check)
    assert ok.exit_code == 0, ok.output
    assert "method: mondrian-l (checked: k, l)" in ok.stdout
    assert "l=3 [recorded in l3.csv.metrics.json]" in ok.stderr
    # the same l given: as recorded; another l is asked of the file and measured (session 47):
    # l 2 holds, l 4 fails each of the 3 groups (the table holds 3 diseases), the recorded l beside
    assert cli(*check, "--l", "3").exit_code == 0
    made_with = "the file was made with l 3, recorded in l3.csv.metrics.json)"
    two = cli(*check, "--l", "2")
    assert two.exit_code == 0 and f"checked at: l 2 (asked by --l 2; {made_with}" in two.stdout, two.output
    bad = cli(*check, "--l", "4")
    assert bad.exit_code == 2, bad.output
    assert f"checked at: l 4 (asked by --l 4; {made_with}" in bad.stdout, bad.stdout
    assert sum(line.startswith("  FAIL") and "l = 4" in line for line in bad.stdout.splitlines()) == 3
    other = cli(*check, "--method", "mondrian-t")
    assert other.exit_code == 2, other.output
    assert "--method mondrian-t:" in other.stderr and "--method mondrian-l" in other.stderr


def test_the_recorded_l_replaces_the_default_l(cli, table, tmp_path):
    # l = 2 releases {7,8,9} (flu, cold): held to the default l = 3 it would FAIL; recorded, it passes
    out = tmp_path / "l2.csv"
    assert cli("anonymize", table, "--out", out, *COLS, "--method", "mondrian-l", "--l", "2").exit_code == 0
    ok = cli("verify", out, "--original", table, *COLS, "--method", "mondrian-l")
    assert ok.exit_code == 0 and "l_achieved: 2" in ok.stdout, ok.output
    assert "l=2 [recorded in l2.csv.metrics.json]" in ok.stderr
    # an edited record (an unknown method) is refused, not trusted
    path = tmp_path / "l2.csv.metrics.json"
    path.write_text(path.read_text().replace('"mondrian-l"', '"mondrian-x"'))
    bad = cli("verify", out, "--original", table, *COLS)
    assert bad.exit_code == 2 and "'mondrian-x'" in bad.stderr and str(path) in bad.stderr, bad.output


@pytest.mark.pycanon
def test_pycanon_measures_the_l_of_the_mondrian_l_release(cli, table, tmp_path):
    anonymity = pytest.importorskip("pycanon.anonymity")
    out = tmp_path / "l3.csv"
    assert cli("anonymize", table, "--out", out, *COLS, "--method", "mondrian-l", "--l", "3").exit_code == 0
    rel = pd.read_csv(out, dtype=str)
    d = pd.DataFrame(
        {
            "age": "[" + rel.age_min + "," + rel.age_max + "]",
            "zip": "[" + rel.zip_min + "," + rel.zip_max + "]",
            "disease": rel.disease,
        }
    )
    assert anonymity.l_diversity(d, ["age", "zip"], ["disease"]) == 3
    assert anonymity.k_anonymity(d, ["age", "zip"]) == 3


def test_bt_t_reaches_the_mondrian_bt_cut(cli, table, tmp_path):
    # plain JS in bits is at most 1: bt_t = 1 allows every cut, so the groups are k's alone
    out = tmp_path / "bt.csv"
    res = cli(
        "anonymize", table, "--out", out, *COLS, "--method", "mondrian-bt", "--bt-t", "1", "--bt-b", "0.5"
    )
    assert res.exit_code == 0, res.output
    assert sorted(_boxes(out)) == [(20, 22), (23, 30), (31, 33), (34, 41)]
    assert "bt_b=0.5 [flag] bt_t=1.0 [flag]" in res.stderr
    # bt_t = 0: no tuple's posterior equals its prior in a group of three values: refused at the root
    none = tmp_path / "bt0.csv"
    res = cli("anonymize", table, "--out", none, *COLS, "--method", "mondrian-bt", "--bt-t", "0")
    assert res.exit_code == 2 and "raise bt_t or bt_b ([privacy], --bt-t, --bt-b)" in res.stderr, res.output
    assert not none.exists() and not none.with_name("bt0.csv.metrics.json").exists()


BAD = [
    (["--method", "mondrian-l", "--l", "0"], "--l must be a whole number >= 1, not '0'"),
    (["--method", "mondrian-bt", "--bt-b", "0"], "--bt-b must be a number in (0, inf), not '0'"),
    (["--method", "mondrian-bt", "--bt-b", "-0.1"], "--bt-b must be a number in (0, inf), not '-0.1'"),
    (["--method", "mondrian-bt", "--bt-t", "-1"], "--bt-t must be a number in [0, inf), not '-1'"),
    (["--method", "mondrian-x"], "unknown method 'mondrian-x'; choose one of ['jsreduce', 'mondrian-l',"),
]


@pytest.mark.parametrize(("flags", "named"), BAD)
def test_bad_baseline_values_exit_2_naming_the_flag_and_write_nothing(cli, table, tmp_path, flags, named):
    out = tmp_path / "out.csv"
    res = cli("anonymize", table, "--out", out, *COLS, *flags)
    assert res.exit_code == 2 and named in res.output and "Traceback" not in res.output, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["people.csv"]
    history = tmp_path / "history.csv"
    pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"]).assign(view=1).to_csv(history, index=False)
    res = cli(
        "release",
        history,
        "--ledger",
        tmp_path / "led",
        *COLS,
        "--time",
        "view",
        *flags,
    )
    assert res.exit_code == 2 and named in res.output and "Traceback" not in res.output, res.output
    assert not (tmp_path / "led").exists()


@pytest.mark.parametrize(
    ("key", "method"),
    [
        ("rbk_closeness = 0.5", "mondrian-l"),
        ("posterior_bound = 0.9", "mondrian-t"),
        ("rbk_closeness = 1.0", "jsreduce"),
    ],
)
def test_a_field_only_jsreduce_applies_is_refused_with_a_baseline(cli, table, tmp_path, key, method):
    policy = tmp_path / "p.toml"
    policy.write_text(f"[privacy]\nt = 1\nj = 5\n{key}\n")
    out = tmp_path / "out.csv"
    res = cli("anonymize", table, "--out", out, "--policy", policy, *COLS, "--method", method)
    if method == "jsreduce":  # the control: the same file with JS-reduce's own field is released
        assert res.exit_code == 0, res.output
        return
    field = key.split(" ")[0]
    assert res.exit_code == 2, res.output
    assert f"{field} is applied by JS-reduce's grouping; method '{method}' would ignore it" in res.stderr
    assert not out.exists() and not out.with_name("out.csv.metrics.json").exists()


def test_anatomy_is_refused_with_a_baseline(cli, table, tmp_path):
    out = tmp_path / "out.csv"
    res = cli(
        "anonymize", table, "--out", out, *COLS, "--method", "mondrian-t", "--release-format", "anatomy"
    )
    assert res.exit_code == 2 and "use --method jsreduce" in res.stderr, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["people.csv"]


def test_a_baseline_metrics_file_has_the_keys_of_a_jsreduce_one(cli, table, tmp_path):
    """metrics.json is machine-read: a baseline's has the same keys (their values measured)."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    jsr = cli("anonymize", table, "--out", a, *COLS, "--t", "1", "--j", "5")
    assert jsr.exit_code == 0, jsr.output
    assert "(measured" not in jsr.stdout and "method:" not in jsr.stderr  # JS-reduce's summary as it was
    assert cli("anonymize", table, "--out", b, *COLS, "--method", "mondrian-t", "--t", "1").exit_code == 0
    ka, kb = (json.loads(p.with_name(p.name + ".metrics.json").read_text()) for p in (a, b))
    assert set(ka) == set(kb) and isinstance(kb["j_achieved"], float)


def test_release_takes_l_records_it_and_shows_min_l(cli, table, tmp_path):
    history = tmp_path / "history.csv"
    frame = pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"])
    week2 = frame.assign(view=2, disease=[*frame.disease[:10], "cold", "flu"])  # 11 and 12 swap
    pd.concat([frame.assign(view=1), week2]).to_csv(history, index=False)
    led = tmp_path / "led"
    res = cli(
        "release", history, "--ledger", led, *COLS, "--time", "view", "--method", "mondrian-l", "--l", "2"
    )
    assert res.exit_code == 0, res.output
    assert json.loads((led / "policy.json").read_text())["l"] == 2
    header, *rows = [x for x in res.stdout.splitlines() if x.lstrip().startswith(("release ", "1 ", "2 "))]
    assert header.split()[:5] == ["release", "groups", "suppression", "min_l", "max_emd"]
    assert [r.split()[3] for r in rows] == ["2", "2"]  # the hand case's l = 2 groups, each view
    assert (
        "note: max_emd and max_js are measured, not bounded: method mondrian-l does not promise t and j"
        in res.stderr
    )


def test_the_release_table_says_which_columns_a_method_does_not_bound():
    from dpriv.cli.release_table import measured_note, release_header
    from dpriv.criteria import unpromised

    # GUARANTEES: mondrian-l k, l; mondrian-t k, t; mondrian-bt k; histogram k, t
    assert [unpromised(m) for m in ("mondrian-l", "mondrian-t", "mondrian-bt", "histogram")] == [
        ["t", "j"],
        ["l", "j"],
        ["l", "t", "j"],
        ["l", "j"],
    ]
    assert unpromised("jsreduce") == []
    assert measured_note("jsreduce") is None  # k, t and j are its criteria
    assert measured_note("mondrian-t") == (
        "note: max_js is measured, not bounded: method mondrian-t does not promise j (it promises k, t; "
        "docs/policy.md)"
    )
    assert measured_note("histogram").startswith("note: max_js is measured, not bounded: method histogram")
    assert measured_note("mondrian-bt").endswith(
        "does not promise t and j (it promises k, (B,t); docs/policy.md)"
    )
    # min_l only under mondrian-l, max_tv only with rbk_closeness: the JS-reduce header as it was
    assert release_header().split() == [
        "release",
        "groups",
        "suppression",
        "max_emd",
        "max_js",
        "semi",
        "seconds",
    ]
    assert release_header(True, "mondrian-l").split()[3:6] == ["min_l", "max_emd", "max_js"]
    assert "max_tv" in release_header(True) and "min_l" not in release_header(True, "mondrian-t")


@pytest.mark.parametrize(
    "method", ["mondrian-l", "mondrian-t", pytest.param("mondrian-bt", marks=pytest.mark.slow), "histogram"]
)
def test_anonymize_releases_what_release_history_releases_of_one_view(tmp_path, method):
    """Two paths to one baseline release (one_view's and the loop's, whose verification and seed
    mixing are their own): a view anonymized is byte for byte its history of one view released."""
    from conftest import random_view

    from dpriv.policy import ReleasePolicy
    from dpriv.release import anonymize, release_history

    view = random_view(90, seed=4)
    policy = ReleasePolicy(qi=["age", "gender", "weight"], sensitive="exam_result", k=4, l=2, t=0.5, bt_t=0.5)
    one = anonymize(view, policy, method=method)
    led = release_history(
        view.assign(view=1), policy.with_overrides(time="view"), tmp_path / "L", method=method
    )
    pd.testing.assert_frame_equal(
        one.released.reset_index(drop=True), led.read_view(1).reset_index(drop=True)
    )
    groups = one.metrics["n_groups"]
    assert one.method == method and groups == led.read_metrics(1)["n_groups"]
    assert (groups == 1) == (method == "histogram")  # the baselines cut the 90 tuples


def test_a_dask_view_anonymized_by_a_baseline_is_the_pandas_release():
    """The baselines group in memory: a Dask view is collected first, whatever its partitions."""
    import dask.dataframe as dd
    from conftest import random_view

    from dpriv.policy import ReleasePolicy
    from dpriv.release import anonymize

    view = random_view(90, seed=5)
    policy = ReleasePolicy(qi=["age", "gender", "weight"], sensitive="exam_result", k=4, l=2)
    here = anonymize(view, policy, method="mondrian-l")
    there = anonymize(dd.from_pandas(view, npartitions=3), policy, method="mondrian-l")
    pd.testing.assert_frame_equal(here.released, there.released)
    assert here.metrics["l_achieved"] >= 2 and here.metrics["n_groups"] > 1

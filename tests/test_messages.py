"""Messages that lead to the fix (fresh-user findings): each refusal exits 2 and its message
names the column/row/value and the working fix; each hint is printed without refusing."""

import shlex
import shutil

import pandas as pd
import pytest
from loose_history import write_loose
from test_cli import assert_refused
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import LedgerError
from dpriv.ledger import Ledger
from dpriv.policy_base import BASE_FILE


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    write_loose(out, n_views=2, view_size=80, seed=3)
    return out


# -- 1. a recorded policy's knowledge paths, run from another folder ---------------------------
def _first_release(cli, generated, tmp_path):
    """View 1 released with --policy into tmp/other/L9; the history copied next to it."""
    other = tmp_path / "other"
    other.mkdir()
    hist = pd.read_parquet(generated / "history.parquet")
    hist.to_parquet(other / "h.parquet", index=False)
    hist[hist["view"] == 1].to_parquet(other / "h1.parquet", index=False)
    pol = generated / "policy.toml"
    res = cli("release", other / "h1.parquet", "--ledger", other / "L9", "--policy", pol)
    assert res.exit_code == 0, res.output
    return other


@pytest.mark.slow
def test_release_without_policy_finds_knowledge_of_the_recorded_policy(cli, generated, tmp_path, monkeypatch):
    other = _first_release(cli, generated, tmp_path)
    assert (other / "L9" / BASE_FILE).is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = cli("release", other / "h.parquet", "--ledger", other / "L9")
    assert res.exit_code == 0, res.output
    assert "ledger" in res.output and (other / "L9" / "releases" / "2").is_dir()


@pytest.mark.slow
def test_older_ledger_without_recorded_folder_says_pass_policy(cli, generated, tmp_path, monkeypatch):
    other = _first_release(cli, generated, tmp_path)
    (other / "L9" / BASE_FILE).unlink()  # a ledger written before the folder was recorded
    monkeypatch.chdir(tmp_path)
    res = cli("release", other / "h.parquet", "--ledger", other / "L9")
    assert_refused(res, r"knowledge/dk\.npz", r"pass --policy FILE \(knowledge paths are relative to it\)")
    assert not (other / "L9" / "releases" / "2").exists()
    # the fix the message names works
    res = cli("release", other / "h.parquet", "--ledger", other / "L9", "--policy", generated / "policy.toml")
    assert res.exit_code == 0, res.output


def test_attack_without_policy_uses_the_recorded_folder(cli, generated, tmp_path):
    other = _first_release(cli, generated, tmp_path)
    moved = tmp_path / "moved.parquet"
    shutil.copy(other / "h1.parquet", moved)
    res = cli("attack", other / "L9", "--history", moved, "--knowledge", "dk")
    assert res.exit_code == 0, res.output
    (other / "L9" / BASE_FILE).unlink()
    res = cli("attack", other / "L9", "--history", moved, "--knowledge", "dk")
    assert_refused(res, r"pass --policy FILE \(knowledge paths are relative to it\)")


# -- 2. a refusal whose fix is a policy change, on a ledger that holds releases ---------------
def test_suppression_refusal_says_a_changed_policy_needs_a_new_ledger():
    from dpriv.errors import PolicyError
    from dpriv.metrics.release import require
    from dpriv.policy import ReleasePolicy

    ok = type("Report", (), {"ok": True, "problems": []})()
    pol = ReleasePolicy(qi=["age"], sensitive="s", max_suppression=0.1)
    with pytest.raises(PolicyError) as err:
        require(ok, pol, 40, 8, "release 4", committed=3)
    msg = str(err.value)
    assert "suppression 20.00% exceeds max_suppression 10.00% (8 of 40 tuples)" in msg
    assert "[privacy] max_suppression in the policy (releases 1..3 are committed" in msg
    assert "needs a new ledger" in msg and "--ledger NEW" in msg
    with pytest.raises(PolicyError) as err:  # a first release: the same ledger takes the change
        require(ok, pol, 40, 8, "release 1", committed=0)
    assert "--ledger NEW" not in str(err.value)
    require(ok, pol, 40, 4, "release 4", committed=3)  # 10% is within the bound


# -- 3. text in a numeric QI; every problem kind of a file ---------------------------------
def _anonymize_with_policy(cli, tmp_path, frame):
    from test_cli import POLICY

    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    (tmp_path / "policy.toml").write_text(POLICY)
    out = tmp_path / "out" / "released.parquet"
    out.parent.mkdir()  # an existing folder: the input is what is refused
    res = cli("anonymize", src, "--out", out, "--policy", tmp_path / "policy.toml")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    return res


def _with(frame, col, row, value):
    frame = frame.astype({col: object})
    frame.loc[row, col] = value
    return frame


def test_a_typo_in_a_numeric_qi_is_not_called_generalized(cli, tmp_path):
    from conftest import random_view

    res = _anonymize_with_policy(cli, tmp_path, _with(random_view(), "weight", 3, "heavy"))
    out = assert_refused(res, r"numeric QI 'weight' holds text that is not a number: 'heavy'", r"line 5 of")
    assert "already generalized" not in out.split("error:")[1]


def test_every_distinct_typo_of_a_declared_numeric_qi_is_named(cli, tmp_path):
    """A fresh user's drill: with a declared domain only the first bad value was named."""
    from conftest import random_view

    frame = random_view()
    for row, value in ((3, "heavy"), (5, "72kg"), (7, "heavy"), (8, "unknown")):
        frame = _with(frame, "weight", row, value)
    res = _anonymize_with_policy(cli, tmp_path, frame)
    assert_refused(
        res,
        r"numeric QI 'weight' holds text that is not a number: 'heavy', '72kg', 'unknown'; correct each",
        r"declare the QI categorical \(--categorical weight, \[kinds\] weight = \"categorical\" in the ",
        r"policy, or policy.with_overrides\(kinds=\{\*\*policy.kinds, 'weight': 'categorical'\}\) in Python",
        r"4 rows",
    )


def test_an_interval_in_a_numeric_qi_is_still_called_generalized(cli, tmp_path):
    from conftest import random_view

    res = _anonymize_with_policy(cli, tmp_path, _with(random_view(), "weight", 3, "[60-70]"))
    out = assert_refused(res, r"'weight' holds text such as '\[60-70\]'; an already generalized file")
    assert "not a number" not in out.split("error:")[1]


def test_every_problem_kind_of_a_file_is_reported(cli, tmp_path):
    from conftest import random_view

    frame = _with(_with(random_view(), "weight", 3, "72kg"), "weight", 10, None)
    frame = _with(frame, "age", 20, 99)  # outside [45, 74]
    res = _anonymize_with_policy(cli, tmp_path, frame)
    out = assert_refused(
        res,
        r"column 'weight' has missing values .*line 12",
        r"also: .*numeric QI 'weight' holds text that is not a number: '72kg';.*line 5",
        r"QI 'age' has values \[99\] outside its declared domain \[45, 74\].*line 22",
    )
    assert out.count("also:") == 1


# -- 4. ISO dates in a QI without --date ---------------------------------------------------
def _dated_view(tmp_path):
    from conftest import random_view

    frame = random_view(60, qi=("age", "gender"))
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(frame["respondent_id"] % 9 * 17, unit="D")
    frame["adm"] = days.dt.strftime("%Y-%m-%d")
    src = tmp_path / "vd.csv"
    frame.to_csv(src, index=False)
    return src


def _stderr(res):
    try:
        return res.stderr
    except ValueError:  # stderr mixed into output
        return res.output


@pytest.mark.slow
def test_dates_in_a_categorical_qi_get_a_hint_not_a_refusal(cli, tmp_path):
    src = _dated_view(tmp_path)
    args = ["--sensitive", "exam_result", "--id", "respondent_id", "--k", "3", "--t", "0.9", "--j", "5"]
    res = cli("anonymize", src, "--out", tmp_path / "o.csv", "--qi", "age,adm,gender", *args)
    assert res.exit_code == 0, res.output
    err = _stderr(res)
    assert "'adm' looks like dates: pass --date adm to release it as date intervals" in err
    assert "'gender' looks like" not in err and "'age' looks like" not in err
    res = cli("anonymize", src, "--out", tmp_path / "d.csv", "--qi", "age,adm", "--date", "adm", *args)
    assert res.exit_code == 0, res.output
    assert "looks like dates" not in _stderr(res)


def test_date_hint_only_for_all_iso_dates():
    from dpriv.input_checks import date_hints
    from dpriv.policy import ReleasePolicy

    given = ReleasePolicy(qi=["a", "b", "c"], sensitive="s")
    data = pd.DataFrame(
        {"a": ["2024-01-02", "2023-12-31"], "b": ["2024-01-02", "soon"], "c": ["2024-13-45", "2024-01-01"]}
    )
    resolved = given.with_overrides(kinds=dict.fromkeys("abc", "categorical"))
    assert [h.split("'")[1] for h in date_hints(data, given, resolved)] == ["a"]


# -- 5. exit_values with an inferred sensitive domain ----------------------------------------
@pytest.mark.slow
def test_exit_values_missing_from_an_inferred_domain_say_declare_it(cli, tmp_path):
    from conftest import random_view

    src = tmp_path / "v.csv"
    random_view().to_csv(src, index=False)  # exam_result in a, b, c
    policy = tmp_path / "p.toml"
    policy.write_text(
        '[columns]\nid = "respondent_id"\nqi = ["age", "weight"]\nsensitive = "exam_result"\n'
        '[privacy]\nk = 3\nt = 0.9\nj = 5\nmax_suppression = 1.0\nexit_values = ["a", "dead"]\n'
    )
    out = tmp_path / "o.csv"
    res = cli("anonymize", src, "--out", out, "--policy", policy)
    assert_refused(
        res,
        r"exit_values \['dead'\] are not values of the sensitive column 'exam_result'",
        r"inferred from this input \(\['a', 'b', 'c'\]\), where they do not occur",
        r"\[domains\] exam_result = \['a', 'b', 'c', 'dead'\]",
    )
    assert not out.exists()
    # the fix the message names works
    policy.write_text(policy.read_text() + "[domains]\nexam_result = ['a', 'b', 'c', 'dead']\n")
    res = cli("anonymize", src, "--out", out, "--policy", policy)
    assert res.exit_code == 0, res.output


# -- 6. small ones ----------------------------------------------------------------------------
def test_unknown_policy_key_names_table_and_closest_key(cli, tmp_path):
    from conftest import random_view

    src = tmp_path / "v.csv"
    random_view().to_csv(src, index=False)
    policy = tmp_path / "p.toml"
    policy.write_text(
        '[columns]\nid = "respondent_id"\nqi = ["age", "weight"]\nsensitive = "exam_result"\n'
        "[privacy]\nkk = 3\nt = 0.9\nj = 5\n[release]\nsed = 4\nzzzzzzzz = 1\n"
    )
    res = cli("anonymize", src, "--out", tmp_path / "o.csv", "--policy", policy)
    out = assert_refused(
        res,
        r"unknown key 'kk' in \[privacy\]; did you mean 'k'\?",
        r"unknown key 'sed' in \[release\]; did you mean 'seed'\?",
        r"unknown key 'zzzzzzzz' in \[release\]; the keys are listed in docs/policy\.md",
    )
    assert "Extra inputs" not in out and not (tmp_path / "o.csv").exists()


def test_unknown_key_of_a_dict_policy_suggests_the_closest():
    from dpriv.errors import PolicyError
    from dpriv.policy import ReleasePolicy

    with pytest.raises(PolicyError, match=r"unknown key 'max_supression'; did you mean 'max_suppression'\?"):
        ReleasePolicy.from_dict({"qi": ["a"], "sensitive": "s", "max_supression": 0.1})


def test_anonymize_of_a_history_hints_dpriv_release(cli, tmp_path):
    from conftest import random_view

    one, two = random_view(30, seed=1), random_view(30, seed=2)
    src = tmp_path / "hist.csv"
    pd.concat([one.assign(view=1), two.assign(view=2)]).to_csv(src, index=False)
    args = ["--qi", "age,weight", "--sensitive", "exam_result", "--id", "respondent_id", "--k", "3"]
    res = cli("anonymize", src, "--out", tmp_path / "o.csv", *args)
    assert_refused(
        res,
        r"duplicate 'respondent_id' within one view.*"
        r"\(60 rows: line 2, line 3",
        r"if this file is a whole history .*dpriv release FILE --ledger LEDGER .*--time view",
    )


def test_problems_message_merges_partitions_and_counts_the_rest():
    from dpriv.row_problems import problems_message
    from dpriv.rows import PROBLEM_COLUMNS, BadRow

    def row(p):
        return [BadRow(p, p, None)]

    dom = "outside its declared domain [60, 89]: widen [domains] or correct the data"
    found = [  # partition 1 then partition 2: the same problem names other example values
        (3, "weight", f"QI 'weight' has values [200] {dom}", row(40), 1),
        (1, "age", "column 'age' has missing values", row(7), 1),
        (3, "weight", f"QI 'weight' has values [5] {dom}", row(90), 1),
        (2, "w2", "numeric QI 'w2' holds text that is not a number: 'x'", row(3), 1),
        (2, "w3", "numeric QI 'w3' holds text that is not a number: 'y'", row(4), 1),
        (4, "s", "sensitive column 's' has values ['q'] not in its declared domain", row(6), 1),
    ]
    msg = problems_message(pd.DataFrame(found, columns=PROBLEM_COLUMNS), None, whole=False)
    assert msg.startswith("column 'age' has missing values (1 row: row 7); also: ")
    # by order: the two text problems, then weight once with both rows; the last one counted
    assert msg.index("'w2'") < msg.index("'w3'") < msg.index("'weight'")
    assert "has values [200]" in msg and "has values [5]" not in msg
    assert "(2 rows: row 40, row 90)" in msg
    assert "'s'" not in msg and msg.endswith("; and 1 other problem(s)")


def test_the_bad_rows_a_check_keeps_hold_no_respondent_id():
    """A bad row is named by its line or row and its view, never its id: the rows a kernel keeps
    (and a Dask worker sends back) carried each row's id all the same, unused."""
    from dpriv.rows import bad_rows

    part = pd.DataFrame({"rid": ["P-0071", "P-0072", "P-0073"], "view": [1, 2, 2], "age": [1, -5, -6]})
    rows = bad_rows(part, part["age"].to_numpy() < 0, "view")
    assert [(r.position, r.label, r.time) for r in rows] == [(1, 1, 2), (2, 2, 2)]
    assert not {v for r in rows for v in r} & set(part["rid"])


def test_missing_message_says_what_a_missing_value_is_in_a_csv_file():
    """The CSV clause is built by missing_message, given csv (it was patched into the finished
    text by a regex in problems_message, which rewrote any message so worded)."""
    from dpriv.row_problems import problems_message
    from dpriv.rows import PROBLEM_COLUMNS, BadRow, missing_message, rows_of

    clause = "; in a CSV file: an empty cell, or a text pandas reads as missing such as NA, N/A, null, NaN"
    said = missing_message("city", csv=True)
    assert said.startswith(f"column 'city' has missing values (NaN/None{clause}); ")
    assert missing_message("d", "NaN/None/NaT", every=True, csv=True).startswith(
        f"column 'd' has missing values (NaN/None/NaT{clause}) in every row: "
    )
    assert "CSV" not in missing_message("city") + missing_message("city", every=True)
    given = missing_message("city")  # a message as its kernel wrote it: not rewritten
    found = pd.DataFrame([(1, "city", given, [BadRow(0, 0, None)], 1)], columns=PROBLEM_COLUMNS)
    with rows_of("in.csv"):
        assert problems_message(found, None, whole=True).startswith(given + " (")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--views", "0"], "--views"),
        (["--view-size", "-5"], "--view-size"),
        (["--attendance", "2"], "--attendance '2': 2.0 is not a probability in (0, 1]"),
        (["--attendance", "0"], "--attendance '0': 0.0 is not a probability in (0, 1]"),
    ],
)
def test_generate_names_the_flag_not_the_python_argument(cli, tmp_path, flags, named):
    """The refusals said ``n_views must be an integer >= 1`` (the library's argument name)."""
    res = cli("generate", "medical", "--out", tmp_path / "g", *flags)
    assert res.exit_code == 2 and named in res.output, res.output
    assert "n_views" not in res.output and "view_size" not in res.output
    assert not (tmp_path / "g").exists()


# -- a command printed for copy-paste gives back its path through a shell ---------------------
def _command(text: str, start: str) -> list[str]:
    """The words of the command starting with ``start`` on its line of ``text``, as a shell splits it."""
    line = next(x for x in text.splitlines() if start in x)
    return shlex.split(line[line.index(start) :].rstrip(")"))


def test_demo_prints_the_report_command_with_its_path_quoted(tmp_path):
    out = tmp_path / "my demo's" / "out put"
    res = CliRunner().invoke(app, ["demo", "--views", "1", "--view-size", "60", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert _command(res.output, "dpriv report ") == ["dpriv", "report", str(out / "ledger")]
    assert (out / "ledger" / "manifest.json").is_file()


def test_an_empty_ledger_s_hint_quotes_its_path(tmp_path):
    root = tmp_path / "new led'ger"
    root.mkdir()
    (root / "manifest.json").write_text('{"releases": []}')  # a ledger that holds no release yet
    with pytest.raises(LedgerError, match="holds no release yet") as exc:
        Ledger(root).policy()
    words = _command(str(exc.value), "dpriv release ")
    assert words == ["dpriv", "release", "HISTORY", "--ledger", str(root)]

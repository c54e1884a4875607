"""A statistics office's weekly batch job, run from the README alone (session 44 drill, user A):
what it got wrong, each refused with exit 2 naming what and what to do, nothing written.

* a week appended to a ``;``-separated CSV history with one more column (a new question) was
  refused in pandas' words, ``cannot read h.csv: Error tokenizing data. C error: Expected 5
  fields in line 62, saw 6. Is it a complete CSV (UTF-8) or Parquet file?``: the check that names
  the lines of a week appended with a column *missing* (dpriv/csv_fields.py) never ran, as
  pandas' reader stopped first; the lines and their number of values are named now;
* ``dpriv attack L --knowledge dk`` (the README's example) on a ledger whose policy has no
  ``[knowledge]`` said to add ``dk = "knowledge/dk.npz"``, a model file the office does not have;
  it names the knowledge the history gives (``--knowledge ie``, ``snapshot``, ``spm:PATH``) now;
* a misspelt table (``[kind]``, ``[Privacy]``) was listed with the seven tables but, unlike a
  misspelt key, not named with the one meant: ``(did you mean [kinds]?)`` now;
* a policy naming ``Region`` for the column ``region`` was refused after a note that
  ``region`` is "not released" (as if left out on purpose): no such note before a refusal now;
* a Parquet file of no columns was said to lack a header line, and to need ``--add-row-id``;
* a header-only export: ``dpriv anonymize`` said "the input" (``release`` named the file) and
  ``dpriv verify --view 1`` "has no rows with week = 1; it holds []";
* ``dpriv export`` of the CSV that ``dpriv anonymize`` wrote with a date QI asked "is this a
  released view of dpriv?" (its bounds read back as text); it says to name the QI a date now;
* each weekly run with its policy file said "inferred categorical domain of 'region': [...]",
  as if read from that week's file: it says the domain is the ledger's now.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.release import release_history

FLAGS = ("--id", "rid", "--time", "week", "--qi", "age,region", "--sensitive", "status")
FLAGS += ("--k", "3", "--t", "1", "--j", "10", "--no-cluster")
POLICY = {
    "id": "rid",
    "time": "week",
    "qi": ["age", "region"],
    "sensitive": "status",
    "k": 3,
    "t": 1,
    "j": 10,
}


def week(n: int, index: int) -> pd.DataFrame:
    """``n`` respondents' rows of week ``index``: ``age`` 40.. in 7 values, ``region`` Nord/Süd/Ost
    in turn, ``status`` a, b, c in turn from the ``index``-th (each week other rows)."""
    return pd.DataFrame(
        {
            "rid": range(n),
            "week": index,
            "age": [40 + i % 7 for i in range(n)],
            "region": [["Nord", "Süd", "Ost"][i % 3] for i in range(n)],
            "status": [["a", "b", "c"][(i + index) % 3] for i in range(n)],
        }
    )


def snapshot(root: Path) -> dict:
    """Every file under ``root``: its bytes and modification time."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def release(history: Path, ledger: Path):
    return CliRunner().invoke(app, ["release", str(history), "--ledger", str(ledger), *FLAGS])


def test_a_week_appended_with_one_more_column_names_its_lines_and_leaves_the_ledger(tmp_path):
    path = tmp_path / "h.csv"
    pd.concat([week(30, 1), week(30, 2)]).to_csv(path, sep=";", index=False)
    assert release(path, tmp_path / "L").exit_code == 0
    before = snapshot(tmp_path / "L")
    # week 3 appended by a job that now exports a sixth column (the survey mode)
    week(30, 3).assign(mode="web").to_csv(path, sep=";", mode="a", header=False, index=False)
    res = release(path, tmp_path / "L")
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert (
        f"error: {path}: 30 line(s) hold more values than its header names columns (5: rid, week, age, "
        "region, status): line 62 (6 values), line 63 (6 values), line 64 (6 values), line 65 (6 values), "
        f"line 66 (6 values) and 25 more of {path} (the header is line 1); their values fit no column of "
        "the header (a column added, or a value holding the separator without quotes). Was a week "
        "exported with a column missing (or one more)?"
    ) in said, said
    assert "Error tokenizing" not in said
    assert snapshot(tmp_path / "L") == before


def test_one_line_of_more_values_among_shorter_ones_is_named_with_them(tmp_path):
    """Lines of more and of fewer values than the header: each named with its count, in the
    words of both (pandas stops at the longer one)."""
    path = tmp_path / "h.csv"
    text = week(6, 1).to_csv(sep=";", index=False).splitlines()
    text[2] += ";web"  # line 3: 6 values
    text[5] = text[5].rsplit(";", 1)[0]  # line 6: 4 values
    path.write_text("\n".join(text) + "\n")
    res = release(path, tmp_path / "L")
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert (
        f"error: {path}: 2 line(s) hold other numbers of values than its header names columns (5: rid, "
        f"week, age, region, status): line 3 (6 values), line 6 (4 values) of {path}"
    ) in said, said
    assert not (tmp_path / "L").exists()


def attack(ledger: Path, history: Path, knowledge: str):
    args = ["attack", str(ledger), "--history", str(history), "--knowledge", knowledge]
    return CliRunner().invoke(app, args)


def test_attack_with_dk_on_a_policy_without_knowledge_names_what_the_history_gives(tmp_path):
    """The office's policy has no [knowledge] (no model of its own): ``--knowledge dk``, the
    README's example, said to add ``dk = "knowledge/dk.npz"``, a file it does not have; it names
    the knowledge the history gives now, and ``--knowledge ie`` attacks."""
    path = tmp_path / "h.csv"
    pd.concat([week(30, 1), week(30, 2)]).to_csv(path, sep=";", index=False)
    assert release(path, tmp_path / "L").exit_code == 0
    before = snapshot(tmp_path / "L")
    res = attack(tmp_path / "L", path, "dk")
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert (
        "error: knowledge 'dk' is not in the policy's [knowledge] table (it has no [knowledge] table): "
        "'dk' is a table file of the adversary's model (dpriv generate medical writes knowledge/dk.npz for "
        "its generator). Without such a file, attack with the knowledge the history gives: --knowledge ie"
    ) in said, said
    assert snapshot(tmp_path / "L") == before
    res = attack(tmp_path / "L", path, "ie")
    assert res.exit_code == 0, res.output
    gains = pd.read_csv(tmp_path / "L" / "attack" / "gain_ie.csv")
    assert gains["release"].tolist() == [1, 2]


def test_a_misspelt_table_of_the_policy_file_is_named_with_the_table_meant(tmp_path):
    """``[kind]`` for ``[kinds]``, ``[Privacy]`` for ``[privacy]``: named like a misspelt key."""
    path = tmp_path / "h.csv"
    week(30, 1).to_csv(path, sep=";", index=False)
    policy = tmp_path / "p.toml"
    args = ["release", str(path), "--ledger", str(tmp_path / "L"), "--policy", str(policy), "--no-cluster"]
    for typed, hint in (
        ("kind", " (did you mean [kinds]?)"),
        ("Privacy", " (did you mean [privacy]?)"),
        ("extras", ""),
    ):
        policy.write_text(f'[columns]\nid = "rid"\n\n[{typed}]\nk = 3\n')
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2, res.output
        said = " ".join(res.stderr.split())
        assert f"error: policy file {policy}: unknown table [{typed}]{hint}; expected ['columns'," in said, (
            said
        )
    assert not (tmp_path / "L").exists()


def test_a_misspelt_column_is_refused_without_a_note_calling_its_true_name_not_released(tmp_path):
    """``qi = ["age", "Region"]`` for the column ``region``: the note "not released: column(s)
    ['region', ...]" came before the refusal, as if the column had been left out on purpose."""
    path = tmp_path / "h.csv"
    week(30, 1).assign(notes="ok").to_csv(path, sep=";", index=False)
    args = ["release", str(path), "--ledger", str(tmp_path / "L"), *FLAGS]
    res = CliRunner().invoke(app, ["age,Region" if a == "age,region" else a for a in args])
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert (
        "error: missing column(s) ['Region']; the input has ['rid', 'week', 'age', 'region', 'status', "
        in said
    )
    assert "(did you mean 'region' for 'Region'?)" in res.stderr, res.stderr
    assert "not released" not in res.stderr, res.stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match=r"missing column\(s\) \['Region'\]"):
            release_history(pd.read_csv(path, sep=";"), {**POLICY, "qi": ["age", "Region"]}, tmp_path / "L")
    assert [str(w.message) for w in caught if "not released" in str(w.message)] == []
    assert not (tmp_path / "L").exists()
    res = CliRunner().invoke(app, args)  # spelt right: the note names the one column left out
    assert res.exit_code == 0, res.output
    assert "not released: column(s) ['notes'] (not named by the policy" in res.stderr, res.stderr


def test_a_parquet_file_of_no_columns_is_called_empty_not_a_file_without_a_header(tmp_path):
    pd.DataFrame().to_parquet(tmp_path / "h.parquet")
    res = CliRunner().invoke(
        app, ["release", str(tmp_path / "h.parquet"), "--ledger", str(tmp_path / "L"), *FLAGS]
    )
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert "the input has []. Rename the columns" in said, said
    assert said.endswith(
        "The input has no columns at all (an empty table): give the file that holds the data."
    ), said
    assert "header" not in said and "--add-row-id" not in said, said
    assert not (tmp_path / "L").exists()


def test_a_header_only_file_is_named_by_anonymize_and_verify(tmp_path):
    """An export that wrote its header and no rows: ``dpriv release`` named the file, ``dpriv
    anonymize`` said "the input", ``dpriv verify --view 1`` "has no rows with week = 1; it holds []"."""
    path = tmp_path / "h.csv"
    week(30, 1).to_csv(path, sep=";", index=False)
    assert release(path, tmp_path / "L").exit_code == 0
    empty = tmp_path / "empty.csv"
    empty.write_text(path.read_text().splitlines()[0] + "\n")
    res = CliRunner().invoke(
        app, ["anonymize", str(empty), "--out", str(tmp_path / "a.csv"), *FLAGS[:2], *FLAGS[4:]]
    )
    assert res.exit_code == 2, res.output
    assert f"error: {empty} has a header but no rows: give the data that holds the tuples" in res.stderr
    released = tmp_path / "L" / "releases" / "1" / "view.parquet"
    for view in (["--view", "1"], []):
        args = ["verify", str(released), "--original", str(empty), *FLAGS[:12], *view]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2, res.output
        said = " ".join(res.stderr.split())
        assert "error: --original has a header but no rows: give the view the release was made from" in said
    assert not (tmp_path / "a.csv").exists()


def test_export_of_a_csv_release_with_a_date_qi_says_to_name_it_a_date(tmp_path):
    """``dpriv anonymize --out v.csv`` with a date QI, then ``dpriv export v.csv``: the bounds read
    back as text, and the refusal asked "is this a released view of dpriv?" (it is); it says
    to name the QI a date now, and with ``--policy`` the export writes the date intervals."""
    frame = (
        week(30, 1)
        .drop(columns="week")
        .assign(
            born=pd.to_datetime("1980-01-01") + pd.to_timedelta([400 * (i % 7) for i in range(30)], unit="D")
        )
    )
    frame.to_csv(tmp_path / "v.csv", sep=";", index=False)
    policy = tmp_path / "p.toml"
    policy.write_text(
        '[columns]\nid = "rid"\nqi = ["age", "born"]\nsensitive = "status"\n\n'
        '[privacy]\nk = 3\nt = 1\nj = 10\n\n[kinds]\nborn = "date"\n'
    )
    out = tmp_path / "out.csv"
    res = CliRunner().invoke(
        app, ["anonymize", str(tmp_path / "v.csv"), "--policy", str(policy), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["export", str(out), "--out", str(tmp_path / "e.csv")])
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    first = pd.read_csv(out)["born_min"].iloc[0]
    assert (
        f"error: column 'born_min' holds dates written as text ('{first}'), as a CSV release holds the "
        "bounds of a date QI: name 'born' as a date, with the policy the release was made with (--policy F, "
        "its [kinds] born = \"date\"; dates=['born'] in Python)"
    ) in said, said
    assert not (tmp_path / "e.csv").exists()
    res = CliRunner().invoke(
        app, ["export", str(out), "--out", str(tmp_path / "e.csv"), "--policy", str(policy)]
    )
    assert res.exit_code == 0, res.output
    born = pd.read_csv(tmp_path / "e.csv")["born"]
    assert born.str.fullmatch(r"\d{4}-\d{2}-\d{2}(/\d{4}-\d{2}-\d{2})?").all(), born


def test_a_resumed_week_says_the_domains_are_the_ledgers_not_inferred_from_its_file(tmp_path):
    """The weekly run with its policy file printed "inferred categorical domain of 'region': [...]"
    every week, as if read from that week's file; it is the ledger's, and a value outside it is
    refused."""
    path, policy = tmp_path / "h.csv", tmp_path / "p.toml"
    policy.write_text(
        '[columns]\nid = "rid"\ntime = "week"\nqi = ["age", "region"]\nsensitive = "status"\n\n'
        "[privacy]\nk = 3\nt = 1\nj = 10\n"
    )
    args = ["release", str(path), "--ledger", str(tmp_path / "L"), "--policy", str(policy), "--no-cluster"]
    week(30, 1).to_csv(path, sep=";", index=False)
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "inferred categorical domain of 'region': ['Nord', 'Ost', 'Süd']\n" in first.stderr, first.stderr
    pd.concat([week(30, 1), week(30, 2)]).to_csv(path, sep=";", index=False)
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert (
        "inferred categorical domain of 'region': ['Nord', 'Ost', 'Süd'] (recorded by the ledger at its "
        "first release: every later week's values must lie within it)\n"
    ) in second.stderr, second.stderr

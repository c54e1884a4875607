"""Output-file safety and data-error messages (fresh-user findings): every ``--out FILE`` has the
suffix of what its command writes; ``--force`` replaces only a file the same command wrote
(recorded in the folder's ``.dpriv-outputs``), never an input, a ledger's file, another
command's output, an edited file or a link; bad rows are named by their line in the file the
user gave, over all views; a header-only history says it has no rows; the retrospective
adversary writes ``LEDGER/attack/retro_<knowledge>.csv`` by default. Refusals: exit 2, the
message, every byte and mtime unchanged."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from loose_history import write_loose
from test_cli import assert_refused
from test_cli_safety import snapshot

from dpriv.cli.outputs import check_replaceable
from dpriv.errors import InputError
from dpriv.output_record import RECORD, record_output, written_by
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.rows import csv_lines


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A generated history (3 views x 100, as CSV too) and a ledger of its first 2 releases."""
    out = tmp_path_factory.mktemp("gen")
    mh = write_loose(out, n_views=3, view_size=100).mh
    mh.history.to_csv(out / "history.csv", index=False)
    release_history(mh.history, ReleasePolicy.from_toml(out / "policy.toml"), out / "led", until=2)
    return out


def _attack(out: Path, *extra):
    return (
        "attack", out / "led", "--history", out / "history.parquet", "--knowledge", "dk",
        "--policy", out / "policy.toml", *extra,
    )  # fmt: skip


# -- 1. the suffix of what the command writes ----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "command, name, writes",
    [
        ("report", "x.csv", r"dpriv report writes HTML \(\.html, \.htm\)"),
        ("report", "x", r"unknown file type '\(no suffix\)'; dpriv report writes HTML"),
        ("export", "x.html", r"dpriv export writes CSV \(\.csv\)"),
        ("export", "x.parquet", r"dpriv export writes CSV \(\.csv\)"),
        ("attack", "g.html", r"dpriv attack writes Parquet \(\.parquet, \.pq\) or CSV \(\.csv\)"),
        ("anonymize", "v.html", r"dpriv anonymize writes Parquet \(\.parquet, \.pq\) or CSV \(\.csv\)"),
    ],
)
def test_an_out_of_another_type_is_refused(command, name, writes, cli, released, tmp_path):
    out = released
    target = tmp_path / name
    args = {
        "report": ("report", out / "led"),
        "export": ("export", "--ledger", out / "led", "--view", "1"),
        "attack": _attack(out),
        "anonymize": (
            "anonymize",
            out / "history.csv",
            "--qi",
            "age,gender,weight",
            "--sensitive",
            "exam_result",
            "--id",
            "respondent_id",
        ),  # fmt: skip
    }[command]
    before = snapshot(out)
    res = cli(*args, "--out", target)
    assert_refused(res, re.escape(str(target)), "unknown file type", writes, "name the output file")
    assert list(tmp_path.iterdir()) == [] and snapshot(out) == before


def test_report_accepts_htm(cli, released, tmp_path):
    res = cli("report", released / "led", "--out", tmp_path / "r.htm")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r.htm").read_text().startswith("<!DOCTYPE html>")
    assert written_by(tmp_path / "r.htm") == "report"


# -- 2. --force replaces only the command's own earlier output ----------------------------------
def test_the_record_names_the_command_and_the_bytes(tmp_path):
    """Unit: a recorded file is the command's while its bytes are unchanged; a symbolic link, an
    edited file, another command's file and a file without a record are not."""
    f = tmp_path / "g.csv"
    f.write_text("release,adversary_gain\n1,0.1\n")
    assert written_by(f) is None
    with pytest.raises(InputError, match=r"g\.csv was not written by dpriv \(no record of it in"):
        check_replaceable(f, "attack", force=True)
    record_output(f, "attack")
    assert written_by(f) == "attack"
    assert json.loads((tmp_path / RECORD).read_text())["files"]["g.csv"]["size"] == f.stat().st_size
    check_replaceable(f, "attack", force=True)  # no error
    with pytest.raises(InputError, match=r"exists already; nothing was written.*pass --force"):
        check_replaceable(f, "attack", force=False)
    with pytest.raises(InputError, match=r"was written by dpriv attack, not by dpriv export"):
        check_replaceable(f, "export", force=True)
    (tmp_path / "link.csv").symlink_to(f)
    assert written_by(tmp_path / "link.csv") is None
    with pytest.raises(InputError, match=r"link\.csv is a symbolic link"):
        check_replaceable(tmp_path / "link.csv", "attack", force=True)
    f.write_text("release,adversary_gain\n1,0.2\n")  # same size, other bytes
    assert written_by(f) is None
    with pytest.raises(InputError, match=r"has changed since dpriv attack wrote it"):
        check_replaceable(f, "attack", force=True)


def test_a_foreign_record_file_is_left_alone(tmp_path):
    (tmp_path / RECORD).write_text("my notes\n")
    f = tmp_path / "r.html"
    f.write_text("<p>page</p>")
    record_output(f, "report")
    assert (tmp_path / RECORD).read_text() == "my notes\n" and written_by(f) is None


def test_force_never_replaces_a_file_dpriv_did_not_write(cli, released, tmp_path):
    """The fresh user's finding: report/export --force replaced the history CSV or any file."""
    out = released
    history = tmp_path / "history.csv"
    history.write_bytes((out / "history.csv").read_bytes())
    notes = tmp_path / "notes.html"
    notes.write_text("<p>my notes</p>")
    before = snapshot(tmp_path)
    res = cli("export", "--ledger", out / "led", "--view", "1", "--out", history, "--force")
    assert_refused(res, rf"{re.escape(str(history))} was not written by dpriv", "nothing was written",
                   "only a file an earlier dpriv export wrote")  # fmt: skip
    res = cli("report", out / "led", "--out", notes, "--force")
    assert_refused(res, r"notes\.html was not written by dpriv", "an earlier dpriv report wrote")
    res = cli("report", out / "led", "--history", out / "history.parquet", "--out", history, "--force")
    assert_refused(res, "unknown file type '.csv'")
    assert snapshot(tmp_path) == before


@pytest.mark.slow  # a whole release or CLI run: the default run stays under 5 min of CPU
def test_force_replaces_the_commands_own_output_and_nothing_else(cli, released, tmp_path):
    out = released
    page, gain, exp = tmp_path / "r.html", tmp_path / "g.csv", tmp_path / "e.csv"
    assert cli("report", out / "led", "--out", page).exit_code == 0
    assert cli(*_attack(out, "--out", gain)).exit_code == 0
    assert cli("export", "--ledger", out / "led", "--view", "1", "--out", exp).exit_code == 0
    assert [written_by(p) for p in (page, gain, exp)] == ["report", "attack", "export"]
    (tmp_path / "link.html").symlink_to(page)
    before = snapshot(tmp_path)
    # another command's output: refused even with --force
    res = cli("export", "--ledger", out / "led", "--view", "2", "--out", gain, "--force")
    assert_refused(res, r"g\.csv was written by dpriv attack, not by dpriv export")
    res = cli(*_attack(out, "--out", exp, "--force"))
    assert_refused(res, r"e\.csv was written by dpriv export, not by dpriv attack")
    # a link to the command's own output
    res = cli("report", out / "led", "--out", tmp_path / "link.html", "--force")
    assert_refused(res, r"link\.html is a symbolic link")
    assert snapshot(tmp_path) == before
    # the command's own output: replaced
    res = cli("export", "--ledger", out / "led", "--view", "2", "--out", exp, "--force")
    assert res.exit_code == 0, res.output
    assert snapshot(exp) != before[str(exp)] and written_by(exp) == "export"
    # edited since: refused
    page.write_text(page.read_text() + "<!-- my edit -->\n")
    edited = snapshot(page)
    res = cli("report", out / "led", "--out", page, "--force")
    assert_refused(res, r"r\.html has changed since dpriv report wrote it")
    assert snapshot(page) == edited


@pytest.mark.slow  # a whole release or CLI run: the default run stays under 5 min of CPU
def test_force_never_replaces_another_commands_file_in_the_ledgers_attack_folder(cli, released):
    out = released
    assert cli(*_attack(out)).exit_code == 0  # the default: led/attack/gain_dk.csv
    gain = out / "led" / "attack" / "gain_dk.csv"
    assert written_by(gain) == "attack"  # recorded in attack/.dpriv-outputs, the ledger's only record
    assert not (out / "led" / RECORD).exists() and not (out / "led" / "releases" / RECORD).exists()
    before = snapshot(out / "led")
    res = cli("export", "--ledger", out / "led", "--view", "1", "--out", gain, "--force")
    assert_refused(res, r"gain_dk\.csv lies inside the release ledger",  # no export goes there
                   "its attack/ folder takes only the results of dpriv attack and report")  # fmt: skip
    res = cli("report", out / "led", "--out", out / "led" / "policy.html", "--force")
    assert_refused(res, "lies inside the release ledger")
    assert snapshot(out / "led") == before
    # a page written into attack/ is recorded there: --force replaces it while unchanged
    page = out / "led" / "attack" / "r.html"
    assert cli("report", out / "led", "--out", page).exit_code == 0
    assert cli("report", out / "led", "--out", page, "--force").exit_code == 0
    page.write_text(page.read_text() + "<!-- mine -->")
    before = snapshot(out / "led")
    res = cli("report", out / "led", "--out", page, "--force")
    assert_refused(res, r"r\.html has changed since dpriv report wrote it")
    assert snapshot(out / "led") == before
    page.unlink()
    # a result without a record (an older dpriv's, or a file someone put there) is never replaced
    record = gain.parent / RECORD
    record.unlink()
    before = snapshot(out / "led")
    res = cli(*_attack(out, "--out", gain, "--force"))
    assert_refused(res, r"gain_dk\.csv is a result file of the release ledger .* without a record")
    res = cli(*_attack(out))
    assert_refused(res, r"gain_dk\.csv exists and no dpriv attack recorded writing it", "--out")
    assert snapshot(out / "led") == before
    gain.rename(out / "old_gain.csv")  # moved away: the attack writes (and records) it again
    assert cli(*_attack(out)).exit_code == 0 and written_by(gain) == "attack"


# -- 3. bad rows: their line in the user's file, over all views ----------------------------------
def test_csv_lines_count_quoted_newlines_and_skip_blank_lines(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text('id,city,s\n1,"Saint-\nEtienne",a\n\n2,Metz,b\n3,Lyon,c\n')
    assert pd.read_csv(path)["id"].tolist() == [1, 2, 3]  # the reader's rows 0, 1, 2
    # row 0 starts on line 2 (and ends on 3), line 4 is blank, rows 1 and 2 are lines 5 and 6
    assert csv_lines(str(path), [0, 1, 2]) == [2, 5, 6]
    assert csv_lines(str(path), [2, 0]) == [6, 2]


def test_csv_lines_beyond_the_scan_assume_one_line_per_row(tmp_path, monkeypatch):
    from dpriv import rows

    path = tmp_path / "h.csv"
    path.write_text('id,city,s\n1,Metz,a\n2,Lyon,b\n3,"Saint-\nEtienne",c\n4,Nice,a\n')
    assert csv_lines(str(path), [0, 1, 2, 3]) == [2, 3, 4, 6]  # row 2 spans lines 4-5
    monkeypatch.setattr(rows, "LINE_SCAN_LINES", 2)  # the scan stops after row 0 (line 2)
    assert csv_lines(str(path), [0, 1, 2, 3]) == [2, 3, 4, 5]  # documented: one line per row


def _bad_history(released: Path, tmp_path: Path, *, note: bool = False) -> tuple[Path, np.ndarray]:
    """The generated history with weight missing in 7 rows of views 2 and 3; returns the CSV
    and the bad rows' 0-based positions. ``note``: an unused column whose first value spans two
    lines (a quoted newline)."""
    h = pd.read_parquet(released / "history.parquet").sort_values("view", kind="stable")
    h = h.reset_index(drop=True).astype({"weight": float})
    in_2, in_3 = np.flatnonzero(h["view"] == 2), np.flatnonzero(h["view"] == 3)
    bad = np.sort(np.concatenate([in_2[[3, 40]], in_3[[0, 1, 9, 50, 99]]]))
    h.loc[bad, "weight"] = np.nan
    if note:
        h["note"] = ["first\nline"] + ["-"] * (len(h) - 1)
    path = tmp_path / "bad.csv"
    h.to_csv(path, index=False)
    return path, bad


@pytest.mark.parametrize("note", [False, True], ids=["plain", "quoted newline"])
def test_release_names_the_bad_rows_of_every_view_by_their_line(note, cli, released, tmp_path):
    path, bad = _bad_history(released, tmp_path, note=note)
    frame = pd.read_csv(path)
    assert np.flatnonzero(frame["weight"].isna()).tolist() == bad.tolist()  # the reader's rows
    lines = bad + 2 + (1 if note else 0)  # header = line 1; the note's newline shifts rows 1..
    res = cli("release", path, "--ledger", tmp_path / "led", "--policy", released / "policy.toml")
    shown = ", ".join(f"line {n} (view={frame['view'][b]})" for n, b in zip(lines[:5], bad[:5]))
    assert_refused(
        res,
        r"view = 2, 3: column 'weight' has missing values",  # the views, exactly (no "...")
        re.escape(f"(7 rows: {shown} and 2 more of {path} (the header is line 1))"),
    )
    assert "renamed?" not in res.output  # the note column is in every view: not a renamed one
    assert not (tmp_path / "led").exists()


@pytest.mark.parametrize("npartitions", [None, 3])
@pytest.mark.parametrize(
    "bad, prefix",
    [
        ({3: 7}, "view = 3: "),  # 5 rows shown of 7 in one view: not "view = 3, ...: "
        ({2: 6, 3: 1}, "view = 2, 3: "),  # the 6th and 7th rows are in another view
        ({1: 6, 2: 2, 3: 1}, "view = 1..3: "),
    ],
)
def test_a_message_names_exactly_the_views_of_its_bad_rows(bad, prefix, npartitions, released):
    """A drill: weight missing in view 5 only read "view = 5, ...:", as if more views were
    concerned; the views of all the bad rows are named, beyond the 5 rows shown."""
    import dask.dataframe as dd

    from dpriv.validate import check_rows

    h = pd.read_parquet(released / "history.parquet").sort_values("view", kind="stable")
    h = h.reset_index(drop=True).astype({"weight": float})
    for view, n in bad.items():
        h.loc[np.flatnonzero(h["view"] == view)[-n:], "weight"] = np.nan  # its last n rows
    frame = h if npartitions is None else dd.from_pandas(h, npartitions=npartitions, sort=False)
    with pytest.raises(InputError) as err:
        check_rows(frame, ReleasePolicy.from_toml(released / "policy.toml"))
    assert str(err.value).startswith(prefix + "column 'weight' has missing values"), str(err.value)


def test_spans_names_runs_of_views_and_counts_the_rest():
    from dpriv.rows import spans

    assert spans({9, 5, 6, 7, 12, 13}) == "5..7, 9, 12, 13" and spans([]) == "none"
    assert spans(range(1, 30, 2), most=3) == "1, 3, 5, ... (15 in all)"


def test_a_column_renamed_in_one_week_is_named_as_a_likely_rename(cli, released, tmp_path):
    """The drill: weight renamed to wt in the last week; the message named the missing weight
    and, apart, an unreleased column wt: it now says wt may be weight renamed."""
    h = pd.read_parquet(released / "history.parquet")
    renamed = h[h["view"] == 3].rename(columns={"weight": "wt"})
    path = tmp_path / "rename.csv"
    pd.concat([h[h["view"] <= 2], renamed]).to_csv(path, index=False)
    led = tmp_path / "led"
    shutil.copytree(released / "led", led)
    before = snapshot(led)
    res = cli("release", path, "--ledger", led, "--policy", released / "policy.toml")
    assert_refused(
        res,
        r"view = 3: column 'weight' has missing values",
        r"; column 'wt' appears only in view 3, where 'weight' is missing: renamed\? name it 'weight' there",
    )
    assert snapshot(led) == before


def test_verify_and_report_name_the_bad_rows_by_their_line_as_release_does(cli, released, tmp_path):
    """A fresh user's drill: verify and report named a bad row of --history by its position
    ("row 400") where release said "line 402 of FILE"; now all say the line."""
    h = pd.read_parquet(released / "history.parquet").sort_values("view", kind="stable")
    h = h.reset_index(drop=True).astype({"weight": object})
    bad = np.flatnonzero(h["view"] == 2)[[3, 40]]
    h.loc[bad, "weight"] = "heavy"  # text in a numeric QI of the released view 2
    path = tmp_path / "text.csv"
    h.to_csv(path, index=False)
    first = f"2 rows: line {bad[0] + 2} "
    led = released / "led"
    res = cli("verify", "--ledger", led, "--view", "2", "--history", path)
    assert_refused(res, re.escape(first), re.escape(f"of {path} (the header is line 1)"))
    res = cli("report", led, "--history", path, "--out", tmp_path / "r.html")
    assert_refused(res, re.escape(first), re.escape(f"of {path} (the header is line 1)"))
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("npartitions", [1, 3, 7])
def test_the_message_is_the_same_for_any_number_of_partitions(npartitions, released, tmp_path):
    """Rows found in several Dask partitions are placed in the whole file (partition lengths):
    the message equals the pandas one, for a history (check_rows) and a single view
    (validate_view)."""
    import dask.dataframe as dd

    from dpriv.rows import rows_of
    from dpriv.validate import check_rows, validate_view

    path, bad = _bad_history(released, tmp_path)
    h = pd.read_csv(path)
    policy = ReleasePolicy.from_toml(released / "policy.toml")
    view = h.drop(columns="view")  # one view: the whole file
    single = ReleasePolicy.from_dict({**policy.model_dump(), "time": None})
    messages = []
    with rows_of(str(path)):
        checks = ((h, lambda f: check_rows(f, policy)), (view, lambda f: validate_view(f, single)))
        for frame, check in checks:
            got = []
            for data in (frame, dd.from_pandas(frame, npartitions=npartitions, sort=False)):
                with pytest.raises(InputError) as err:
                    check(data)
                got.append(str(err.value))
            assert got[0] == got[1]
            messages.append(got[0])
    lines = [rf"line {b + 2}\b" for b in bad[:5]]
    assert all(all(re.search(line, m) for line in lines) and "and 2 more of" in m for m in messages), messages


def test_a_respondent_twice_in_one_view_is_named_in_every_view(cli, released, tmp_path):
    """Duplicates in views 1 and 3 (rows 10 = 11 and 250 = 260): all four rows by their line;
    the Dask path (3 partitions) gives the same message."""
    import dask.dataframe as dd

    from dpriv.rows import rows_of
    from dpriv.validate import check_rows

    h = pd.read_parquet(released / "history.parquet").sort_values("view", kind="stable")
    h = h.reset_index(drop=True)
    assert h["view"][[10, 11, 250, 260]].tolist() == [1, 1, 3, 3]
    h.loc[11, "respondent_id"] = h.loc[10, "respondent_id"]
    h.loc[260, "respondent_id"] = h.loc[250, "respondent_id"]
    path = tmp_path / "dup.csv"
    h.to_csv(path, index=False)
    res = cli("release", path, "--ledger", tmp_path / "led", "--policy", released / "policy.toml")
    rows = ", ".join(f"line {i + 2} (view={h['view'][i]})" for i in (10, 11, 250, 260))
    text = assert_refused(
        res, r"view = 1, 3: duplicate 'respondent_id' within one view", re.escape(f"(4 rows: {rows} of")
    )
    assert not (tmp_path / "led").exists()
    policy = ReleasePolicy.from_toml(released / "policy.toml")
    with rows_of(str(path)):
        for frame in (h, dd.from_pandas(h, npartitions=3, sort=False)):
            with pytest.raises(InputError) as err:
                check_rows(frame, policy)
            assert str(err.value) in text


def test_parquet_rows_are_counted_from_1(cli, released, tmp_path):
    path, bad = _bad_history(released, tmp_path)
    pq_path = tmp_path / "bad.parquet"
    pd.read_csv(path).to_parquet(pq_path, index=False)
    res = cli("release", pq_path, "--ledger", tmp_path / "led", "--policy", released / "policy.toml")
    tail = rf"row {bad[4] + 1} \(.* and 2 more of .*bad\.parquet \(the first row is row 1\)"
    assert_refused(res, rf"7 rows: row {bad[0] + 1} \(", tail)


def test_python_api_names_rows_by_their_labels_over_all_views(released, tmp_path):
    """No file: a row is named by the history's own index label (not its place in its view)."""
    path, bad = _bad_history(released, tmp_path)
    h = pd.read_csv(path)
    h.index = h.index + 1000
    with pytest.raises(InputError, match=rf"7 rows: row {bad[0] + 1000} \(view=2\), "):
        release_history(h, ReleasePolicy.from_toml(released / "policy.toml"), tmp_path / "led")
    assert not (tmp_path / "led").exists()


# -- 4. a header-only history ---------------------------------------------------------------------
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_header_only_history_says_it_has_no_rows(suffix, cli, released, tmp_path):
    h = pd.read_parquet(released / "history.parquet").head(0)
    path = tmp_path / f"h.{suffix}"
    h.to_csv(path, index=False) if suffix == "csv" else h.to_parquet(path, index=False)
    res = cli("release", path, "--ledger", tmp_path / "led", "--policy", released / "policy.toml")
    text = assert_refused(
        res, rf"{re.escape(str(path))} has a header but no rows", "give the file that holds the views' tuples"
    )
    assert "time column" not in text and not (tmp_path / "led").exists()


# -- 5. the retrospective adversary's default file -------------------------------------------------
def test_retrospective_attack_writes_its_own_default_file(cli, released, tmp_path):
    out = released
    assert cli(*_attack(out)).exit_code == 0
    paper = out / "led" / "attack" / "gain_dk.csv"
    before = snapshot(paper)
    res = cli(*_attack(out, "--adversary", "retrospective"))
    assert res.exit_code == 0, res.output
    retro = out / "led" / "attack" / "retro_dk.csv"
    assert f"written to {retro}" in res.output
    frame = pd.read_csv(retro)
    assert list(frame.columns[:3]) == ["release", "as_of", "adversary_gain"]
    # one row per release and as-of release: (1,1), (1,2), (2,2)
    assert sorted(zip(frame["release"], frame["as_of"])) == [(1, 1), (1, 2), (2, 2)]
    assert snapshot(paper) == before  # the paper adversary's file is not touched
    assert cli(*_attack(out, "--adversary", "retrospective")).exit_code == 0  # its own: re-written
    from typer.testing import CliRunner

    from dpriv.cli import app

    helptext = CliRunner().invoke(app, ["attack", "--help"], env={"COLUMNS": "250"}).output
    assert "LEDGER/attack/retro_<knowledge>.csv for the retrospective one" in re.sub(r"[\s│]+", " ", helptext)

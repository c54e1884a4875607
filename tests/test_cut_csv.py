"""A CSV export cut off mid-line (the exporter still writing: the last line has no newline and
fewer fields than the header, or its last value is cut so that it fails a check) was refused
with the advice for a bad row ("drop or impute these rows", "correct the data"), which, if
followed, publishes a partial week for good. It is now said to be cut off (the file, its last
line), possibly still being written: wait for the export (or export again) and run again; exit
2, nothing written. A complete file (its last line ends with a newline) with the same bad value
keeps the message of that row (a line of fewer values, the message of its count)."""

import pandas as pd
import pytest
from test_cli import assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger

ARGS = ["--qi", "age,sex", "--sensitive", "disease", "--k", "2", "--t", "0.9", "--j", "5", "--no-cluster"]
HEADER = "respondent_id,age,sex,disease\n"
ROWS = "".join(f"{i},{30 + i},{'FM'[i % 2]},{('flu_a', 'cold_b')[i % 3 == 0]}\n" for i in range(1, 9))
CUT = r"seems cut off mid-line: its last line \(line 10\) has no newline at its end and "
WAIT = (
    r"may still be being written .*wait for the export to finish \(or export the file again\) and run again"
)


def anonymize(tmp_path, text: str, *extra: str):
    src = tmp_path / "in.csv"
    src.write_text(text)
    before = tree(tmp_path)
    res = CliRunner().invoke(app, ["anonymize", str(src), "--out", str(tmp_path / "o.csv"), *ARGS, *extra])
    assert tree(tmp_path) == before, res.output
    return res


@pytest.mark.parametrize("last", ["9,39,F", "9,3", "9"])
def test_a_last_line_of_fewer_fields_without_a_newline_is_said_to_be_cut_off(tmp_path, last):
    out = assert_refused(anonymize(tmp_path, HEADER + ROWS + last), rf"in\.csv {CUT}holds", WAIT)
    assert "impute" not in out and "missing values" not in out


def test_a_complete_file_with_a_short_last_line_is_refused_by_its_count_not_as_cut(tmp_path):
    """It said "drop or impute these rows" of a blank 'disease'; since session 42 a line of fewer
    values than the header is named with its count (dpriv/csv_fields.py): the value left out
    may be any column's, the others then in the wrong columns."""
    out = assert_refused(
        anonymize(tmp_path, HEADER + ROWS + "9,39,F\n"),
        r"1 line\(s\) hold fewer values",
        r"line 10 \(3 values\)",
    )
    assert "cut off" not in out


@pytest.mark.parametrize("last, column", [("9,39,F,fl", "disease"), ("9,39,Fe,flu_a", "sex")])
def test_a_cut_last_value_that_fails_a_check_is_said_to_be_cut_off(tmp_path, last, column):
    """Every field is there, the last one cut short: the value fails the domain check."""
    domains = tmp_path / "p.toml"
    domains.write_text('[domains]\ndisease = ["flu_a", "cold_b"]\nsex = ["F", "M"]\nage = [30, 40]\n')
    res = anonymize(tmp_path, HEADER + ROWS + last, "--policy", str(domains))
    out = assert_refused(res, rf"{CUT}its row fails the checks of column\(s\) '{column}'", WAIT)
    assert "correct the data" not in out and "fl'" not in out


def test_a_complete_file_with_the_same_bad_value_keeps_its_message(tmp_path):
    domains = tmp_path / "p.toml"
    domains.write_text('[domains]\ndisease = ["flu_a", "cold_b"]\nsex = ["F", "M"]\nage = [30, 40]\n')
    res = anonymize(tmp_path, HEADER + ROWS + "9,39,F,fl\n", "--policy", str(domains))
    out = assert_refused(res, r"not in its declared domain", r"correct the data", r"line 10 of")
    assert "cut off" not in out


def test_a_bad_row_before_the_last_line_of_a_file_without_newline_keeps_its_message(tmp_path):
    """Only the last line can be cut: a bad row elsewhere is the data's."""
    rows = ROWS.replace("3,33,M,", "3,,M,")
    out = assert_refused(anonymize(tmp_path, HEADER + rows + "9,39,F,flu_a"), r"drop or impute", r"line 4 of")
    assert "cut off" not in out


LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}


@pytest.mark.slow  # a first release, then the refused one
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # as the command line has it (dask's, pandas 3.1)
@pytest.mark.parametrize("cut", ["fields", "value"])
def test_a_weekly_history_cut_off_mid_line_leaves_the_ledger_as_it_was(tmp_path, cut):
    """The drill's case: week 2 appended to a history CSV released into a ledger holding week 1."""
    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = write_history(tmp_path, mh, policy_extra=LOOSE)
    led = tmp_path / "L"
    week1 = tmp_path / "week1.csv"
    mh.history[mh.history["view"] == 1].to_csv(week1, index=False)
    args = ["--ledger", str(led), "--policy", str(policy), "--no-cluster"]
    assert CliRunner().invoke(app, ["release", str(week1), *args]).exit_code == 0
    text = mh.history.to_csv(index=False)
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    keep = last.rfind(",") + (1 if cut == "fields" else 2)  # "...," or the sensitive value's first letter
    src = tmp_path / "history.csv"
    src.write_text(text.rstrip("\n")[: len(text.rstrip("\n")) - len(last) + keep].rstrip(","))
    before = tree(led)
    res = CliRunner().invoke(app, ["release", str(src), *args, "--existing-ledger"])
    lines = len(mh.history) + 1
    why = (
        "holds 5 of the header's 6 fields"
        if cut == "fields"
        else r"its row fails the checks of column\(s\) 'exam_result'"
    )
    assert_refused(
        res,
        rf"history\.csv {CUT.replace('line 10', f'line {lines}')}{why}",
        WAIT,
    )
    assert "correct the data" not in res.output and "impute" not in res.output
    assert tree(led) == before
    assert [r["index"] for r in Ledger(led).committed()] == [1]
    complete = pd.read_csv(src)
    assert len(complete) == len(mh.history)  # pandas reads the cut line as a row: it must not be released


#: A file's lines as the reader counts them: a quoted value may span two lines, and a line may
#: end with \r\n or (old Mac exports) a lone \r, which pandas reads as a line end too.
NOTE = "respondent_id,age,sex,disease,note\n"
NOTED = "".join(f"{i},{30 + i},{'FM'[i % 2]},{('flu_a', 'cold_b')[i % 3 == 0]},n\n" for i in range(1, 9))
LINES = {
    "lf": (HEADER + ROWS, 10),
    "crlf": ((HEADER + ROWS).replace("\n", "\r\n"), 10),
    "cr": ((HEADER + ROWS).replace("\n", "\r"), 10),
    "quoted newline": (NOTE + NOTED.replace("3,33,M,cold_b,n", '3,33,M,cold_b,"two\nlines"'), 11),
}


@pytest.mark.parametrize("ends", LINES)
@pytest.mark.parametrize("cut", ["9,39,F", "9,39,F,fl"])
def test_the_cut_off_line_is_the_line_a_bad_row_message_names(tmp_path, ends, cut):
    """The cut-off message named the line by counting the file's \\n: a file of lone \\r line ends
    was "line 1" (and its cut value lost the refusal: the line of the failing row, counted by
    the reader, was not the file's last). It names the line the message of the same bad row in
    the complete file names."""
    text, line = LINES[ends]
    domains = tmp_path / "p.toml"
    domains.write_text('[domains]\ndisease = ["flu_a", "cold_b"]\nsex = ["F", "M"]\nage = [30, 40]\n')
    src = tmp_path / "in.csv"
    res = {}
    for name, last in (("cut", cut), ("complete", cut + text[-1])):  # the same line, ended
        src.write_bytes((text + last).encode())
        args = ["anonymize", str(src), "--out", str(tmp_path / "o.csv"), *ARGS, "--policy", str(domains)]
        res[name] = CliRunner().invoke(app, args)
    # a line of fewer values than the header: named with its count (dpriv/csv_fields.py)
    assert_refused(res["complete"], rf"line {line}( \([34] values\))? of .*in\.csv \(the header is line 1\)")
    assert "cut off" not in res["complete"].output
    out = assert_refused(res["cut"], CUT.replace("line 10", f"line {line}"), WAIT)
    assert "correct the data" not in out and "impute" not in out


def test_a_cut_value_beyond_the_lines_counted_exactly_is_still_said_to_be_cut_off(tmp_path, monkeypatch):
    """Beyond the first LINE_SCAN_LINES lines (10^6) a row's line is estimated at one line per
    row: a blank line (or a quoted newline) before it made the estimate of the last row one
    short of the file's last line, and the cut value was taken for a bad row to correct. (The
    scan is cut to 3 lines here: the same as in a file of over a million.)"""
    import dpriv.rows

    monkeypatch.setattr(dpriv.rows, "LINE_SCAN_LINES", 3)
    domains = tmp_path / "p.toml"
    domains.write_text('[domains]\ndisease = ["flu_a", "cold_b"]\nsex = ["F", "M"]\nage = [30, 40]\n')
    src = tmp_path / "in.csv"
    rows = ROWS.splitlines(keepends=True)
    src.write_text(HEADER + "".join(rows[:3]) + "\n" + "".join(rows[3:]) + "9,39,F,fl")  # line 5 blank
    args = ["anonymize", str(src), "--out", str(tmp_path / "o.csv"), *ARGS, "--policy", str(domains)]
    cut = CUT.replace("line 10", "line 11")  # the file's line: 1 + 8 rows + 1 blank + 1
    out = assert_refused(CliRunner().invoke(app, args), cut + "its row fails", WAIT)
    assert "correct the data" not in out

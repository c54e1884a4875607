"""A cancer registry's weekly drill (session 41): Excel exports (UTF-8 BOM, ``;``, CRLF, decimal
commas, an empty last line), a policy without ``[domains]``, released week after week with
``dpriv release H --ledger L --policy P --existing-ledger`` as the cron recipe runs it.

A typo in a later week's sensitive column (``iv`` for ``IV``) was refused as "the policy differs
from the one this ledger was started with (fields ['domains'] ...)", advising a new ledger and
naming no row: the given policy's domains were inferred again from the whole history. They are
now the ledger's recorded ones (as without ``--policy``), so the week's row is named and the
advice is to correct the data; the ledger's own hint is said once (it was said twice)."""

from pathlib import Path

import numpy as np
import pandas as pd
from test_cli_safety import snapshot
from typer.testing import CliRunner

from dpriv.cli import app

POLICY = """[columns]
id = "patient_id"
time = "week"
qi = ["age", "sex"]
sensitive = "stage"
[privacy]
k = 3
t = 1.0
j = 10.0
"""


def _excel_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as Excel (French locale) writes it: BOM, ';', CRLF, decimal commas, empty last line."""
    text = frame.to_csv(sep=";", index=False, decimal=",", lineterminator="\r\n") + "\r\n"
    path.write_bytes(text.encode("utf-8-sig"))


def _weeks(n_weeks: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for week in range(1, n_weeks + 1):
        for pid in range(30):
            rows.append(
                (f"{10000 + pid}", week, 40 + pid, "FM"[pid % 2], ["I", "II", "III", "IV"][rng.integers(4)])
            )
    return pd.DataFrame(rows, columns=["patient_id", "week", "age", "sex", "stage"])


def _release(history: Path, ledger: Path, *extra: str):
    args = ["release", str(history), "--ledger", str(ledger), "--no-cluster", *extra]
    return CliRunner().invoke(app, args)


def test_a_later_weeks_typo_in_the_sensitive_column_names_its_row_not_a_new_policy(tmp_path):
    (tmp_path / "policy.toml").write_text(POLICY)
    weeks = _weeks(2)
    _excel_csv(weeks[weeks.week == 1], tmp_path / "h1.csv")
    ledger = tmp_path / "ledger"
    first = _release(tmp_path / "h1.csv", ledger, "--policy", str(tmp_path / "policy.toml"))
    assert first.exit_code == 0, first.output
    typo = weeks.copy()
    row = typo.index[typo.week == 2][4]
    typo.loc[row, "stage"] = "iv"  # 'IV' typed in lower case
    _excel_csv(typo, tmp_path / "h2.csv")
    line = row + 2  # the header is line 1
    before = snapshot(ledger)
    # the cron recipe, whose policy leaves the domain to the data (s46: "inferred"), and without
    # it, the ledger's own policy, which records the domain (policy.json does not say it was inferred)
    for extra, how in ((["--policy", str(tmp_path / "policy.toml")], "inferred"), ([], "declared")):
        res = _release(tmp_path / "h2.csv", ledger, *extra, "--existing-ledger")
        assert res.exit_code == 2, res.output
        assert "the policy differs" not in res.output
        assert "week = 2: sensitive column 'stage' has values" in res.output
        assert (
            f"not in its {how} domain ['I', 'II', 'III', 'IV']: correct the data (of these, a value "
            "of the domain written another way: in upper and lower case, with spaces at its ends, or "
            "with spaces, '_' or '-' between its words; write it as the domain does) "
            f"(1 row: line {line} (week=2)" in res.output
        )  # s43: 'iv' is 'IV' in lower case, said without printing it
        assert res.output.count("committed with the domains of the ledger's first release") == 1
        assert "Traceback" not in res.output
        assert snapshot(ledger) == before


def test_a_history_the_ledger_accepted_releases_the_same_bytes_with_the_policy_file(tmp_path):
    """The recorded domains equal the ones inferred from a correct history: week 2 released with
    --policy (domains from the ledger) gives the bytes of a ledger released in one go."""
    (tmp_path / "policy.toml").write_text(POLICY)
    weeks = _weeks(2)
    _excel_csv(weeks[weeks.week == 1], tmp_path / "h1.csv")
    _excel_csv(weeks, tmp_path / "h2.csv")
    pol = ["--policy", str(tmp_path / "policy.toml")]
    for history in ("h1.csv", "h2.csv"):
        res = _release(tmp_path / history, tmp_path / "weekly", *pol)
        assert res.exit_code == 0, res.output
    res = _release(tmp_path / "h2.csv", tmp_path / "once", *pol)
    assert res.exit_code == 0, res.output
    for i in (1, 2):
        view = Path("releases") / str(i) / "view.parquet"
        assert (tmp_path / "weekly" / view).read_bytes() == (tmp_path / "once" / view).read_bytes()


def test_weekly_csv_files_given_as_a_pattern_are_refused_with_how_to_join_them(tmp_path):
    """``dpriv release 'weeks/*.csv'``: the pattern reached fsspec's open unexpanded, whose words
    were the message ("[Errno %s not found. The URL contains glob characters: you maybe needed
    to pass expand=True in fsspec.open() ..."). Now: the files it matches and how to join them."""
    (tmp_path / "policy.toml").write_text(POLICY)
    weeks, folder = _weeks(2), tmp_path / "weeks"
    folder.mkdir()
    for w in (1, 2):
        _excel_csv(weeks[weeks.week == w], folder / f"week{w}.csv")
    for pattern, n, names in (("*.csv", 2, "week1.csv, week2.csv"), ("week2*.csv", 1, "week2.csv")):
        res = _release(folder / pattern, tmp_path / "ledger", "--policy", str(tmp_path / "policy.toml"))
        assert res.exit_code == 2, res.output
        assert (
            f"{folder / pattern} is a pattern matching {n} file(s) ({names}): dpriv reads a CSV" in res.output
        )
        assert "each later one without its header line" in res.output
        assert "expand=True" not in res.output and "Traceback" not in res.output
        assert not (tmp_path / "ledger").exists()


def test_a_week_appended_with_another_separator_is_named_by_its_lines(tmp_path):
    """Weeks 1-2 exported with ';' and decimal commas, week 3 appended as ',' with decimal points
    (the spreadsheet's list separator changed): was refused as "time column 'week' ... holds a
    missing value" at week 3's lines. Now the lines and the separator they seem written with.
    A quoted value over two lines, whose second line holds no ';', is no such line."""
    (tmp_path / "policy.toml").write_text(POLICY)
    weeks = _weeks(3)
    _excel_csv(weeks[weeks.week < 3], tmp_path / "h.csv")
    week3 = weeks[weeks.week == 3].to_csv(index=False, header=False, lineterminator="\r\n")
    with open(tmp_path / "h.csv", "ab") as fh:
        fh.write(week3.encode())
    first = 2 + 60 + 1  # the header, weeks 1-2, Excel's empty last line
    res = _release(tmp_path / "h.csv", tmp_path / "ledger", "--policy", str(tmp_path / "policy.toml"))
    assert res.exit_code == 2, res.output
    assert (
        f"h.csv: 30 line(s) hold no ';', the separator of its header, which names 5 columns (line {first}, "
        f"line {first + 1}, line {first + 2}, line {first + 3}, line {first + 4} and 25 more (the header is "
        "line 1)), and seem separated by ','" in res.output
    )
    assert "Traceback" not in res.output and not (tmp_path / "ledger").exists()
    quoted = weeks[weeks.week < 3].assign(note="")
    quoted.loc[3, "note"] = "seen twice\nsame week"  # a quoted value over two lines
    _excel_csv(quoted, tmp_path / "q.csv")
    assert 'same week"' in (tmp_path / "q.csv").read_text(encoding="utf-8-sig")
    res = _release(tmp_path / "q.csv", tmp_path / "ledger", "--policy", str(tmp_path / "policy.toml"))
    assert res.exit_code == 0, res.output


def test_a_category_typed_in_upper_and_lower_case_is_refused_unless_declared(tmp_path):
    """'F' and 'f' in ``sex`` became four levels ('F', 'M', 'f', 'm'), said only as the inferred
    domain: released groups then told the two spellings apart. Refused as the trailing spaces
    are; declared [domains] (both spellings, as meant) release it."""
    (tmp_path / "policy.toml").write_text(POLICY)
    week = _weeks(1)
    week.loc[[3, 8], "sex"] = week.loc[[3, 8], "sex"].str.lower()
    _excel_csv(week, tmp_path / "h.csv")
    res = _release(tmp_path / "h.csv", tmp_path / "ledger", "--policy", str(tmp_path / "policy.toml"))
    assert res.exit_code == 2, res.output
    assert (
        "column 'sex' holds 'M' and 'm', which differ only in upper and lower case: one value written "
        "two ways would become two; write it one way (e.g. frame['sex'].str.upper()) or declare "
        "[domains] sex" in res.output
    )
    assert "rows holding 'm' (1 row: line 5 (week=1) of" in res.output  # row 3 ('M'); row 8 was 'F'
    assert not (tmp_path / "ledger").exists()
    (tmp_path / "declared.toml").write_text(POLICY + '[domains]\nsex = ["F", "M", "f", "m"]\n')
    res = _release(tmp_path / "h.csv", tmp_path / "ledger", "--policy", str(tmp_path / "declared.toml"))
    assert res.exit_code == 0, res.output


def test_dates_written_day_first_are_refused_with_the_conversion():
    """A spreadsheet's dd/mm/yyyy export was refused as "not dates", with only "write dates as
    YYYY-MM-DD": now which order was found (a first number over 12: day first; a second one:
    month first; neither: both named, dpriv does not guess) and the pandas conversion."""
    from dpriv.dates import date_problem

    def said(values):
        return date_problem(pd.Series(values, dtype=object), "adm", csv=True)[1]

    assert "(written day first, as a spreadsheet exports them" in said(["29/09/2025", "02/02/2025"])
    assert "format='%d/%m/%Y'" in said(["29/09/2025", "02/02/2025"])
    assert "format='%m.%d.%Y'" in said(["09.29.2025", "2.2.2025"])
    assert "written month first" in said(["09.29.2025", "2.2.2025"])
    ambiguous = said(["03/04/2025", "01/02/2025"])
    assert "day or month first: dpriv does not guess; '%m/%d/%Y' if the month comes first" in ambiguous
    assert "written" not in said(["29/09/2025", "1st of March"])  # not all of one pattern: no hint

"""Issue 15: date and timestamp QIs are released as date intervals (dpriv/dates.py).

Boxes are hand-computed: each value's calendar date (a timezone-aware timestamp on the
calendar of its own zone), groups of k consecutive days, ``<qi>_min/_max`` the first and last
day of each group; refusals name the column, the values or rows and the fix, and write nothing.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest
from test_hardening_inputs import refused

from dpriv.attack import attack
from dpriv.dates import DATE, released_days, to_days
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history, verify_view

STAMPS = ["2020-01-01 08:00", "2020-01-03 00:00", "2020-01-02 23:59", "2020-03-01 12:00", "2020-03-05 00:01",
          "2020-02-28 07:30"]  # fmt: skip
POLICY = ReleasePolicy(id="rid", qi=["adm"], sensitive="s", k=3, t=1.0, j=10.0)


def frame(values) -> pd.DataFrame:
    return pd.DataFrame({"rid": range(len(values)), "adm": values, "s": list("abcabc"[: len(values)])})


def boxes(released: pd.DataFrame) -> set[tuple[str, str]]:
    return {(str(a), str(b)) for a, b in zip(released["adm_min"], released["adm_max"])}


def test_days_of_dates_times_and_zones_by_hand():
    naive = pd.Series(pd.to_datetime(["1969-12-31 23:00", "1970-01-01 00:00", "1970-01-02 05:00"]))
    assert to_days(naive).tolist() == [-1, 0, 1] and to_days(naive).dtype == "int64"
    # 00:30 in Paris on 1 March is 23:30 UTC on 29 February: the local calendar counts
    paris = pd.Series(pd.to_datetime(["2020-03-01 00:30"])).dt.tz_localize("Europe/Paris")
    assert to_days(paris).tolist() == [18322]  # 2020-03-01 = 18322 days after 1970-01-01
    assert to_days(paris.dt.tz_convert("UTC")).tolist() == [18321]
    text = pd.Series(["2020-03-01", "2020-03-01T23:59:59"], dtype=object)
    assert to_days(text).tolist() == [18322, 18322]
    assert to_days(pd.Series([dt.date(2020, 3, 1)], dtype=object)).tolist() == [18322]
    bad = pd.Series(["2020-03-01", "soon"], dtype=object)
    assert to_days(bad) is bad  # left for validation to name


def test_naive_timestamps_give_hand_computed_date_boxes():
    res = anonymize(frame(pd.to_datetime(STAMPS)), POLICY)
    # days: 01-01, 01-03, 01-02 | 03-01, 03-05, 02-28 -> two groups of 3 consecutive days
    assert boxes(res.released) == {("2020-01-01", "2020-01-03"), ("2020-02-28", "2020-03-05")}
    assert res.released["adm_min"].dtype == DATE and res.released["adm_max"].dtype == DATE
    assert res.policy.kinds == {"adm": "date"} and res.policy.domains["adm"] == [18262, 18326]
    assert "inferred date domain of 'adm': [2020-01-01, 2020-03-05]" in res.notes
    assert res.metrics["n_suppressed"] == 0
    # every original's date inside its group's box, checked on dates (no days involved)
    got = res.assigned.assign(
        day=lambda f: (pd.Timestamp("1970-01-01") + pd.to_timedelta(f["adm"], "D")).dt.date
    )
    box = res.released.drop_duplicates("qi_group").set_index("qi_group")
    assert all(box.loc[g, "adm_min"] <= d <= box.loc[g, "adm_max"] for g, d in zip(got["_label"], got["day"]))


def test_timezone_aware_timestamps_count_on_their_own_calendar():
    # Paris, 1 h ahead of UTC: 00:30 local on 03-01 is still 02-29 in UTC
    local = ["2020-02-27 10:00", "2020-02-28 10:00", "2020-03-01 00:30", "2020-03-10 10:00",
             "2020-03-11 10:00",
             "2020-03-12 00:15"]  # fmt: skip
    res = anonymize(frame(pd.to_datetime(local).tz_localize("Europe/Paris")), POLICY)
    assert boxes(res.released) == {("2020-02-27", "2020-03-01"), ("2020-03-10", "2020-03-12")}
    utc = anonymize(frame(pd.to_datetime(local).tz_localize("Europe/Paris").tz_convert("UTC")), POLICY)
    assert boxes(utc.released) == {("2020-02-27", "2020-02-29"), ("2020-03-10", "2020-03-11")}


def test_mixed_zones_bad_text_missing_dates_and_a_date_sensitive_are_refused():
    mixed = [pd.Timestamp("2020-03-01 10:00", tz="Europe/Paris"), pd.Timestamp("2020-03-02", tz="UTC")] * 3
    with pytest.raises(
        InputError, match=r"QI 'adm' holds timestamps in 2 different time zones.*one time zone"
    ):
        anonymize(frame(pd.Series(mixed, dtype=object)), POLICY.with_overrides(kinds={"adm": "date"}))
    offsets = {
        "2020-03-01T10:00+01:00": r"\['\+01:00', 'no offset'\]",
        "2020-03-01 10:00Z": r"\['\+00:00', 'no offset'\]",
        "2020-03-01T10:00+0200": r"\['\+02:00', 'no offset'\]",
    }
    for first, zones in offsets.items():  # texts with an offset among naive ones (pandas 2 and 3)
        text = pd.Series([first, *[f"2020-03-0{d} 12:00" for d in range(2, 7)]], dtype=object)
        zoned = rf"QI 'adm' holds timestamps in 2 different time zones.*{zones}"
        with pytest.raises(InputError, match=zoned):
            anonymize(frame(text), POLICY.with_overrides(kinds={"adm": "date"}))
    two = pd.Series([f"2020-03-0{d}T10:00+0{1 + d % 2}:00" for d in range(1, 7)], dtype=object)
    two_zones = r"2 different time zones.*\['\+01:00', '\+02:00'\].*\(6 rows: row 0, row 1,"
    with pytest.raises(InputError, match=two_zones):
        anonymize(frame(two), POLICY.with_overrides(kinds={"adm": "date"}))
    one = pd.Series([f"2020-03-0{d}T23:30+01:00" for d in range(1, 7)], dtype=object)
    days = anonymize(frame(one), POLICY.with_overrides(kinds={"adm": "date"}))  # one offset: wall-clock days
    assert boxes(days.released) == {("2020-03-01", "2020-03-03"), ("2020-03-04", "2020-03-06")}
    text = pd.Series(["2020-03-01", "2020-03-02", "soon", "2020-03-04", "n/a", "2020-03-06"], dtype=object)
    not_dates = r"date QI 'adm' holds values that are not dates: \['soon', 'n/a'\].*YYYY-MM-DD.*row 2"
    with pytest.raises(InputError, match=not_dates):
        anonymize(frame(text), POLICY.with_overrides(kinds={"adm": "date"}))
    missing = pd.Series(
        pd.to_datetime(["2020-03-01", None, "2020-03-03", "2020-03-04", "2020-03-05", "2020-03-06"])
    )
    with pytest.raises(InputError, match=r"column 'adm' has missing values.*\(1 row: row 1\)"):
        anonymize(frame(missing), POLICY)
    dated_s = frame(pd.to_datetime(STAMPS)).assign(adm=range(6), s=pd.to_datetime(STAMPS))
    with pytest.raises(InputError, match=r"sensitive column 's' holds dates or times.*convert it to text"):
        anonymize(dated_s, POLICY)


def test_date_domain_in_the_policy_file(tmp_path):
    (tmp_path / "p.toml").write_text(
        '[columns]\nid = "rid"\nqi = ["adm"]\nsensitive = "s"\n[privacy]\nk = 3\nt = 1.0\nj = 10.0\n'
        '[kinds]\nadm = "date"\n[domains]\nadm = [2020-01-01, "2020-12-31"]\n'
    )
    pol = ReleasePolicy.from_toml(tmp_path / "p.toml")
    assert (
        pol.domains["adm"] == [18262, 18627] and pol.kind("adm") == "numeric" and pol.kinds["adm"] == "date"
    )
    res = anonymize(frame(pd.to_datetime(STAMPS)), pol)
    assert boxes(res.released) == {("2020-01-01", "2020-01-03"), ("2020-02-28", "2020-03-05")}
    with pytest.raises(PolicyError, match=r"numeric domain of 'adm' must be \[min, max\]"):
        ReleasePolicy.from_dict(
            dict(id="rid", qi=["adm"], sensitive="s", kinds={"adm": "date"}, domains={"adm": ["x", "y"]})
        )


@pytest.mark.slow
def test_cli_parquet_and_csv_dates_release_and_verify(cli, tmp_path):
    v = frame(pd.to_datetime(STAMPS).tz_localize("Europe/Paris"))
    v.to_parquet(tmp_path / "in.parquet", index=False)
    flags = ("--id", "rid", "--qi", "adm", "--sensitive", "s", "--k", "3", "--t", "1", "--j", "10")
    for out in ("rel.parquet", "rel.csv"):
        res = cli("anonymize", tmp_path / "in.parquet", "--out", tmp_path / out, *flags)
        assert res.exit_code == 0, res.output
        ver = cli(
            "verify",
            tmp_path / out,
            "--original",
            tmp_path / "in.parquet",
            *flags[:6],
            "--k",
            "3",
            "--t",
            "1",
        )
        assert ver.exit_code == 0 and "ok: True" in ver.output, ver.output
    assert "2020-01-01,2020-01-03" in (tmp_path / "rel.csv").read_text()
    assert pd.read_parquet(tmp_path / "rel.parquet")["adm_min"].dtype == DATE
    # a CSV holds dates as text: --date declares them; a value that is not a date is refused
    (tmp_path / "in.csv").write_text(
        "rid,adm,s\n" + "".join(f"{i},{d[:10]},{'abc'[i % 3]}\n" for i, d in enumerate(STAMPS))
    )
    res = cli("anonymize", tmp_path / "in.csv", "--out", tmp_path / "c.parquet", *flags, "--date", "adm")
    assert res.exit_code == 0, res.output
    assert boxes(pd.read_parquet(tmp_path / "c.parquet")) == {
        ("2020-01-01", "2020-01-03"),
        ("2020-02-28", "2020-03-05"),
    }
    ver = cli("verify", tmp_path / "c.parquet", "--original", tmp_path / "in.csv", *flags[:6],
              "--date", "adm",
              "--k", "3", "--t", "1")  # fmt: skip
    assert ver.exit_code == 0 and "ok: True" in ver.output, ver.output
    (tmp_path / "bad.csv").write_text((tmp_path / "in.csv").read_text().replace("2020-03-01", "1st of March"))
    res = cli("anonymize", tmp_path / "bad.csv", "--out", tmp_path / "b.parquet", *flags, "--date", "adm")
    refused(res, tmp_path / "b.parquet", "date QI 'adm' holds values that are not dates: ['1st of March']",
            "YYYY-MM-DD", "line 5 of")  # fmt: skip
    res = cli("anonymize", tmp_path / "in.csv", "--out", tmp_path / "b.parquet", *flags, "--date", "when")
    refused(res, tmp_path / "b.parquet", "--date names ['when'], which are not QIs")


def test_a_history_with_a_date_qi_releases_verifies_and_is_attacked(tmp_path, client):
    days = pd.date_range("2019-06-01", periods=40, freq="D")
    views = []
    for i in (1, 2):
        f = pd.DataFrame({"rid": [f"p{r}" for r in range(30)], "view": i, "adm": days[i:i + 30],
                          "age": [40 + r % 20 for r in range(30)],
                          "s": [("a", "b", "c")[(r + i) % 3] for r in range(30)]})  # fmt: skip
        views.append(f)
    hist = pd.concat(views, ignore_index=True)
    pol = ReleasePolicy(id="rid", time="view", qi=["adm", "age"], sensitive="s", k=3, t=1.0, j=10.0,
                        knowledge={"defender": "ie"})  # fmt: skip
    led = release_history(hist, pol, tmp_path / "led")
    assert led.policy().kinds == {"adm": "date", "age": "numeric"}
    for i in (1, 2):
        rel = led.read_view(i)
        assert rel["adm_min"].dtype == DATE and (rel["adm_min"] <= rel["adm_max"]).all()
        assert str(rel["adm_min"].min()) >= str(days[i].date()) and str(rel["adm_max"].max()) <= str(
            days[i + 29].date()
        )
        assert verify_view(rel, hist, led.policy(), view=i).ok
        back = released_days(rel, led.policy())
        assert back["adm_min"].dtype == "int64"
    gain = attack(led, hist, pol, "ie", deductions=False, membership="qi")
    assert gain["release"].tolist() == [1, 2] and gain["n_pinned"].ge(0).all()
    assert Path(tmp_path / "led" / "policy.json").read_text().count('"date"') == 1


def test_the_report_reference_line_reads_a_date_qi_as_the_release_did(cli, tmp_path):
    """``dpriv report --history`` with a date QI was an internal ValueError (the reference KPR
    read '2024-01-06' as a number): the history is measured as it was released, in days."""
    from dpriv.metrics.microdata import reference_kpr
    from dpriv.report.reference import reference_kprs

    days = pd.date_range("2019-06-01", periods=40, freq="D")
    hist = pd.DataFrame({"rid": [f"p{r}" for r in range(30)] * 2, "view": [1] * 30 + [2] * 30,
                         "adm": [*days[:30], *days[3:33]], "age": [40 + r % 7 for r in range(60)],
                         "s": [("a", "b", "c")[r % 3] for r in range(60)]})  # fmt: skip
    hist.assign(adm=hist["adm"].dt.strftime("%Y-%m-%d")).to_csv(tmp_path / "h.csv", index=False)
    res = cli("release", tmp_path / "h.csv", "--ledger", tmp_path / "led", "--id", "rid", "--time", "view",
              "--qi", "adm,age", "--date", "adm", "--sensitive", "s",
              "--k", "3", "--t", "1", "--j", "10")  # fmt: skip
    assert res.exit_code == 0, res.output
    # the oracle: the same history with the dates written as whole days since 1970 by hand
    as_days = hist.assign(adm=(hist["adm"] - pd.Timestamp("1970-01-01")).dt.days)
    numeric = ReleasePolicy(id="rid", time="view", qi=["adm", "age"], sensitive="s", k=3, t=1.0, j=10.0)
    expected = {i: reference_kpr(as_days[as_days["view"] == i], numeric) for i in (1, 2)}
    assert reference_kprs(tmp_path / "led", tmp_path / "h.csv") == pytest.approx(expected)
    assert 0 < expected[1] <= 100
    res = cli("report", tmp_path / "led", "--history", tmp_path / "h.csv", "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    assert f"{expected[2]:.1f}" in (tmp_path / "r.html").read_text()
    # dpriv export refused the date bounds as "not numbers": ISO ranges first/last
    res = cli("export", "--ledger", tmp_path / "led", "--view", "2", "--out", tmp_path / "e.csv")
    assert res.exit_code == 0, res.output
    exported = pd.read_csv(tmp_path / "e.csv", dtype=str, keep_default_na=False)
    # release 1's metrics for view 2 (the same number of rows): were taken as view 2's
    other = tmp_path / "led" / "releases" / "1" / "metrics.json"
    res = cli(
        "export",
        "--ledger",
        tmp_path / "led",
        "--view",
        "2",
        "--out",
        tmp_path / "e1.csv",
        "--metrics",
        other,
    )
    assert res.exit_code == 2 and "release 1 (this view: 2)" in res.output, res.output
    assert not (tmp_path / "e1.csv").exists()
    released = pd.read_parquet(tmp_path / "led" / "releases" / "2" / "view.parquet")
    assert exported["adm"].tolist() == [
        f"{a}/{b}" if a != b else f"{a}" for a, b in zip(released["adm_min"], released["adm_max"])
    ]  # ARX's spelling: first/last, one day alone


def test_dates_beyond_the_timestamps_are_refused_naming_them(cli, tmp_path):
    """A drill: 9999-12-31 (a common 'no date' placeholder) or 0001-01-01 ended in exit 1,
    OutOfBoundsDatetime. Refused with exit 2, the value and the line named; the first and last
    days dpriv can hold still release."""
    flags = ("--id", "rid", "--qi", "adm", "--sensitive", "s", "--k", "3", "--t", "1", "--j", "10")
    days = ["2020-01-01", "2020-01-03", "2020-01-02", "2020-03-01", "2020-03-05", "2020-02-28"]
    for far in ("9999-12-31", "0001-01-01 10:00", "1677-09-21"):
        text = "rid,adm,s\n" + "".join(f"{i},{d},{'abc'[i % 3]}\n" for i, d in enumerate([*days[:5], far]))
        (tmp_path / "in.csv").write_text(text)
        res = cli("anonymize", tmp_path / "in.csv", "--out", tmp_path / "o.parquet", *flags, "--date", "adm")
        refused(res, tmp_path / "o.parquet", "date QI 'adm' holds dates outside 1677-09-22 .. 2262-04-11",
                f"['{far}']", "line 7 of")  # fmt: skip
    # a Parquet date column (Arrow date32 holds year 9999) is refused the same way
    values = [dt.date(2020, 1, d) for d in range(1, 6)] + [dt.date(9999, 12, 31)]
    frame(values).astype({"adm": DATE}).to_parquet(tmp_path / "in.parquet", index=False)
    res = cli("anonymize", tmp_path / "in.parquet", "--out", tmp_path / "o.parquet", *flags)
    refused(res, tmp_path / "o.parquet", "holds dates outside 1677-09-22 .. 2262-04-11", "['9999-12-31']")
    edge = frame([dt.date(1677, 9, 22), dt.date(2262, 4, 11), *values[1:5]])
    assert to_days(edge["adm"]).tolist()[:2] == [-106_751, 106_751]

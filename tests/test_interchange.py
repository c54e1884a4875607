"""``dpriv export`` and dpriv.interchange: a released view as ARX and pyCANON read it
(docs/released-format.md "Interchange export"); pyCANON recomputes the verifier's k, l, t."""

from __future__ import annotations

import datetime as dt
import io
import json
import os

import numpy as np
import pandas as pd
import pytest
from conftest import random_view
from hypothesis import given
from hypothesis import strategies as st

from dpriv.dates import DATE
from dpriv.errors import InputError
from dpriv.interchange import (
    SUPPRESSED,
    format_number,
    from_interchange,
    group_names,
    interval_text,
    layout_of,
    parse_interval,
    to_interchange,
)
from dpriv.interchange_text import arx_cell, date_interval_text, parse_dates
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, verify_view
from dpriv.released import GROUP, parse_value_set

QI = ["age", "gender", "weight"]
POLICY = ReleasePolicy(
    id="respondent_id", qi=QI, sensitive="exam_result", k=5, t=0.4, j=1.0, seed=0, max_suppression=0.5
)


# ------------------------------------------------------------------ intervals and labels
@pytest.mark.parametrize(
    ("lo", "hi", "text"),
    [
        (45, 52, "45-52"),
        (45.0, 52.0, "45-52"),
        (72.5, 80.0, "72.5-80"),
        (-3, -1, "-3--1"),
        (-0.5, 0.25, "-0.5-0.25"),
        (1e-05, 0.1, "0.00001-0.1"),
        (2**62 + 1, 2**62 + 3, "4611686018427387905-4611686018427387907"),
        (np.int64(7), np.int64(7), "7"),  # one value: ARX writes it alone, as a leaf
        (-2.5, -2.5, "-2.5"),
    ],
)
def test_interval_text_by_hand(lo, hi, text):
    """ARX's spelling (its hierarchies' 0-4, a value alone) and dpriv's earlier [lo-hi]; both
    read back to the same bounds."""
    dpriv = f"[{text}-{text}]" if lo == hi else f"[{text}]"
    assert interval_text(lo, hi) == text
    assert interval_text(lo, hi, "dpriv") == dpriv
    for written in (text, dpriv):
        back = parse_interval(written)
        assert back == (lo, hi)
        # an integer bound stays exact (2**62 + 1 is not a float64)
        assert all(type(b) is int for b in back) == ("." not in text)


@given(st.floats(allow_nan=False, allow_infinity=False, width=64), st.floats(0, 1e6))
def test_interval_text_reads_back_the_same_floats(lo, width):
    hi = lo + width
    for spelling in ("arx", "dpriv"):
        got = parse_interval(interval_text(lo, hi, spelling))
        assert float(got[0]) == lo and float(got[1]) == hi


@given(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**20))
def test_interval_text_reads_back_the_same_integers(lo, width):
    hi = min(lo + width, 2**63 - 1)
    assert parse_interval(interval_text(np.int64(lo), np.int64(hi))) == (lo, hi)


@pytest.mark.parametrize(
    "bad", ["[52-45]", "52-45", "[a-b]", "{F,M}", "[45,52]", "*", "[1e5-2e5]", "[45-52", "45-52]", "45-", ""]
)
def test_parse_interval_refuses_what_it_did_not_write(bad):
    with pytest.raises(InputError, match="interval"):
        parse_interval(bad)


def test_format_number_drops_only_a_zero_fraction():
    assert [format_number(x) for x in (3, 3.0, 3.25, -0.0, 1e20)] == ["3", "3", "3.25", "-0", "1" + "0" * 20]


def test_group_names_rank_the_labels():
    labels = np.array([9_000_000_000_000_000_007, -5, 9_000_000_000_000_000_007, 7], dtype=np.int64)
    assert group_names(labels).tolist() == ["G3", "G1", "G3", "G2"]  # ranks of -5 < 7 < 9e18
    ten = group_names(np.arange(10, 0, -1) * 100_000_000_000_000_007)
    assert ten.tolist() == [f"G{i:02d}" for i in range(10, 0, -1)]  # one width: they sort as text
    assert group_names(np.array([], dtype=np.int64)).tolist() == []


# ------------------------------------------------------------------ a hand-made released view
def hand_view() -> pd.DataFrame:
    return pd.DataFrame(
        {
            GROUP: np.array(
                [8_000_000_000_000_000_001, 42, 42, 8_000_000_000_000_000_001, 42], dtype=np.int64
            ),
            "age_min": [45, 30, 30, 45, 30],
            "age_max": [52, 39, 39, 52, 39],
            "city": ["{Paris\\, FR,Metz}", "{Metz}", "{Metz}", "{Paris\\, FR,Metz}", "{Metz}"],
            "w_min": [60.5, 70.0, 70.0, 60.5, 70.0],
            "w_max": [61.0, 88.25, 88.25, 61.0, 88.25],
            "disease": ["flu", "flu", "hiv", "hiv", "cold"],
        }
    )


def test_to_interchange_by_hand():
    x = to_interchange(hand_view(), n_suppressed=2)
    assert list(x.table.columns) == [GROUP, "age", "city", "w", "disease"]
    assert x.table.values.tolist() == [
        ["G2", "45-52", "{Paris\\, FR,Metz}", "60.5-61", "flu"],
        ["G1", "30-39", "Metz", "70-88.25", "flu"],
        ["G1", "30-39", "Metz", "70-88.25", "hiv"],
        ["G2", "45-52", "{Paris\\, FR,Metz}", "60.5-61", "hiv"],
        ["G1", "30-39", "Metz", "70-88.25", "cold"],
        ["*"] * 5,
        ["*"] * 5,
    ]
    # dpriv's earlier spelling, kept for scripts that read it
    old = to_interchange(hand_view(), n_suppressed=2, spelling="dpriv")
    assert old.table.iloc[:2].values.tolist() == [
        ["G2", "[45-52]", "{Paris\\, FR,Metz}", "[60.5-61]", "flu"],
        ["G1", "[30-39]", "{Metz}", "[70-88.25]", "flu"],
    ]
    with pytest.raises(InputError, match="spelling = 'ARX': choose 'arx'"):
        to_interchange(hand_view(), n_suppressed=2, spelling="ARX")  # type: ignore[arg-type]
    assert (x.n_kept, x.n_marked, x.n_groups) == (5, 2, 2)
    assert x.layout.numeric == ["age", "w"] and x.layout.categorical == ["city"]
    omitted = to_interchange(hand_view(), suppressed="omit")
    pd.testing.assert_frame_equal(omitted.table, x.table.iloc[:5])
    assert set(omitted.table.dtypes) == {np.dtype(object)}  # text columns, pandas 2 and 3 alike
    assert omitted.n_marked == 0
    # the CSV keeps the escaped value set as one field (quoted by the CSV writer)
    buf = io.StringIO()
    x.table.to_csv(buf, index=False)
    back = pd.read_csv(io.StringIO(buf.getvalue()), dtype=str, keep_default_na=False)
    assert back["city"].tolist()[:1] == ["{Paris\\, FR,Metz}"]
    assert (back.iloc[5:] == SUPPRESSED).all().all()


@pytest.mark.parametrize(
    ("cell", "arx"),
    [
        ("{Male}", "Male"),
        ("{F,M}", "{F,M}"),  # a set of two stays a set
        ("{Paris\\, FR}", "{Paris\\, FR}"),  # alone it would read as two values
        ("{\\{x\\}}", "{\\{x\\}}"),  # alone it would read as a set
        ("Lorraine", "Lorraine"),  # a hierarchy node
        ("*", "*"),
    ],
)
def test_arx_cell_writes_a_set_of_one_value_alone_when_it_reads_back_the_same(cell, arx):
    assert arx_cell(cell) == arx
    assert parse_value_set(arx) == parse_value_set(cell)


@pytest.mark.parametrize("spelling", ["arx", "dpriv"])
def test_from_interchange_reads_back_the_released_view(spelling):
    """Round trip: export (either spelling) -> released columns again, the '*' rows left out."""
    view = hand_view().assign(city=["{Paris\\, FR,Metz}", "{Metz}", "{Metz}", "{Paris\\, FR,Metz}", "{Metz}"])
    x = to_interchange(view, n_suppressed=2, spelling=spelling)
    back = from_interchange(x.table, qi=["age", "city", "w"], numeric=["age", "w"])
    assert list(back.columns) == list(view.columns) and len(back) == len(view)
    pd.testing.assert_frame_equal(back.drop(columns=GROUP), view.drop(columns=GROUP), check_dtype=False)
    bounds = back.dtypes[["age_min", "age_max", "w_min", "w_max"]].tolist()
    assert bounds == ["int64", "int64", "float64", "float64"]
    assert back[GROUP].tolist() == ["G2", "G1", "G1", "G2", "G1"]


def test_an_arx_spelled_file_is_read():
    """A table as ARX writes it: ';', its hierarchy labels (0-4, a value alone), no braces, no
    qi_group; the earlier spelling mixed in reads the same."""
    text = (
        "age;sex;zip;disease\n0-4;Male;816*;flu\n0-4;Male;816*;cold\n"
        "[5-9];{F,M};816*;flu\n7;{Female};816*;hiv\n"
    )
    table = pd.read_csv(io.StringIO(text), sep=";", dtype=str, keep_default_na=False)
    back = from_interchange(table, qi=["age", "sex", "zip"], numeric=["age"], hierarchies=["zip"])
    assert list(back.columns) == ["age_min", "age_max", "sex", "zip", "disease"]
    assert back["age_min"].tolist() == [0, 0, 5, 7] and back["age_max"].tolist() == [4, 4, 9, 7]
    assert back["age_min"].dtype == np.int64
    assert back["sex"].tolist() == ["{Male}", "{Male}", "{F,M}", "{Female}"]
    assert back["zip"].tolist() == ["816*"] * 4  # a hierarchy node, verbatim
    assert parse_dates("2024-01-06/2024-01-12") == parse_dates("[2024-01-06/2024-01-12]")
    assert parse_dates("2024-01-06") == (pd.Timestamp("2024-01-06"),) * 2
    assert date_interval_text(19728, 19734) == "2024-01-06/2024-01-12"
    days = pd.DataFrame({"adm": ["2024-01-06/2024-01-12", "2023-12-31"], "s": ["a", "b"]})
    dated = from_interchange(days, qi=["adm"], numeric=["adm"], dates=["adm"])
    assert dated["adm_min"].dt.date.tolist() == [dt.date(2024, 1, 6), dt.date(2023, 12, 31)]
    assert dated["adm_max"].dt.date.tolist() == [dt.date(2024, 1, 12), dt.date(2023, 12, 31)]
    with pytest.raises(InputError, match=r"column 'age', row 2: '\*' is not an interval .*suppressed record"):
        from_interchange(table.assign(age=["0-4", "*", "5-9", "7"]), qi=["age"], numeric=["age"])
    with pytest.raises(InputError, match=r"no column \['height'\]"):
        from_interchange(table, qi=["height"], numeric=[])


def test_date_bounds_and_groups_that_share_their_text_by_hand(cli, tmp_path):
    """Date QIs were refused ("not numbers"); groups at a hierarchy's root share the text '*'."""
    day = [dt.date(2024, 1, 6), dt.date(2024, 1, 12), dt.date(2023, 12, 31)]
    v = pd.DataFrame(
        {
            GROUP: np.array([3, 9, 3, 9, 5], dtype=np.int64),
            "adm_min": pd.array([day[0], day[0], day[0], day[0], day[2]], dtype=DATE),
            "adm_max": pd.array([day[1], day[1], day[1], day[1], day[2]], dtype=DATE),
            "city": ["*", "*", "*", "*", "Europe"],
            "s": ["a", "b", "c", "a", "b"],
        }
    )
    x = to_interchange(v, suppressed="omit")
    assert x.table["adm"].tolist() == ["2024-01-06/2024-01-12"] * 4 + ["2023-12-31"]
    old = to_interchange(v, suppressed="omit", spelling="dpriv")
    assert old.table["adm"].tolist() == ["[2024-01-06/2024-01-12]"] * 4 + ["[2023-12-31/2023-12-31]"]
    assert x.table[GROUP].tolist() == ["G1", "G3", "G1", "G3", "G2"]  # the all-'*' groups keep labels
    assert (x.n_groups, x.n_text_classes) == (3, 2)  # groups 3 and 9 read as one class by their text
    assert x.layout.numeric == ["adm"]
    # a CSV release holds ISO text: read as dates when the policy names the QI a date
    text = v.astype({"adm_min": str, "adm_max": str})
    assert to_interchange(text, suppressed="omit", dates=["adm"]).table.equals(x.table)
    with pytest.raises(InputError, match="'adm_min' holds"):
        to_interchange(text, suppressed="omit")
    with pytest.raises(InputError, match="'adm_min' of the date QI 'adm' holds values that are not dates"):
        to_interchange(text.assign(adm_min="soon"), suppressed="omit", dates=["adm"])
    v.to_parquet(tmp_path / "v.parquet", index=False)
    res = cli("export", tmp_path / "v.parquet", "--out", tmp_path / "e.csv", "--suppressed", "omit")
    assert res.exit_code == 0, res.output
    assert "note: 1 QI-group(s) share their generalized QI text" in res.output
    assert "sees 2 classes where dpriv released 3" in res.output


def test_layout_from_the_policy_equals_the_layout_read_from_the_columns():
    cols = list(hand_view().columns)
    assert layout_of(cols, ["age", "city", "w"], "disease") == layout_of(cols)
    with pytest.raises(InputError, match=r"missing \['weight'\]"):
        layout_of(cols, ["age", "city", "weight"], "disease")
    with pytest.raises(InputError, match="'age_min' is not followed by 'age_max'"):
        layout_of([GROUP, "age_min", "city", "age_max", "s"])
    with pytest.raises(InputError, match="starts with 'qi_group'"):
        layout_of(["respondent_id", "age", "s"])


def test_to_interchange_refuses_what_is_not_a_released_view():
    with pytest.raises(InputError, match="--metrics F.*--suppressed omit"):
        to_interchange(hand_view())
    bad = hand_view()
    bad.loc[1, "age_max"] = 40  # two intervals in one group
    with pytest.raises(InputError, match="'age_max' differs between rows of 1 QI-group"):
        to_interchange(bad, suppressed="omit")
    bad = hand_view()
    bad.loc[0, "city"] = "{Metz}"
    with pytest.raises(InputError, match="'city' differs"):
        to_interchange(bad, suppressed="omit")
    bad = hand_view().astype({"age_min": str})
    with pytest.raises(InputError, match="'age_min' holds"):
        to_interchange(bad, suppressed="omit")
    with pytest.raises(InputError, match="negative"):
        to_interchange(hand_view(), n_suppressed=-1)
    with pytest.raises(InputError, match="'mark'"):
        to_interchange(hand_view(), suppressed="drop")


# ------------------------------------------------------------------ a real release
@pytest.fixture(scope="module")
def release():
    view = random_view(300, seed=1)
    return view, anonymize(view, POLICY, prior="uniform")


def test_export_of_a_release_keeps_every_group_and_bound(release):
    view, result = release
    rel = result.released
    x = to_interchange(rel, qi=QI, sensitive="exam_result", n_suppressed=result.metrics["n_suppressed"])
    assert len(x.table) == len(view)  # kept + marked = the original view
    kept = x.table.iloc[: len(rel)]
    # labels: a bijection between the int64 labels and the short names
    pairs = pd.DataFrame({"label": rel[GROUP].to_numpy(), "name": kept[GROUP].to_numpy()}).drop_duplicates()
    assert pairs["label"].is_unique and pairs["name"].is_unique and len(pairs) == rel[GROUP].nunique()
    assert kept[GROUP].str.len().max() <= 1 + len(str(len(pairs)))
    for q in ("age", "weight"):
        bounds = kept[q].map(parse_interval)
        assert bounds.str[0].tolist() == rel[f"{q}_min"].tolist()
        assert bounds.str[1].tolist() == rel[f"{q}_max"].tolist()
    assert kept["gender"].map(parse_value_set).tolist() == rel["gender"].map(parse_value_set).tolist()
    assert kept["gender"].isin(["F", "M", "{F,M}"]).all()  # ARX's spelling: one value alone
    assert kept["exam_result"].tolist() == rel["exam_result"].tolist()
    back = from_interchange(x.table, qi=QI, numeric=["age", "weight"])  # the round trip
    pd.testing.assert_frame_equal(
        back.drop(columns=GROUP).reset_index(drop=True),
        rel.drop(columns=GROUP).reset_index(drop=True),
        check_dtype=False,
    )


def _pycanon_input(csv_text: str, qi: list[str] = QI) -> pd.DataFrame:
    """The export as a user hands it to pyCANON: read as text, '*' rows (suppressed) left out."""
    d = pd.read_csv(io.StringIO(csv_text), dtype=str, keep_default_na=False)
    return d[~(d[qi] == SUPPRESSED).all(axis=1)].reset_index(drop=True)


@pytest.mark.pycanon
def test_pycanon_computes_the_verifiers_k_l_t_from_the_export(release):
    anonymity = pytest.importorskip("pycanon.anonymity")
    view, result = release
    # pyCANON's t compares each class with the distribution of the table it is given; with
    # nothing suppressed that is the original view's, the verifier's reference
    assert result.metrics["n_suppressed"] == 0
    report = verify_view(result.released, view, result.policy)
    assert report.ok and report.l_achieved >= 2
    x = to_interchange(result.released, n_suppressed=0)
    d = _pycanon_input(x.table.to_csv(index=False))
    assert anonymity.k_anonymity(d, QI) == report.k_achieved
    assert anonymity.l_diversity(d, QI, ["exam_result"]) == report.l_achieved
    assert anonymity.t_closeness(d, QI, ["exam_result"]) == pytest.approx(report.t_achieved, abs=1e-12)


@pytest.mark.pycanon
def test_pycanon_k_and_l_with_suppressed_rows_marked():
    anonymity = pytest.importorskip("pycanon.anonymity")
    x = to_interchange(hand_view(), n_suppressed=3)
    qi = ["age", "city", "w"]
    d = _pycanon_input(x.table.to_csv(index=False), qi)
    # by hand: G1 = {flu, hiv, cold} (3 rows), G2 = {flu, hiv} (2 rows)
    assert anonymity.k_anonymity(d, qi) == 2
    assert anonymity.l_diversity(d, qi, ["disease"]) == 2
    # without dropping the '*' rows they form a class of 3 with one "sensitive value" '*'
    raw = pd.read_csv(io.StringIO(x.table.to_csv(index=False)), dtype=str, keep_default_na=False)
    assert anonymity.l_diversity(raw, qi, ["disease"]) == 1


# ------------------------------------------------------------------ the command
@pytest.fixture(scope="module")
def anonymized(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    random_view(200, seed=4).to_csv(d / "view.csv", index=False)
    r = cli(
        "anonymize", d / "view.csv", "--out", d / "rel.parquet", "--id", "respondent_id",
        "--qi", "age,gender,weight", "--sensitive", "exam_result", "--k", 4, "--t", 0.5, "--j", 1.0,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    return d


@pytest.mark.slow
def test_cli_export_writes_the_interchange_csv(cli, anonymized):
    d = anonymized
    r = cli("export", d / "rel.parquet", "--out", d / "e.csv")
    assert r.exit_code == 0, r.output
    import json

    n_supp = json.loads((d / "rel.parquet.metrics.json").read_text())["n_suppressed"]
    e = pd.read_csv(d / "e.csv", dtype=str, keep_default_na=False)
    rel = pd.read_parquet(d / "rel.parquet")
    assert list(e.columns) == [GROUP, "age", "gender", "weight", "exam_result"]
    assert len(e) == 200 and (e.iloc[len(rel) :] == "*").all().all() and len(e) - len(rel) == n_supp
    expected = [f"{a}-{b}" if a != b else f"{a}" for a, b in zip(rel["age_min"], rel["age_max"])]
    assert e["age"].iloc[: len(rel)].tolist() == expected
    # ';' for ARX's usual CSVs: the value sets keep their commas
    r = cli("export", d / "rel.parquet", "--out", d / "e2.csv", "--sep", ";", "--suppressed", "omit")
    assert r.exit_code == 0, r.output
    e2 = pd.read_csv(d / "e2.csv", sep=";", dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(e2, e.iloc[: len(rel)])
    # an export fed back as input is refused: it is generalized data (a value set of two values;
    # ARX's 45-52 and a value alone are also what original categories can look like)
    assert e["gender"].str.startswith("{").any()
    r = cli("anonymize", d / "e.csv", "--out", d / "again.csv", "--add-row-id", "--qi", "age,gender",
            "--sensitive", "exam_result", "--k", 2)  # fmt: skip
    assert r.exit_code == 2 and "generalized or placeholder value" in r.output
    assert not (d / "again.csv").exists()


def test_cli_export_spells_as_arx_by_default_and_as_before_on_request(cli, anonymized):
    """--spelling arx (the default: 45-52, 45, Male, as ARX writes) or dpriv (the exports before
    December 2026: [45-52], [45-45], {Male}, for a script that reads them); nothing else differs."""
    d = anonymized
    rel = pd.read_parquet(d / "rel.parquet")
    for name, extra in (("arx", ()), ("dpriv", ("--spelling", "dpriv"))):
        r = cli("export", d / "rel.parquet", "--out", d / f"{name}.csv", "--suppressed", "omit", *extra)
        assert r.exit_code == 0, r.output
        assert f"export, {name} spelling" in r.output
    arx, old = (pd.read_csv(d / f"{n}.csv", dtype=str, keep_default_na=False) for n in ("arx", "dpriv"))
    bounds = list(zip(rel["age_min"], rel["age_max"]))
    assert arx["age"].tolist() == [f"{a}-{b}" if a != b else f"{a}" for a, b in bounds]
    assert old["age"].tolist() == [f"[{a}-{b}]" for a, b in bounds]
    sets = rel["gender"].astype(str)
    assert {"{F}", "{F,M}"} <= set(sets) or {"{M}", "{F,M}"} <= set(sets)  # a set of one and of two
    assert old["gender"].tolist() == sets.tolist()  # as released, {F} braced
    assert arx["gender"].tolist() == [s if "," in s else s[1:-1] for s in sets]
    pd.testing.assert_frame_equal(
        arx.drop(columns=["age", "gender", "weight"]), old.drop(columns=["age", "gender", "weight"])
    )
    r = cli("export", d / "rel.parquet", "--out", d / "x.csv", "--spelling", "ARX")
    assert r.exit_code == 2 and "--spelling 'ARX': choose arx (45-52, 45, Male) or dpriv" in r.output
    assert not (d / "x.csv").exists()


def test_cli_export_refuses_without_writing(cli, anonymized):
    d = anonymized
    (d / "keep.csv").write_text("mine\n")
    before = os.stat(d / "keep.csv")
    cases = [
        (("--out", d / "keep.csv"), f"--out {d / 'keep.csv'} exists already; nothing was written"),
        (("--out", d / "x.parquet"), "writes CSV"),
        (("--out", d / "x.csv", "--sep", "|"), "--sep"),
        (("--out", d / "x.csv", "--metrics", d / "nope.json"), "cannot read n_suppressed"),
        (("--out", d / "x.csv", "--view", 1), "--view I goes with --ledger"),
        # another release's metrics would have added its suppressed count as '*' rows
        (("--out", d / "x.csv", "--metrics", d / "other.json"), "these are another release's metrics"),
        # a count that is no count (a drill: exit 1 for "x" and 1e12, 2.5 and true made '*' rows)
        *[
            (("--out", d / "x.csv", "--metrics", d / f"bad{i}.json"), "not the number of tuples it left out")
            for i in range(5)
        ],
        (("--out", d / "x.csv", "--metrics", d / "true.json"), "not a JSON object with n_suppressed"),
    ]
    record = json.loads((d / "rel.parquet.metrics.json").read_text())
    (d / "other.json").write_text(json.dumps({**record, "n_released": record["n_released"] + 285}))
    for i, n in enumerate(["x", 1e12, 2.5, True, record["n_suppressed"] + 1]):
        (d / f"bad{i}.json").write_text(json.dumps({**record, "n_suppressed": n}))
    (d / "true.json").write_text("true")
    for extra, message in cases:
        r = cli("export", d / "rel.parquet", *extra)
        assert r.exit_code == 2 and message in r.output, (extra, r.output)
    assert (d / "keep.csv").read_text() == "mine\n"
    assert os.stat(d / "keep.csv").st_mtime_ns == before.st_mtime_ns
    assert not (d / "x.csv").exists() and not (d / "x.parquet").exists()
    # a released view without its metrics: say how to proceed
    pd.read_parquet(d / "rel.parquet").to_csv(d / "bare.csv", index=False)
    r = cli("export", d / "bare.csv", "--out", d / "x.csv")
    assert r.exit_code == 2 and "--suppressed omit" in r.output and not (d / "x.csv").exists()
    assert cli("export", d / "bare.csv", "--out", d / "x.csv", "--suppressed", "omit").exit_code == 0
    # --force never replaces a file dpriv did not write (the user's keep.csv), only an earlier export
    r = cli("export", d / "rel.parquet", "--out", d / "keep.csv", "--force")
    assert r.exit_code == 2 and "keep.csv was not written by dpriv" in r.output, r.output
    assert (d / "keep.csv").read_text() == "mine\n"
    assert os.stat(d / "keep.csv").st_mtime_ns == before.st_mtime_ns
    r = cli("export", d / "rel.parquet", "--out", d / "x.csv", "--force")
    assert r.exit_code == 0, r.output
    assert (d / "x.csv").read_text().startswith("qi_group,age,gender,weight,exam_result\n")


def test_a_fully_suppressed_release_exports_only_marks():
    empty = hand_view().iloc[:0]
    x = to_interchange(empty, n_suppressed=3)
    assert (x.n_kept, x.n_marked, x.n_groups) == (0, 3, 0)
    assert x.table.values.tolist() == [["*"] * 5] * 3


def test_cli_export_of_a_ledger_release(cli, tmp_path):
    import json

    from dpriv.release import release_history

    views = [random_view(12, seed=i).assign(view=i) for i in (1, 2)]
    history = pd.concat(views, ignore_index=True)
    history.to_parquet(tmp_path / "h.parquet", index=False)
    policy = ReleasePolicy(
        id="respondent_id", time="view", qi=QI, sensitive="exam_result", k=3, t=1.0, j=5.0,
        max_suppression=1.0,
    )  # fmt: skip
    release_history(history, policy, tmp_path / "led")
    r = cli("export", "--ledger", tmp_path / "led", "--out", tmp_path / "e.csv")
    assert r.exit_code == 2 and "holds releases [1, 2]" in r.output
    r = cli("export", "--ledger", tmp_path / "led", "--view", 2, "--out", tmp_path / "e.csv")
    assert r.exit_code == 0, r.output
    e = pd.read_csv(tmp_path / "e.csv", dtype=str, keep_default_na=False)
    rel = pd.read_parquet(tmp_path / "led" / "releases" / "2" / "view.parquet")
    n_supp = json.loads((tmp_path / "led" / "releases" / "2" / "metrics.json").read_text())["n_suppressed"]
    assert len(e) == len(rel) + n_supp == 12
    assert e[GROUP].iloc[: len(rel)].nunique() == rel[GROUP].nunique()
    assert list(e.columns) == [GROUP, *QI, "exam_result"]
    # the same release given by path (with the ledger's policy): its metrics.json beside it
    # gives the suppressed rows, as --ledger does; copied out of the ledger it is not used
    pol = tmp_path / "policy.toml"
    pol.write_text(
        '[columns]\nid = "respondent_id"\ntime = "view"\nqi = '
        + json.dumps(QI)
        + '\nsensitive = "exam_result"\n'
    )
    by_path = tmp_path / "led" / "releases" / "2" / "view.parquet"
    r = cli("export", by_path, "--policy", pol, "--out", tmp_path / "p.csv")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.csv").read_bytes() == (tmp_path / "e.csv").read_bytes()
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "view.parquet").write_bytes(by_path.read_bytes())
    (tmp_path / "copy" / "metrics.json").write_text(json.dumps({"n_suppressed": 99}))  # not a ledger's
    r = cli("export", tmp_path / "copy" / "view.parquet", "--policy", pol, "--out", tmp_path / "c.csv")
    assert r.exit_code == 2 and "number of suppressed tuples is unknown" in r.output


def test_cli_export_writes_a_hierarchy_node_as_named(cli, tmp_path):
    """A node named with braces ({x}, a name the hierarchy file allows) lost them in ARX's
    spelling: export did not tell the writer which QIs hold node names, so {x} was read as a set
    of one value and written x, which a reader takes for the leaf x."""
    (tmp_path / "city.csv").write_text("Metz;{x};*\nNancy;{x};*\nParis;IDF;*\nx;IDF;*\n")
    view = pd.DataFrame(
        {
            GROUP: np.array([1, 1, 2, 2], dtype=np.int64),
            "age_min": [30, 30, 40, 40],
            "age_max": [39, 39, 49, 49],
            "city": ["{x}", "{x}", "IDF", "IDF"],
            "s": ["a", "b", "a", "b"],
        }
    )
    view.to_parquet(tmp_path / "v.parquet", index=False)
    pol = tmp_path / "policy.toml"
    pol.write_text(
        '[columns]\nid = "rid"\nqi = ["age", "city"]\nsensitive = "s"\n[hierarchies]\ncity = "city.csv"\n'
    )
    r = cli(
        "export", tmp_path / "v.parquet", "--policy", pol, "--out", tmp_path / "e.csv", "--suppressed", "omit"
    )
    assert r.exit_code == 0, r.output
    e = pd.read_csv(tmp_path / "e.csv", dtype=str, keep_default_na=False)
    assert e["city"].tolist() == ["{x}", "{x}", "IDF", "IDF"]
    assert e["age"].tolist() == ["30-39", "30-39", "40-49", "40-49"]
    back = from_interchange(e, qi=["age", "city"], numeric=["age"], hierarchies=["city"])
    pd.testing.assert_frame_equal(back.drop(columns=GROUP), view.drop(columns=GROUP), check_dtype=False)


def test_an_id_column_added_to_a_view_is_told_as_such():
    """A drill: a view with a respondent_id column was refused as "column 'exam_result' differs
    between rows", never saying an id was there (the columns are read by their order)."""
    inside = hand_view()
    inside.insert(inside.columns.get_loc("disease"), "respondent_id", range(5))  # read as a QI
    with pytest.raises(InputError, match="'respondent_id' differs on every row: a respondent id"):
        to_interchange(inside, suppressed="omit")
    last = hand_view().assign(respondent_id=range(5))  # read as the sensitive column: disease as a QI
    with pytest.raises(
        InputError, match=r"'disease' differs between rows.*give it \(--policy F; qi=.* in Python\)"
    ):
        to_interchange(last, suppressed="omit")
    with pytest.raises(InputError, match=r"extra \['respondent_id'\]"):  # with the policy: named
        to_interchange(last, qi=["age", "city", "w"], sensitive="disease", suppressed="omit")


def test_an_inverted_or_missing_bound_names_its_file_and_rows(cli, tmp_path):
    """A drill: ``QI 'age': 1 rows have age_min > age_max: not a released view``, no file or row.
    Now the rows are named as the input checks name them: the line of a CSV file, the row of a
    Parquet file, the index label of a frame given in Python."""
    view = hand_view()
    view.loc[3, ["age_min", "age_max"]] = [52, 45]  # its group's other row keeps 45-52
    with pytest.raises(
        InputError, match=r"^QI 'age': age_min > age_max \(1 row: row 3\): not a released view$"
    ):
        to_interchange(view, suppressed="omit")
    view.to_csv(tmp_path / "r.csv", index=False)
    view.to_parquet(tmp_path / "r.parquet", index=False)
    for name, where in (("r.csv", "line 5"), ("r.parquet", "row 4")):
        r = cli("export", tmp_path / name, "--out", tmp_path / "e.csv", "--suppressed", "omit")
        said = " ".join(r.output.split())
        assert r.exit_code == 2, r.output
        assert (
            f"error: QI 'age': age_min > age_max (1 row: {where} of {tmp_path / name} "
            f"(the {'header is line 1' if name == 'r.csv' else 'first row is row 1'})): not a released view"
        ) in said, said
        assert not (tmp_path / "e.csv").exists()
    twice = hand_view().astype({"w_max": float})
    twice.loc[[1, 4], "w_max"] = np.nan
    with pytest.raises(InputError, match=r"'w_max' has missing bounds \(2 rows: row 1, row 4\)"):
        to_interchange(twice, suppressed="omit")

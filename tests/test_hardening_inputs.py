"""Issue 15 ("Nothing lost, nothing silent"), input validation and exact results.

Each test feeds one kind of bad or unusual input and asserts either a clear error (exit 2, the
message names the column / row / value and the fix, nothing written, no traceback) or the
correct result. The README's bad-input table lists every case.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.anonymity.verify import verify_release
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history

QI = "age,weight,city"
FLAGS = ("--id", "rid", "--qi", QI, "--sensitive", "s", "--k", "3", "--t", "1", "--j", "10")
POLICY = {"id": "rid", "qi": ["age", "weight", "city"], "sensitive": "s", "k": 3, "t": 1.0, "j": 10.0}


def view(n: int = 30, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": rng.integers(40, 60, n),
            "weight": rng.integers(60, 90, n),
            "city": rng.choice(["Lyon", "Nice", "Metz"], n),
            "s": rng.choice(["a", "b", "c"], n),
        }
    )


def refused(res, out: Path, *needles: str) -> None:
    """Exit 2, every needle in the message, no traceback, nothing written."""
    assert res.exit_code == 2, res.output
    for needle in needles:
        assert needle in res.output, (needle, res.output)
    assert "Traceback" not in res.output and "internal error" not in res.output
    assert not out.exists() and not Path(str(out) + ".metrics.json").exists()


def anonymize_csv(cli, tmp_path: Path, text: str | bytes, *extra: str, out: str = "out.parquet"):
    path = tmp_path / "in.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return cli("anonymize", path, "--out", tmp_path / out, *FLAGS, *extra), tmp_path / out


def csv_of(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False)


# == 1. a numeric QI with stray text ============================================================
@pytest.mark.slow
def test_numeric_qi_with_stray_text_is_refused_unless_declared_categorical(cli, tmp_path):
    v = view().astype({"age": object})
    v.loc[4, "age"], v.loc[9, "age"], v.loc[11, "age"] = "unknown", "45+", "thirty"
    res, out = anonymize_csv(cli, tmp_path, csv_of(v))
    refused(res, out, "QI 'age' holds numbers and text", "'unknown'", "'45+'", "'thirty'",
            "3 rows: line 6, line 11, line 13 of", "(the header is line 1)",
            "--categorical age")  # fmt: skip
    with pytest.raises(InputError, match=r"'age' holds numbers and text: \['unknown', '45\+', 'thirty'\]"):
        anonymize(v, ReleasePolicy(id="rid", qi=["age", "city"], sensitive="s", k=3, t=1, j=10))
    res, out = anonymize_csv(cli, tmp_path, csv_of(v), "--categorical", "age")
    assert res.exit_code == 0, res.output
    rel = pd.read_parquet(out)
    assert "age" in rel.columns and "age_min" not in rel.columns  # value sets, as declared
    assert {"unknown", "45+", "thirty"} <= {x for cell in rel["age"] for x in cell.strip("{}").split(",")}
    res, _ = anonymize_csv(cli, tmp_path, csv_of(v), "--categorical", "height", out="height.parquet")
    assert res.exit_code == 2 and "--categorical names ['height'], which are not QIs" in res.output


# == 2. duplicate header =========================================================================
def test_duplicate_header_is_refused_from_the_raw_header(cli, tmp_path):
    text = "rid,age,age,weight,city,s\n" + "\n".join(f"{i},50,51,70,Lyon,a" for i in range(10)) + "\n"
    res, out = anonymize_csv(cli, tmp_path, text)
    refused(res, out, "names the column(s) ['age'] more than once (positions {'age': [2, 3]})")
    frame = view()
    frame.insert(2, "age2", frame["age"])
    frame.columns = ["rid", "age", "age", "weight", "city", "s"]
    with pytest.raises(InputError, match=r"column\(s\) \['age'\] more than once"):
        anonymize(frame, ReleasePolicy(id="rid", qi=["age", "city"], sensitive="s", k=3))


# == 3. a sensitive column with one value =========================================================
@pytest.mark.slow
def test_single_valued_sensitive_column_is_refused_or_released_with_a_warning(cli, tmp_path):
    v = view().assign(s="healthy")
    res, out = anonymize_csv(cli, tmp_path, csv_of(v))
    refused(res, out, "sensitive column 's' holds one value only ('healthy')", "l = 1",
            "allow_single_sensitive = true")  # fmt: skip
    policy = tmp_path / "p.toml"
    policy.write_text(
        '[columns]\nid = "rid"\nqi = ["age", "weight", "city"]\nsensitive = "s"\n'
        "[privacy]\nk = 3\nt = 1.0\nj = 10.0\nallow_single_sensitive = true\n"
    )
    (tmp_path / "in.csv").write_text(csv_of(v))
    res = cli("anonymize", tmp_path / "in.csv", "--out", out, "--policy", policy)
    assert res.exit_code == 0, res.output
    assert "warning: sensitive column 's' holds one value only" in res.output
    assert (pd.read_parquet(out)["s"] == "healthy").all()


def test_a_history_whose_sensitive_column_has_one_value_writes_no_ledger(tmp_path):
    hist = pd.concat([view(20, 1).assign(view=1), view(20, 2).assign(view=2)]).assign(s="x")
    policy = ReleasePolicy(id="rid", time="view", qi=["age", "city"], sensitive="s", k=3, t=1, j=10,
                           knowledge={"defender": "ie"})  # fmt: skip
    with pytest.raises(PolicyError, match="holds one value only"):
        release_history(hist, policy, tmp_path / "led")
    assert not (tmp_path / "led").exists()


def test_one_view_whose_sensitive_values_are_all_one_is_refused_by_name(tmp_path):
    """The history as a whole held two values, so view 2 (every tuple '<=50K') was released with
    l = 1 for every group without a word: each view is checked on its own."""
    hist = pd.concat([view(20, 1).assign(view=1), view(20, 2).assign(view=2, s="b")])
    policy = dict(id="rid", time="view", qi=["age", "city"], sensitive="s", k=3, t=1, j=10,
                  knowledge={"defender": "ie"})  # fmt: skip
    with pytest.raises(PolicyError, match=r"view 2: sensitive column 's' holds one value only \('b'\)"):
        release_history(hist, ReleasePolicy(**policy), tmp_path / "led")
    assert not (tmp_path / "led").exists()
    with pytest.warns(UserWarning, match="view 2: sensitive column 's' holds one value only"):
        release_history(hist, ReleasePolicy(**policy, allow_single_sensitive=True), tmp_path / "led2")
    released = pd.read_parquet(tmp_path / "led2" / "releases" / "2" / "view.parquet")
    assert set(released["s"]) == {"b"}


# == 4. an extra column ===========================================================================
@pytest.mark.slow
def test_columns_the_policy_does_not_name_are_dropped_out_loud(cli, tmp_path):
    v = view().assign(zip=lambda f: 69000 + f["rid"], age_min=1)  # age_min: a released-looking name
    res, out = anonymize_csv(cli, tmp_path, csv_of(v))
    assert res.exit_code == 0, res.output
    assert "not released: column(s) ['zip', 'age_min']" in res.output
    rel = pd.read_parquet(out)
    assert "zip" not in rel.columns
    # age_min is the released bound of age, never the input column
    assert (rel["age_min"] >= 40).all() and (rel["age_min"] <= rel["age_max"]).all()
    res = anonymize(v, ReleasePolicy(id="rid", qi=["age", "city"], sensitive="s", k=3, t=1, j=10))
    assert any("['weight', 'zip', 'age_min']" in n for n in res.notes)


# == 5. inf / -inf / NaN ==========================================================================
@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_non_finite_numeric_qi_is_refused_naming_row_and_value(cli, tmp_path, value):
    v = view().astype({"weight": float}).astype({"weight": object})
    v.loc[7, "weight"] = value
    res, out = anonymize_csv(cli, tmp_path, csv_of(v))
    if value == "nan":
        refused(res, out, "column 'weight' has missing values", "1 row: line 9 of")
    else:
        refused(res, out, f"QI 'weight' holds {float(value)!r}", "finite", "1 row: line 9 of")
    with pytest.raises(InputError, match="row 7"):
        policy = ReleasePolicy(id="rid", qi=["weight"], sensitive="s", k=3, domains={"weight": [0, 100]})
        anonymize(v.astype({"weight": float}), policy)


# a float too large for the metrics (their squares overflow float64): refused at validation,
# naming the value, instead of failing late inside KPR with a message headed "kpr:"
HUGE = "QI 'weight' holds 1e+308, too large in magnitude: the numbers of a QI must lie within +-1e+150"


@pytest.mark.parametrize("domain", [None, "[0, 1e308]"])
def test_a_huge_number_in_a_numeric_qi_is_refused_before_anything_runs(cli, tmp_path, domain):
    v = view().astype({"weight": float})
    v.loc[7, "weight"] = 1e308
    extra = ()
    if domain:  # declared wide enough to hold the value: refused all the same
        (tmp_path / "p.toml").write_text(f"[domains]\nweight = {domain}\n")
        extra = ("--policy", tmp_path / "p.toml")
    res, out = anonymize_csv(cli, tmp_path, csv_of(v), *extra)
    refused(res, out, HUGE, "rescale the column", "1 row: line 9 of")
    assert "kpr:" not in res.output


def test_a_huge_number_is_refused_in_a_history_categorical_qi_and_numbers_as_text(tmp_path):
    v = view().astype({"weight": float})
    v.loc[7, "weight"] = 1e308
    hist = pd.concat([v.assign(view=1), v.assign(view=2)], ignore_index=True)
    policy = ReleasePolicy(id="rid", time="view", qi=["age", "weight"], sensitive="s", k=3, t=1, j=10)
    with pytest.raises(InputError, match=r"QI 'weight' holds 1e\+308, too large.*\(2 rows"):
        release_history(hist, policy, tmp_path / "L")
    assert not (tmp_path / "L").exists()
    # KPR bins any float column, so a categorical QI coded as floats is refused too
    cat = policy.with_overrides(time=None, kinds={"weight": "categorical"})
    with pytest.raises(InputError, match=r"QI 'weight' holds 1e\+308, too large"):
        anonymize(v, cat)
    # numbers stored as text under a declared numeric domain (converted at validation)
    text = v.astype({"weight": str})
    wide = policy.with_overrides(time=None, domains={"weight": [0, 1e308]})
    with pytest.raises(InputError, match=r"QI 'weight' holds 1e\+308, too large"):
        anonymize(text, wide)


def test_numbers_up_to_the_bound_are_released_and_measured():
    v = view().astype({"weight": float})
    v.loc[7, "weight"], v.loc[8, "weight"] = 1e150, -1e150
    res = anonymize(v, ReleasePolicy(id="rid", qi=["age", "weight"], sensitive="s", k=3, t=1, j=10))
    assert res.metrics.n_suppressed == 0 and 0 <= res.metrics.kpr <= 100
    assert res.released["weight_max"].max() == 1e150 and res.released["weight_min"].min() == -1e150


# == 6. list-valued QI (Parquet) ==================================================================
def test_list_valued_qi_is_refused(cli, tmp_path):
    v = view().assign(city=lambda f: [[c, "FR"] for c in f["city"]])
    v.to_parquet(tmp_path / "in.parquet", index=False)
    out = tmp_path / "out.parquet"
    res = cli("anonymize", tmp_path / "in.parquet", "--out", out, *FLAGS)
    refused(res, out, "QI 'city' holds lists or arrays (e.g. ['", "', 'FR'])", "one value per row", "30 rows")


# == 7. int data against a str domain =============================================================
def test_domain_of_another_type_says_the_types_differ(cli, tmp_path):
    v = view()
    v["age"] = np.where(v["age"] % 2 == 0, 40, 41)
    policy = ReleasePolicy(id="rid", qi=["age", "city"], sensitive="s", k=3, t=1, j=10,
                           kinds={"age": "categorical"}, domains={"age": ["40", "41"]})  # fmt: skip
    msg = r"values \[4[01], 4[01]\] not in .* \['40', '41'\]: the types differ: the data holds int values"
    with pytest.raises(InputError, match=msg + " and the domain str values"):
        anonymize(v, policy)
    # the same through the CLI and a policy file: exit 2, the message, nothing written
    (tmp_path / "p.toml").write_text(
        '[columns]\nid = "rid"\nqi = ["age", "city"]\nsensitive = "s"\n[privacy]\nk = 3\nt = 1.0\nj = 10.0\n'
        '[kinds]\nage = "categorical"\n[domains]\nage = ["40", "41"]\n'
    )
    (tmp_path / "in.csv").write_text(csv_of(v))
    out = tmp_path / "o.parquet"
    res = cli("anonymize", tmp_path / "in.csv", "--out", out, "--policy", tmp_path / "p.toml")
    refused(res, out, "categorical QI 'age'",
            "the types differ: the data holds int values and the domain str values",
            "numbers without quotes")  # fmt: skip
    # and the other way round: text data, a numeric domain for the sensitive column
    v2 = view().assign(s=lambda f: np.where(f["rid"] % 2 == 0, "1", "2"))
    p2 = ReleasePolicy(id="rid", qi=["age"], sensitive="s", k=3, domains={"s": [1, 2]})
    with pytest.raises(InputError, match="the data holds str values and the domain int values"):
        anonymize(v2, p2)


# == 8. integers above 2**53 ======================================================================
def accounts(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    base = 2**62
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "acct": (base + rng.integers(0, 4000, n)).astype(np.int64),
            "s": rng.choice(["a", "b"], n),
        }
    )


@pytest.mark.slow
def test_integer_qi_above_2_53_has_exact_bounds_and_exact_verification(cli, tmp_path):
    v = accounts()
    policy = ReleasePolicy(id="rid", qi=["acct"], sensitive="s", k=4, t=1.0, j=10.0)
    res = anonymize(v, policy)
    rel, asg = res.released, res.assigned
    assert rel["acct_min"].dtype == np.int64 and rel["acct_max"].dtype == np.int64
    box = rel.drop_duplicates("qi_group").set_index("qi_group")
    lo = [int(x) for x in box["acct_min"].reindex(asg["_label"])]
    hi = [int(x) for x in box["acct_max"].reindex(asg["_label"])]
    x = [int(a) for a in asg["acct"]]
    assert all(a <= b <= c for a, b, c in zip(lo, x, hi))  # Python ints: exact
    tight = asg.groupby("_label")["acct"].agg(["min", "max"])
    assert [int(a) for a in tight["min"]] == [int(a) for a in box["acct_min"].reindex(tight.index)]
    # the float64 bounds of before: originals fall outside their box, and the verifier says so
    flo = [float(a) for a in box["acct_min"].reindex(asg["_label"])]
    fhi = [float(a) for a in box["acct_max"].reindex(asg["_label"])]
    outside = sum(not (a <= b <= c) for a, b, c in zip(flo, x, fhi))
    assert outside == 33  # of 40 (counted with Python's exact int/float comparisons)
    as_float = rel.astype({"acct_min": "float64", "acct_max": "float64"})
    counts = np.bincount(pd.Index(res.policy.sensitive_domain).get_indexer(v["s"]), minlength=2)
    report = verify_release(as_float, res.policy, view_counts=counts, assigned=asg)
    assert not report.ok
    assert any(f"{outside} kept tuples lie outside" in p for p in report.problems), report.problems
    # end to end: Parquet in, Parquet out, dpriv verify
    v.rename(columns={"rid": "respondent_id"}).to_parquet(tmp_path / "acct.parquet", index=False)
    out = tmp_path / "rel.parquet"
    r = cli("anonymize", tmp_path / "acct.parquet", "--out", out, "--qi", "acct",
            "--sensitive", "s", "--k", "4", "--t", "1", "--j", "10")  # fmt: skip
    assert r.exit_code == 0, r.output
    back = pd.read_parquet(out)
    assert back["acct_min"].dtype == np.int64 and int(back["acct_min"].min()) == int(v["acct"].min())
    r = cli("verify", out, "--original", tmp_path / "acct.parquet", "--qi", "acct", "--sensitive", "s",
            "--k", "4", "--t", "1")  # fmt: skip
    assert r.exit_code == 0 and "ok: True" in r.output, r.output


# == 9. category dtype QIs ========================================================================
@pytest.mark.slow
def test_category_dtype_qis_release_like_plain_values_and_verify():
    v = view(60)
    policy = ReleasePolicy(id="rid", qi=["age", "city"], sensitive="s", k=3, t=1, j=10)
    plain = anonymize(v, policy)
    for unused in ([], [999, 1000]):
        cat = v.astype(
            {
                "age": pd.CategoricalDtype(sorted(v["age"].unique()) + unused),
                "city": pd.CategoricalDtype(["Lyon", "Metz", "Nice", *[f"c{u}" for u in unused]]),
            }
        )
        for frame in (cat, dd.from_pandas(cat, npartitions=2)):
            res = anonymize(frame, policy)  # verified inside: a failure raises
            pd.testing.assert_frame_equal(res.released, plain.released)
            assert res.policy.domains == plain.policy.domains


# == 10. dates ====================================================================================
@pytest.mark.slow
@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
def test_date_qi_is_released_as_date_intervals(cli, tmp_path, tz):
    """Dates as QIs (hand-computed boxes: tests/test_dates.py): days 40..59 after 2020-01-01."""
    v = view()
    v["age"] = pd.Timestamp("2020-01-01 12:00") + pd.to_timedelta(v["age"], "D")
    if tz:
        v["age"] = v["age"].dt.tz_localize(tz)
    v.to_parquet(tmp_path / "d.parquet", index=False)
    out = tmp_path / "out.csv"
    res = cli("anonymize", tmp_path / "d.parquet", "--out", out, *FLAGS)
    assert res.exit_code == 0 and "kpr" not in res.output, res.output
    rel = pd.read_csv(out)
    lo, hi = str((v["age"].min()).date()), str((v["age"].max()).date())
    assert rel["age_min"].min() == lo and rel["age_max"].max() == hi
    assert (rel["age_min"] <= rel["age_max"]).all()
    assert "inferred date domain of 'age'" in res.output


# == 11. Unicode ==================================================================================
def test_nfc_and_nfd_spellings_are_one_level():
    v = view(60)
    nfc, nfd = unicodedata.normalize("NFC", "Zürich"), unicodedata.normalize("NFD", "Zürich")
    assert nfc != nfd
    v["city"] = np.where(v["rid"] % 3 == 0, nfc, np.where(v["rid"] % 3 == 1, nfd, "Genève"))
    v["s"] = np.where(v["rid"] % 4 == 0, unicodedata.normalize("NFD", "é"), v["s"])
    res = anonymize(v, ReleasePolicy(id="rid", qi=["age", "city"], sensitive="s", k=3, t=1, j=10))
    assert res.policy.domains["city"] == sorted([unicodedata.normalize("NFC", "Genève"), nfc])
    assert unicodedata.normalize("NFC", "é") in res.policy.domains["s"]
    assert len(res.policy.domains["s"]) == 4
    cells = set(res.released["city"]) | set(res.released["s"])
    assert all(unicodedata.is_normalized("NFC", c) for c in cells)


# == 12. no Dask merge warning over a multi-view release ===========================================
@pytest.mark.slow
def test_string_ids_release_without_dask_dtype_warnings(tmp_path, client):
    frames = []
    for i in (1, 2, 3):
        frame = view(40, i).assign(view=i)
        frames.append(frame.assign(rid="p" + (frame["rid"] + 7 * i).astype(str)))
    hist = pd.concat(frames, ignore_index=True).astype({"rid": "string[pyarrow]"})
    hist.to_parquet(tmp_path / "h.parquet", index=False)
    policy = ReleasePolicy(id="rid", time="view", qi=["age", "city"], sensitive="s", k=3, t=1, j=10,
                           knowledge={"defender": "ie"})  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        led = release_history(dd.read_parquet(tmp_path / "h.parquet"), policy, tmp_path / "led")
    assert [r["index"] for r in led.committed()] == [1, 2, 3]
    # Dask's "Merging dataframes with merge column data type mismatches" (once per release before)
    merge_warnings = [str(w.message) for w in caught if "merge column data type" in str(w.message)]
    assert merge_warnings == []


# == 13. values with commas, braces and backslashes: CSV in, release, verify ======================
@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_category_values_with_commas_release_and_verify_end_to_end(cli, tmp_path, suffix):
    v = view(48)
    odd = ["Paris, FR", "a{b}", "back\\slash", "{x,y}z", "Metz"]
    v["city"] = [odd[i % len(odd)] for i in range(len(v))]
    (tmp_path / "in.csv").write_text(csv_of(v.rename(columns={"rid": "respondent_id"})))
    out = tmp_path / f"rel.{suffix}"
    flags = ["--id", "respondent_id", *FLAGS[2:]]
    res = cli("anonymize", tmp_path / "in.csv", "--out", out, *flags, "--categorical", "city")
    assert res.exit_code == 0, res.output
    rel = pd.read_csv(out) if suffix == "csv" else pd.read_parquet(out)
    assert rel["city"].str.contains("\\,", regex=False).any()  # "Paris\, FR" escaped in a set
    r = cli("verify", out, "--original", tmp_path / "in.csv", "--qi", QI, "--sensitive", "s",
            "--k", "3", "--t", "1")  # fmt: skip
    assert r.exit_code == 0 and "ok: True" in r.output, r.output


# == 14. more kinds of bad input ==================================================================
def test_latin1_file_is_refused_with_the_line_and_the_fix(cli, tmp_path):
    text = csv_of(view()).replace("Nice", "Nîmes").encode("latin-1")
    res, out = anonymize_csv(cli, tmp_path, text)
    line = text.split(b"\n").index(next(x for x in text.split(b"\n") if b"N\xeemes" in x)) + 1
    refused(res, out, "cannot read", "it is not UTF-8 (byte 0xee", f"on line {line})", "iconv")


@pytest.mark.slow
def test_bom_and_crlf_give_the_same_release_as_a_plain_file(cli, tmp_path):
    plain = csv_of(view(45))
    outs = {}
    for name, text in {
        "plain": plain.encode(),
        "bom": b"\xef\xbb\xbf" + plain.encode(),
        "crlf": plain.replace("\n", "\r\n").encode(),
    }.items():
        res, out = anonymize_csv(cli, tmp_path, text, out=f"{name}.parquet")
        assert res.exit_code == 0, (name, res.output)
        outs[name] = pd.read_parquet(out)
    pd.testing.assert_frame_equal(outs["bom"], outs["plain"])
    pd.testing.assert_frame_equal(outs["crlf"], outs["plain"])
    assert not outs["crlf"]["s"].str.contains("\r").any()


@pytest.mark.slow
def test_quoted_newline_in_a_category_is_one_value(cli, tmp_path):
    v = view(30)
    v["city"] = np.where(v["rid"] % 2 == 0, "Saint-\nÉtienne", "Lyon")
    res, out = anonymize_csv(cli, tmp_path, csv_of(v), "--categorical", "city")
    assert res.exit_code == 0, res.output
    rel = pd.read_parquet(out)
    assert len(rel) == 30 - int(res.output.split("n_suppressed:")[1].split()[0])
    assert set(x for c in rel["city"] for x in c.strip("{}").split(",")) <= {"Saint-\nÉtienne", "Lyon"}


def test_integer_beyond_int64_is_refused_naming_the_column(cli, tmp_path):
    v = view().astype({"weight": object})
    v.loc[5, "weight"] = str(2**70)
    res, out = anonymize_csv(cli, tmp_path, csv_of(v))
    refused(res, out, "'weight'", "numbers stored as text")


def test_negative_zero_is_zero(cli, tmp_path):
    v = view(30).astype({"weight": float})
    v["weight"] = np.where(v["rid"] < 15, -0.0, 0.0)
    res = anonymize(v, ReleasePolicy(id="rid", qi=["weight"], sensitive="s", k=3, t=1, j=10))
    assert res.metrics["n_suppressed"] == 0
    assert (res.released["weight_min"] == 0).all() and (res.released["weight_max"] == 0).all()
    assert res.policy.domains["weight"] == [0.0, 0.0]


@pytest.mark.slow
def test_boolean_qi_is_categorical(cli, tmp_path):
    v = view(40).assign(smoker=lambda f: f["rid"] % 3 == 0)
    v.to_parquet(tmp_path / "b.parquet", index=False)
    out = tmp_path / "out.parquet"
    res = cli("anonymize", tmp_path / "b.parquet", "--out", out, "--id", "rid", "--qi", "age,smoker",
              "--sensitive", "s", "--k", "3", "--t", "1", "--j", "10")  # fmt: skip
    assert res.exit_code == 0, res.output
    rel = pd.read_parquet(out)
    assert set(rel["smoker"]) <= {"{False}", "{True}", "{False,True}"}
    assert "inferred categorical domain of 'smoker': [False, True]" in res.output


def test_float_id_and_ids_with_gaps_between_views(tmp_path):
    a = view(30, 1).assign(view=1, rid=lambda f: f["rid"] * 10.0 + 0.5)
    b = view(30, 2).assign(view=2, rid=lambda f: f["rid"] * 1000.0 + 0.5)  # mostly new respondents
    hist = pd.concat([a, b], ignore_index=True)
    policy = ReleasePolicy(id="rid", time="view", qi=["age", "city"], sensitive="s", k=3, t=1, j=10,
                           knowledge={"defender": "ie"})  # fmt: skip
    led = release_history(hist, policy, tmp_path / "led")
    for i, frame in ((1, a), (2, b)):
        m = led.read_metrics(i)
        assert m["n_original"] == len(frame) and len(led.read_view(i)) == 30 - m["n_suppressed"]
    state = led.read_state(2)
    assert state["rid"].dtype == np.float64 and 0.5 in set(state["rid"])  # respondent 0.5 in both


def test_same_column_as_qi_and_sensitive_is_refused(cli, tmp_path):
    (tmp_path / "in.csv").write_text(csv_of(view()))
    flags = [f if f != "s" else "age" for f in FLAGS]  # --sensitive age (given twice: refused as such)
    res = cli("anonymize", tmp_path / "in.csv", "--out", tmp_path / "out.parquet", *flags)
    refused(res, tmp_path / "out.parquet", "columns ['age'] are used twice")


def test_empty_file_and_header_only(cli, tmp_path):
    res, out = anonymize_csv(cli, tmp_path, b"")
    refused(res, out, "is empty")
    res, out = anonymize_csv(cli, tmp_path, "rid,age,weight,city,s\n")
    refused(res, out, "header but no rows")


def test_semicolon_csv_with_decimal_commas_is_read_as_numbers(cli, tmp_path):
    v = view(30).astype({"weight": float})
    v["weight"] = v["weight"] + 0.5
    text = v.to_csv(index=False, sep=";", decimal=",")
    assert "60,5" in text or ",5;" in text
    res, out = anonymize_csv(cli, tmp_path, text)
    assert res.exit_code == 0, res.output
    rel = pd.read_parquet(out)
    assert rel["weight_min"].dtype == np.float64 and (rel["weight_min"] % 1 == 0.5).all()


def _decimal_comma_view() -> pd.DataFrame:
    """``view(30)`` with a weight of one decimal (x,5) and the first tuple 0;45;60,5;Metz;c."""
    v = view(30).astype({"weight": float})
    v["weight"] = v["weight"] + 0.5
    v.loc[0, ["age", "weight", "city", "s"]] = [45, 60.5, "Metz", "c"]
    return v


def test_a_headed_semicolon_csv_whose_first_row_has_decimal_commas_is_read_right(tmp_path):
    from dpriv.io import read_table

    v = _decimal_comma_view()
    (tmp_path / "in.csv").write_text(v.to_csv(index=False, sep=";", decimal=","))
    got = read_table(str(tmp_path / "in.csv")).compute()
    assert list(got.columns) == list(v.columns)
    assert got["weight"].tolist() == v["weight"].tolist() and got.loc[0, "weight"] == 60.5


def test_a_headerless_semicolon_csv_with_decimal_commas_is_refused_naming_the_file(cli, tmp_path):
    # the sniffer took ',' from its first line '0;45;60,5;Metz;c' (columns '0;45;60' and '5;Metz;c')
    text = _decimal_comma_view().to_csv(index=False, header=False, sep=";", decimal=",")
    assert text.startswith("0;45;60,5;Metz;c\n")
    res, out = anonymize_csv(cli, tmp_path, text)
    refused(
        res,
        out,
        f"the first line of {tmp_path / 'in.csv'} holds '60,5', a number with a decimal comma",
        "the file has no header row",
        "add a first line naming them, separated by ';' as the rows are",
    )
    # a headerless file of ',' and no decimal comma: the missing columns say it (unchanged)
    res, out = anonymize_csv(cli, tmp_path, view(30).to_csv(index=False, header=False))
    refused(res, out, "The file seems to have no header row")


# == 11. extreme numeric ranges (a fresh user's drill, 2026-12-03) ================================
def test_grid_bits_of_domains_beyond_int64_and_float64():
    from dpriv.hilbert import grid_bits

    def bits(weight_domain):
        p = ReleasePolicy(
            id="rid", qi=["age", "weight"], sensitive="s", k=3, t=1, j=10,
            domains={"age": [40, 59], "weight": weight_domain, "s": ["a", "b", "c"]},
        )  # fmt: skip
        return grid_bits(p)

    assert bits([60, 89]) == 5  # 30 values: ceil(log2 30)
    assert bits([60, 60 + 32 - 1]) == 5 and bits([60, 60 + 33 - 1]) == 6  # 32 values fit in 5 bits
    assert bits([0, 10**20]) == 16  # np.log2 failed on a Python int beyond 2**64: the cap
    assert bits([-(2**63), 2**63 - 1]) == 16
    assert bits([-1e300, 1e300]) == 16


WIDE = (
    r"numeric domain of 'weight' is \[-1e\+308, 1e\+308\]: its width max - min overflows float64, .*"
    r"narrow \[domains\] weight to the attribute's true range"
)


def test_a_domain_wider_than_float64_is_refused_naming_the_column():
    with pytest.raises(ValueError, match=WIDE):
        ReleasePolicy(
            id="rid", qi=["age", "weight"], sensitive="s", k=3, t=1, j=10,
            domains={"weight": [-1e308, 1e308]},
        )  # fmt: skip


def test_a_policy_file_with_a_domain_wider_than_float64_exits_2_with_the_fix(cli, tmp_path):
    (tmp_path / "p.toml").write_text("[domains]\nweight = [-1e308, 1e308]\n")
    res, out = anonymize_csv(cli, tmp_path, csv_of(view()), "--policy", tmp_path / "p.toml")
    refused(res, out)
    assert re.search(WIDE, res.output), res.output


@pytest.mark.parametrize("domain", [[-1e308, 5e307], [-7e307, 1e308]])
def test_a_domain_near_the_float64_limit_gets_finite_prior_classes(domain):
    """The prior's equal-width classes of a finite domain whose width is near the float64 limit:
    finite, increasing cuts inside the domain, and no overflow warning; an ordinary domain keeps
    the cuts it always had (``lo + width * i / bins``: the same priors, the same bytes)."""
    from dpriv.priors import class_map

    policy = ReleasePolicy(
        id="rid",
        qi=["age", "weight"],
        sensitive="s",
        k=3,
        t=1,
        j=10,
        domains={"weight": domain, "age": [0, 90]},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        classes = class_map(policy)
    cuts = np.array(classes.bins[classes.qi.index("weight")])
    assert np.isfinite(cuts).all() and (np.diff(cuts) > 0).all()
    assert domain[0] < cuts[0] and cuts[-1] < domain[1]
    assert cuts == pytest.approx(
        np.array(domain[0]) + (domain[1] - domain[0]) * np.array([1 / 3, 2 / 3]), rel=1e-12
    )
    assert classes.bins[classes.qi.index("age")] == (0.0 + 90.0 * 1 / 3, 0.0 + 90.0 * 2 / 3)


def test_int64_extremes_in_a_qi_release_and_verify():
    v = view(60)
    v.loc[0, "weight"], v.loc[1, "weight"] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    res = anonymize(v, ReleasePolicy(id="rid", qi=["age", "weight"], sensitive="s", k=3, t=1, j=10))
    assert res.policy.domains["weight"] == [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
    assert res.released["weight_max"].max() == np.iinfo(np.int64).max  # exact int64 bounds


def test_numbers_in_a_qi_declared_a_date_are_refused_not_read_as_days(cli, tmp_path):
    """Drill (session 16): ``--date age`` on ages 40..59 released them as dates in February 1970."""
    res, out = anonymize_csv(cli, tmp_path, csv_of(view()), "--date", "age")
    refused(res, out, "QI 'age' is declared a date but holds numbers (int64)", "drop --date age")
    policy = ReleasePolicy(
        id="rid", qi=["age", "weight"], sensitive="s", k=3, t=1, j=10, kinds={"age": "date"}
    )
    with pytest.raises(InputError, match="declared a date but holds numbers"):
        anonymize(view(), policy)
    dated = view().assign(age=pd.Timestamp("2020-01-01") + pd.to_timedelta(view()["age"], unit="D"))
    released = anonymize(dated, policy).released  # real dates under the same policy: released
    assert str(released["age_min"].min()) >= "2020-02-10"


def test_a_policys_time_column_missing_from_the_input_releases_one_view(cli, tmp_path):
    """Drill (session 16): the message named the missing column only; then (session 23) the
    refusal itself: a history's policy (time = "view") given to anonymize one view without that
    column now releases it as one view, saying so."""
    (tmp_path / "p.toml").write_text('[columns]\ntime = "view"\n')
    res, out = anonymize_csv(cli, tmp_path, csv_of(view()), "--policy", tmp_path / "p.toml")
    assert res.exit_code == 0, res.output
    assert (
        "note: the policy's time column 'view' is not in" in res.output
        and "released as one view" in res.output
    )
    assert len(pd.read_parquet(out)) == len(view())


@pytest.mark.parametrize("qi", ["", " , "])
def test_an_empty_qi_flag_is_named(cli, tmp_path, qi):
    """``--qi ""`` is not "no --qi given": the message names the empty flag (a drill finding)."""
    path = tmp_path / "in.csv"
    path.write_text(csv_of(view()))
    out = tmp_path / "out.parquet"
    res = cli("anonymize", path, "--out", out, "--id", "rid", "--qi", qi, "--sensitive", "s")
    refused(res, out, f"--qi {qi!r} names no column", "--qi age,gender,weight")
    assert "no policy file" not in res.output


@pytest.mark.parametrize(
    ("command", "flag", "what"),
    [
        ("anonymize", "--sensitive", "the sensitive column"),
        ("anonymize", "--id", "the respondent id column"),
        ("verify", "--sensitive", "the sensitive column"),
        ("verify", "--id", "the respondent id column"),
        ("release", "--id", "the respondent id column"),
        ("release", "--time", "the release-index column of a history"),
    ],
)
@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_column_flag_is_named(cli, tmp_path, command, flag, what, empty):
    """``--sensitive ""`` (an unset ``$S``) said ``missing column(s) ['']`` (or, with no policy
    file, ``give --policy FILE or at least --sensitive``, which it was given): the flag is named
    as empty, with what it expects; nothing is written, no ledger made."""
    path = tmp_path / "in.csv"
    path.write_text(csv_of(view().assign(view=1)))
    out, ledger = tmp_path / "out.parquet", tmp_path / "led"
    given = {"--id": "rid", "--qi": QI, "--sensitive": "s", "--time": "view", flag: empty}
    if command != "release":
        del given["--time"]
    flags = [part for item in given.items() for part in item]
    where = {"anonymize": [path, "--out", out], "verify": [path, "--original", path], "release": [path]}
    extra = ["--ledger", ledger] if command == "release" else []
    res = cli(command, *where[command], *flags, *extra)
    refused(res, out, f"{flag} {empty!r} is empty", f"give the name of {what}")
    assert "missing column" not in res.output and "no policy file" not in res.output
    assert not ledger.exists()


@pytest.mark.parametrize(
    ("columns", "said"),
    [
        ({"sensitive": ""}, """[columns] sensitive = '' holds an empty column name"""),
        ({"id": " "}, """[columns] id = ' ' holds an empty column name"""),
        ({"qi": ["age", ""]}, """[columns] qi = ['age', ''] holds an empty column name"""),
        ({"time": ""}, """[columns] time = '' holds an empty column name"""),
    ],
)
def test_an_empty_column_name_in_a_policy_is_named(columns, said):
    """The policy file's (or Python's) counterpart of ``--sensitive ""``: it said ``missing
    column(s) ['']`` once the data was read."""
    fields = {"id": "rid", "qi": ["age", "weight"], "sensitive": "s", **columns}
    with pytest.raises(PolicyError) as info:
        ReleasePolicy.from_dict(fields)
    assert said in str(info.value) and "give the name of the column as the input has it" in str(info.value)


def test_verify_refuses_an_original_holding_a_respondent_twice(cli, tmp_path):
    """A drill finding: an original with a respondent's row pasted twice verified "ok"; it is
    refused, naming the id and both lines, by the CLI and by verify_view."""
    from dpriv.view_check import verify_view

    v = view()
    res, out = anonymize_csv(cli, tmp_path, csv_of(v))
    assert res.exit_code == 0, res.output
    doubled = pd.concat([v, v.iloc[[4]]], ignore_index=True)
    (tmp_path / "dup.csv").write_text(csv_of(doubled))
    r = cli("verify", out, "--original", tmp_path / "dup.csv", "--id", "rid", "--qi", QI, "--sensitive", "s",
            "--k", "3", "--t", "1")  # fmt: skip
    assert r.exit_code == 2, r.output
    assert "duplicate 'rid' within one view" in r.output
    assert "line 6, line 32 of" in r.output and "ok: True" not in r.output
    policy = ReleasePolicy.from_dict({"id": "rid", "qi": QI.split(","), "sensitive": "s", "k": 3, "t": 1})
    with pytest.raises(InputError, match=r"^original: duplicate 'rid' .* row 4, row 30"):
        verify_view(pd.read_parquet(out), doubled, policy)


def test_a_dict_policy_is_read_as_its_fields_and_another_type_is_named():
    """A drill finding: ``anonymize(view, {...})`` failed with AttributeError."""
    fields = {"id": "rid", "qi": QI.split(","), "sensitive": "s", "k": 3, "t": 1.0, "j": 10.0}
    by_dict = anonymize(view(), fields)
    by_policy = anonymize(view(), ReleasePolicy.from_dict(fields))
    pd.testing.assert_frame_equal(by_dict.released, by_policy.released)
    with pytest.raises(PolicyError, match="anonymize: policy must be a ReleasePolicy .* got list"):
        anonymize(view(), [fields])
    with pytest.raises(PolicyError, match="unknown key 'kk'; did you mean 'k'"):
        anonymize(view(), {**fields, "kk": 3})


def test_ids_of_several_types_are_refused_by_name(tmp_path):
    """The drill: ids 1, "x2", 3... failed inside the state update (TypeError: '<' not supported
    between 'int' and 'str') after validation."""
    hist = pd.concat([view(30).assign(v=1), view(30, seed=1).assign(v=2)], ignore_index=True)
    hist["rid"] = [i if i % 2 else f"x{i}" for i in range(len(hist))]
    pol = {**POLICY, "time": "v"}
    with pytest.raises(
        InputError,
        match=r"id column 'rid' holds values of several types \(int: integers of 1-2 digits; str: ",
    ):
        release_history(hist, pol, tmp_path / "led")
    assert not (tmp_path / "led").exists()
    hist["rid"] = [f"x{i}" for i in range(len(hist))]  # all text: released
    assert release_history(hist, pol, tmp_path / "ok").last_index() == 2


def test_dask_partitions_of_number_ids_and_of_text_ids_are_refused_by_name(tmp_path):
    """Each partition of one type, the whole of two (numbers in the first partitions, text in the
    last): the state update failed with a raw TypeError; a history of number ids in view 1 and
    text ids in view 2 was released, where pandas refuses it."""
    hist = pd.concat([view(30).assign(v=1), view(30, seed=1).assign(v=2)], ignore_index=True)
    hist["rid"] = pd.Series([i if i < 45 else f"x{i}" for i in range(len(hist))], dtype=object)
    pol = {**POLICY, "time": "v"}
    with dask.config.set({"dataframe.convert-string": False}):
        dask_hist = dd.from_pandas(hist, npartitions=4, sort=False)
        with pytest.raises(
            InputError,
            match=r"id column 'rid' holds numbers \(integers of 1 digit\) in some partitions and text "
            r"\(1 letter \+ 2 digits\) in others: write every id as text",
        ) as err:
            release_history(dask_hist, pol, tmp_path / "led")
    assert "x45" not in str(err.value)  # ids by their shape, never printed
    assert not (tmp_path / "led").exists()


def test_rows_of_a_frame_of_repeated_labels_are_named_by_position(tmp_path):
    """Two views concatenated without ignore_index: 'row 3, row 3' named one label twice."""
    hist = pd.concat([view(30).assign(v=1), view(30, seed=1).assign(v=2)])  # labels 0..29 twice
    hist["age"] = hist["age"].astype(float)
    hist.iloc[[3, 33], hist.columns.get_loc("age")] = np.nan
    with pytest.raises(
        InputError,
        match=r"2 rows: row at position 3 \(v=1\), row at position 33 \(v=2\)",
    ):
        release_history(hist, {**POLICY, "time": "v"}, tmp_path / "led")
    hist.iloc[33, hist.columns.get_loc("age")] = 50.0
    hist.iloc[34, hist.columns.get_loc("age")] = np.nan  # labels 3 and 4: named by label
    with pytest.raises(InputError, match=r"2 rows: row 3 \(v=1\), row 4 \(v=2\)"):
        release_history(hist, {**POLICY, "time": "v"}, tmp_path / "led")
    assert not (tmp_path / "led").exists()


@pytest.mark.parametrize("dtype", [object, "category", "string"])
def test_a_category_with_and_without_a_trailing_space_is_refused(dtype, tmp_path):
    """A CSV cell 'A ' next to 'A' became two levels of the inferred domain (two sensitive
    values where the data owner meant one)."""
    v = view(30)
    v["s"] = pd.Series(["A ", *["A", "B", "C"] * 9, "B", "C"], dtype=dtype)
    spaced = (  # a sensitive value is not printed beside its row
        r"column 's' holds two values \(not printed beside their rows: see the rows named\), which "
        r"differ only in spaces at the start or end.*str.strip.*rows holding the less frequent of the "
        r"two \(1 row: row 0\)"
    )
    with pytest.raises(InputError, match=spaced):
        anonymize(v, POLICY)
    v["s"] = v["s"].astype(object).str.strip()
    v["city"] = pd.Series([" Lyon", "Lyon", "Nice"] * 10, dtype=dtype)
    with pytest.raises(
        InputError,
        match=r"column 'city' holds ' Lyon' and 'Lyon'.*rows holding ' Lyon' \(10 rows",  # a tie
    ):
        anonymize(v, POLICY)
    v["city"] = v["city"].astype(object).str.strip()
    assert len(anonymize(v, POLICY).released) == 30


def test_a_value_written_two_ways_and_periods_are_refused_by_name():
    """The drill: 1 and "1" in the sensitive column said 'domain of 's' must list distinct
    values' (no domain was declared); a Period QI failed in the KPR step with advice for kpr."""
    v = view(30)
    v["city"] = pd.Series([1 if i % 2 else "1" for i in range(30)], dtype=object)  # a categorical QI
    with pytest.raises(
        InputError, match=r"column 'city' holds '1' \(str\) and 1 \(int\), which read the same"
    ):
        anonymize(v, {**POLICY, "kinds": {"city": "categorical"}})
    v = view(30)
    v["s"] = pd.Series([1 if i % 2 else "1" for i in range(30)], dtype=object)
    with pytest.raises(
        InputError, match=r"sensitive column 's' holds values of several types \(int, and str in some rows\)"
    ):
        anonymize(v, POLICY)
    v = view(30)
    v["s"] = pd.Series([i % 3 if i % 2 else f"s{i}" for i in range(30)], dtype=object)  # no two alike
    with pytest.raises(
        InputError, match=r"sensitive column 's' holds values of several types \(int, and str in some rows\)"
    ):
        anonymize(v, POLICY)  # drill 2: an ArrowTypeError when the view was written
    v = view(30)
    v["age"] = pd.period_range("2020-01", periods=30, freq="M")
    with pytest.raises(InputError, match=r"QI 'age' holds periods \(period\[M\]\); convert them to dates"):
        anonymize(v, POLICY)


def test_release_indices_written_as_text_are_named_so(tmp_path):
    """The drill: a time column of "1"/"2" was said to hold 'whole numbers of a non-integer
    type', with the advice to renumber the views."""
    hist = pd.concat([view(30).assign(v="1"), view(30, seed=1).assign(v="2")], ignore_index=True)
    with pytest.raises(
        InputError, match=r"it holds numbers written as text \('1', '2'\): store them as integers"
    ):
        release_history(hist, {**POLICY, "time": "v"}, tmp_path / "led")


def test_release_indices_as_floats_and_blank_csv_rows_get_their_own_fix(tmp_path):
    """A time column of 1.0/2.0 and a CSV ending in ',,,,' lines were both told to 'renumber
    the views'."""
    hist = pd.concat([view(30).assign(v=1.0), view(30, seed=1).assign(v=2.0)], ignore_index=True)
    with pytest.raises(InputError, match=r"whole numbers of a non-integer type: write them as whole numbers"):
        release_history(hist, {**POLICY, "time": "v"}, tmp_path / "led")
    blank = pd.DataFrame([[np.nan] * hist.shape[1]] * 2, columns=hist.columns)
    with pytest.raises(
        InputError, match=r"a missing value \(2 rows: row 60, row 61\): delete these empty rows"
    ):
        release_history(
            pd.concat([hist, blank], ignore_index=True), {**POLICY, "time": "v"}, tmp_path / "led"
        )
    half = blank.assign(rid=[100, 101])  # not blank: an id without a view is another problem
    with pytest.raises(InputError, match=r"\(2 rows: .*\): give each of these rows the index of its view"):
        release_history(pd.concat([hist, half], ignore_index=True), {**POLICY, "time": "v"}, tmp_path / "led")
    assert not (tmp_path / "led").exists()


@pytest.mark.parametrize("dtype", [object, "string"])
def test_nfc_text_normalizes_each_text_dtype_and_keeps_missing_cells(dtype):
    from dpriv.inputs import nfc_text

    nfd = unicodedata.normalize("NFD", "Genève")
    values = pd.Series([nfd, "Bern", None, nfd], dtype=dtype)
    out = nfc_text(values)
    assert out[0] == out[3] == unicodedata.normalize("NFC", "Genève") != nfd
    assert out[1] == "Bern" and pd.isna(out[2])
    assert out.dtype == values.dtype

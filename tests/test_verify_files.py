"""``dpriv verify`` of a released file on its own: what lies beside it (dpriv.cli.verify_files).
A drill found a row dropped from a file passing (a check against the original alone cannot
tell it from a suppressed tuple), a genuine Mondrian release failing (no --method), and an
Anatomy release of a ledger that could only be checked through --ledger."""

from __future__ import annotations

import json
import shlex
import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner
from verify_view import FLAGS, write_view

from dpriv.cli import app


def run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def anonymized(tmp_path):
    res = run("anonymize", write_view(tmp_path), "--out", tmp_path / "r.csv", *FLAGS)
    assert res.exit_code == 0, res.output
    return tmp_path


def test_a_row_dropped_from_a_released_file_is_caught_by_its_metrics(anonymized):
    out, metrics = anonymized / "r.csv", anonymized / "r.csv.metrics.json"
    check = ["verify", out, "--original", anonymized / "v.csv", *FLAGS]
    res = run(*check)
    assert res.exit_code == 0 and f"recorded: n_released 300 ({metrics})" in res.output, res.output
    rows = out.read_text().splitlines()
    out.write_text("\n".join(rows[:-1]) + "\n")  # the last row gone: within max_suppression
    res = run(*check)
    assert res.exit_code == 2, res.output
    assert (
        f"the release holds 299 tuples where it recorded 300 (n_released of {metrics}): the released "
        "file was changed after the release" in " ".join(res.output.split())
    )
    # a damaged metrics file is refused (checking without it would let the cut row pass)
    for text in ('{"n_released": "many"}', "garbage", "null", '{"n_released": -1}', '{"n_released": true}'):
        metrics.write_text(text)
        res = run(*check)
        said = " ".join(res.output.split())
        assert res.exit_code == 2 and f"{metrics} lies beside {out} but holds no tuple count" in said, text
    metrics.write_text(json.dumps({"n_released": 300.0}))  # a whole number written as a float counts
    res = run(*check)
    assert res.exit_code == 2 and "holds 299 tuples where it recorded 300" in " ".join(res.output.split())
    metrics.unlink()  # none at all: not checked, and the user is told so
    res = run(*check)
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and f"note: no {metrics} beside it: the tuple count is not checked" in said


PLACES = [
    (".csv", "line 9 of {out} (the header is line 1)"),
    (".parquet", "row 8 of {out} (the first row is row 1)"),
]


@pytest.mark.parametrize("suffix, place", PLACES)
def test_a_value_outside_the_domain_is_not_counted_as_a_missing_row(anonymized, suffix, place):
    """A drill: one sensitive value changed to one outside D[S] was reported as a row missing
    from the file (the rows the checks could read were counted, not the file's). The row was
    named "row 7", its position from 0, which no editor shows: now its line in the CSV file (the
    header is line 1), its row in a Parquet file (from 1)."""
    rel = pd.read_csv(anonymized / "r.csv")
    rel.loc[7, "s"] = "zzz"
    out = anonymized / f"edited{suffix}"
    rel.to_csv(out, index=False) if suffix == ".csv" else rel.to_parquet(out, index=False)
    res = run("verify", out, "--original", anonymized / "v.csv", *FLAGS)
    said = " ".join(res.output.split())
    outside = "FAIL sensitive column 's' holds values outside the sensitive domain ['a', 'b', 'c', 'd', 'e'] "
    where = place.format(out=out)
    assert res.exit_code == 2 and f"{outside}in the released view (1 row: {where}; the values" in said, said
    assert "zzz" not in said  # a sensitive value is never printed
    assert "tuples where it recorded" not in said


@pytest.mark.parametrize("suffix, place", PLACES)
def test_a_missing_interval_bound_names_its_row(anonymized, suffix, place):
    """verify said "1 row has a missing interval bound" naming no row: not to be found in a released
    file of thousands. It is named as the other rows verify finds bad (its line in a CSV file,
    its row in a Parquet file), never by a value."""
    rel = pd.read_csv(anonymized / "r.csv")
    rel["age_min"] = rel["age_min"].astype("float64")
    rel.loc[7, "age_min"] = np.nan
    out = anonymized / f"edited{suffix}"
    rel.to_csv(out, index=False) if suffix == ".csv" else rel.to_parquet(out, index=False)
    res = run("verify", out, "--original", anonymized / "v.csv", *FLAGS)
    said = " ".join(res.output.split())
    where = place.format(out=out)
    assert res.exit_code == 2, said
    assert f"FAIL QI 'age': 1 row has a missing interval bound (1 row: {where})" in said, said


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory):
    root = tmp_path_factory.mktemp("ledgers")
    res = run("generate", "medical", "--out", root / "gen", "--views", "2", "--view-size", "300")
    assert res.exit_code == 0, res.output
    for name, extra in (("M", ["--method", "mondrian-l"]), ("A", ["--release-format", "anatomy"])):
        res = run("release", root / "gen/history.parquet", "--ledger", root / name,
                  "--policy", root / "gen/policy.toml", *extra)  # fmt: skip
        assert res.exit_code == 0, res.output
    return root


def _file_check(root, ledger: str, view: int = 1):
    return ["verify", root / f"{ledger}/releases/1/view.parquet", "--original", root / "gen/history.parquet",
            "--view", view, "--policy", root / "gen/policy.toml"]  # fmt: skip


def test_a_mondrian_release_is_checked_as_its_method_promises(ledgers):
    res = run(*_file_check(ledgers, "M"))
    assert res.exit_code == 2 and "> t = 0.45" in res.output, res.output
    said = " ".join(res.output.split())
    ledger = shlex.quote(str(ledgers / "M"))
    assert (
        f"check it under the ledger's recorded policy and method with dpriv verify --ledger {ledger} --view 1"
        in said
    )
    res = run(*_file_check(ledgers, "M"), "--method", "mondrian-l")
    assert res.exit_code == 0 and "method: mondrian-l (checked: k, l)" in res.output, res.output
    assert f"recorded: n_released 300 ({ledgers / 'M/releases/1/metrics.json'})" in res.output
    res = run(*_file_check(ledgers, "M"), "--method", "mondrian")
    assert res.exit_code == 2 and "--method 'mondrian' is not a method; choose one of jsreduce" in res.output
    ledger_check = [
        "verify",
        "--ledger",
        ledgers / "M",
        "--view",
        1,
        "--original",
        ledgers / "gen/history.parquet",
    ]
    res = run(*ledger_check, "--method", "mondrian-t")
    assert res.exit_code == 2 and "was released with mondrian-l; leave --method out" in res.output, res.output
    assert run(*ledger_check, "--method", "mondrian-l").exit_code == 0


def test_a_k_asked_of_a_ledgers_release_is_measured_with_the_recorded_one_beside_it(ledgers):
    """``verify --ledger`` measured a flag over the ledger's policy silently (``k=8 [flag]``);
    as for a file of dpriv anonymize (session 47), the recorded value is said beside it. The
    oracle: the release's group sizes read from its view.parquet."""
    sizes = pd.read_parquet(ledgers / "M/releases/1/view.parquet").groupby("qi_group").size()
    assert json.loads((ledgers / "M/policy.json").read_text())["k"] == 5
    check = ["verify", "--ledger", ledgers / "M", "--view", 1, "--original", ledgers / "gen/history.parquet"]
    recorded = f"the ledger released with k 5, recorded in {ledgers / 'M/policy.json'})"
    smallest = int(sizes.min())  # >= 5, the ledger's k
    ok = run(*check, "--k", 4)  # a weaker k holds
    assert ok.exit_code == 0, ok.output
    assert f"  checked at: k 4 (asked by --k 4; {recorded}" in ok.stdout.splitlines()
    bad = run(*check, "--k", smallest + 1)
    assert bad.exit_code == 2, bad.output
    assert (
        f"  checked at: k {smallest + 1} (asked by --k {smallest + 1}; {recorded}" in bad.stdout.splitlines()
    )
    fails = [
        line
        for line in bad.stdout.splitlines()
        if line.startswith("  FAIL") and f"< k = {smallest + 1}" in line
    ]
    assert len(fails) == min(20, int((sizes == smallest).sum()))
    assert f"note: checked at k {smallest + 1} (made with 5) as asked" in bad.stderr
    same = run(*check, "--k", 5)  # as recorded: nothing asked over it
    assert same.exit_code == 0 and "checked at:" not in same.stdout, same.output


def test_a_policy_file_without_t_checks_a_ledgers_release_at_the_ledgers_t(ledgers, tmp_path):
    """``verify --ledger L --policy F`` with an F that sets no [privacy] held the release to the
    defaults (t 0.3) instead of the ledger's t 0.45: a valid release failed. A value neither a
    flag nor the file gives is the ledger's (flag > policy file > recorded > default)."""
    text = (ledgers / "gen/policy.toml").read_text()
    head, _, rest = text.partition("[privacy]")
    columns_only = tmp_path / "columns.toml"
    columns_only.write_text(head + rest[rest.index("\n[") :])  # the [privacy] table left out
    assert "\nt = " not in columns_only.read_text() and "\nk = " not in columns_only.read_text()
    recorded = json.loads((ledgers / "A/policy.json").read_text())
    assert recorded["t"] == 0.45
    achieved = json.loads((ledgers / "A/releases/1/metrics.json").read_text())["t_achieved"]
    assert 0.3 < achieved <= 0.45  # fails the default t 0.3, holds the ledger's
    check = ["verify", "--ledger", ledgers / "A", "--view", 1, "--original", ledgers / "gen/history.parquet"]
    check += ["--release-format", "anatomy"]  # as A was released (the file does not say it)
    res = run(*check, "--policy", columns_only)
    assert res.exit_code == 0 and "ok: True" in res.stdout, res.output
    assert "k=5 [ledger] t=0.45 [ledger] j=1.5 [ledger]" in res.stderr
    asked = run(*check, "--policy", columns_only, "--t", "0.3")  # asked: measured, said beside
    assert asked.exit_code == 2 and "> t = 0.3" in asked.stdout, asked.output
    assert "checked at: t 0.3 (asked by --t 0.3; the ledger released with t 0.45" in asked.stdout


def test_an_anatomy_release_of_a_ledger_is_checked_from_its_files(ledgers):
    res = run(*_file_check(ledgers, "A"))
    said = " ".join(res.output.split())
    assert (
        res.exit_code == 2
        and "every QI exact: an Anatomy QI table? verify it with --release-format anatomy" in said
    )
    assert "value sets or hierarchy nodes?" not in said
    res = run(*_file_check(ledgers, "A"), "--release-format", "anatomy")
    assert res.exit_code == 0 and "ok: True" in res.output, res.output
    # the same tables against view 2 (the respondents' values moved on): they do not fit
    res = run(*_file_check(ledgers, "A", view=2), "--release-format", "anatomy")
    assert (
        res.exit_code == 2
        and "every row of an Anatomy QI table must be a tuple of the original" in res.output
    )
    # an Anatomy release is JS-reduce's: a baseline's method is refused, as the release does
    res = run(*_file_check(ledgers, "A"), "--release-format", "anatomy", "--method", "mondrian-l")
    assert res.exit_code == 2 and "an Anatomy release is made by JS-reduce only" in res.output, res.output


def test_a_ledger_release_without_its_sensitive_table_says_what_to_restore(ledgers, tmp_path):
    import shutil

    copy = tmp_path / "A"
    shutil.copytree(ledgers / "A", copy)
    (copy / "releases/1/sensitive.parquet").unlink()
    check = _file_check(ledgers, "A")
    check[1] = copy / "releases/1/view.parquet"
    res = run(*check, "--release-format", "anatomy")
    said = " ".join(res.output.split())
    # the manifest records the table (sensitive_sha256): refused as dpriv verify --ledger refuses it
    missing = f"{copy / 'releases/1/sensitive.parquet'} is missing (release 1 is listed in manifest.json)"
    assert res.exit_code == 2 and missing in said and "restore it from a backup" in said, said
    # a ledger whose manifest records no digests (an early dpriv's): the table beside the view is named
    manifest = json.loads((copy / "manifest.json").read_text())
    for entry in manifest["releases"]:
        entry.pop("sensitive_sha256", None)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    said = " ".join(run(*check, "--release-format", "anatomy").output.split())
    assert "restore the sensitive table its ledger wrote next to it" in said, said


def _refused(check: list) -> str:
    """The output, on one line, of ``dpriv`` run with ``check``, which exits 2."""
    res = run(*check)
    said = " ".join(res.output.split())
    assert res.exit_code == 2, said
    return said


def _not_committed(path, digest: str) -> str:
    """How ``dpriv verify`` refuses ``path``, a file of release 1 whose SHA-256 is not ``digest``."""
    return (
        f"{path} is not the file release 1 committed (its SHA-256 is not the {digest} manifest.json records)"
    )


def test_a_ledger_release_edited_after_it_was_committed_is_refused_by_path(ledgers, tmp_path):
    """A drill: a ledger's view.parquet given by path was checked against its metrics.json
    only, not against the digests the manifest recorded: a QI-group cut from the file with the
    count in metrics.json lowered to match (or any edit of metrics.json) verified ok."""
    import shutil

    copy = tmp_path / "M"
    shutil.copytree(ledgers / "M", copy)
    check = [*_file_check(ledgers, "M"), "--method", "mondrian-l"]
    check[1] = view = copy / "releases/1/view.parquet"
    assert run(*check).exit_code == 0
    metrics = copy / "releases/1/metrics.json"
    record = json.loads(metrics.read_text())
    record["k_achieved"] = 50  # only a figure of the metrics edited
    metrics.write_text(json.dumps(record))
    said = _refused(check)
    assert _not_committed(metrics, "metrics_sha256") in said, said
    rel = pd.read_parquet(view)
    cut = rel[rel["qi_group"] != rel["qi_group"].iloc[0]]  # a whole group gone, within max_suppression
    cut.to_parquet(view, index=False)
    record = {**json.loads((ledgers / "M/releases/1/metrics.json").read_text()), "n_released": len(cut)}
    metrics.write_text(json.dumps(record))
    said = _refused(check)
    changed = ": it, or that digest in manifest.json, was changed after the release"
    assert _not_committed(view, "view_sha256") + changed in said, said
    assert "ok: True" not in said
    # the files of a release the manifest does not list (an interrupted release's) are no release
    shutil.copytree(ledgers / "M/releases/1", copy / "releases/7")
    check[1] = copy / "releases/7/view.parquet"
    said = _refused(check)
    assert "is not a committed release of the ledger" in said, said
    assert "its manifest.json lists releases 1, 2)" in said


def test_a_release_saved_in_nfd_verifies_as_the_original_is_read(tmp_path):
    """A drill: a released CSV whose value sets an editor saved in NFD failed as "not value sets
    of its levels", though the input side reads NFD text as NFC (one level either way)."""
    import unicodedata

    rng = np.random.default_rng(3)
    n = 200
    view = pd.DataFrame(
        {"rid": range(n), "age": rng.integers(20, 70, n), "city": rng.choice(["Köln", "Zürich", "Metz"], n),
         "s": rng.choice(["gesund", "krank", "müde"], n)}
    )  # fmt: skip
    view.to_csv(tmp_path / "v.csv", index=False)
    flags = ["--id", "rid", "--qi", "age,city", "--sensitive", "s", "--k", "4", "--t", "0.6"]
    out = tmp_path / "r.csv"
    assert run("anonymize", tmp_path / "v.csv", "--out", out, *flags, "--j", "2").exit_code == 0
    text = out.read_text(encoding="utf-8")
    out.write_text(unicodedata.normalize("NFD", text), encoding="utf-8")
    assert unicodedata.normalize("NFD", "Köln") in out.read_text(encoding="utf-8")
    res = run("verify", out, "--original", tmp_path / "v.csv", *flags)
    assert res.exit_code == 0 and "ok: True" in res.output, res.output


def test_a_value_not_checked_says_so_with_what_the_release_recorded(anonymized, tmp_path):
    """A drill: ``j_achieved: None`` with no word in the output (only --help said that j needs
    the members' private priors and is checked by the release itself)."""
    out, metrics = anonymized / "r.csv", anonymized / "r.csv.metrics.json"
    res = run("verify", out, "--original", anonymized / "v.csv", *FLAGS)
    assert res.exit_code == 0, res.output
    assert "  j_achieved: None (not checked here: it needs the members' private priors; see the note)" in (
        res.stdout.splitlines()
    )
    j = json.loads(metrics.read_text())["j_achieved"]
    # no j asked (verify has no --j; the policy file gives none): the default 0.1 is no threshold of
    # this file, and the recorded value is said as information, not beside a threshold (session 47)
    assert (
        "note: j is not checked here (it needs the members' priors, which only the release has) and "
        f"none was asked ([privacy] j of a --policy file); {metrics} records j_achieved {j:.4f}, "
        "measured by the release: information, no threshold"
    ) in res.stderr.splitlines()
    assert "j = 0.1" not in res.stderr
    # asked by a policy file: the threshold said beside the recorded value
    policy = tmp_path / "j.toml"
    policy.write_text(
        '[columns]\nid = "rid"\nqi = ["age", "sex"]\nsensitive = "s"\n[privacy]\nk = 4\nt = 0.5\nj = 0.05\n'
    )
    res = run("verify", out, "--original", anonymized / "v.csv", "--policy", policy)
    assert res.exit_code == 0, res.output
    assert (
        "note: j = 0.05 is not checked here: it needs the members' priors, which only the release has "
        f"(it checked them before writing: metrics.json); {metrics} records j_achieved {j:.4f}"
    ) in res.stderr.splitlines()
    # another method than the one recorded beside it: refused, naming both
    res = run("verify", out, "--original", anonymized / "v.csv", *FLAGS, "--method", "mondrian-t")
    assert res.exit_code == 2 and "made with --method jsreduce" in res.stderr, res.output
    # a method that does not promise j (the file alone, no record): said on the value's line, no note
    alone = tmp_path / "alone" / "r.csv"
    alone.parent.mkdir()
    shutil.copy(out, alone)
    res = run("verify", alone, "--original", anonymized / "v.csv", *FLAGS, "--method", "mondrian-t")
    assert "  j_achieved: None (not checked: mondrian-t does not promise j)" in res.stdout.splitlines()
    assert "note: j =" not in res.stderr


def test_a_ledger_state_or_a_metrics_file_is_refused_as_no_view(ledgers, anonymized):
    """A drill: the ledger's state (private: ids and posteriors) was checked as a release (FAIL
    lines listing its id and pk columns), a metrics.json read as CSV. Both refused by name."""
    from dpriv.ledger import Ledger

    root = ledgers / "M"
    check = [
        "--original",
        ledgers / "gen/history.parquet",
        "--view",
        "2",
        "--policy",
        ledgers / "gen/policy.toml",
    ]
    for state in (Ledger(root).state_files(2)[0], Ledger(root).state_files(1)[0]):
        res = run("verify", state, *check)
        said = " ".join(res.output.split())
        assert res.exit_code == 2, res.output
        assert f"error: {state} is the ledger's state ({root}/state/), not a released view" in said
        assert (
            f"pass a release's view ({root}/releases/<i>/view.parquet), or --ledger {root} --view I" in said
        )
        assert "FAIL" not in said and "respondent_id" not in said
    metrics = root / "releases/2/metrics.json"
    res = run("verify", metrics, *check)
    said = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert f"error: {metrics} is a release's metrics (JSON), not a released view: pass the view it " in said
    assert f"describes ({root / 'releases/2/view.parquet'}), or --ledger L --view I" in said
    out = anonymized / "r.csv.metrics.json"
    res = run("verify", out, "--original", anonymized / "v.csv", *FLAGS)
    assert res.exit_code == 2 and f"describes ({anonymized / 'r.csv'})" in " ".join(res.output.split())

"""Nothing lost, nothing silent (issue 15, part 1): dpriv never overwrites or deletes a file it
did not create in the same command, verify/release take the ledger's own policy and the same
column flags as anonymize, the effective policy is printed, views smaller than k follow
``small_view``, and the small CLI gaps (--version, a header-only KPR table, a path given to the
Python API) are closed. Refusals: exit 2, the message, and every byte and mtime unchanged."""

import errno
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import ledger_files, random_view
from loose_history import write_loose
from test_cli import LOOSE, POLICY, QI, assert_refused, tree

from dpriv import __version__
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, PolicyError
from dpriv.io import read_table
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history


def snapshot(root: Path) -> dict:
    """Every file under ``root`` (or ``root`` itself): its bytes' digest and its mtime in ns."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("gen"), n_views=3, view_size=100)  # (folder, mh)


def test_version(cli):
    res = cli("--version")
    assert res.exit_code == 0 and res.output.strip() == f"dpriv {__version__}"


# -- 1. data loss --------------------------------------------------------------------------------
@pytest.mark.slow
def test_demo_refuses_an_existing_ledger_and_force_moves_it_aside(cli, scheduler, tmp_path):
    led = tmp_path / "ledger"
    (led / "attack").mkdir(parents=True)
    (led / "manifest.json").write_text('{"releases": []}')
    (led / "attack" / "gain_dk.csv").write_text("release,adversary_gain\n1,0.1\n")
    before = snapshot(tmp_path)
    res = cli("demo", "--out", tmp_path, "--views", "2", "--view-size", "60", "--scheduler", scheduler)
    assert_refused(res, r"ledger exists", "--force", "nothing was changed")
    assert snapshot(tmp_path) == before
    res = cli(
        "demo", "--out", tmp_path, "--views", "2", "--view-size", "60", "--scheduler", scheduler, "--force"
    )
    assert res.exit_code == 0, res.output
    moved = tmp_path / "ledger.1"
    assert "moved to" in res.output and moved.is_dir()
    assert snapshot(moved) == {str(p).replace(str(led), str(moved)): v for p, v in before.items()}
    assert [r["index"] for r in Ledger(led).committed()] == [1, 2]


def test_demo_refuses_generated_files_of_another_run(cli, scheduler, tmp_path):
    (tmp_path / "policy.toml").write_text("# mine\n")
    before = snapshot(tmp_path)
    res = cli("demo", "--out", tmp_path, "--views", "2", "--view-size", "60", "--scheduler", scheduler)
    assert_refused(res, r"policy\.toml", "--force")
    assert snapshot(tmp_path) == before and not (tmp_path / "ledger").exists()


def test_generate_medical_refuses_to_overwrite_and_force_replaces(cli, tmp_path):
    out = tmp_path / "g"
    assert cli("generate", "medical", "--views", "2", "--view-size", "50", "--out", out).exit_code == 0
    (out / "ledger").mkdir()  # a ledger that pinned these files by SHA-256
    before = snapshot(out)
    res = cli("generate", "medical", "--views", "3", "--view-size", "40", "--out", out)
    out_text = assert_refused(res, r"history\.parquet", r"policy\.toml", r"knowledge/dk\.npz", "--force")
    assert "ledger" in out_text and snapshot(out) == before
    res = cli("generate", "medical", "--views", "3", "--view-size", "40", "--out", out, "--force")
    assert res.exit_code == 0, res.output
    assert sorted(pd.read_parquet(out / "history.parquet")["view"].unique()) == [1, 2, 3]
    # it replaced files the ledger pins without a word
    assert "note: --force replaces ['history.parquet', 'policy.toml', 'knowledge/dk.npz'" in res.output
    assert f"the ledger {out / 'ledger'} may have been released" in res.output
    (out / "ledger").rmdir()
    res = cli("generate", "medical", "--views", "2", "--view-size", "40", "--out", out, "--force")
    assert res.exit_code == 0 and "note:" not in res.output  # no ledger beside them
    (tmp_path / "link").symlink_to(tmp_path / "gone")  # a dangling link was called "a file"
    res = cli("generate", "medical", "--views", "2", "--view-size", "50", "--out", tmp_path / "link")
    assert_refused(res, r"link is a broken symbolic link \(to .*gone\), not a folder")
    assert not (tmp_path / "gone").exists()


def _ledger_folder(root: Path) -> Path:
    """A folder a command takes for a release ledger (manifest.json and releases/1/)."""
    (root / "releases" / "1").mkdir(parents=True)
    (root / "manifest.json").write_text('{"releases": []}')
    (root / "releases" / "1" / "view.parquet").write_bytes(b"released")
    return root


@pytest.mark.parametrize("command", [("generate", "medical"), ("demo",)], ids=["generate", "demo"])
def test_generate_and_demo_write_nothing_into_a_release_ledger(command, cli, tmp_path):
    """A drill: generate and demo put raw respondent data (history.parquet, knowledge/) and demo a
    nested ledger into a ledger's public folders, where attack, report and export refuse."""
    led = _ledger_folder(tmp_path / "led")
    project = tmp_path / "project"
    _ledger_folder(project / "knowledge")  # a ledger named knowledge: generate's dk.npz would go in
    before, paths = snapshot(tmp_path), sorted(tmp_path.rglob("*"))
    refused = {
        led: f"--out {led} is the release ledger {led}, whose files are the record",
        led / "releases" / "2": r"releases/2 lies inside the release ledger .*/led, whose files",
        led / "attack": r"attack lies inside the release ledger .*/led, whose files",
        project: r"project would put knowledge/dk\.npz inside the release ledger .*/project/knowledge",
    }
    for out, message in refused.items():
        res = cli(*command, "--views", "2", "--view-size", "50", "--out", out, "--force")
        assert_refused(res, message, "nothing was written")
    assert snapshot(tmp_path) == before and sorted(tmp_path.rglob("*")) == paths
    # a project folder holding a ledger further down is fine: the files go beside it
    shutil.rmtree(project / "knowledge")
    _ledger_folder(project / "led")
    res = cli("generate", "medical", "--views", "2", "--view-size", "50", "--out", project)
    assert res.exit_code == 0, res.output
    assert (project / "history.parquet").is_file()
    assert sorted(p.name for p in (project / "led").iterdir()) == ["manifest.json", "releases"]


def test_generate_force_keeps_an_edited_policy_and_unrecorded_files(cli, tmp_path):
    out = tmp_path / "gf"
    assert cli("generate", "medical", "--views", "2", "--view-size", "40", "--out", out).exit_code == 0
    policy = out / "policy.toml"
    policy.write_text(policy.read_text().replace("k = 5", "k = 7"))  # the user's edit
    before = snapshot(out)
    res = cli("generate", "medical", "--views", "3", "--view-size", "40", "--out", out, "--force")
    assert_refused(res, r"gf holds \['policy\.toml'\], changed since dpriv wrote it", "move it away", "--out")
    assert snapshot(out) == before and "k = 7" in policy.read_text()
    # a knowledge file dpriv never recorded (a copied folder): refused too, named with its folder
    (out / "knowledge" / ".dpriv-outputs").unlink()
    before = snapshot(out)
    res = cli("generate", "medical", "--views", "3", "--view-size", "40", "--out", out, "--force")
    assert_refused(res, r"'policy\.toml', 'knowledge/dk\.npz', 'knowledge/dk-1\.npz'")
    assert snapshot(out) == before


@pytest.mark.slow
def test_demo_force_keeps_an_edited_policy_and_the_ledger_in_place(cli, scheduler, tmp_path):
    args = ("demo", "--out", tmp_path, "--views", "2", "--view-size", "60", "--scheduler", scheduler)
    assert cli(*args).exit_code == 0
    with open(tmp_path / "policy.toml", "a") as fh:
        fh.write("# my note\n")
    before = snapshot(tmp_path)
    res = cli(*args, "--force")
    assert_refused(res, r"holds \['policy\.toml'\]", "move it away")
    assert "moved" not in res.output  # the check comes before the ledger is moved aside
    assert snapshot(tmp_path) == before and not (tmp_path / "ledger.1").exists()


def test_generate_force_replaces_its_own_unchanged_files_and_partitioned_dataset(tmp_path):
    import dask

    from dpriv.datasets import write_medical_view

    out = tmp_path / "p"
    with dask.config.set(scheduler="sync"):
        write_medical_view(out, 200, npartitions=2, seed=1)  # one 65,536-row block: one file
        part = out / "history.parquet" / "part.0.parquet"
        original = part.read_bytes()
        part.write_bytes(original[:-1] + b"x")  # changed since, same size
        with pytest.raises(InputError, match=r"holds \['history\.parquet'\].*overwrite=True"):
            write_medical_view(out, 200, npartitions=2, seed=1, overwrite=True)
        assert part.read_bytes() == original[:-1] + b"x"
        part.write_bytes(original)
        (out / "history.parquet" / "notes.txt").write_text("mine")  # a file added: refused too
        with pytest.raises(InputError, match=r"history\.parquet"):
            write_medical_view(out, 200, npartitions=2, seed=1, overwrite=True)
        assert (out / "history.parquet" / "notes.txt").read_text() == "mine"
        (out / "history.parquet" / "notes.txt").unlink()
        write_medical_view(out, 200, npartitions=2, seed=2, overwrite=True)  # unchanged: replaced
        assert part.read_bytes() != original  # another seed, other rows
        write_history(out, medical_history(n_views=2, view_size=30, seed=5), overwrite=True)
    assert (out / "history.parquet").is_file()  # the recorded dataset folder replaced by a file
    assert len(pd.read_parquet(out / "history.parquet")) == 60


@pytest.mark.slow
def test_release_refused_for_a_missing_knowledge_file_creates_no_ledger(cli, tmp_path, generated):
    gen, _ = generated
    policy = tmp_path / "p.toml"
    policy.write_text((gen / "policy.toml").read_text().replace('"knowledge/dk.npz"', f'"{gen}/missing.npz"'))
    policy.write_text(policy.read_text().replace('"knowledge/', f'"{gen}/knowledge/'))
    res = cli("release", gen / "history.parquet", "--ledger", tmp_path / "L4", "--policy", policy)
    assert_refused(res, r"\[knowledge\] 'dk' must name an existing \.npz", r"missing\.npz")
    assert f"({gen}/missing.npz does not exist)" in res.output  # where it looked, absolute
    assert not (tmp_path / "L4").exists()
    # an existing ledger: every byte and mtime as it was
    good = tmp_path / "good.toml"
    good.write_text((gen / "policy.toml").read_text().replace('"knowledge/', f'"{gen}/knowledge/'))
    led = tmp_path / "L5"
    assert cli("release", gen / "history.parquet", "--ledger", led, "--policy", good).exit_code == 0
    before = snapshot(led)
    res = cli("release", gen / "history.parquet", "--ledger", led, "--policy", policy)
    assert_refused(res, r"missing\.npz")
    assert snapshot(led) == before


@pytest.mark.parametrize("damage", ["text", "truncated"])
def test_release_refused_for_a_knowledge_file_that_is_not_a_table(cli, tmp_path, generated, damage):
    gen, _ = generated
    bad = tmp_path / "dk.npz"
    good = (gen / "knowledge" / "dk.npz").read_bytes()
    bad.write_bytes(b"stage,next\n1,2\n" if damage == "text" else good[: len(good) // 2])
    policy = tmp_path / "p.toml"
    text = (gen / "policy.toml").read_text().replace('"knowledge/dk.npz"', f'"{bad}"')
    policy.write_text(text.replace('"knowledge/', f'"{gen}/knowledge/'))
    res = cli("release", gen / "history.parquet", "--ledger", tmp_path / "L", "--policy", policy)
    assert_refused(res, rf"knowledge file {re.escape(str(bad))} is not a knowledge table", "restore")
    assert not (tmp_path / "L").exists()


def test_a_refused_first_release_leaves_no_new_ledger_folder(tmp_path, generated):
    gen, mh = generated
    # t and j this strict suppress far more than max_suppression allows: release 1 is refused
    policy = ReleasePolicy.from_toml(gen / "policy.toml", t=0.01, j=0.01, max_suppression=0.01)
    with pytest.raises(PolicyError, match="suppress"):
        release_history(mh.history, policy, tmp_path / "new")
    assert not (tmp_path / "new").exists()
    mine = tmp_path / "mine"  # a folder the user made: kept, as it was (it kept an empty manifest)
    mine.mkdir()
    with pytest.raises(PolicyError, match="suppress"):
        release_history(mh.history, policy, ledger_dir=mine)
    assert mine.is_dir() and list(mine.iterdir()) == []


def test_write_history_refuses_existing_files_unless_overwrite(tmp_path, generated):
    _, mh = generated
    write_history(tmp_path, mh)
    before = snapshot(tmp_path)
    with pytest.raises(
        InputError, match=r"already holds \['history\.parquet', 'policy\.toml'.*overwrite=True"
    ):
        write_history(tmp_path, medical_history(n_views=2, view_size=30, seed=5))
    assert snapshot(tmp_path) == before
    (tmp_path / "history.parquet").unlink()  # one file left of the set is enough to refuse
    with pytest.raises(InputError, match=r"\['policy\.toml', 'knowledge/dk\.npz'"):
        write_history(tmp_path, mh)
    small = medical_history(n_views=2, view_size=30, seed=5)
    write_history(tmp_path, small, overwrite=True)
    assert len(pd.read_parquet(tmp_path / "history.parquet")) == len(small.history)


def test_anonymize_refuses_its_input_as_output_under_any_spelling(cli, tmp_path, monkeypatch):
    src = tmp_path / "d" / "v.csv"
    src.parent.mkdir()
    random_view(60).to_csv(src, index=False)
    (tmp_path / "link.csv").symlink_to(src)
    before = snapshot(tmp_path / "d")
    monkeypatch.chdir(tmp_path)
    for out in (src, "d/v.csv", "./d/../d/v.csv", tmp_path / "link.csv"):
        res = cli("anonymize", src, "--out", out, *QI, *LOOSE)
        assert_refused(res, "is the input file", "another output file")
        assert snapshot(tmp_path / "d") == before
    res = cli("anonymize", "d/v.csv", "--out", src, *QI, *LOOSE)
    assert_refused(res, "is the input file")
    assert snapshot(tmp_path / "d") == before


@pytest.mark.parametrize("name", ["x.txt", "x", "x.json"])
def test_anonymize_refuses_an_unknown_output_type(name, cli, tmp_path):
    src = tmp_path / "v.csv"
    random_view(60).to_csv(src, index=False)
    res = cli("anonymize", src, "--out", tmp_path / name, *QI, *LOOSE)
    assert_refused(res, "unknown file type", r"\.csv", r"\.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.csv"]


@pytest.mark.slow
def test_anonymize_refuses_an_existing_output_unless_force(cli, tmp_path):
    """An existing --out (or its OUT.metrics.json) that is not the input: refused, every byte and
    mtime kept; --force replaces both (atomically)."""
    src = tmp_path / "v.csv"
    random_view(60).to_csv(src, index=False)
    mine, metrics = tmp_path / "mine.parquet", tmp_path / "mine.parquet.metrics.json"
    mine.write_bytes(b"my own file, not a release")
    before = snapshot(tmp_path)
    res = cli("anonymize", src, "--out", mine, *QI, *LOOSE)
    assert_refused(res, rf"{re.escape(str(mine))} exists already", "nothing was written", "--force")
    assert snapshot(tmp_path) == before and not metrics.exists()
    # the metrics file alone is enough to refuse: it would be overwritten too
    fresh = tmp_path / "fresh.csv"
    Path(str(fresh) + ".metrics.json").write_text("{}")
    before = snapshot(tmp_path)
    res = cli("anonymize", src, "--out", fresh, *QI, *LOOSE)
    assert_refused(res, r"fresh\.csv\.metrics\.json exists already", "--force")
    assert snapshot(tmp_path) == before and not fresh.exists()
    # --force replaces only what an earlier dpriv anonymize wrote, never the user's own file
    before = snapshot(tmp_path)
    res = cli("anonymize", src, "--out", mine, *QI, *LOOSE, "--force")
    assert_refused(res, rf"{re.escape(str(mine))} was not written by dpriv", "nothing was written")
    assert snapshot(tmp_path) == before and not metrics.exists()
    rel, rel_metrics = tmp_path / "rel.parquet", tmp_path / "rel.parquet.metrics.json"
    assert cli("anonymize", src, "--out", rel, *QI, "--k", "5", "--t", "0.9", "--j", "5").exit_code == 0
    first = snapshot(rel)
    res = cli("anonymize", src, "--out", rel, *QI, *LOOSE, "--force")
    assert res.exit_code == 0, res.output
    assert snapshot(rel) != first  # k 3 instead of 5: another release, replaced
    assert len(pd.read_parquet(rel)) + int(re.search(r"n_suppressed: (\d+)", res.output)[1]) == 60
    assert '"n_original": 60' in rel_metrics.read_text() and '"k_achieved": 3' in rel_metrics.read_text()
    # --force never makes the input an output
    res = cli("anonymize", src, "--out", src, *QI, *LOOSE, "--force")
    assert_refused(res, "is the input file")


@pytest.mark.slow
def test_attack_and_report_refuse_an_existing_output_unless_force(cli, generated, tmp_path):
    out, _ = generated
    led = tmp_path / "ledger"
    res = cli("release", out / "history.parquet", "--ledger", led, "--policy", out / "policy.toml")
    assert res.exit_code == 0, res.output
    gain = tmp_path / "gain.csv"
    gain.write_text("mine\n")
    page = tmp_path / "r.html"
    page.write_text("<p>mine</p>")
    before = snapshot(tmp_path)
    args = (
        "attack",
        led,
        "--history",
        out / "history.parquet",
        "--knowledge",
        "dk",
        "--policy",
        out / "policy.toml",
    )
    res = cli(*args, "--out", gain)
    assert_refused(res, r"gain\.csv exists already", "--force")
    res = cli(*args, "--out", tmp_path / "gain.txt")  # refused before the attack runs
    assert_refused(res, "unknown file type '.txt'")
    res = cli("report", led, "--out", page)
    assert_refused(res, r"r\.html exists already", "--force")
    assert snapshot(tmp_path) == before
    # --force never replaces a file dpriv did not write...
    res = cli(*args, "--out", gain, "--force")
    assert_refused(res, r"gain\.csv was not written by dpriv", "only a file an earlier dpriv attack wrote")
    res = cli("report", led, "--out", page, "--force")
    assert_refused(res, r"r\.html was not written by dpriv", "an earlier dpriv report wrote")
    assert snapshot(tmp_path) == before
    # ... and replaces the command's own earlier output
    gain2, page2 = tmp_path / "gain2.csv", tmp_path / "r2.html"
    assert cli(*args, "--out", gain2).exit_code == 0 and cli("report", led, "--out", page2).exit_code == 0
    res = cli(*args, "--out", gain2, "--force")
    assert res.exit_code == 0, res.output
    assert pd.read_csv(gain2)["release"].tolist() == [1, 2, 3]
    res = cli("report", led, "--out", page2, "--force")
    assert res.exit_code == 0 and "report of 3 release(s)" in res.output, res.output
    # a file where the ledger's attack/ folder goes (a drill: exit 1, FileExistsError): refused
    # before the attack runs, whether the result goes there by default or by --out
    assert not (led / "attack").exists()  # every result above went to --out
    (led / "attack").write_text("mine\n")
    for extra in ((), ("--out", led / "attack" / "g.csv")):
        res = cli(*args, *extra)
        assert_refused(res, r"attack is a file, not the ledger's attack/ folder", "--out")
    assert (led / "attack").read_text() == "mine\n"


@pytest.mark.slow
def test_a_release_above_max_suppression_is_refused_with_the_measured_share(cli, tmp_path):
    """The refusal's figures are those of the same release allowed (max_suppression = 1)."""
    src = tmp_path / "v.csv"
    random_view(60).to_csv(src, index=False)
    strict = ("--k", "3", "--t", "0", "--j", "0")  # t = 0: a group must hold the view's exact mix
    res = cli("anonymize", src, "--out", tmp_path / "r.parquet", *QI, *strict)
    text = assert_refused(res, r"suppression \d+\.\d\d% exceeds max_suppression 5\.00%", "nothing written",
                          r"\[privacy\] max_suppression")  # fmt: skip
    n_sup, n = map(int, re.search(r"\((\d+) of (\d+) tuples\)", text).groups())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.csv"]
    pol = tmp_path / "p.toml"
    pol.write_text("[privacy]\nmax_suppression = 1.0\n")
    res = cli("anonymize", src, "--out", tmp_path / "r.parquet", *QI, *strict, "--policy", pol)
    assert res.exit_code == 0, res.output
    assert (n, n_sup) == (60, int(re.search(r"n_suppressed: (\d+)", res.output)[1])) and n_sup > 3
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 60 - n_sup


def test_verify_of_a_malformed_release_exits_2_naming_the_column(cli, tmp_path):
    src, rel = tmp_path / "v.csv", tmp_path / "rel.csv"
    random_view(60).to_csv(src, index=False)
    assert cli("anonymize", src, "--out", rel, *QI, *LOOSE).exit_code == 0
    broken = tmp_path / "broken.csv"
    pd.read_csv(rel).drop(columns="age_max").to_csv(broken, index=False)
    before = snapshot(tmp_path)
    res = cli("verify", broken, "--original", src, *QI, "--k", "3", "--t", "0.9")
    assert res.exit_code == 2 and "age_max" in res.output and "Traceback" not in res.output, res.output
    assert snapshot(tmp_path) == before


# -- 2. verify -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_verify_a_release_made_with_add_row_id(cli, tmp_path):
    src, rel = tmp_path / "v.csv", tmp_path / "rel.parquet"
    random_view(90).drop(columns="respondent_id").to_csv(src, index=False)
    cols = ["--qi", "age,gender,weight", "--sensitive", "exam_result"]
    res = cli("anonymize", src, "--out", rel, "--add-row-id", *cols, *LOOSE)
    assert res.exit_code == 0, res.output
    res = cli("verify", rel, "--original", src, "--add-row-id", *cols, "--k", "3", "--t", "0.9")
    assert res.exit_code == 0 and re.search(r"ok: True", res.output), res.output
    # a k it was not made with: measured as asked (session 47), the recorded k 3 said beside it ...
    sizes = pd.read_parquet(rel).groupby("qi_group").size()
    asked = sizes.min() + 1
    stricter = ["--add-row-id", *cols, "--k", str(asked)]
    res = cli("verify", rel, "--original", src, *stricter)
    assert res.exit_code == 2 and "FAIL" in res.output, res.output
    assert (
        f"checked at: k {asked} (asked by --k {asked}; the file was made with k 3, recorded in" in res.output
    )
    assert sum(f"< k = {asked}" in line for line in res.output.splitlines()) == min(20, (sizes < asked).sum())
    # ... and measured, not rubber-stamped, for a file without that record (written before it)
    record = Path(f"{rel}.metrics.json")
    data = json.loads(record.read_text())
    del data["anonymity_parameters"]
    record.write_text(json.dumps(data))
    res = cli("verify", rel, "--original", src, *stricter)
    assert res.exit_code == 2 and "FAIL" in res.output
    res = cli("verify", rel, "--original", src, *cols, "--k", "3", "--t", "0.9")
    assert_refused(res, "respondent_id", "--id")


@pytest.mark.slow
def test_verify_a_ledger_release_under_its_own_policy(cli, generated, tmp_path):
    out, _ = generated
    led = tmp_path / "ledger"
    res = cli("release", out / "history.parquet", "--ledger", led, "--policy", out / "policy.toml")
    assert res.exit_code == 0, res.output
    for i in (1, 2, 3):
        res = cli("verify", "--ledger", led, "--view", i, "--history", out / "history.parquet")
        assert res.exit_code == 0 and re.search(r"ok: True", res.output), res.output
        assert f"ledger {led / 'policy.json'}" in res.output and "k=5 [ledger]" in res.output
    res = cli("verify", "--ledger", led, "--history", out / "history.parquet")
    assert_refused(res, r"--view I", r"holds releases \[1, 2, 3\]")
    res = cli("verify", "--ledger", led, "--view", "4", "--history", out / "history.parquet")
    assert_refused(res, r"--view 4: .* holds no release 4; it holds releases \[1, 2, 3\]")
    res = cli("verify", "--ledger", led, "--view", "2")
    assert_refused(res, "--original FILE")
    # the ledger folder itself given as the released view: named, not read as a table
    res = cli("verify", led, "--original", out / "history.parquet", "--policy", out / "policy.toml")
    assert_refused(res, "is a dpriv ledger", "--ledger PATH --view I")
    # a released view and a history without --view: refused, not measured against all views
    view2 = tmp_path / "v2.parquet"
    Ledger(led).read_view(2).to_parquet(view2)
    res = cli("verify", view2, "--original", out / "history.parquet", "--policy", out / "policy.toml")
    assert_refused(res, "holds 3 views", "--view")
    res = cli(
        "verify", view2, "--original", out / "history.parquet", "--policy", out / "policy.toml", "--view", 2
    )
    assert res.exit_code == 0 and re.search(r"ok: True", res.output), res.output
    # against the wrong view, t or membership fails: exit 2, not ok
    res = cli(
        "verify", view2, "--original", out / "history.parquet", "--policy", out / "policy.toml", "--view", 1
    )
    assert res.exit_code == 2 and "FAIL" in res.output


# -- 3. release with the ledger's policy and column flags --------------------------------------------
@pytest.mark.slow
def test_release_resumes_under_the_recorded_policy(cli, generated, tmp_path):
    out, mh = generated
    first = tmp_path / "first.parquet"
    mh.history[mh.history["view"] <= 2].to_parquet(first, index=False)
    led = tmp_path / "ledger"
    res = cli("release", first, "--ledger", led, "--policy", out / "policy.toml", "--k", "4")
    assert res.exit_code == 0, res.output
    assert "k=4 [flag]" in res.output and "t=0.5 [file]" in res.output
    assert re.search(r"max_suppression=1\.0 \[file\]", res.output)
    assert re.search(r"small_view=refuse \[default\]", res.output)
    res = cli("release", out / "history.parquet", "--ledger", led)  # no policy flag at all
    assert res.exit_code == 0, res.output
    assert "k=4 [ledger]" in res.output and "method: jsreduce" in res.output
    assert [r["index"] for r in Ledger(led).committed()] == [1, 2, 3]
    # the same bytes as one run of the whole history under the file and --k 4
    ref = tmp_path / "ref"
    res = cli(
        "release", out / "history.parquet", "--ledger", ref, "--policy", out / "policy.toml", "--k", "4"
    )
    assert res.exit_code == 0, res.output
    same = ledger_files(led)  # metrics.json without the seconds, manifest.json without their digests
    assert same == ledger_files(ref) and len(same) >= 10  # policy, manifest, 3 views, metrics, states
    before = tree(led)
    res = cli("release", out / "history.parquet", "--ledger", led, "--k", "6")  # flags over the ledger's
    assert_refused(res, r"policy differs .*\['k'\]")
    assert tree(led) == before


@pytest.mark.slow
def test_release_takes_the_column_flags(cli, generated, tmp_path):
    out, mh = generated
    renamed = tmp_path / "renamed.parquet"
    mh.history.rename(columns={"respondent_id": "pid", "view": "week"}).to_parquet(renamed, index=False)
    led = tmp_path / "ledger"
    res = cli("release", renamed, "--ledger", led, "--policy", out / "policy.toml")
    assert_refused(res, "respondent_id")
    assert not led.exists()
    res = cli(
        "release", renamed, "--ledger", led, "--policy", out / "policy.toml", "--id", "pid", "--time", "week"
    )
    assert res.exit_code == 0, res.output
    assert "id=pid [flag]" in res.output and "time=week [flag]" in res.output
    assert [r["index"] for r in Ledger(led).committed()] == [1, 2, 3]
    # same bytes as the release under the original names
    ref = tmp_path / "ref"
    assert (
        cli("release", out / "history.parquet", "--ledger", ref, "--policy", out / "policy.toml").exit_code
        == 0
    )
    for i in (1, 2, 3):
        assert (led / f"releases/{i}/view.parquet").read_bytes() == (
            ref / f"releases/{i}/view.parquet"
        ).read_bytes()
    h = tmp_path / "no_policy.parquet"
    mh.history.to_parquet(h, index=False)
    res = cli(
        "release",
        h,
        "--ledger",
        tmp_path / "l2",
        "--qi",
        "age,gender,weight",
        "--sensitive",
        "exam_result",
        "--time",
        "view",
        "--k",
        "3",
        "--t",
        "1",
        "--j",
        "5",
    )
    assert res.exit_code == 0, res.output
    assert "qi=age,gender,weight [flag]" in res.output and "j=5.0 [flag]" in res.output


# -- 4. the effective policy ----------------------------------------------------------------------
def test_anonymize_prints_the_effective_policy_before_it_starts(cli, tmp_path):
    src, pol = tmp_path / "v.csv", tmp_path / "p.toml"
    random_view(60).to_csv(src, index=False)
    pol.write_text(
        '[columns]\nqi = ["age", "gender", "weight"]\nsensitive = "exam_result"\n[privacy]\nt = 0.9\n'
    )
    res = cli("anonymize", src, "--out", tmp_path / "r.csv", "--policy", pol, "--k", "3", "--j", "5")
    assert res.exit_code == 0, res.output
    text = res.output
    assert f"effective policy (file {pol})" in text
    for item in (
        "k=3 [flag]",
        "j=5.0 [flag]",
        "t=0.9 [file]",
        "qi=age,gender,weight [file]",
        "id=respondent_id [default]",
        "small_view=refuse [default]",
        "seed=0 [default]",
        "grouping=scan [default]",
        "persistent_groups=False [default]",
    ):
        assert item in text, item
    assert text.index("effective policy") < text.index("released view written")


# -- 5. views smaller than k ------------------------------------------------------------------------
def small_history(n_views: int, small: int, k: int = 3) -> pd.DataFrame:
    """``n_views`` views of 12 respondents (ids per view), view ``small`` with one row."""
    views = []
    for i in range(1, n_views + 1):
        v = random_view(1 if i == small else 12, seed=i)
        views.append(v.assign(view=i, respondent_id=v["respondent_id"] + 100 * (i % 3)))
    return pd.concat(views, ignore_index=True)


def small_policy(**kw) -> ReleasePolicy:
    return ReleasePolicy.from_dict(
        dict(
            id="respondent_id",
            time="view",
            qi=["age", "gender", "weight"],
            sensitive="exam_result",
            k=3,
            t=1.0,
            j=5.0,
            domains={
                "age": [45, 74],
                "weight": [60, 89],
                "gender": ["F", "M"],
                "exam_result": ["a", "b", "c"],
            },
            **kw,
        )
    )


def check_small_view_ledger(led: Ledger, n_views: int, small: int, history: pd.DataFrame) -> None:
    assert [r["index"] for r in led.committed()] == list(range(1, n_views + 1))
    for i in range(1, n_views + 1):
        m, view = led.read_metrics(i), led.read_view(i)
        n = int((history["view"] == i).sum())
        if i == small:
            assert m["small_view"] == "suppressed" and m["n_groups"] == 0 and len(view) == 0
            assert m["n_suppressed"] == m["n_original"] == 1
        else:
            assert "small_view" not in m and len(view) + m["n_suppressed"] == n and len(view) > 0


def test_small_view_refuses_by_default_naming_the_option(client, tmp_path):
    h = small_history(4, 2)
    with pytest.raises(
        PolicyError, match=r'view = 2: k = 3 is larger than the view \(1 row\).*small_view = "suppress"'
    ):
        release_history(h, small_policy(), tmp_path / "led")
    assert not (tmp_path / "led").exists()
    # merge is refused by design (docs/policy.md): the message says why and names the options
    with pytest.raises(PolicyError) as err:
        release_history(h, small_policy(small_view="merge"), tmp_path / "led")
    for part in ('small_view = "merge" is refused', "tuples of two times in one release", "twice",
                 'small_view = "suppress"', '"refuse" (the default)', "docs/policy.md"):  # fmt: skip
        assert part in str(err.value), part
    assert not (tmp_path / "led").exists()
    # with a merge policy even a history whose views are all large enough is refused, before
    # anything is written (the option is not silently ignored)
    with pytest.raises(PolicyError, match='"merge" is refused'):
        release_history(small_history(3, 0), small_policy(small_view="merge"), tmp_path / "led")
    assert not (tmp_path / "led").exists()


def test_small_view_suppress_records_it_and_goes_on(client, tmp_path):
    h = small_history(4, 2)
    led = release_history(h, small_policy(small_view="suppress", max_suppression=0.5), tmp_path / "led")
    check_small_view_ledger(led, 4, 2, h)
    assert '"small_view": "suppress"' in (tmp_path / "led" / "policy.json").read_text()
    # respondents of the suppressed view get no posterior from it: the state after 2 is the state after 1
    assert (
        led.read_state(2)
        .sort_values("respondent_id")
        .reset_index(drop=True)
        .equals(led.read_state(1).sort_values("respondent_id").reset_index(drop=True))
    )


@pytest.mark.slow
def test_small_view_in_the_cli(cli, tmp_path):
    h = tmp_path / "h.parquet"
    small_history(3, 3).to_parquet(h, index=False)
    pol = tmp_path / "p.toml"
    body = (
        '[columns]\ntime = "view"\nqi = ["age", "gender", "weight"]\nsensitive = "exam_result"\n'
        "[privacy]\nk = 3\nt = 1.0\nj = 5.0\n"
    )
    pol.write_text(body)
    res = cli("release", h, "--ledger", tmp_path / "a", "--policy", pol)
    assert_refused(res, r"view = 3: k = 3 is larger than the view \(1 row\)", "small_view")
    assert not (tmp_path / "a").exists()
    res = cli("release", h, "--ledger", tmp_path / "a", "--policy", pol, "--small-view", "merge")
    assert_refused(res, r'small_view = "merge" is refused: .*two times in one release', '"suppress"')
    assert not (tmp_path / "a").exists()
    res = cli("release", h, "--ledger", tmp_path / "a", "--policy", pol, "--small-view", "suppress")
    assert res.exit_code == 0 and "small_view=suppress [flag]" in res.output, res.output
    pol.write_text(body + 'small_view = "suppress"\n')
    res = cli("release", h, "--ledger", tmp_path / "b", "--policy", pol)
    assert res.exit_code == 0, res.output
    assert (
        "release 3 has 1 tuple(s), fewer than k = 3: released fully suppressed" in res.output
        and "small_view=suppress [file]" in res.output
    )


@pytest.mark.slow
@pytest.mark.heavy
def test_small_view_in_a_69_week_history(client, tmp_path):
    """The issue's case: one 1-row week (k 3) among 69 no longer refuses the whole history."""
    h = small_history(69, 40)
    with pytest.raises(PolicyError, match="view = 40: .*small_view"):
        release_history(h, small_policy(), tmp_path / "refused")
    led = release_history(h, small_policy(small_view="suppress"), tmp_path / "led")
    check_small_view_ledger(led, 69, 40, h)


# -- 6. a path instead of a DataFrame ---------------------------------------------------------------
@pytest.mark.slow
def test_the_python_api_reads_a_path_and_names_a_wrong_type(client, tmp_path):
    frame = random_view(60)
    frame.to_csv(tmp_path / "v.csv", index=False)
    pol = ReleasePolicy.from_dict(
        dict(qi=["age", "gender", "weight"], sensitive="exam_result", k=3, t=0.9, j=5)
    )
    from_path = anonymize(str(tmp_path / "v.csv"), pol)
    # the file as read_table reads it (pandas 3 reads text as ``str``, not the frame's object)
    from_frame = anonymize(read_table(str(tmp_path / "v.csv")).compute(), pol)
    assert from_path.released.equals(from_frame.released)
    assert anonymize(tmp_path / "v.csv", pol).released.equals(from_frame.released)
    with pytest.raises(
        InputError, match=r"anonymize\(\) takes the view as a pandas or Dask DataFrame .* not a list"
    ):
        anonymize([1, 2], pol)
    with pytest.raises(InputError, match=r"release_history\(\) takes the history .* not a int"):
        release_history(3, small_policy(), tmp_path / "led")
    with pytest.raises(InputError, match="does not exist"):
        anonymize(str(tmp_path / "nope.csv"), pol)
    assert not (tmp_path / "led").exists()


# -- 7. KPR of a header-only synthetic table ----------------------------------------------------------
def test_kpr_with_an_empty_synthetic_table(cli, tmp_path):
    """ALGORITHMS.md §5.3: no avatar can match, so KPR = 100 (U is not empty here)."""
    pd.DataFrame({"age": [30, 45, 50, 62], "sex": list("MFFM")}).to_csv(tmp_path / "o.csv", index=False)
    (tmp_path / "s.csv").write_text("age,sex\n")
    res = cli("kpr", tmp_path / "o.csv", tmp_path / "s.csv", "--known", "age,sex")
    assert res.exit_code == 0, res.output
    assert "unique originals=4" in res.output and "synthetic table is empty" in res.output
    assert res.output.strip().splitlines()[-1] == "KPR 100.0000"


def test_mtime_helper_sees_a_rewrite(tmp_path):
    """The snapshot used above notices a rewrite with the same bytes (mtime)."""
    p = tmp_path / "f"
    p.write_text("x")
    before = snapshot(tmp_path)
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))
    assert snapshot(tmp_path) != before


@pytest.mark.slow
def test_force_never_writes_into_a_ledger_or_over_the_report_history(cli, generated, tmp_path):
    """--force replaces a file dpriv made, never the ledger's own record (manifest, policy,
    metrics, views) nor the history the command reads; LEDGER/attack/ stays writable."""
    out, mh = generated
    led = tmp_path / "led"
    release_history(mh.history, ReleasePolicy.from_toml(out / "policy.toml"), led, until=1)
    history = tmp_path / "h.parquet"
    mh.history.to_parquet(history)
    before = snapshot(led) | snapshot(history)
    for target in (led / "manifest.json", led / "policy.json", led / "releases" / "1" / "metrics.json"):
        res = cli("report", led, "--out", target, "--force")
        assert_refused(res, "lies inside the release ledger", "choose a path outside the ledger")
    res = cli("report", led, "--history", history, "--out", history, "--force")
    assert_refused(res, "is the input file", "never overwrites its input")
    res = cli("attack", led, "--history", history, "--knowledge", "dk", "--policy", out / "policy.toml",
              "--out", led / "releases" / "1" / "view.parquet", "--force")  # fmt: skip
    assert_refused(res, "lies inside the release ledger")
    res = cli("export", "--ledger", led, "--view", "1", "--out", led / "releases" / "1" / "x.csv")
    assert_refused(res, "lies inside the release ledger")
    assert snapshot(led) | snapshot(history) == before
    res = cli("report", led, "--out", led / "attack" / "report.html")  # attack/ takes results
    assert res.exit_code == 0, res.output


@pytest.mark.slow
def test_a_history_that_was_not_released_is_refused_by_report_and_verify(cli, generated, tmp_path):
    """The ledger records each view's digest (input_sha): another history would draw a wrong KPR
    reference line or make a valid release look broken, so both commands refuse it by name."""
    out, mh = generated
    led = tmp_path / "led"
    release_history(mh.history, ReleasePolicy.from_toml(out / "policy.toml"), led, until=2)
    other = tmp_path / "other.parquet"
    medical_history(n_views=3, view_size=100, seed=7).history.to_parquet(other)
    res = cli("report", led, "--history", other, "--out", tmp_path / "r.html")
    assert_refused(res, "view 1 is not the one released", "give the history that was released")
    assert not (tmp_path / "r.html").exists()
    res = cli("verify", "--ledger", led, "--view", "2", "--history", other)
    assert_refused(res, "view 2 is not the one released")
    res = cli("verify", "--ledger", led, "--view", "2", "--history", out / "history.parquet")
    assert res.exit_code == 0 and "ok: True" in res.output, res.output
    res = cli("report", led, "--history", out / "history.parquet", "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output


@pytest.fixture
def read_only(tmp_path):
    """A folder this process cannot create files in: mode 0o500, or ``chattr +i`` for root
    (whom the mode does not stop); skipped where neither works."""
    import subprocess

    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o500)
        yield folder
        folder.chmod(0o700)
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("root, and chattr +i is not available here: no read-only folder to test with")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_folder_that_cannot_be_written_is_refused_before_any_work(cli, generated, read_only, tmp_path):
    src = tmp_path / "v.csv"
    random_view(60).to_csv(src, index=False)
    res = cli("anonymize", src, "--out", read_only / "x.parquet", *QI, *LOOSE)
    assert_refused(res, rf"--out: dpriv cannot write in folder {re.escape(str(read_only))}")
    out, _ = generated
    hist, pol = out / "history.parquet", out / "policy.toml"
    res = cli("release", hist, "--ledger", read_only / "led", "--policy", pol)
    assert_refused(res, r"--ledger: dpriv cannot write in folder")
    assert list(read_only.iterdir()) == []
    # a file where a folder should be is named as such (not "create it first")
    (tmp_path / "afile").write_text("x")
    res = cli("anonymize", src, "--out", tmp_path / "afile" / "x.parquet", *QI, *LOOSE)
    assert_refused(res, r"afile is a file, not a folder")


def test_add_row_id_and_an_id_column_together_are_refused(cli, tmp_path):
    src = tmp_path / "v.csv"
    random_view(60).to_csv(src, index=False)
    out = tmp_path / "x.parquet"
    qi = ["--qi", "age,gender,weight", "--sensitive", "exam_result"]
    res = cli("anonymize", src, "--out", out, *qi, "--id", "respondent_id", "--add-row-id", *LOOSE)
    assert_refused(res, r"--add-row-id numbers the rows as the id: give it or --id C, not both")
    assert not out.exists()


@pytest.mark.slow
def test_a_ledger_whose_last_state_is_gone_is_named_damaged(cli, generated, tmp_path):
    out, _ = generated
    led = tmp_path / "led"
    hist, pol = out / "history.parquet", out / "policy.toml"
    assert cli("release", hist, "--ledger", led, "--policy", pol).exit_code == 0
    last = max(int(p.name) for p in (led / "state").iterdir())
    for f in (led / "state" / str(last)).iterdir():
        f.unlink()
    before = tree(led)
    res = cli("release", hist, "--ledger", led)
    assert_refused(res, rf"state/{last} holds no state .*the ledger is damaged \(release {last} is committed")
    assert tree(led) == before


def test_an_interrupted_first_release_asks_for_the_policy_by_name(cli, generated, tmp_path):
    """A ledger folder holding only the manifest of a first release that never committed."""
    out, _ = generated
    led = tmp_path / "led"
    led.mkdir()
    (led / "manifest.json").write_text(json.dumps({"releases": []}))
    res = cli("release", out / "history.parquet", "--ledger", led)
    assert_refused(res, r"holds no committed release, so no policy: a first release was interrupted")
    assert sorted(p.name for p in led.iterdir()) == ["manifest.json"]


@pytest.mark.slow
def test_a_ledger_whose_last_view_lost_rows_is_not_resumed(cli, generated, tmp_path):
    """The last release's view holds fewer tuples than its metrics.json recorded: the next
    release refuses (exit 2) and names the file, the ledger unchanged."""
    out, _ = generated
    led = tmp_path / "led"
    hist, pol = out / "history.parquet", out / "policy.toml"
    first_two = tmp_path / "h12.parquet"
    h = pd.read_parquet(hist)
    h[h["view"] <= 2].to_parquet(first_two, index=False)
    assert cli("release", first_two, "--ledger", led, "--policy", pol).exit_code == 0
    path = led / "releases" / "2" / "view.parquet"
    view = pd.read_parquet(path)
    view.iloc[:-3].to_parquet(path, index=False)
    before = tree(led)
    res = cli("release", hist, "--ledger", led)
    assert_refused(res, rf"holds {len(view) - 3} tuples where release 2 recorded {len(view)}")
    assert tree(led) == before


@pytest.mark.slow
def test_a_release_piped_into_a_reader_that_stops_goes_on_to_its_last_view(tmp_path):
    """The drill: ``dpriv release ... | head -1`` stopped after release 1 with "internal error:
    BrokenPipeError" (exit 1). The table is only a report of the ledger: the release goes on."""
    import subprocess
    import sys

    mh = medical_history(n_views=3, view_size=60, seed=2)
    policy = write_history(
        tmp_path, mh, policy_extra={"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    cmd = [sys.executable, "-m", "dpriv", "release", str(tmp_path / "history.parquet"), "--ledger"]
    cmd += [str(tmp_path / "L"), "--policy", str(policy)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout.readline().split()[:2] == [b"release", b"groups"]  # the table's header
    proc.stdout.close()  # what `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait() == 0, err
    assert "internal error" not in err and "Broken pipe" not in err
    assert [r["index"] for r in Ledger(tmp_path / "L").committed()] == [1, 2, 3]


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--t", "nan", "--t must be a number in [0, 1], not 'nan'"),
        ("--j", "nan", "--j must be a number in [0, inf), not 'nan'"),
        ("--t", "1.5", "--t must be a number in [0, 1], not '1.5'"),
        ("--j", "-1", "--j must be a number in [0, inf), not '-1'"),
        # a seed past 2**60 - 1 was an internal OverflowError (the keyed salt is a uint64)
        ("--seed", str(2**63 - 1), f"--seed must be a number in [0, {2**60 - 1}], not '{2**63 - 1}'"),
    ],
)
def test_a_threshold_flag_out_of_range_names_the_whole_range(tmp_path, flag, value, message):
    """The drill: ``--j nan`` said "should be greater than or equal to 0" (click's one failed
    side); the flags now get the policy file's message, the whole range and the value."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    random_view(60, seed=1).to_csv(tmp_path / "v.csv", index=False)
    args = ["anonymize", str(tmp_path / "v.csv"), "--out", str(tmp_path / "o.csv"), *QI]
    res = CliRunner().invoke(app, [*args, flag, value])
    assert res.exit_code == 2 and message in res.output, res.output
    assert not (tmp_path / "o.csv").exists()


def test_the_largest_seed_releases(tmp_path):
    from dpriv._random import MAX_SEED
    from dpriv.release import anonymize

    view = random_view(60, seed=1)
    policy = ReleasePolicy(id="respondent_id", qi=["age", "gender", "weight"], sensitive="exam_result",
                           k=5, t=1.0, j=10.0, seed=MAX_SEED)  # fmt: skip
    assert len(anonymize(view, policy).released) > 0


def test_anonymize_with_a_historys_policy_releases_one_view_without_its_time_column(tmp_path):
    """The drill: the policy ``dpriv generate medical`` writes (time = "view") was refused by
    ``dpriv anonymize`` on one view without that column; it now releases the view as one."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    random_view(60, seed=1).to_csv(tmp_path / "v.csv", index=False)
    (tmp_path / "p.toml").write_text(
        POLICY.replace('sensitive = "exam_result"', 'sensitive = "exam_result"\ntime = "view"')
    )
    args = [
        "anonymize",
        str(tmp_path / "v.csv"),
        "--out",
        str(tmp_path / "o.csv"),
        "--policy",
        str(tmp_path / "p.toml"),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "note: the policy's time column 'view' is not in" in res.stderr
    released = pd.read_csv(tmp_path / "o.csv")
    assert len(released) == 60 and released.groupby("qi_group").size().min() >= 3


@pytest.mark.parametrize(
    ("code", "said", "exit_code"),
    [
        (errno.ENOSPC, "no space left on device writing {out}; free space or choose a folder", 2),
        (errno.EROFS, "read-only file system writing {out}; choose a folder you can write to", 2),
        (errno.EFBIG, "file too large writing {out}; raise the file-size limit (ulimit -f) or choose", 2),
        (errno.EIO, "internal error: OSError", 1),  # not the user's to fix
    ],
)
def test_a_full_disk_or_read_only_folder_is_a_clear_refusal(tmp_path, monkeypatch, code, said, exit_code):
    """The drill: a full disk (release, report) and a read-only ledger (attack) were internal
    errors, exit 1, naming no file."""
    from typer.testing import CliRunner

    import dpriv.io
    import dpriv.report.page  # noqa: F401 - binds the real writer by name: not to the stand-in below
    from dpriv.cli import app

    out = tmp_path / "o.parquet"

    def failing(path, data, mode=0o644):
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(dpriv.io, "atomic_write", failing)
    random_view(60, seed=1).to_csv(tmp_path / "v.csv", index=False)
    args = ["anonymize", str(tmp_path / "v.csv"), "--out", str(out), *QI, "--t", "1", "--j", "10"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == exit_code and said.format(out=out) in res.output, res.output
    assert not out.exists()


def test_ctrl_c_while_the_command_line_loads_is_one_line_exit_130(monkeypatch, capsys):
    """A Ctrl-C in the first second (pandas and Dask importing) printed an import traceback."""
    import builtins
    import sys as _sys

    from dpriv.__main__ import main

    real = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "dpriv.cli":
            raise KeyboardInterrupt
        return real(name, *args, **kwargs)

    monkeypatch.delitem(_sys.modules, "dpriv.cli", raising=False)
    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "interrupted (Ctrl-C) while starting: nothing was read or written\n"


def test_the_command_line_leaves_without_the_interpreters_teardown(monkeypatch, capsys):
    """A refusal ended in exit 134 about once in fifteen runs: pyarrow's thread pools abort the
    process in its teardown. main() runs the exit handlers, flushes, then os._exit(code)."""
    import atexit
    import os
    import sys as _sys

    from dpriv.__main__ import main

    done = []

    class Left(Exception):
        pass

    def exit_now(code):
        done.append(("exit", code))
        raise Left

    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: done.append(("handlers", None)))
    monkeypatch.setattr(os, "_exit", exit_now)
    monkeypatch.setattr(_sys, "argv", ["dpriv", "verify"])
    with pytest.raises(Left):
        main()
    assert done == [("handlers", None), ("exit", 2)]
    assert "error: give the original it was made from" in capsys.readouterr().err
    done.clear()
    monkeypatch.setattr(_sys, "argv", ["dpriv", "--version"])
    with pytest.raises(Left):
        main()
    assert done == [("handlers", None), ("exit", 0)] and capsys.readouterr().out == "dpriv 0.1.0\n"


def test_the_command_line_process_says_its_refusal_and_exits_2(tmp_path):
    import subprocess
    import sys as _sys

    res = subprocess.run(
        [_sys.executable, "-m", "dpriv", "verify", str(tmp_path / "none.parquet")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "error: give the original it was made from" in res.stderr


def test_a_full_disk_during_the_write_names_the_file(tmp_path):
    """A write or fsync that fails for lack of space raises OSError without a file name: the
    CLI said 'no space left on device writing a file'."""
    from dpriv.io import atomic_write

    def fill(fh):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as failed:
        atomic_write(tmp_path / "manifest.json", fill)
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(tmp_path / "manifest.json")
    assert list(tmp_path.iterdir()) == []  # no temp file left


def test_a_failed_first_result_leaves_no_empty_folder(cli, generated, tmp_path, monkeypatch):
    """The drill: ``dpriv attack`` that failed writing its first result (a full disk) left an
    empty ``attack/`` folder in the ledger; ``write_report(led, "new/deeper/r.html")`` empty
    ``new/deeper/``."""
    import dpriv.io

    out, _ = generated
    led = tmp_path / "led"
    release_history(
        read_table(str(out / "history.parquet")), ReleasePolicy.from_toml(out / "policy.toml"), led, until=1
    )
    before = snapshot(led)

    def full(path, data, mode=0o644):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(dpriv.io, "atomic_write", full)
    res = cli("attack", led, "--history", out / "history.parquet", "--knowledge", "dk")
    assert_refused(res, "no space left on device writing")
    assert snapshot(led) == before and not (led / "attack").exists()
    import dpriv.report.page
    from dpriv.report import write_report  # the library creates the page's folder (the CLI refuses)

    monkeypatch.setattr(dpriv.report.page, "atomic_write", full)  # imported by name there
    with pytest.raises(OSError, match="No space left"):
        write_report(led, tmp_path / "new" / "deeper" / "r.html")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("method", ["mondrian-l", "mondrian-bt"])
def test_verify_holds_a_baseline_ledger_to_what_its_method_promised(cli, tmp_path, method):
    """The drill: ``verify --ledger`` failed valid Mondrian l and (B,t) releases on t (a
    criterion they never promised), while their metrics.json said ok."""
    from dpriv.view_check import verify_view

    out = tmp_path / "gen"
    mh = medical_history(n_views=2, view_size=300, seed=3)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.1, "l": 2, "max_suppression": 1.0}})
    led = tmp_path / "led"
    pol = ReleasePolicy.from_toml(out / "policy.toml")
    ledger = release_history(mh.history, pol, led, method=method, until=1)
    hist = out / "history.parquet"
    # resumed with --policy and no --method: the ledger's recorded method, not jsreduce
    res = cli("release", hist, "--ledger", led, "--policy", out / "policy.toml")
    assert res.exit_code == 0 and ledger.last_index() == 2, res.output
    res = cli("verify", "--ledger", led, "--view", "1", "--history", hist)
    assert res.exit_code == 0 and "ok: True" in res.output and f"method: {method}" in res.output, res.output
    # with the policy file given too (drill 2: the ledger's method was forgotten then)
    res = cli("verify", "--ledger", led, "--view", "2", "--history", hist, "--policy", out / "policy.toml")
    assert res.exit_code == 0 and "ok: True" in res.output and f"method: {method}" in res.output, res.output
    # the release does break t = 0.1 (so the check above is not vacuous), and k still counts
    as_jsreduce = verify_view(ledger.read_view(1), mh.history, ledger.policy(), view=1)
    assert not as_jsreduce.ok and any("EMD" in p for p in as_jsreduce.problems)
    rel = ledger.read_view(1)
    first = rel["qi_group"] == rel["qi_group"].iloc[0]
    broken = rel[~first | ~first.duplicated()]  # one tuple left of the first group: below k
    report = verify_view(broken, mh.history, ledger.policy(), view=1, method=method)
    assert not report.ok and any("< k" in p or "k =" in p for p in report.problems), report.problems


def test_generate_warns_when_its_policy_would_refuse_a_view(cli, tmp_path):
    """The drill: ``generate medical --view-size 3`` exited 0 silently; its policy.toml (k 5)
    then made ``dpriv release`` refuse every view."""
    res = cli("generate", "medical", "--views", 2, "--view-size", 3, "--out", tmp_path / "g")
    assert res.exit_code == 0 and (tmp_path / "g" / "policy.toml").exists()
    assert "warning: 2 view(s) hold fewer tuples than the policy's k = 5 (view 1: 3, view 2: 3)" in res.output
    res = cli("generate", "medical", "--views", 2, "--view-size", 5, "--out", tmp_path / "g5")
    assert res.exit_code == 0 and "warning" not in res.output, res.output

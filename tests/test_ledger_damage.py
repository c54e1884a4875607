"""A damaged ledger is refused, naming the file, by every command that reads it.

A fresh user's drill (session 16) damaged copies of a released ledger: a ``metrics.json``
emptied to ``{}`` made ``dpriv report`` show a release "within the policy" with every figure
missing (now: no verdict, "unknown"); a truncated ``metrics.json`` or ``policy.json`` and a
deleted release folder gave ``internal error`` (JSONDecodeError, FileNotFoundError); ``dpriv
release`` committed a new release on a ledger whose release 1 folder was gone. Each of these
now exits 2 with the damaged file named and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import pandas as pd
import pytest
from conftest import forget_digests
from loose_history import write_loose
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A ledger of releases 1 and 2 of a 3-view history (view 3 left to release)."""
    base = tmp_path_factory.mktemp("damage")
    write_loose(base, n_views=3, view_size=80, seed=3)
    hist = pd.read_parquet(base / "history.parquet")
    hist[hist["view"] <= 2].to_parquet(base / "h12.parquet", index=False)
    run(base, "release", base / "h12.parquet", "--ledger", base / "L", "--policy", base / "policy.toml")
    assert (base / "L" / "releases" / "2" / "metrics.json").is_file()
    return base


def run(base, *args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res


def release_onto(base, root):
    """``dpriv release`` of the whole history (view 3 is new) onto the ledger ``root``."""
    return run(base, "release", base / "history.parquet", "--ledger", root, "--policy", base / "policy.toml")


def damaged(released, tmp_path, change) -> tuple:
    root = tmp_path / "L"
    shutil.copytree(released / "L", root)
    change(root)
    return root, snapshot(root)


def refused(res, *named):
    assert res.exit_code == 2, res.output
    assert "internal error" not in res.output
    for text in named:
        assert text in res.output, res.output


@pytest.mark.parametrize("content", ["{x", "", "[1, 2]"])
def test_a_damaged_metrics_json_is_refused_by_report_and_attack(released, tmp_path, content):
    root, before = damaged(
        released, tmp_path, lambda r: (r / "releases" / "2" / "metrics.json").write_text(content)
    )
    report = run(released, "report", root, "--out", tmp_path / "r.html")
    refused(report, "metrics.json", "damaged")
    assert not (tmp_path / "r.html").exists()
    attack = run(released, "attack", root, "--history", released / "h12.parquet", "--knowledge", "dk")
    refused(attack, "metrics.json", "damaged")
    assert snapshot(root) == before


def test_a_damaged_policy_json_is_refused_by_release(released, tmp_path):
    root, before = damaged(released, tmp_path, lambda r: (r / "policy.json").write_text("{x"))
    res = release_onto(released, root)
    refused(res, "policy.json", "damaged")
    assert snapshot(root) == before


def test_a_missing_release_folder_is_refused_and_nothing_is_committed_on_top(released, tmp_path):
    root, before = damaged(released, tmp_path, lambda r: shutil.rmtree(r / "releases" / "1"))
    res = release_onto(released, root)
    refused(res, "releases/1/view.parquet is missing (release 1 is listed in manifest.json)")
    assert snapshot(root) == before  # release 3 was not committed
    refused(run(released, "report", root, "--out", tmp_path / "r.html"), "releases/1")
    attack = run(released, "attack", root, "--history", released / "h12.parquet", "--knowledge", "dk")
    refused(attack, "releases/1")


@pytest.mark.parametrize("until", [0, -1, 1.5, True])
def test_until_below_one_or_not_a_whole_number_is_refused(released, tmp_path, until):
    policy = ReleasePolicy.from_toml(released / "policy.toml")
    history = pd.read_parquet(released / "history.parquet")
    with pytest.raises(InputError, match="until must be a whole number >= 1"):
        release_history(history, policy, tmp_path / "L0", until=until)
    assert not (tmp_path / "L0").exists()


@pytest.mark.parametrize("npartitions", [0, -3, 2.5, True])
def test_npartitions_below_one_or_not_a_whole_number_is_refused(released, tmp_path, npartitions):
    """-3 was an internal ValueError deep in Dask (exit 1); 0 fell back to the default silently."""
    policy = ReleasePolicy.from_toml(released / "policy.toml")
    history = pd.read_parquet(released / "history.parquet")
    with pytest.raises(InputError, match=r"npartitions must be a whole number >= 1 .*--npartitions"):
        release_history(history, policy, tmp_path / "L0", npartitions=npartitions)
    assert not (tmp_path / "L0").exists()
    with pytest.raises(InputError, match=r"npartitions must be a whole number >= 1"):
        anonymize(history[history["view"] == 1], policy, npartitions=npartitions)
    if isinstance(npartitions, int) and not isinstance(npartitions, bool):
        res = run(released, "release", released / "history.parquet", "--ledger", tmp_path / "L1",
                  "--policy", released / "policy.toml", f"--npartitions={npartitions}")  # fmt: skip
        assert res.exit_code == 2 and "--npartitions" in res.output and "internal error" not in res.output
        assert not (tmp_path / "L1").exists()


def test_anonymize_of_several_views_says_so(released):
    policy = ReleasePolicy.from_toml(released / "policy.toml")
    history = pd.read_parquet(released / "history.parquet")
    with pytest.raises(
        InputError, match=r"holds 2 views of the time column 'view' \(1, 2\), with respondents.*dpriv release"
    ) as said:
        anonymize(history[history["view"] <= 2], policy)
    assert "np." not in str(said.value)  # the views as the user wrote them ("1, 2", not np.int64(1))


@pytest.mark.parametrize("content", ["{}", '{"seconds": 1.0}'])
def test_a_release_whose_metrics_record_no_threshold_gets_no_verdict(released, tmp_path, content):
    """``{}`` showed every figure missing and the verdict "within the policy". A ledger written
    since records the file's digest (an edit is refused): one from before does not."""

    def emptied(root):
        (root / "releases" / "2" / "metrics.json").write_text(content)
        forget_digests(root, "metrics_sha256")

    root, _ = damaged(released, tmp_path, emptied)
    res = run(released, "report", root, "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    row = page[page.index('<tr data-release="2">') :].split("</tr>")[0]
    assert "unknown: its metrics.json records none of the policy" in row
    assert "within the policy" not in row
    first = page[page.index('<tr data-release="1">') :].split("</tr>")[0]
    assert "within the policy" in first  # an intact release keeps its verdict


def test_a_ledger_with_no_release_yet_says_so_to_attack(released, tmp_path):
    """A ledger folder whose manifest lists no release (nothing released yet) is not 'damaged':
    the attack says to release into it first, and writes nothing."""
    root = tmp_path / "L"
    root.mkdir()
    (root / "manifest.json").write_text('{"releases": []}')
    before = snapshot(root)
    res = run(released, "attack", root, "--history", released / "history.parquet", "--knowledge", "dk")
    refused(res, "holds no release yet (no policy.json): release into it first")
    assert "damaged" not in res.output and snapshot(root) == before


@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_a_damaged_earlier_view_is_refused_by_every_command(released, tmp_path, damage):
    """Release 1's view truncated to half its bytes, or release 2's deleted: verify, attack,
    report and release each exit 2 naming the file, and nothing is written."""
    index = 1 if damage == "truncated" else 2

    def change(root):
        view = root / "releases" / str(index) / "view.parquet"
        if damage == "truncated":
            view.write_bytes(view.read_bytes()[: view.stat().st_size // 2])
        else:
            view.unlink()

    root, before = damaged(released, tmp_path, change)
    named = f"releases/{index}/view.parquet"
    hist = released / "h12.parquet"
    verify = run(released, "verify", "--ledger", root, "--view", str(index), "--history", hist)
    refused(verify, named, "damaged")
    refused(run(released, "attack", root, "--history", hist, "--knowledge", "dk"), named, "damaged")
    report = run(released, "report", root, "--out", tmp_path / "r.html")
    refused(report, named, "damaged")
    assert not (tmp_path / "r.html").exists()
    refused(release_onto(released, root), named, "damaged")
    assert snapshot(root) == before


def test_the_manifest_records_each_released_files_sha256(released):
    import hashlib
    import json

    entries = json.loads((released / "L" / "manifest.json").read_text())["releases"]
    for entry in entries:  # an independent digest of the bytes on disk
        view = released / "L" / "releases" / str(entry["index"]) / "view.parquet"
        assert entry["view_sha256"] == hashlib.sha256(view.read_bytes()).hexdigest()
        assert "sensitive_sha256" not in entry  # a generalized release has no sensitive table


def test_a_hand_edited_view_is_refused_by_every_command(released, tmp_path):
    """One group's age interval narrowed in release 2's view, rows and footer still whole:
    verify --ledger checked the edited groups and passed, export published them."""

    def narrow(root):
        path = root / "releases" / "2" / "view.parquet"
        view = pd.read_parquet(path)
        first = view["qi_group"] == view["qi_group"].iloc[0]
        view.loc[first, "age_max"] = view.loc[first, "age_min"]
        view.to_parquet(path, index=False)

    root, before = damaged(released, tmp_path, narrow)
    named = ("releases/2/view.parquet is not the file release 2 committed", "view_sha256",
             "it, or that digest in manifest.json, was changed")  # fmt: skip
    hist = released / "h12.parquet"
    refused(run(released, "verify", "--ledger", root, "--view", "2", "--history", hist), *named)
    refused(run(released, "export", "--ledger", root, "--view", "2", "--out", tmp_path / "x.csv"), *named)
    refused(run(released, "attack", root, "--history", hist, "--knowledge", "dk"), *named)
    refused(run(released, "report", root, "--out", tmp_path / "r.html"), *named)
    refused(release_onto(released, root), *named)
    assert snapshot(root) == before and not (tmp_path / "x.csv").exists()
    forget_digests(root, "view_sha256")  # a ledger from before the digests
    assert run(released, "verify", "--ledger", root, "--view", "1", "--history", hist).exit_code == 0


def test_a_hand_edited_metrics_json_is_refused_by_every_reader(released, tmp_path):
    """The drill: release 2's k_achieved 10 -> 50 and n_suppressed 0 -> 3: the report showed
    "k 50 (within)" and "3 suppressed", verify --ledger said ok. The manifest records the
    file's figures' SHA-256 (metrics_sha256, without the seconds), so every reader refuses it; a
    ledger from before it does not. Timings alone may differ (a re-run's are other seconds)."""
    from dpriv.errors import LedgerError
    from dpriv.ledger import Ledger

    entries = json.loads((released / "L" / "manifest.json").read_text())["releases"]
    for entry in entries:  # an independent digest of the figures on disk, without the timings
        record = json.loads((released / "L" / "releases" / str(entry["index"]) / "metrics.json").read_text())
        assert isinstance(record.pop("seconds"), dict) and record["n_released"] > 0
        canonical = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
        assert entry["metrics_sha256"] == hashlib.sha256(canonical).hexdigest()

    def inflate(root):
        path = root / "releases" / "2" / "metrics.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "k_achieved": 50, "n_suppressed": 3}))

    retimed = tmp_path / "retimed"
    shutil.copytree(released / "L", retimed)
    path = retimed / "releases" / "2" / "metrics.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "seconds": {k: v + 1.5 for k, v in record["seconds"].items()}}))
    assert Ledger(retimed).read_metrics(2)["k_achieved"] == record["k_achieved"]  # timings are not pinned

    root, before = damaged(released, tmp_path, inflate)
    named = ("releases/2/metrics.json is not the file release 2 committed", "metrics_sha256",
             "changed after the release", "restore it from a backup")  # fmt: skip
    hist = released / "h12.parquet"
    refused(run(released, "verify", "--ledger", root, "--view", "2", "--history", hist), *named)
    refused(run(released, "export", "--ledger", root, "--view", "1", "--out", tmp_path / "x.csv"), *named)
    refused(run(released, "attack", root, "--history", hist, "--knowledge", "dk"), *named)
    refused(run(released, "report", root, "--out", tmp_path / "r.html"), *named)
    refused(release_onto(released, root), *named)
    with pytest.raises(LedgerError, match="metrics.json is not the file release 2 committed"):
        Ledger(root).read_metrics(2)  # the Python API (dpriv.report.tables, experiment) too
    assert snapshot(root) == before and not (tmp_path / "x.csv").exists()
    assert Ledger(root).read_metrics(1).n_released > 0  # an untouched release reads
    forget_digests(root, "metrics_sha256")  # a ledger from before the digest: read as it is
    assert Ledger(root).read_metrics(2)["k_achieved"] == 50
    assert run(released, "report", root, "--out", tmp_path / "r.html").exit_code == 0


def test_the_gates_seconds_are_a_timing_not_a_figure(released, tmp_path):
    """A gated release records the gate's checks' ``seconds`` in its ``gate`` entry; hashed
    with the figures, two runs of one history wrote different manifests. The digest now leaves
    them out (a re-timed gate reads, an edited gate figure is refused), and the digest a ledger
    of before recorded (with them) is still accepted. Digests computed here independently."""
    from dpriv.errors import LedgerError
    from dpriv.ledger import Ledger

    def digest(record: dict, *, gate_seconds: bool) -> str:
        record = {k: v for k, v in record.items() if k != "seconds"}
        if not gate_seconds:
            record["gate"] = {k: v for k, v in record["gate"].items() if k != "seconds"}
        return hashlib.sha256(json.dumps(record, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    root = tmp_path / "L"
    shutil.copytree(released / "L", root)
    path, manifest = root / "releases" / "2" / "metrics.json", root / "manifest.json"
    gated = {**json.loads(path.read_text()), "gate": {"max_gain": 0.1, "groupings": 1, "seconds": 1.25}}

    def write(gate: dict, *, recorded: str) -> None:
        path.write_text(json.dumps({**gated, "gate": gate}))
        entries = json.loads(manifest.read_text())
        entries["releases"][1]["metrics_sha256"] = recorded
        manifest.write_text(json.dumps(entries))

    today, before = digest(gated, gate_seconds=False), digest(gated, gate_seconds=True)
    assert today != before
    write({**gated["gate"], "seconds": 7.5}, recorded=today)  # re-timed: the same figures
    assert Ledger(root).read_metrics(2)["gate"]["seconds"] == 7.5
    write(gated["gate"], recorded=before)  # a ledger written before: its digest still reads
    assert Ledger(root).read_metrics(2)["gate"]["max_gain"] == 0.1
    for recorded in (today, before):
        write({**gated["gate"], "max_gain": 0.01}, recorded=recorded)  # an edited gate figure
        with pytest.raises(LedgerError, match="metrics.json is not the file release 2 committed"):
            Ledger(root).read_metrics(2)


def test_a_hand_edited_policy_json_is_refused_not_taken_up(released, tmp_path):
    """policy.json loosened by hand (k 1, t 1, j 50): the manifest recorded its digest, so the
    next release, attack, report and verify exit 2 naming policy.json, and nothing is written
    (before, the loosened policy released view 3 with groups of one)."""
    import json

    def loosen(root):
        path = root / "policy.json"
        policy = json.loads(path.read_text())
        path.write_text(json.dumps({**policy, "k": 1, "t": 1.0, "j": 50.0}, indent=2, sort_keys=True))

    root, before = damaged(released, tmp_path, loosen)
    assert "policy_sha256" in json.loads((released / "L" / "manifest.json").read_text())
    hist = released / "h12.parquet"
    release = run(released, "release", released / "history.parquet", "--ledger", root)
    refused(release, "policy.json", "was changed", "restore")
    refused(run(released, "attack", root, "--history", hist, "--knowledge", "dk"), "policy.json")
    refused(run(released, "report", root, "--out", tmp_path / "r.html"), "policy.json")
    refused(run(released, "verify", "--ledger", root, "--view", "1", "--history", hist), "policy.json")
    assert snapshot(root) == before
    # the same ledger with its policy.json as recorded releases view 3
    shutil.copy(released / "L" / "policy.json", root / "policy.json")
    assert release_onto(released, root).exit_code == 0


def test_removing_the_policy_digest_does_not_let_a_hand_edited_policy_through(released, tmp_path):
    """The drill's bypass: policy_sha256 deleted from manifest.json and policy.json loosened
    (k 1, t 1, j 100) released view 3 with groups of one and recorded the new digest. Every
    release records the digest it was committed under, so the manifest without it is damage."""
    import json

    def loosen_and_forget(root):
        manifest = json.loads((root / "manifest.json").read_text())
        (root / "manifest.json").write_text(json.dumps({"releases": manifest["releases"]}))
        path = root / "policy.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "k": 1, "t": 1.0, "j": 100.0}))

    root, before = damaged(released, tmp_path, loosen_and_forget)
    assert all(
        "policy_sha256" in r for r in json.loads((released / "L" / "manifest.json").read_text())["releases"]
    )
    refused(
        run(released, "release", released / "history.parquet", "--ledger", root),
        "manifest.json",
        "policy_sha256 (missing) is not the digest its releases were committed under",
    )
    hist = released / "h12.parquet"
    refused(run(released, "attack", root, "--history", hist, "--knowledge", "dk"), "manifest.json")
    refused(run(released, "report", root, "--out", tmp_path / "r.html"), "manifest.json")
    assert snapshot(root) == before


@pytest.mark.parametrize(
    "entries, problem",
    [
        ([{"index": 1, "input_sha": 7}], "release 1 has an input_sha that is not a digest"),
        ([{"index": 2, "input_sha": "a"}], "release entry 1 has index 2"),
        ([{"index": 1, "input_sha": "a", "state_buckets": 0}], "release 1 has state_buckets 0"),
    ],
)
def test_a_malformed_manifest_entry_is_refused_before_anything_is_removed(
    released, tmp_path, entries, problem
):
    """The drill: a manifest cut to ``[{"index": 1}]`` made ``release`` remove release 2's view,
    metrics and state (the clean-up of an uncommitted release) and then fail with a KeyError."""
    import json

    def cut(root):
        (root / "manifest.json").write_text(json.dumps({"releases": entries}))

    root, before = damaged(released, tmp_path, cut)
    refused(release_onto(released, root), "manifest.json", problem, "nothing was written or removed")
    refused(run(released, "report", root, "--out", tmp_path / "r.html"), "manifest.json", problem)
    assert snapshot(root) == before


def test_a_truncated_state_of_the_last_release_is_refused_naming_it(released, tmp_path):
    """The drill: the last state's Parquet cut to 50 bytes made ``release`` exit 1 (ArrowInvalid);
    a truncated view got exit 2. The state's footer is read with the views'."""

    def truncate(root):
        (part,) = (root / "state" / "2").glob("*.parquet")
        part.write_bytes(part.read_bytes()[:50])

    root, before = damaged(released, tmp_path, truncate)
    refused(release_onto(released, root), "state", "cannot be read", "restore it from a backup")
    hist = released / "h12.parquet"
    refused(run(released, "attack", root, "--history", hist, "--knowledge", "dk"), "cannot be read")
    assert snapshot(root) == before


def test_a_resumed_view_whose_column_only_changed_type_says_so(released, tmp_path):
    """A weekly job whose export tool began writing ages as 45.0 was told only that view 1
    'differs'; the message now names the column, both types and that its values are whole
    numbers (tests/test_resume_types.py: a CSV's lines)."""
    root = tmp_path / "L"
    shutil.copytree(released / "L", root)
    history = pd.read_parquet(released / "history.parquet")
    assert pd.api.types.is_integer_dtype(history["age"])
    history.astype({"age": "float64"}).to_parquet(tmp_path / "h.parquet", index=False)
    before = snapshot(root)
    res = run(
        released, "release", tmp_path / "h.parquet", "--ledger", root, "--policy", released / "policy.toml"
    )
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "QI 'age' is float64 in this input where the ledger recorded int64 (releases/2/" in out
    assert "(its values are whole numbers stored as float64)" in out
    assert snapshot(root) == before

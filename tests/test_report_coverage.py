"""``dpriv report`` on attack results older than the ledger (a fresh user's drill): after a new
release, the page showed the gains of the releases attacked before as the ledger's, without a
word. Now the page and the terminal say which releases each result covers and what to run, a
release without results is shown as missing, and results naming a release the ledger does not
hold (another ledger's, or one made again since) are refused."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from loose_history import write_loose
from test_cli import assert_refused

from dpriv.datasets import medical_history
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import render_report


def _dpriv(*args):
    """``dpriv ARGS`` in process."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def _attack(led: Path, history: Path, policy: Path) -> None:
    """``dpriv attack`` of ``led`` with dk, paper and retrospective (the default files)."""
    for adversary in ("paper", "retrospective"):
        res = _dpriv("attack", led, "--history", history, "--knowledge", "dk", "--policy", policy,
                     "--adversary", adversary)  # fmt: skip
        assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def stale(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A ledger of 3 releases (3 views x 100) attacked (dk, paper and retrospective, the CLI's
    default files) after its release 2: (ledger, history of 3 views, policy)."""
    root = tmp_path_factory.mktemp("stale")
    mh = write_loose(root / "gen", n_views=3, view_size=100).mh
    policy = root / "gen" / "policy.toml"
    led = root / "led"
    release_history(mh.history, ReleasePolicy.from_toml(policy), led, until=2)
    mh.history[mh.history["view"] <= 2].to_csv(root / "h2.csv", index=False)
    mh.history.to_csv(root / "h3.csv", index=False)
    _attack(led, root / "h2.csv", policy)
    release_history(mh.history, ReleasePolicy.from_toml(policy), led)
    return led, root / "h3.csv", policy


def _cells(page: str, table: str) -> list[str]:
    body = re.search(rf'<table id="{table}">.*?</table>', page, re.S).group(0)
    return re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)[1:]  # the rows under the header


def test_results_of_fewer_releases_than_the_ledger_say_so(stale, tmp_path):
    led, history, policy = stale
    gain = pd.read_csv(led / "attack" / "gain_dk.csv")
    assert gain["release"].tolist() == [1, 2]
    res = _dpriv("report", led, "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "adversary gains: dk (releases 1, 2 of 3)" in said
    assert (
        f"note: the attack results attack/gain_dk.csv cover releases 1, 2 of 3: run `dpriv attack {led} "
        "--history HISTORY --knowledge dk` again to include release 3" in said
    )
    assert (
        "note: the retrospective attack results attack/retro_dk.csv cover releases 1, 2 of 3 (as of "
        f"release 2): run `dpriv attack {led} --history HISTORY --knowledge dk --adversary "
        "retrospective` again to include release 3" in said
    )
    page = (tmp_path / "r.html").read_text()
    notes = re.search(r'<div class="stale" id="stale-results">(.*?)</div>', page, re.S).group(1)
    assert notes.count("<li>") == 2 and str(led) not in page  # the page names no absolute path
    assert "run <code>dpriv attack LEDGER --history HISTORY --knowledge dk</code> again" in notes
    (row,) = _cells(page, "gains")
    assert '<td class="fail" data-value="releases 1, 2 of 3">releases 1, 2 of 3</td>' in row
    as_of = _cells(page, "retro-gains")
    assert len(as_of) == 3 and "missing: not attacked as of this release" in as_of[2]
    assert "missing" not in as_of[0] + as_of[1]
    # gains passed in Python: the same note, naming them
    page = render_report(led, gains={"dk": gain})
    assert "The gains passed for &#x27;dk&#x27; cover releases 1, 2 of 3" in page
    # attacked again: no note, every release covered
    copy = tmp_path / "led"
    shutil.copytree(led, copy)
    _attack(copy, history, policy)
    res = _dpriv("report", copy, "--out", tmp_path / "r2.html")
    assert res.exit_code == 0 and "note:" not in res.output and "of 3)" not in res.output, res.output
    page = (tmp_path / "r2.html").read_text()
    assert 'id="stale-results"' not in page and "missing: not attacked" not in page
    (row,) = _cells(page, "gains")
    assert '<td data-value="releases 1..3 of 3">releases 1..3 of 3</td>' in row


@pytest.mark.parametrize(
    "name, text",
    [
        ("gain_dk.csv", "release,adversary_gain\n1,0.1\n2,0.1\n3,0.1\n4,0.2\n"),
        ("retro_dk.csv", "release,as_of,adversary_gain,confident_share\n1,1,0.1,0\n1,4,0.2,0\n4,4,0.3,0\n"),
    ],
)
def test_results_of_releases_the_ledger_does_not_hold_are_refused(name, text, stale, tmp_path):
    """A ledger made again with fewer releases than its attack/ results: they are not its own."""
    copy = tmp_path / "led"
    shutil.copytree(stale[0], copy, ignore=shutil.ignore_patterns("state", "attack"))
    (copy / "attack").mkdir()
    (copy / "attack" / name).write_text(text)
    res = _dpriv("report", copy, "--out", tmp_path / "r.html")
    assert_refused(
        res,
        rf"the results in attack/{name} name release\(s\) \[4\] that .*led does not hold \(it holds 3\)",
        "move the file out of attack/, then run dpriv attack on this ledger again",
    )
    assert not (tmp_path / "r.html").exists()


@pytest.fixture(scope="module")
def other(stale, tmp_path_factory) -> Path:
    """Another ledger of 3 releases of 100-tuple views (another history, the same policy),
    attacked with dk (paper and retrospective): its results name the same release indices."""
    root = tmp_path_factory.mktemp("other")
    mh = medical_history(n_views=3, view_size=100, seed=7)
    mh.history.to_csv(root / "h.csv", index=False)
    led = root / "led"
    release_history(mh.history, ReleasePolicy.from_toml(stale[2]), led)
    _attack(led, root / "h.csv", stale[2])
    return led


@pytest.mark.parametrize("name", ["gain_dk.csv", "retro_dk.csv"])
def test_another_ledgers_results_under_the_same_indices_are_refused(name, stale, other, tmp_path):
    """The drill: B's attack/ result copied into A's attack/ was shown as A's gains (its
    releases 1..3 are indices A holds too). Each row carries the digest of the releases it was
    computed on (views_sha), which the report recomputes from A's manifest."""
    copy = tmp_path / "led"
    shutil.copytree(stale[0], copy, ignore=shutil.ignore_patterns("state", "attack"))
    (copy / "attack").mkdir()
    shutil.copy(other / "attack" / name, copy / "attack" / name)
    res = _dpriv("report", copy, "--out", tmp_path / "r.html")
    assert_refused(
        res,
        rf"the results in attack/{name} for release\(s\) \[1, 2, 3\] were computed on other releases "
        r"\(their views_sha differs from this ledger's\)",
        "move the file out of attack/, then run dpriv attack on this ledger again",
    )
    assert not (tmp_path / "r.html").exists()


def test_results_without_a_stamp_are_checked_by_their_tuple_counts(stale, tmp_path):
    """A result of an older dpriv (no views_sha column): its n_tuples must be the releases'."""
    from dpriv.ledger import Ledger

    copy = tmp_path / "led"
    shutil.copytree(stale[0], copy, ignore=shutil.ignore_patterns("state", "attack"))
    (copy / "attack").mkdir()
    counts = [Ledger(copy).read_metrics(i)["n_released"] for i in (1, 2, 3)]
    rows = "".join(f"{i},0.1,{n}\n" for i, n in enumerate(counts, 1))
    (copy / "attack" / "gain_dk.csv").write_text("release,adversary_gain,n_tuples\n" + rows)
    res = _dpriv("report", copy, "--out", tmp_path / "ok.html")
    assert res.exit_code == 0, res.output
    wrong = rows.replace(f"2,0.1,{counts[1]}\n", f"2,0.1,{counts[1] + 19900}\n")
    (copy / "attack" / "gain_dk.csv").write_text("release,adversary_gain,n_tuples\n" + wrong)
    res = _dpriv("report", copy, "--out", tmp_path / "r.html")
    assert_refused(
        res,
        r"the results in attack/gain_dk.csv for release\(s\) \[2\] count other numbers of tuples than "
        r"this ledger's releases hold \(n_tuples against n_released\)",
    )


def test_stamps_name_the_releases_and_a_ledger_made_again_alike_keeps_them(stale, tmp_path):
    """views_sha of a row is the digest of the manifest entries of releases 1..r (r: release,
    or as_of of a retrospective row): a ledger released again from the same history and
    policy has the same releases, so its earlier results stay its own."""
    from dpriv.attack_stamp import prefix_digests
    from dpriv.ledger import Ledger

    led, history, policy = stale
    again = tmp_path / "again"
    release_history(pd.read_csv(history), ReleasePolicy.from_toml(policy), again)
    digests = prefix_digests(Ledger(led))
    assert digests == prefix_digests(Ledger(again)) and len(set(digests.values())) == 3
    assert all(len(d) == 16 for d in digests.values())
    retro = pd.read_csv(led / "attack" / "retro_dk.csv", dtype={"views_sha": str})
    assert (retro["views_sha"] == retro["as_of"].map(digests)).all()  # attacked after release 2
    shutil.copytree(led / "attack", again / "attack")
    res = _dpriv("report", again, "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output


def test_python_paths_refuse_another_ledgers_stamped_gains(stale, other, tmp_path):
    """The regression drill: save_gain wrote B's gains into A's attack/ stamped as A's, and
    write_report(gains=...) drew them; both read the rows' views_sha before anything else."""
    from dpriv.attack import save_gain
    from dpriv.errors import InputError

    copy = tmp_path / "led"
    shutil.copytree(stale[0], copy, ignore=shutil.ignore_patterns("state", "attack"))
    theirs = pd.read_csv(other / "attack" / "gain_dk.csv", dtype={"views_sha": str})
    with pytest.raises(InputError, match=r"the gains passed to save_gain for release\(s\) \[1, 2, 3\] were"):
        save_gain(theirs, copy, "dk")
    assert not (copy / "attack" / "gain_dk.csv").exists()
    with pytest.raises(InputError, match=r"the gains of 'dk' for release\(s\) \[1, 2, 3\] were computed on"):
        render_report(copy, gains={"dk": theirs})


def _copy_with_results(led: Path, tmp_path: Path) -> Path:
    """A copy of ``led`` (its public files and attack/ results, not its state)."""
    copy = tmp_path / "led"
    shutil.copytree(led, copy, ignore=shutil.ignore_patterns("state"))
    return copy


@pytest.mark.parametrize("name", ["gain_dk.csv", "retro_dk.csv"])
def test_a_blank_stamp_is_said_missing_with_what_to_do(name, stale, tmp_path):
    """A stamped result whose views_sha was blanked on a row was refused as "differs from this
    ledger's": the stamp is not another ledger's, it is missing."""
    from dpriv.attack import save_gain
    from dpriv.errors import InputError

    copy = _copy_with_results(stale[0], tmp_path)
    path = copy / "attack" / name
    frame = pd.read_csv(path, dtype={"views_sha": str})
    frame.loc[frame["release"] == 2, "views_sha"] = None
    frame.to_csv(path, index=False)
    res = _dpriv("report", copy, "--out", tmp_path / "r.html")
    out = assert_refused(
        res,
        rf"the results in attack/{name} for release\(s\) \[2\] carry no views_sha",
        "move the file away, then run dpriv attack again",
    )
    assert "differs" not in out
    if name == "gain_dk.csv":  # the same frame passed in Python
        said = r"for release\(s\) \[2\] carry no views_sha .*: run the attack on this ledger again"
        with pytest.raises(InputError, match="the gains of 'dk' " + said):
            render_report(copy, gains={"dk": frame})
        path.unlink()
        with pytest.raises(InputError, match="the gains passed to save_gain " + said):
            save_gain(frame, copy, "dk")


@pytest.mark.parametrize(
    "name, key, said",
    [("gain_dk.csv", ["release"], "release 2"), ("retro_dk.csv", ["release", "as_of"], "release 2 as of 2")],
)
def test_a_duplicated_row_of_a_result_file_is_named_with_its_file(name, key, said, stale, tmp_path):
    """A row of attack/gain_dk.csv twice was refused as gains "passed to plot_gains()" (the
    file was not named); one of retro_dk.csv was drawn without a word (its mean counted it twice)."""
    copy = _copy_with_results(stale[0], tmp_path)
    path = copy / "attack" / name
    frame = pd.read_csv(path, dtype={"views_sha": str})
    twice = frame[(frame[key] == 2).all(axis=1)]
    pd.concat([frame, twice]).to_csv(path, index=False)
    line = len(frame) + 2  # the header is line 1
    res = _dpriv("report", copy, "--out", tmp_path / "r.html")
    out = assert_refused(
        res,
        rf"attack/{name} holds {said} twice \(lines \d+ and {line}\): dpriv attack writes one row per",
        "move the file away, then run dpriv attack again",
    )
    assert "plot_gains" not in out


def test_a_stamp_read_as_a_number_keeps_its_leading_zeros(stale, monkeypatch):
    """pandas.read_csv without dtype reads a column of stamps that are all decimal digits as
    numbers: 0123456789012345 became 123456789012345, and the gains "differed" from the ledger's."""
    import io

    import dpriv.attack_stamp as stamp
    from dpriv.ledger import Ledger

    digits = {1: "0123456789012345", 2: "1234567890123456", 3: "abcdef0123456789"}
    monkeypatch.setattr(stamp, "prefix_digests", lambda led: digits)
    text = f"release,adversary_gain,views_sha\n1,0.1,{digits[1]}\n2,0.2,{digits[2]}\n"
    frame = pd.read_csv(io.StringIO(text))
    assert frame["views_sha"].dtype == "int64"
    stamp.check_same_releases(frame, Ledger(stale[0]), "the gains", "attack this ledger")

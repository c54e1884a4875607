"""save_gain stamps only gains it can tie to the ledger (an unstamped frame only when the caller
says so) and names a bad release by its row; the attack result file names are spelled once
(dpriv/attack_files.py)."""

import numpy as np
import pandas as pd
import pytest

from dpriv.attack import save_gain
from dpriv.attack_files import gain_path
from dpriv.attack_stamp import STAMP, prefix_digests, stamped
from dpriv.cli.audit import default_out
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    """A ledger of two small releases (60 tuples each)."""
    root = tmp_path_factory.mktemp("saved")
    mh = medical_history(n_views=2, view_size=60, seed=0)
    data = write_history(root / "data", mh)
    policy = ReleasePolicy.from_toml(data, t=1.0, j=1.0, k=3, max_suppression=1.0)
    return release_history(mh.history, policy, root / "led")


def _unstamped() -> pd.DataFrame:
    return pd.DataFrame({"release": [1, 2], "adversary_gain": [0.1, 0.2], "n_tuples": [60, 60]})


def test_an_unstamped_frame_is_saved_only_when_the_caller_says_it_is_this_ledgers(ledger):
    """A frame without views_sha was stamped as this ledger's (its n_tuples, alike in any ledger of
    the same view sizes, were the only check): now it is refused, saying what to pass."""
    path = gain_path(ledger, "dk")
    with pytest.raises(InputError, match="the gains passed to save_gain have no views_sha column") as err:
        save_gain(_unstamped(), ledger, "dk")
    assert "pass the frame dpriv.attack.attack(...) returned" in str(err.value)
    assert "assume_this_ledger=True" in str(err.value)
    assert not path.exists()
    # stated: stamped with this ledger's releases 1..r, r the row's release
    saved = pd.read_csv(save_gain(_unstamped(), ledger, "dk", assume_this_ledger=True), dtype={STAMP: str})
    digests = prefix_digests(ledger)
    assert saved[STAMP].tolist() == [digests[1], digests[2]] and digests[1] != digests[2]
    assert saved["adversary_gain"].tolist() == [0.1, 0.2]
    # stating it does not silence a count that is not this ledger's
    with pytest.raises(InputError, match=r"release\(s\) \[2\] count other numbers of tuples"):
        save_gain(_unstamped().assign(n_tuples=[60, 59]), ledger, "dk", assume_this_ledger=True)
    assert pd.read_csv(path)["adversary_gain"].tolist() == [0.1, 0.2]  # left as it was
    path.unlink()


@pytest.mark.parametrize(
    "release, said",
    [
        (np.nan, "row 1 holds release nan"),  # was a raw "cannot convert float NaN to integer"
        (1.5, "row 1 holds release 1.5"),  # was stamped and written as release 1
        (0, "row 1 holds release 0.0"),
    ],
)
def test_a_release_that_is_not_a_whole_number_is_named_by_its_row(ledger, release, said):
    frame = stamped(_unstamped(), ledger).astype({"release": "float64"})
    frame.loc[1, "release"] = release
    with pytest.raises(
        InputError, match=f"passed to save_gain for 'dk': {said}, gain 0.2; a release is a whole"
    ):
        save_gain(frame, ledger, "dk")
    assert not gain_path(ledger, "dk").exists()


def test_releases_given_as_text_are_checked_and_written_as_numbers(ledger):
    """A release "1.0" (text, as a CSV read with dtype=str gives it) failed with a raw ValueError
    in the check of n_tuples; now checked as the number it is, and written as 1."""
    frame = _unstamped().assign(release=["1.0", "2"])
    path = save_gain(frame, ledger, "dk", assume_this_ledger=True)
    saved = pd.read_csv(path, dtype={STAMP: str})
    digests = prefix_digests(ledger)
    assert saved["release"].tolist() == [1, 2] and saved[STAMP].tolist() == [digests[1], digests[2]]
    path.unlink()
    with pytest.raises(InputError, match=r"release\(s\) \[1\] count other numbers of tuples"):
        save_gain(frame.assign(n_tuples=[59, 60]), ledger, "dk", assume_this_ledger=True)


def test_a_release_the_ledger_does_not_hold_is_refused(ledger):
    """Release 3 of a two-release ledger was written with a blank stamp (the report then refused
    the ledger's own file)."""
    frame = stamped(_unstamped(), ledger).assign(release=[1, 3])
    with pytest.raises(
        InputError, match=r"the gains passed to save_gain name release\(s\) \[3\] that .* holds 2"
    ):
        save_gain(frame, ledger, "dk")
    assert not gain_path(ledger, "dk").exists()


def test_result_file_names_are_spelled_once():
    from dpriv.attack_files import GAIN_FILE, KPR_FILE, RETRO_FILE, result_files, retro_path

    assert (GAIN_FILE.format(name="dk"), RETRO_FILE.format(name="dk"), KPR_FILE) == (
        "gain_dk.csv",
        "retro_dk.csv",
        "kpr.csv",
    )
    assert retro_path("L", "dk-2").as_posix() == "L/attack/retro_dk-2.csv"
    assert retro_path("L", "snapshot:dk").name == "retro_snapshot+dk.csv"
    assert retro_path("L", "spm:/data/c.csv").name == "retro_spm.csv"
    with pytest.raises(PolicyError, match="unknown adversary knowledge 'dkk'"):
        retro_path("L", "dkk")
    assert default_out("L", "ie", "retrospective") == retro_path("L", "ie")
    assert default_out("L", "ie", "paper") == gain_path("L", "ie")
    gains, retros = result_files(GAIN_FILE), result_files(RETRO_FILE)
    assert gains.match("gain_snapshot+dk.csv")["name"] == "snapshot+dk"
    assert retros.match("retro_dk-1.csv")["name"] == "dk-1"
    for other in ("retro_dk.csv", "gain_dk.csv.bak", "gain_.csv", "gain_dk.parquet", "xgain_dk.csv"):
        assert gains.match(other) is None, other


def test_a_killed_attacks_temp_files_are_removed_by_the_next_write_and_nothing_else(ledger):
    """A killed `dpriv attack` left attack/.gain_dk.csv.XXXXXXXX.dpriv-tmp for ever: an attack
    takes no ledger lock, so no later command removed it."""
    from dpriv.cli.outputs import write_frame

    folder = ledger.root / "attack"
    folder.mkdir(exist_ok=True)
    left = [folder / ".gain_dk.csv.k2j4x9_q.dpriv-tmp", folder / ".retro_dk.csv.abcdefgh.dpriv-tmp"]
    mine = [folder / ".gain_dk.csv.short.dpriv-tmp", folder / "notes.dpriv-tmp", folder / ".notes.txt"]
    for p in left + mine:
        p.write_text("half")
    save_gain(_unstamped(), ledger, "dk", assume_this_ledger=True)
    assert [p.exists() for p in left + mine] == [False, False, True, True, True]
    left[0].write_text("half")  # the retrospective result's writer does the same
    write_frame(_unstamped(), default_out(ledger.root, "dk", "retrospective"), kind="attack", own=True)
    assert not left[0].exists() and all(p.read_text() == "half" for p in mine)


def test_a_ledger_opened_for_writing_leaves_a_running_attacks_temp_file(ledger):
    """A release opening the ledger removes a killed writer's temp files, but not under
    ``attack/``: an attack takes no ledger lock, so its temp file there may be a live one
    (it is removed by the next result written there, under that folder's lock)."""
    from dpriv.ledger import Ledger

    folder = ledger.root / "attack"
    folder.mkdir(exist_ok=True)
    live = folder / ".gain_dk.csv.q7w3e9r1.dpriv-tmp"
    killed = ledger.root / "releases" / ".view.parquet.a1b2c3d4.dpriv-tmp"
    live.write_text("a running attack's")
    killed.write_text("a killed release's")
    Ledger(ledger.root, create=True)  # as a release opens it
    assert live.read_text() == "a running attack's" and not killed.exists()
    live.unlink()


def test_a_retrospective_attack_is_saved_where_the_report_reads_it(ledger):
    """save_gain refused a retrospective attack's frame ("release 1 twice") and advised keeping
    as_of == its last release, which then wrote retrospective rows into the paper adversary's
    gain_dk.csv (and dpriv report blamed their views_sha). Now the frame (its as_of column) goes
    to retro_dk.csv, as dpriv attack --adversary retrospective writes it, and the paper curve
    is left alone."""
    from dpriv.attack import attack
    from dpriv.attack_files import retro_path
    from dpriv.report.coverage import attack_results

    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = ReleasePolicy.from_toml(ledger.root.parent / "data" / "policy.toml", t=1.0, j=1.0, k=3)
    retro = attack(ledger, mh.history, policy, "dk", adversary="retrospective", attendance=0.5)
    assert sorted(zip(retro["release"], retro["as_of"])) == [(1, 1), (1, 2), (2, 2)]
    paper = save_gain(_unstamped(), ledger, "dk", assume_this_ledger=True)
    before = paper.read_bytes()
    path = save_gain(retro, ledger, "dk")
    assert path == retro_path(ledger, "dk") and paper.read_bytes() == before
    saved = pd.read_csv(path, dtype={STAMP: str})
    assert saved[["release", "as_of"]].values.tolist() == retro[["release", "as_of"]].values.tolist()
    digests = prefix_digests(ledger)
    assert saved[STAMP].tolist() == [digests[a] for a in retro["as_of"]]  # stamped by as_of
    results = attack_results(ledger)  # what dpriv report reads and checks: no refusal
    assert results.retros["dk"]["adversary_gain"].tolist() == pytest.approx(
        retro.sort_values(["as_of", "release"])["adversary_gain"].tolist()
    )
    # the drill's filtered frame: still a retrospective result, written to retro_dk.csv
    last = retro[retro["as_of"] == retro["as_of"].max()]
    assert save_gain(last, ledger, "dk") == path and paper.read_bytes() == before
    assert pd.read_csv(path)["as_of"].tolist() == [2, 2]
    assert attack_results(ledger).curves["dk"]["release"].tolist() == [1, 2]
    # saying which kind it is: a retrospective frame is no gain curve, nor a gain curve retrospective
    with pytest.raises(InputError, match="as_of column, so it is a retrospective attack's") as err:
        save_gain(retro, ledger, "dk", adversary="paper")
    assert "keep as_of" not in str(err.value) and "retro_<knowledge>.csv" in str(err.value)
    with pytest.raises(InputError, match="has no as_of column"):
        save_gain(_unstamped(), ledger, "dk", adversary="retrospective", assume_this_ledger=True)
    with pytest.raises(InputError, match="adversary must be 'paper' or 'retrospective', not 'retro'"):
        save_gain(retro, ledger, "dk", adversary="retro")
    assert paper.read_bytes() == before and pd.read_csv(path)["as_of"].tolist() == [2, 2]
    path.unlink()
    paper.unlink()


@pytest.mark.parametrize(
    "change, said",
    [
        ({"as_of": [1, 1, 2]}, "row 1 holds release 2, as_of 1, adversary_gain 0.2"),  # before its release
        ({"release": [1, 1, 2], "as_of": [2, 2, 2]}, "hold release 1 as of 2 twice"),
        ({"adversary_gain": [0.1, 1.5, 0.3]}, "row 1 holds release 2, as_of 2, adversary_gain 1.5"),
    ],
)
def test_a_retrospective_frame_that_is_not_one_is_refused_by_its_row(ledger, change, said):
    from dpriv.attack_files import retro_path

    frame = pd.DataFrame(
        {"release": [1, 2, 2], "as_of": [1, 2, 2], "adversary_gain": [0.1, 0.2, 0.3], "confident_share": 0.0}
    )
    frame = stamped(frame.assign(release=[1, 2, 1], as_of=[1, 2, 2]).assign(**change), ledger)
    with pytest.raises(InputError, match=f"retrospective results passed to save_gain for 'dk'.*{said}"):
        save_gain(frame, ledger, "dk")
    assert not retro_path(ledger, "dk").exists()


def test_a_gain_curve_holding_a_release_twice_is_not_told_to_keep_the_last_as_of(ledger):
    """The refusal of a release twice advised filtering as_of (the wrong fix, above) even for a
    frame without as_of; a retrospective frame named as a gain curve is told where it goes."""
    twice = stamped(_unstamped().assign(release=[1, 1]), ledger)
    with pytest.raises(InputError, match="hold release 1 twice: a gain curve has one row per release$"):
        save_gain(twice, ledger, "dk")
    from dpriv.passed_results import checked_gains

    retro = twice.assign(as_of=[1, 2])
    with pytest.raises(InputError, match=r"saved whole with save_gain\(frame, ledger, knowledge\)"):
        checked_gains({"dk": retro}, "passed to render_report")


def test_paper_and_retrospective_results_are_checked_alike(ledger):
    """The two checkers were near-copies that had drifted: two blank releases in a gain curve
    raised a raw "cannot convert float NaN to integer" (the check for a release twice ran before
    the check of each row), and a retrospective result took booleans as release numbers (True
    saved as release 1). One checker (dpriv.passed_results) refuses both, naming the row."""
    from dpriv.attack_files import retro_path
    from dpriv.passed_results import checked_gains

    blank = _unstamped().assign(release=[None, None])
    with pytest.raises(
        InputError, match="adversary gains passed for 'dk': row 0 holds release None, gain 0.1"
    ):
        checked_gains({"dk": blank}, "passed")
    text = _unstamped().assign(release=["x", "y"])
    with pytest.raises(InputError, match="row 0 holds release 'x', gain 0.1; a release is a whole number"):
        checked_gains({"dk": text}, "passed")
    retro = pd.DataFrame(
        {"release": [True, True], "as_of": [1, 2], "adversary_gain": [0.1, 0.2], "confident_share": 0.0}
    )
    with pytest.raises(
        InputError,
        match="retrospective results passed to save_gain for 'dk': release must hold release indices",
    ):
        save_gain(stamped(retro.assign(release=[1, 1]), ledger).assign(release=[True, True]), ledger, "dk")
    assert not retro_path(ledger, "dk").exists()

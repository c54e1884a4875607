"""Attack results land in LEDGER/attack/ (issue 16 item 4): `dpriv demo` and `dpriv attack`
write the gain curve where `dpriv report` draws it, and the curve is the attack's."""

import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.attack import attack, gain_path, save_gain
from dpriv.attack_stamp import STAMP, prefix_digests
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, LedgerError, PolicyError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import gain_curves, render_report


def test_gain_path_names():
    assert gain_path("L", "dk").as_posix() == "L/attack/gain_dk.csv"
    assert gain_path("L", "dk-2").name == "gain_dk-2.csv"
    assert gain_path("L", "spm:/data/corpus.csv").name == "gain_spm.csv"
    assert gain_path("L", "snapshot:dk").name == "gain_snapshot+dk.csv"
    with pytest.raises(PolicyError, match="unknown adversary knowledge 'dkk'"):
        gain_path("L", "dkk")


def test_save_gain_errors(tmp_path):
    gain = pd.DataFrame({"release": [1], "adversary_gain": [0.1], "n_tuples": [3]})
    with pytest.raises(LedgerError, match="not a ledger folder"):
        save_gain(gain, tmp_path / "nothing", "dk")
    assert not (tmp_path / "nothing").exists()
    with pytest.raises(InputError, match=r"lacks column\(s\) \['adversary_gain'\]"):
        save_gain(gain[["release"]], tmp_path, "dk")
    assert not (tmp_path / "attack").exists()


@pytest.mark.slow
def test_demo_ledger_report_has_the_gain_curve(tmp_path, scheduler):
    out = tmp_path / "demo"
    res = CliRunner().invoke(
        app, ["demo", "--views", "2", "--view-size", "300", "--out", str(out), "--scheduler", scheduler]
    )
    assert res.exit_code == 0, res.output
    path = out / "ledger" / "attack" / "gain_dk.csv"
    assert str(path) in res.output and f"dpriv report {out / 'ledger'}" in res.output
    # the file holds the full-DK adversary's gain, recomputed here independently
    policy = ReleasePolicy.from_toml(out / "policy.toml")
    expected = attack(Ledger(out / "ledger"), medical_history(2, 300, seed=0).history, policy, "dk")
    cols = ["release", "adversary_gain", "n_tuples", "histogram_gain"]
    pd.testing.assert_frame_equal(pd.read_csv(path)[cols], expected[cols])
    assert expected["release"].tolist() == [1, 2]
    worst = expected.loc[expected["adversary_gain"].idxmax()]
    printed = " ".join(res.output.split())
    assert f"would leave {worst['histogram_gain']:.3f})" in printed
    # the retrospective adversary (the generator's attendance, 1.0), recomputed independently
    retro = attack(
        Ledger(out / "ledger"),
        medical_history(2, 300, seed=0).history,
        policy,
        "dk",
        adversary="retrospective",
        attendance=1.0,
    )
    written = pd.read_csv(out / "ledger" / "attack" / "retro_dk.csv")
    cols = ["release", "as_of", "adversary_gain", "histogram_gain"]
    pd.testing.assert_frame_equal(written[cols], retro[cols])
    assert written[["release", "as_of"]].values.tolist() == [[1, 1], [1, 2], [2, 2]]
    top = retro.loc[retro["adversary_gain"].idxmax()]
    assert (
        f"largest gain {top['adversary_gain']:.3f} on release {int(top['release'])} as of release "
        f"{int(top['as_of'])} ({top['adversary_gain'] / worst['adversary_gain']:.1f}x the paper "
        f"adversary's; as one QI-group that release would leave {top['histogram_gain']:.3f})"
    ) in printed

    res = CliRunner().invoke(app, ["report", str(out / "ledger"), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "adversary gains: dk" in res.output and "no attack results" not in res.output
    assert "retrospective adversary: dk (largest gain" in " ".join(res.output.split())
    page = (tmp_path / "r.html").read_text()
    assert "No attack results" not in page and "Adversary gain" in page


@pytest.mark.slow  # a whole release or CLI run: the default run stays under 5 min of CPU
def test_attack_without_out_writes_into_the_ledger(tmp_path, scheduler):
    out = tmp_path / "demo"
    res = CliRunner().invoke(
        app,
        ["demo", "--views", "1", "--view-size", "200", "--out", str(out), "--scheduler", scheduler]
        + ["--no-retrospective"],
    )
    assert res.exit_code == 0, res.output
    assert "retrospective" not in res.output and not (out / "ledger" / "attack" / "retro_dk.csv").exists()
    args = ["attack", str(out / "ledger"), "--history", str(out / "history.parquet"), "--policy"]
    res = CliRunner().invoke(app, [*args, str(out / "policy.toml"), "--knowledge", "snapshot"])
    assert res.exit_code == 0, res.output
    written = pd.read_csv(out / "ledger" / "attack" / "gain_snapshot.csv")
    assert written["release"].tolist() == [1]
    assert list(written.columns[:3]) == ["release", "adversary_gain", "n_tuples"]
    names = sorted(p.name for p in (out / "ledger" / "attack").iterdir())
    assert names == [".dpriv-outputs", "gain_dk.csv", "gain_snapshot.csv"]  # with their record
    # a hand edit of a result the report draws as dpriv's is said (it was drawn without a word)
    gain = out / "ledger" / "attack" / "gain_snapshot.csv"
    edited = pd.read_csv(gain)
    edited.assign(adversary_gain=edited["adversary_gain"] / 2).to_csv(gain, index=False)
    res = CliRunner().invoke(app, ["report", str(out / "ledger"), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "note: attack/gain_snapshot.csv changed since dpriv attack wrote it" in res.output
    assert "gain_dk.csv changed" not in res.output


def test_the_printed_gain_table_shows_zero_as_zero_and_says_what_a_dash_is():
    """The attack printed 3.018419e-17 (a sum's rounding of 0) and NaN without a word."""
    from dpriv.cli.audit import shown_gain

    gain = pd.DataFrame(
        {"release": [1, 2], "adversary_gain": [3.018419e-17, 0.0349846], "confident_precision": [np.nan, 1.0]}
    )
    assert shown_gain(gain).splitlines() == [
        " release  adversary_gain  confident_precision",
        "       1        0.000000                    -",
        "       2        0.034985             1.000000",
        "-: not defined (confident_precision with no confident guess; a release that kept no tuple)",
    ]
    assert shown_gain(gain.iloc[1:]).splitlines()[-1].endswith("1.000000")  # no footnote without a dash
    assert "-0.000000" not in shown_gain(gain.assign(adversary_gain=-1e-17))


def test_a_negative_prior_gain_is_explained_under_the_table():
    """A snapshot attack of a one-view Mondrian ledger printed prior_gain -0.10 without a word,
    read as a bug (s44): it is the prior on the truth minus the group's frequency of it (E10)."""
    from dpriv.cli.audit import NEGATIVE_PRIOR_GAIN, shown_gain

    # the tiny ledger of tests/test_attack.py, release 1: (.3 + .2 - .8 - .3) / 4 = -0.15
    gain = pd.DataFrame({"release": [1, 2], "adversary_gain": [0.02, 0.03], "prior_gain": [-0.15, 0.01]})
    lines = shown_gain(gain).splitlines()
    assert lines[1].split() == ["1", "0.020000", "-0.150000"] and lines[-1] == NEGATIVE_PRIOR_GAIN
    assert "m_Q(s)/|Q|" in NEGATIVE_PRIOR_GAIN and "docs/algorithms.md" in NEGATIVE_PRIOR_GAIN
    assert NEGATIVE_PRIOR_GAIN not in shown_gain(gain.iloc[1:])  # no footnote without a negative value
    assert NEGATIVE_PRIOR_GAIN not in shown_gain(gain.assign(prior_gain=[-4e-7, 0.0]))  # prints 0.000000


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> list[tuple[Ledger, pd.DataFrame]]:
    """Two ledgers of 2 views x 60 tuples of two histories (seeds 0 and 1; thresholds that
    suppress nothing), each with its attack() frame (dk): the same releases 1, 2 and tuple counts,
    other data."""
    root = tmp_path_factory.mktemp("twins")
    out = []
    for seed in (0, 1):
        mh = medical_history(n_views=2, view_size=60, seed=seed)
        data = write_history(root / f"data{seed}", mh)
        policy = ReleasePolicy.from_toml(data, t=1.0, j=1.0, k=3, max_suppression=1.0)
        led = release_history(mh.history, policy, root / f"led{seed}")
        out.append((led, attack(led, mh.history, policy, "dk", deductions=False)))
    return out


def test_another_ledgers_attack_frame_is_refused_by_its_views_sha(twins, tmp_path):
    """save_gain(B's attack() frame, A) wrote it as A's gain curve: attack() returned no stamp,
    and B's tuple counts (the check of an unstamped frame) are A's. Now attack() stamps its rows,
    and a curve gain_curves() read from B's attack/ keeps the stamp."""
    (a, ours), (b, theirs) = twins
    assert theirs["n_tuples"].tolist() == ours["n_tuples"].tolist() == [60, 60]  # counts alike
    assert ours[STAMP].tolist() == [prefix_digests(a)[r] for r in (1, 2)] != theirs[STAMP].tolist()
    mine = tmp_path / "a"
    shutil.copytree(a.root, mine, ignore=shutil.ignore_patterns("state"))
    other = r"for release\(s\) \[1, 2\] were computed on other releases \(their views_sha differs"
    with pytest.raises(InputError, match="the gains passed to save_gain " + other):
        save_gain(theirs, mine, "dk")
    assert not gain_path(mine, "dk").exists()
    with pytest.raises(InputError, match="the gains of 'dk' " + other):
        render_report(mine, gains={"dk": theirs})
    path = save_gain(ours, mine, "dk")  # its own frame
    assert pd.read_csv(path, dtype={STAMP: str})[STAMP].tolist() == ours[STAMP].tolist()
    assert "adversary gain" in render_report(mine, gains={"dk": ours}).lower()
    # the curves read from B's folder are B's
    theirs_dir = tmp_path / "b"
    shutil.copytree(b.root, theirs_dir, ignore=shutil.ignore_patterns("state"))
    save_gain(theirs, theirs_dir, "dk")
    curves = gain_curves(theirs_dir)
    assert curves["dk"][STAMP].tolist() == theirs[STAMP].tolist()
    with pytest.raises(InputError, match="the gains of 'dk' " + other):
        render_report(mine, gains=curves)


def test_gain_terms_are_exact_zero_where_equal_priors_give_the_frequencies():
    """(E14) with one prior for the whole group gives its frequencies; the floating Ω missed 2/3 by
    1.1e-16. Group 9 by hand: ω(t, s) = n(s) Π[t, s] / Σ Π[:, s], column sums 0.7 and 1.3:
    tuple 4 (truth 0): (0.6/0.7) / (0.6/0.7 + 0.4/1.3) - 1/2 = 0.2358...; tuple 5 (truth 1):
    (0.9/1.3) / (0.1/0.7 + 0.9/1.3) - 1/2 = 0.3289..."""
    from dpriv.adversary.groups import gain_terms
    from dpriv.knowledge.posterior import omega_posterior

    groups, truth = np.array([7, 7, 7, 9, 9]), np.array([0, 1, 1, 0, 1])
    priors = np.array([[0.1, 0.7, 0.2]] * 3 + [[0.6, 0.4, 0.0], [0.1, 0.9, 0.0]])
    post = omega_posterior(groups, truth, priors)
    freq = np.array([1 / 3, 2 / 3, 2 / 3, 1 / 2, 1 / 2])
    raw = post[np.arange(5), truth] - freq
    assert (raw[:3] != 0).any()  # the noise this removes
    terms = gain_terms(groups, post, truth, freq, priors)
    assert terms[:3].tolist() == [0.0, 0.0, 0.0]
    a, b = (0.6 / 0.7) / (0.6 / 0.7 + 0.4 / 1.3) - 0.5, (0.9 / 1.3) / (0.1 / 0.7 + 0.9 / 1.3) - 0.5
    assert terms[3:] == pytest.approx([a, b], abs=1e-15) and (terms[3:] == raw[3:]).all()
    # a mask excluding a value group 7 holds (1) changes its posteriors: left as computed
    allowed = np.ones((5, 3), dtype=bool)
    allowed[0, 2] = False  # value 2: not in group 7, changes nothing
    assert gain_terms(groups, post, truth, freq, priors, allowed)[:3].tolist() == [0.0, 0.0, 0.0]
    allowed[0, 1] = False
    assert (gain_terms(groups, post, truth, freq, priors, allowed) == raw).all()


def test_the_python_attack_returns_an_exact_zero_gain_where_the_cli_printed_0(twins):
    """An ie adversary's priors of a release are its tables' rows, one per class: every group's
    posteriors are its frequencies, and attack() returned 1e-17-sized gains (dpriv attack printed
    0.000000). Now 0.0; any other term is unchanged bit for bit."""
    from dpriv.attack import attack_steps

    led, history = twins[0][0], medical_history(n_views=2, view_size=60, seed=0).history
    policy = ReleasePolicy.from_toml(led.root.parent / "data0" / "policy.toml", t=1.0, j=1.0, k=3)
    gain = attack(led, history, policy, "ie")
    assert gain["adversary_gain"].tolist() == [0.0, 0.0]
    assert gain["histogram_gain"].tolist() == [0.0, 0.0]
    noisy = 0
    for knowledge in ("ie", "dk"):
        for step in attack_steps(led, history, policy, knowledge):
            raw = step.posteriors[np.arange(len(step.s_true)), step.s_true] - step.frequencies
            noisy += int((raw != step.gain).sum())
            assert ((step.gain == raw) | ((step.gain == 0.0) & (np.abs(raw) < 1e-15))).all()
    assert noisy > 0  # there was noise to remove

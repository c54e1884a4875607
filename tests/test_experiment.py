import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from dpriv.errors import InputError
from dpriv.experiment import run_experiment


@pytest.mark.slow
def test_small_experiment_writes_tables_and_figures(tmp_path):
    grid = {"jsreduce": [{"t": 1.0, "j": 0.8, "defender": "dk-1"}], "mondrian-l": [{"l": 2}]}
    tables = run_experiment(
        tmp_path, views=3, view_size=300, grid=grid, knowledge=("snapshot", "dk"), say=lambda _: None
    )
    runs, gains, front = tables["runs"], tables["gains"], tables["frontier"]
    assert len(runs) == 2 * 3 and len(gains) == 2 * 2 * 3
    assert set(front["method"]) == {"jsreduce", "mondrian-l"}
    # the frontier's max gain is the max of the per-release gains it summarises
    g = gains[(gains.method == "mondrian-l") & (gains.knowledge == "dk")]["adversary_gain"].max()
    assert front.loc[front.method == "mondrian-l", "max_gain_dk"].item() == g
    assert pd.read_csv(tmp_path / "frontier.csv").shape == front.shape
    # the retrospective adversary: one row per (release, as_of) per run, summarised likewise
    retro = tables["retro"]
    assert len(retro) == 2 * (3 * 4 // 2)
    r = retro[retro.method == "jsreduce"]
    assert front.loc[front.method == "jsreduce", "max_retro_gain"].item() == r["adversary_gain"].max()
    assert front.loc[front.method == "jsreduce", "max_retro_share"].item() == r["confident_share"].max()
    level = front.loc[front.method == "jsreduce", "max_retro_histogram_gain"].item()
    assert level == r["histogram_gain"].max() and r["histogram_gain"].notna().all()
    share = gains[(gains.method == "mondrian-l") & (gains.knowledge == "dk")]["confident_share"].max()
    assert front.loc[front.method == "mondrian-l", "max_share_dk"].item() == share
    level = gains[(gains.method == "mondrian-l") & (gains.knowledge == "dk")]["histogram_gain"].max()
    assert front.loc[front.method == "mondrian-l", "max_histogram_gain_dk"].item() == level
    assert ((gains["confident_share"] >= 0) & (gains["confident_share"] <= 1)).all()
    assert pd.read_csv(tmp_path / "retro.csv").shape == retro.shape
    # the exit channel: per (release, as_of) what exit_deductions reads from the same ledger,
    # a part of the certain values, counted in the frontier as rows holding any
    from dpriv.adversary.exits import exit_deductions

    led = tmp_path / "ledgers" / "mondrian-l_l2"
    hist = pd.read_parquet(tmp_path / "data" / "history.parquet")
    pol = tmp_path / "data" / "policy.toml"
    from dpriv.policy import ReleasePolicy

    ex = exit_deductions(led, hist, ReleasePolicy.from_toml(pol), "dk", attendance=0.5)
    mon_retro = retro[retro.method == "mondrian-l"].reset_index(drop=True)
    assert mon_retro["n_exit"].astype(int).tolist() == ex["n_exit"].tolist()
    assert (retro["n_exit"].astype(int) <= retro["n_certain"].astype(int)).all()
    for m, g in retro.groupby("method"):
        for col in ("n_certain", "n_exit"):
            assert front.loc[front.method == m, f"rows_{col}"].item() == int((g[col].astype(int) > 0).sum())
    assert json.loads(runs["params"][0]) == {"t": 1.0, "j": 0.8, "defender": "dk-1"}
    # membership from QIs: Mondrian's disjoint boxes (nothing suppressed) pin every tuple
    mon = runs[runs.method == "mondrian-l"]
    assert (mon["share_pinned"] == 1.0).all()
    assert front.loc[front.method == "jsreduce", "max_pinned_share"].item() == (
        runs[runs.method == "jsreduce"]["share_pinned"].max()
    )
    assert ((runs["share_pinned"] >= 0) & (runs["share_pinned"] <= 1)).all()
    assert (
        json.loads((tmp_path / "ledgers" / "jsreduce_t1.0_j0.8_defenderdk-1" / "policy.json").read_text())[
            "knowledge"
        ]["defender"]
        == "dk-1"
    )
    for png in ("fig3_semiperimeter.png", "frontier.png", "gain_jsreduce.png", "gain_mondrian-l.png"):
        img = imread(tmp_path / png)
        assert img.shape[0] > 100 and np.std(img) > 0.01  # drawn, not blank


def _cli(*args):
    from typer.testing import CliRunner

    from dpriv.cli import app

    return CliRunner().invoke(app, ["experiment", "paper", *map(str, args)])


def test_experiment_never_replaces_a_file_it_did_not_write(tmp_path):
    """The drill: ``experiment paper --out exp1`` replaced the user's runs.csv and frontier.png
    (no check, no record); a refusal for tiny views left ``data/`` behind; ``--out`` a file or a
    half-made ``data/`` were internal errors; ``--out`` inside a ledger wrote there."""
    from dpriv.experiment_files import check_out, write_output

    out = tmp_path / "exp"
    out.mkdir()
    (out / "runs.csv").write_text("my notes\n")
    res = _cli("--out", out, "--views", 2, "--view-size", 60)
    assert res.exit_code == 2 and "runs.csv exists and is not as an earlier dpriv experiment" in res.output
    assert (out / "runs.csv").read_text() == "my notes\n" and sorted(p.name for p in out.iterdir()) == [
        "runs.csv"
    ]
    # a view smaller than k: refused before the data are generated
    res = _cli("--out", tmp_path / "tiny", "--views", 1, "--view-size", 3)
    assert (
        res.exit_code == 2
        and "a view holds only 3 tuple(s), fewer than the generated policy's k = 5" in res.output
    )
    assert not (tmp_path / "tiny").exists()
    (tmp_path / "afile").write_text("x")
    res = _cli("--out", tmp_path / "afile", "--views", 1, "--view-size", 5)
    assert res.exit_code == 2 and "is a file, not a folder" in res.output, res.output
    # --out in a folder that does not exist, or that cannot be written (was exit 1, "internal
    # error: FileNotFoundError"): exit 2 before anything is generated
    res = _cli("--out", tmp_path / "nodir" / "exp", "--views", 1, "--view-size", 5)
    assert res.exit_code == 2 and "nodir does not exist; create it first" in res.output, res.output
    assert not (tmp_path / "nodir").exists()
    if Path("/proc/self").is_dir():  # Linux: nobody, root included, can create a file in /proc
        res = _cli("--out", "/proc/dpriv-experiment", "--views", 1, "--view-size", 5)
        assert res.exit_code == 2 and "dpriv cannot write in folder /proc" in res.output, res.output
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")  # was called "a file"
    res = _cli("--out", tmp_path / "dangling", "--views", 1, "--view-size", 5)
    assert res.exit_code == 2 and "dangling is a broken symbolic link (to " in res.output, res.output
    assert not (tmp_path / "gone").exists()
    half = tmp_path / "half" / "data"
    half.mkdir(parents=True)
    (half / "policy.toml").write_text("x = 1\n")
    res = _cli("--out", half.parent, "--views", 1, "--view-size", 20)
    assert res.exit_code == 2 and "holds ['policy.toml'] but not ['history.parquet']" in res.output, (
        res.output
    )
    # its own outputs (recorded, unchanged) are replaced by a rerun; once edited, refused
    own = tmp_path / "own"
    own.mkdir()
    write_output(own / "runs.csv", b"method\n")
    check_out(own, {"jsreduce": []}, [])
    (own / "runs.csv").write_text("method\nedited\n")
    with pytest.raises(InputError, match="runs.csv exists and is not as an earlier dpriv experiment"):
        check_out(own, {"jsreduce": []}, [])


def test_experiment_refuses_what_would_fail_half_way_before_any_work(tmp_path):
    """Drill 2: a junk ledgers/<setting> folder, a file named ledgers, a data/ holding only
    knowledge files and views with fewer sensitive values than mondrian-l's l were refused (or
    an internal error) only after data/ was written and earlier settings had run."""
    junk = tmp_path / "junk" / "ledgers" / "mondrian-bt_bt_t0.4"
    junk.mkdir(parents=True)
    (junk / "notes.txt").write_text("n\n")
    res = _cli("--out", tmp_path / "junk", "--views", 2, "--view-size", 40)
    assert res.exit_code == 2 and "mondrian-bt_bt_t0.4 is not empty and is not a ledger" in res.output
    assert sorted(p.name for p in (tmp_path / "junk").iterdir()) == ["ledgers"]
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / "ledgers").write_text("x")
    res = _cli("--out", tmp_path / "file", "--views", 2, "--view-size", 40)
    assert res.exit_code == 2 and "ledgers is a file, not a folder" in res.output, res.output
    knowledge = tmp_path / "k" / "data" / "knowledge"
    knowledge.mkdir(parents=True)
    (knowledge / "dk.npz").write_text("precious")
    res = _cli("--out", tmp_path / "k", "--views", 2, "--view-size", 40)
    assert (
        res.exit_code == 2
        and "holds ['knowledge/dk.npz'] but not ['history.parquet', 'policy.toml']" in res.output
    )
    assert "--force" not in res.output and (knowledge / "dk.npz").read_text() == "precious"
    res = _cli("--out", tmp_path / "few", "--views", 1, "--view-size", 5)
    assert res.exit_code == 2 and "fewer than the grid's l = 4 (mondrian-l)" in res.output, res.output
    assert not (tmp_path / "few").exists()


def test_experiment_out_inside_a_ledger_is_refused(tmp_path):
    from dpriv.datasets import medical_history, write_history
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    mh = medical_history(n_views=1, view_size=60, seed=0)
    pol = ReleasePolicy.from_toml(write_history(tmp_path / "g", mh)).with_overrides(max_suppression=1.0)
    led = release_history(mh.history, pol, tmp_path / "led").root
    before = sorted(p.relative_to(led) for p in led.rglob("*"))
    res = _cli("--out", led / "exp", "--views", 1, "--view-size", 20)
    assert res.exit_code == 2 and "lies inside the release ledger" in res.output, res.output
    assert sorted(p.relative_to(led) for p in led.rglob("*")) == before


def test_the_frontier_keeps_the_largest_histogram_level_per_knowledge():
    from dpriv.experiment import frontier

    runs = pd.DataFrame({"method": "m", "params": "{}", "release": [1, 2], "suppression": 0.0, "semi": 0.5})
    gains = pd.DataFrame(
        {
            "method": "m",
            "params": "{}",
            "knowledge": ["dk", "dk", "snapshot", "snapshot"],
            "release": [1, 2, 1, 2],
            "adversary_gain": [0.05, 0.04, 0.02, 0.03],
            "confident_share": 0.0,
            "histogram_gain": [0.10, 0.12, 0.07, 0.06],
        }
    )
    row = frontier(runs, gains).iloc[0]
    assert (row["max_gain_dk"], row["max_histogram_gain_dk"]) == (0.05, 0.12)
    assert (row["max_gain_snapshot"], row["max_histogram_gain_snapshot"]) == (0.03, 0.07)
    assert "max_histogram_gain_dk" not in frontier(runs, gains.drop(columns="histogram_gain"))
    # the retrospective rows: the largest level over every (release, as_of), beside the largest gain
    retro = gains[gains.knowledge == "dk"].drop(columns="knowledge").assign(as_of=2)
    row = frontier(runs, gains, retro.assign(histogram_gain=[0.09, 0.11])).iloc[0]
    assert (row["max_retro_gain"], row["max_retro_histogram_gain"]) == (0.05, 0.11)
    assert "max_retro_histogram_gain" not in frontier(runs, gains, retro.drop(columns="histogram_gain"))


def test_the_frontier_draws_the_histogram_as_a_level_not_a_point(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import dpriv.experiment_plots as exp

    front = pd.DataFrame(
        {
            "method": ["jsreduce", "histogram"],
            "params": ['{"t": 0.5}', "{}"],
            "semi": [0.4, 3.0],
            "suppression": [0.01, 0.0],
            "max_gain_dk": [0.07, 0.14],
            "max_retro_gain": [0.18, 0.19],
        }
    )
    saved = []
    monkeypatch.setattr(exp, "save_figure", lambda fig, path: saved.append(fig))
    exp.frontier_figure(front, tmp_path, plt)
    (fig,) = saved
    for ax, level in zip(fig.axes, (0.14, 0.19)):
        points = np.concatenate([c.get_offsets() for c in ax.collections])
        assert points.tolist() == [[0.4, 0.07 if level == 0.14 else 0.18]]  # the jsreduce point only
        dashed = [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"]
        assert dashed == [level]


def test_the_printed_gain_is_the_one_the_frontier_plots_and_says_so(tmp_path):
    """Drill: "jsreduce_t1.0_j0.2: max gain 0.050" was the largest gain over every knowledge
    kind (dk-1's), unlabelled, while frontier.png plots max_gain_dk (0.0296)."""
    said = []
    grid = {"jsreduce": [{"t": 1.0, "j": 0.8}]}
    kinds = ("snapshot", "dk-1", "dk")
    tables = run_experiment(
        tmp_path, views=2, view_size=60, grid=grid, knowledge=kinds, retrospective=False, say=said.append
    )
    row = tables["frontier"].iloc[0]
    assert said == [f"jsreduce_t1.0_j0.8: max gain (full DK) {row['max_gain_dk']:.3f}"]
    assert row["max_gain_dk-1"] != row["max_gain_dk"]  # the kinds differ: the line names the one shown


def test_an_experiment_that_suppresses_every_tuple_still_writes_its_frontier(tmp_path):
    """Every release of every setting fully suppressed: the frontier had no max_gain_ column and
    frontier.png an IndexError; now a NaN column per knowledge kind and the line says why."""
    said = []
    grid = {"jsreduce": [{"t": 1.0, "j": 0.2}]}
    tables = run_experiment(
        tmp_path, views=2, view_size=60, grid=grid, knowledge=("snapshot", "dk"), retrospective=False,
        say=said.append,
    )  # fmt: skip
    assert said == ["jsreduce_t1.0_j0.2: max gain (full DK) n/a (every tuple suppressed: no gain is defined)"]
    front = tables["frontier"]
    assert (
        front["suppression"].tolist() == [1.0]
        and front[["max_gain_dk", "max_gain_snapshot"]].isna().all().all()
    )
    assert (tmp_path / "frontier.png").is_file()


def test_gains_are_written_without_float_noise():
    """-2.59e-17 and 4.09e-18 appeared in gains.csv where the gain is 0 (the sums' rounding)."""
    from dpriv.experiment import _denoised

    frame = pd.DataFrame(
        {
            "adversary_gain": [-2.590520390792032e-17, 4.0939474033052645e-18, 0.029638811936012345, None],
            "histogram_gain": [7.93016446160826e-18, -0.25, None, 0.5],
            "confident_share": [1e-17, 0.0, 0.0, 0.0],  # not a gain: as it is
        }
    )
    out = _denoised(frame)
    assert out.to_csv(index=False).splitlines() == [
        "adversary_gain,histogram_gain,confident_share",
        "0.0,0.0,1e-17",
        "0.0,-0.25,0.0",
        "0.029638811936,,0.0",
        ",0.5,0.0",
    ]


def test_the_experiment_attacks_dk_2_and_not_dk_3_which_is_the_full_dk():
    """The paper's n-step adversaries are n = 1, 2, 3; the generator's model is order 3, so dk-3
    is dk itself (equal gains in every frontier of docs/results) and dk-2 was never attacked."""
    from dpriv.datasets import medical_history
    from dpriv.experiment import KNOWLEDGE

    mh = medical_history(2, 30, seed=0)
    assert mh.n_step(3) is mh.knowledge
    assert KNOWLEDGE == ("snapshot", "dk", "dk-1", "dk-2")

"""The Python helpers a notebook user calls, given the wrong object: one InputError (or
LedgerError) naming what was expected, never a raw KeyError / AttributeError / TypeError from
pandas, matplotlib or pathlib, and nothing written (a fresh user's drill, session 25)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, LedgerError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import plot_gains, plot_privacy, plot_utility, release_frame, write_report
from dpriv.report.jupyter import dashboard, show_report


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("helpers")
    mh = medical_history(n_views=3, view_size=200, seed=0)
    pol = ReleasePolicy.from_toml(write_history(root / "g", mh)).with_overrides(max_suppression=1.0)
    return root, mh, pol, release_history(mh.history, pol, root / "led")


def gains(release, gain):
    return {"dk": pd.DataFrame({"release": release, "adversary_gain": gain})}


def test_plot_helpers_name_what_they_take(small):
    _, _, _, led = small
    with pytest.raises(InputError, match=r"plot_privacy\(\) takes the per-release frame release_frame"):
        plot_privacy(pd.DataFrame(), t=0.5, j=0.8)
    with pytest.raises(InputError, match=r"plot_utility\(\) takes .* without column\(s\) \['release', "):
        plot_utility(pd.DataFrame())
    with pytest.raises(InputError, match=r"t is the policy's threshold \(a number\) or None, not 'a'"):
        plot_privacy(release_frame(led), t="a", j=0.8)
    with pytest.raises(InputError, match=r"must be a mapping knowledge name -> DataFrame .* not a list"):
        plot_gains([1, 2])
    with pytest.raises(InputError, match=r"for 'dk' are a str, not a DataFrame"):
        plot_gains({"dk": "gain.csv"})
    with pytest.raises(InputError, match=r"row 1 holds release 2, gain 'x'"):
        plot_gains(gains([1, 2], [math.nan, "x"]))
    fig = plot_gains(gains([2, 1], [0.2, math.nan]))  # a blank gain is allowed, rows put in order
    assert list(fig.axes[0].lines[0].get_xdata()) == [1, 2]


@pytest.mark.parametrize(
    "passed, said",
    [
        ([1], r"must be a mapping knowledge name -> DataFrame"),
        (gains(["a"], ["x"]), r"row 0 holds release 'a', gain 'x'"),
        (gains([1, 2, 3], [math.nan, math.inf, -5]), r"row 1 holds release 2, gain inf"),
        (gains([1, 2, 3], [0.1, 0.1, -5]), r"row 2 holds release 3, gain -5"),
        (gains([99], [0.1]), r"name release\(s\) \[99\] that .* does not hold \(it holds 3\)"),
    ],
)
def test_write_report_refuses_gains_it_would_draw_wrongly(small, passed, said):
    root, _, _, led = small
    with pytest.raises(InputError, match=said):
        write_report(led, root / "r.html", gains=passed)
    assert not (root / "r.html").exists()


def test_write_report_writes_html_pages_only(small, tmp_path):
    """write_report(led, "x.txt") wrote HTML into a .txt file (dpriv report refuses it)."""
    _, _, _, led = small
    for name in ("x.txt", "x.csv", "x"):
        with pytest.raises(
            InputError, match=rf"out_html .*{name}: unknown file type .* HTML \(.html, .htm\)"
        ):
            write_report(led, tmp_path / name)
    (tmp_path / "d.html").mkdir()
    with pytest.raises(InputError, match=r"d.html is a folder: give a file name ending in HTML"):
        write_report(led, tmp_path / "d.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.html"]
    assert write_report(led, tmp_path / "R.HTM").read_text().startswith("<!DOCTYPE html>")


def test_notebook_and_loop_helpers_refuse_the_wrong_object(small, tmp_path):
    root, mh, pol, led = small
    with pytest.raises(InputError, match=r"/nonexistent.html cannot be shown \(No such file"):
        show_report("/nonexistent.html")
    with pytest.raises(InputError, match=r"cannot be shown \(not UTF-8 text\)"):
        show_report(root / "g" / "knowledge" / "dk.npz")
    for client in (None, "http://x"):
        with pytest.raises(InputError, match=r"dashboard\(\) takes a distributed.Client"):
            dashboard(client)
    with pytest.raises(InputError, match=r"reference is a mapping release -> KPR"):
        release_frame(led, reference=[1, 2])
    with pytest.raises(
        InputError, match=r"release_frame\(\) takes ledger as a Ledger or the ledger's folder"
    ):
        release_frame(5)
    with pytest.raises(LedgerError, match=r"history.parquet is a file, not a ledger folder"):
        release_history(mh.history, pol, root / "g" / "history.parquet")
    with pytest.raises(InputError, match=r"on_release must be a function of \(index, metrics\)"):
        release_history(mh.history, pol, tmp_path / "led", on_release=5)
    assert not (tmp_path / "led").exists()  # refused before release 1 was committed
    with pytest.raises(
        InputError, match=r"takes the MedicalHistory that medical_history\(\) returns, not a DataFrame"
    ):
        write_history(tmp_path / "x", pd.DataFrame())
    for kwargs, said in (
        ({"seed": "a"}, "seed must be an integer >= 0, got 'a'"),
        ({"n_views": 2.5}, "n_views"),
    ):
        with pytest.raises(InputError, match=said):
            medical_history(**{"n_views": 2, "view_size": 10, **kwargs})


def test_an_attack_on_a_history_without_rows_does_not_speak_of_releasing(small):
    """The drill: ``attack(ledger, history.iloc[:0], ...)`` said 'there is nothing to release'."""
    from dpriv.attack import attack

    _, mh, pol, led = small
    with pytest.raises(InputError, match=r"has a header but no rows") as refused:
        attack(led, mh.history.iloc[:0], pol, "dk")
    assert "release" not in str(refused.value)


def test_drill_2_helper_inputs(small, tmp_path):
    """A second drill: bool releases, a retrospective frame (a release twice) and a column
    named twice passed as gains; NumPy thresholds refused; a reference of text or of a release
    the ledger lacks; show_report of a non-path; seed 2**64; policy_extra not a dict of tables."""
    import numpy as np

    from dpriv.errors import PolicyError

    root, mh, pol, led = small
    frame = pd.DataFrame({"release": [True, False], "adversary_gain": [0.1, 0.2]})
    with pytest.raises(InputError, match=r"release must hold release indices 1, 2, \.\.\., not booleans"):
        plot_gains({"dk": frame})
    with pytest.raises(InputError, match=r"hold release 1 twice: a gain curve has one row per release"):
        plot_gains(gains([1, 1, 2], [0.1, 0.2, 0.3]))
    twice = pd.concat([gains([1], [0.1])["dk"], pd.DataFrame({"release": [1]})], axis=1)
    with pytest.raises(InputError, match=r"the columns must be named once"):
        plot_gains({"dk": twice})
    plot_privacy(release_frame(led), t=np.float32(0.5), j=np.int64(1))  # NumPy numbers are numbers
    for reference in ({"1": "x"}, {99: 5.0}, {1: "x"}):
        with pytest.raises(InputError, match=r"over the releases of the ledger \(1\.\.3\)"):
            release_frame(led, reference=reference)
    assert release_frame(led, reference={np.int64(2): 97.5})["kpr_reference"].tolist()[1] == 97.5
    for path, height in ((5, 900), (None, 900), (root / "r.html", "x")):
        with pytest.raises(InputError, match=r"show_report\(\) takes the path of a report page"):
            show_report(path, height=height)
    assert len(medical_history(1, 10, seed=2**64).history) == 10
    for extra in (5, {"privacy": 5}, {"privacy": {"t": None}}):
        with pytest.raises(PolicyError, match=r"policy_extra"):
            write_history(tmp_path / "w", mh, policy_extra=extra)
    assert not (tmp_path / "w").exists()
    v = mh.history[mh.history["view"] == 1].copy()
    v["exam_result"] = pd.period_range("2020-01", periods=len(v), freq="M")
    with pytest.raises(
        InputError, match=r"sensitive column 'exam_result' holds periods .* convert them to text"
    ):
        from dpriv.release import anonymize

        anonymize(v, pol)


@pytest.mark.parametrize(
    ("given", "scheme", "local"),
    [
        ("s3://bucket/ledger", "s3", None),
        ("memory://ledger", "memory", None),
        ("simplecache::file:///tmp/x", "simplecache", None),
        ("file:///srv/registry/ledger", "file", "/srv/registry/ledger"),
    ],
)
def test_a_ledger_given_as_a_url_is_refused_before_anything_is_made(
    small, tmp_path, monkeypatch, given, scheme, local
):
    """A cluster drill (session 31): --ledger s3://bucket/L was taken as the relative folder
    's3:/bucket/L' ('dpriv cannot write in folder /tmp/clu31/s3:/bucket')."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    root, mh, pol, led = small
    monkeypatch.chdir(tmp_path)
    said = rf"is a URL \({scheme}:\), but a ledger is a folder of this machine's file system"
    with pytest.raises(LedgerError, match=said):
        release_history(mh.history, pol, given)
    res = CliRunner().invoke(app, ["release", str(root / "g" / "history.parquet"), "--ledger", given])
    assert res.exit_code == 2, res.output
    assert f"--ledger {given} is a URL ({scheme}:)" in res.output  # as given: pathlib drops a '/' of '//'
    assert (f"give its path (here: {local})" in res.output) is (local is not None)
    assert list(tmp_path.iterdir()) == []  # no folder named after the URL


def test_a_folder_whose_name_holds_a_colon_is_still_a_ledger(small, tmp_path, monkeypatch):
    root, mh, pol, led = small
    monkeypatch.chdir(tmp_path)
    assert release_history(mh.history, pol, "week:1", until=1).last_index() == 1
    assert (tmp_path / "week:1" / "manifest.json").is_file()


def test_dashboard_of_dask_client_itself_says_to_take_the_client_of_its_with():
    """A drill: ``client = dask_client()`` (as a function returning a client) gives a context
    manager, which dashboard() refused as "not <contextlib._GeneratorContextManager ...>"."""
    from dpriv.cluster import dask_client

    with pytest.raises(InputError, match=r"not a context manager \(the client is what its with gives\)$"):
        dashboard(dask_client())  # never entered: no cluster started
    with pytest.raises(InputError, match=r"`with dpriv.cluster.dask_client\(\) as client:`.*not 'http://x'$"):
        dashboard("http://x")

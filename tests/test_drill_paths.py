"""An operator's drill of paths (s33): ``file://`` URLs and ``~`` in path options.

``anonymize --out file:///tmp/op/outd/b.parquet`` said "folder file:/tmp/op/outd does not exist;
create it first (mkdir -p file:/tmp/op/outd)" (the folder existed; the advice makes a folder
``file:``), and ``--ledger file:///root/dpt/L2`` was refused as ``file:/root/dpt/L2``: pathlib
collapses ``//``. A quoted ``'~/dpt/h.parquet'`` history was read from the home folder, but
``--ledger '~/dpt/L'`` was taken as a folder ``~`` of the working folder.
"""

import pytest
from conftest import random_view
from test_cli import LOOSE, QI
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger


def _run(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def view(tmp_path):
    random_view(60).to_csv(tmp_path / "v.csv", index=False)
    (tmp_path / "outd").mkdir()
    return tmp_path / "v.csv"


def test_out_as_a_file_url_is_refused_as_given_naming_its_path(tmp_path, view):
    url = f"file://{tmp_path}/outd/b.parquet"
    res = _run("anonymize", view, "--out", url, *QI, *LOOSE, "--no-cluster")
    assert res.exit_code == 2, res.output
    assert res.output.splitlines() == [
        f"error: --out {url} is a URL (file:), but --out takes a path of this machine's file system: "
        f"give its path (here: {tmp_path}/outd/b.parquet)"
    ]
    assert sorted(p.name for p in (tmp_path / "outd").iterdir()) == []


@pytest.mark.parametrize("flag", ["--out", "--policy"])
def test_a_path_option_given_a_remote_url_is_refused_as_given(view, flag):
    res = _run("anonymize", view, "--out", "o.csv", *QI, *LOOSE, flag, "s3://bucket/x/o.csv")
    assert res.exit_code == 2, res.output
    assert f"error: {flag} s3://bucket/x/o.csv is a URL (s3:), but {flag} takes a path" in res.output
    assert "s3:/bucket" not in res.output


def test_a_ledger_argument_given_as_a_file_url_is_echoed_as_given(tmp_path):
    url = f"file://{tmp_path}/L"
    res = _run("report", url)
    assert res.exit_code == 2, res.output
    assert f"error: LEDGER {url} is a URL (file:)" in res.output
    assert f"give its path (here: {tmp_path}/L)" in res.output


def test_an_input_given_as_a_file_url_is_never_overwritten(tmp_path, view):
    first = _run("anonymize", view, "--out", tmp_path / "o.csv", *QI, *LOOSE, "--no-cluster")
    assert first.exit_code == 0, first.output
    again = _run("anonymize", f"file://{tmp_path}/o.csv", "--out", tmp_path / "o.csv", "--force", *QI, *LOOSE)
    assert again.exit_code == 2, again.output
    assert f"is the input file file://{tmp_path}/o.csv: dpriv never overwrites its input" in again.output


def test_tilde_is_expanded_in_every_path_option(tmp_path, monkeypatch):
    """History, --policy and --ledger under a quoted ``~`` are all the home folder's."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    mh = medical_history(n_views=1, view_size=60, seed=0)
    loose = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}
    write_history(home / "dpt", mh, policy_extra=loose)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    res = _run("release", "~/dpt/history.parquet", "--ledger", "~/dpt/L", "--policy", "~/dpt/policy.toml")
    assert res.exit_code == 0, res.output
    assert f"ledger: {home}/dpt/L " in res.output
    assert [r["index"] for r in Ledger(home / "dpt" / "L").committed()] == [1]
    assert list(work.iterdir()) == []  # no folder named '~'

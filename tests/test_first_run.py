"""First run (issue 16 item 7): a bad input is refused before any Dask cluster starts, and
numba's on-disk cache is used and announced (dpriv.numba_cache, tests/test_notices.py)."""

import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import dpriv.cluster
from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.preflight import preflight

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_cluster(monkeypatch):
    """Replace the LocalCluster and Client of dpriv.cluster with spies that fail the test."""
    started = []

    def spy(*args, **kwargs):
        started.append((args, kwargs))
        raise AssertionError("a Dask cluster was started for a bad input")

    monkeypatch.setattr(dpriv.cluster, "LocalCluster", spy)
    monkeypatch.setattr(dpriv.cluster, "Client", spy)
    return started


def _bad_view(tmp_path: Path) -> Path:
    # age holds ARX-style intervals in row 3: an already anonymized file
    d = pd.DataFrame({"age": ["34", "51", "[45-52]", "60"], "sex": list("FMFM"), "s": list("abab")})
    path = tmp_path / "bad.csv"
    d.to_csv(path, index=False)
    return path


def test_anonymize_bad_input_exits_2_without_a_cluster(tmp_path, no_cluster):
    args = ["anonymize", str(_bad_view(tmp_path)), "--out", str(tmp_path / "o.parquet"), "--add-row-id"]
    start = time.perf_counter()
    res = CliRunner().invoke(app, [*args, "--qi", "age,sex", "--sensitive", "s", "--k", "2"])
    seconds = time.perf_counter() - start
    assert res.exit_code == 2, res.output
    assert "'age' holds '[45-52]'" in res.output and "first 4 rows" in res.output
    assert no_cluster == []
    assert not (tmp_path / "o.parquet").exists()
    assert seconds < 5, seconds  # ~0.1 s here; a LocalCluster alone takes 5-30 s


def test_release_missing_column_exits_2_without_a_cluster(tmp_path, no_cluster):
    h = pd.DataFrame({"id": [1, 2], "view": [1, 1], "age": [30, 40], "s": ["a", "b"]})
    h.to_parquet(tmp_path / "h.parquet")
    policy = tmp_path / "p.toml"
    policy.write_text('[columns]\nid = "id"\ntime = "view"\nqi = ["age", "sex"]\nsensitive = "s"\n')
    args = ["release", str(tmp_path / "h.parquet"), "--ledger", str(tmp_path / "l")]
    res = CliRunner().invoke(app, [*args, "--policy", str(policy)])
    assert res.exit_code == 2, res.output
    assert "missing column(s) ['sex']" in res.output
    assert no_cluster == [] and not (tmp_path / "l").exists()


def test_preflight_keeps_what_needs_every_row():
    policy = ReleasePolicy(id="id", qi=["z"], sensitive="s", k=2)
    # numbers stored as text in the first rows: only the whole column can tell, not refused here
    preflight(pd.DataFrame({"id": [1, 2], "z": ["1", "2"], "s": ["a", "b"]}), policy)
    with pytest.raises(InputError, match=r"'s' holds '\*'"):
        preflight(pd.DataFrame({"id": [1, 2], "z": ["x", "y"], "s": ["a", "*"]}), policy)
    with pytest.raises(InputError, match=r"missing time column 'view'"):
        preflight(pd.DataFrame({"id": [1], "z": ["x"], "s": ["a"]}), policy.with_overrides(time="view"))


# numba's on-disk cache and the compile note: tests/test_notices.py

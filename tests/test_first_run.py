"""First run (issue 16 item 7): a bad input is refused before any Dask cluster starts, and
numba's on-disk cache is used and announced (dpriv.numba_cache)."""

import json
import os
import subprocess
import sys
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


_PROBE = """
import json, sys
import numpy as np
from dpriv import divergence
from dpriv.numba_cache import first_compile_note, kernels, uncached_kernels
before = uncached_kernels()
note = first_compile_note()
if sys.argv[1] == "compile":
    divergence.entropy(np.array([0.5, 0.5]), 2.0)
print(json.dumps({"n": len(kernels()), "before": before, "after": uncached_kernels(), "note": note}))
"""


def _probe(cache: Path, what: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, what], env=env, capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_numba_cache_is_on_disk_and_announced(tmp_path):
    cache = tmp_path / "numba-cache"
    first = _probe(cache, "compile")
    assert first["n"] >= 10 and len(first["before"]) == first["n"]  # an empty cache: all pending
    assert first["note"].startswith("first run: numba compiles") and str(cache) in first["note"]
    assert "dpriv.divergence.entropy" in first["before"]
    assert "dpriv.divergence.entropy" not in first["after"] and len(first["after"]) == first["n"] - 1
    # a new process finds the compiled kernel on disk (not compiled again)
    second = _probe(cache, "look")
    assert second["before"] == first["after"] and second["note"] is not None

"""A Dask config value dpriv cannot run with is bad input (exit 2, named), not an internal error:
``DASK_DATAFRAME__SHUFFLE__METHOD=bogus`` ended a release on a cluster with ``internal error:
ValueError: bogus not supported`` (exit 1) after the ledger was made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dask
import pytest

from dpriv.dask_config import check_dask_config, env_name
from dpriv.datasets import medical_history, write_history
from dpriv.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_bogus_shuffle_method_in_the_environment_is_exit_2_naming_the_variable(tmp_path):
    mh = medical_history(n_views=2, view_size=60, seed=0)
    write_history(tmp_path, mh, policy_extra={"privacy": {"k": 5, "t": 0.9, "j": 5, "max_suppression": 1.0}})
    led = tmp_path / "led"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DASK_DATAFRAME__SHUFFLE__METHOD": "bogus"}
    args = ["release", tmp_path / "history.parquet", "--ledger", led, "--policy", tmp_path / "policy.toml"]
    proc = subprocess.run(
        [sys.executable, "-m", "dpriv", *map(str, args), "--cluster"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "error: the environment variable DASK_DATAFRAME__SHUFFLE__METHOD=bogus cannot be used: Dask's "
        "shuffle methods are tasks, disk, p2p and simple; set one of them, or unset it for dpriv's "
        "default (tasks), then run the command again"
    )
    assert "Traceback" not in proc.stderr and not led.exists()


def test_a_value_set_elsewhere_is_named_by_its_config_key(monkeypatch):
    monkeypatch.delenv("DASK_DATAFRAME__BACKEND", raising=False)
    with dask.config.set({"dataframe.backend": "cudf"}):
        with pytest.raises(ConfigError) as err:
            check_dask_config()
    assert str(err.value).startswith("the Dask config dataframe.backend: 'cudf' (a Dask config file")
    assert "dpriv's steps run on Dask's pandas backend only; unset it or set pandas" in str(err.value)
    for method in ("tasks", "disk", "p2p", "simple"):
        with dask.config.set({"dataframe.shuffle.method": method, "dataframe.backend": "pandas"}):
            check_dask_config()  # Dask's own values pass


def test_the_environment_variable_of_a_key():
    assert env_name("dataframe.shuffle.method") == "DASK_DATAFRAME__SHUFFLE__METHOD"
    assert env_name("dataframe.convert-string") == "DASK_DATAFRAME__CONVERT_STRING"


def run_dpriv(args: list[str], **env: str) -> subprocess.CompletedProcess:
    """``python -m dpriv args`` with ``env`` added to the environment (no DASK_* of the caller's)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    return subprocess.run(
        [sys.executable, "-m", "dpriv", *args],
        env={**base, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_dask_config_dask_cannot_load_is_exit_2_on_every_command_naming_the_variable():
    # DASK_DATAFRAME__SHUFFLE makes dataframe.shuffle a string where Dask has a section: it
    # fails inside `import dask`, before dpriv's own check of the values
    proc = run_dpriv(["--version"], DASK_DATAFRAME__SHUFFLE="bogus")
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: Dask could not load its config (AttributeError: ")
    assert (
        "check the environment variable DASK_DATAFRAME__SHUFFLE and the YAML files in ~/.config/dask" in line
    )
    assert "unset or fix the value" in line and "bogus" not in line
    debug = run_dpriv(["--version", "--debug"], DASK_DATAFRAME__SHUFFLE="bogus")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_a_dask_config_folder_with_a_bad_or_malformed_file_is_exit_2_naming_it(tmp_path):
    shaped, malformed = tmp_path / "shaped", tmp_path / "malformed"
    shaped.mkdir()
    malformed.mkdir()
    (shaped / "dask.yaml").write_text("dataframe: {shuffle: tasks}\n")
    (malformed / "dask.yaml").write_text("dataframe: [\n")
    proc = run_dpriv(["--version"], DASK_CONFIG=str(shaped))
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert f"check the YAML files in {shaped} (DASK_CONFIG) and /etc/dask: unset or fix" in line
    proc = run_dpriv(["--version"], DASK_CONFIG=str(malformed))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: the Dask config file {malformed / 'dask.yaml'} is not valid YAML: fix it or move it out of "
        "its folder, then run the command again (--debug shows Dask's error)"
    ]
    assert run_dpriv(["--version"]).stdout.startswith("dpriv ")


def test_a_missing_dask_module_is_not_blamed_on_the_config(monkeypatch):
    """Only a failure of Dask's config is an `error:` line: an ImportError (a broken install)
    keeps Python's own message, not 'Dask could not load its config'."""
    import builtins

    from dpriv.dask_start import import_dask

    real = builtins.__import__

    def broken(name, *args, **kwargs):
        if name == "dask.dataframe":
            raise ModuleNotFoundError("No module named 'dask.dataframe'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(ModuleNotFoundError, match="dask.dataframe"):
        import_dask([])

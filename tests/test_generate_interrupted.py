"""An interrupted ``dpriv generate`` (Ctrl-C, or SIGTERM handled as one: exit 143) left
``history.parquet`` and ``knowledge/`` files without their ``.dpriv-outputs`` record (written
only once every file was), or a file cut half-way: neither a re-run nor ``--force`` replaced
them, the user had to delete them by hand. Each file is now written whole and recorded as soon
as it is in place (dpriv/datasets/generated.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import dpriv
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.datasets.generated import GENERATED_FILES
from dpriv.knowledge.tables import MarkovTables
from dpriv.output_record import written_by

ROOT = Path(dpriv.__file__).resolve().parents[1]  # the dpriv under test
GENERATE = ["generate", "medical", "--views", "2", "--view-size", "60"]
STAYS = (
    "a file being written was removed; files written before it stay, recorded as dpriv's: run the "
    "command again with --force to replace them"
)


def generate(out: Path, *args: str):
    return CliRunner().invoke(app, [*GENERATE, "--out", str(out), *args])


def interrupted(*args, **kwargs):
    raise KeyboardInterrupt


def leftovers(out: Path) -> list[str]:
    """Temp files or folders of a write that did not finish."""
    return [str(p) for p in out.rglob("*") if ".dpriv-tmp" in p.name]


def test_ctrl_c_after_the_history_leaves_it_recorded_and_force_replaces_it(tmp_path, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(MarkovTables, "save", interrupted)  # the first knowledge file
        res = generate(tmp_path)
    assert res.exit_code == 130 and res.output.splitlines()[-1] == f"interrupted (Ctrl-C): {STAYS}"
    assert written_by(tmp_path / "history.parquet") == "generate"
    assert not leftovers(tmp_path) and not (tmp_path / "knowledge" / "dk.npz").exists()
    res = generate(tmp_path)  # as before: an existing file is replaced only with --force
    assert res.exit_code == 2 and "already holds ['history.parquet']" in res.output, res.output
    res = generate(tmp_path, "--force")
    assert res.exit_code == 0, res.output
    assert all(written_by(tmp_path / name) == "generate" for name in GENERATED_FILES)


def test_ctrl_c_while_a_file_is_written_leaves_no_part_of_it(tmp_path, monkeypatch):
    def cut(frame, path, **kwargs):  # the interrupt arrives with half the file on disk
        Path(path).write_bytes(b"PAR1 half a file")
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(pd.DataFrame, "to_parquet", cut)
        res = generate(tmp_path)
    assert res.exit_code == 130, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing was written
    res = generate(tmp_path)  # the same command, as it was
    assert res.exit_code == 0, res.output


def test_a_file_renamed_into_place_is_recorded_even_if_interrupted_right_after(tmp_path, monkeypatch):
    import dpriv.datasets.generated as generated

    real = os.replace

    def replaced_then_interrupted(src, dst):
        real(src, dst)
        raise KeyboardInterrupt

    mh = medical_history(2, 60, seed=0)
    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        m.setattr(generated.os, "replace", replaced_then_interrupted)
        write_history(tmp_path, mh)
    assert written_by(tmp_path / "history.parquet") == "generate" and not leftovers(tmp_path)
    write_history(tmp_path, mh, overwrite=True)
    assert all(written_by(tmp_path / name) == "generate" for name in GENERATED_FILES)


#: ``dpriv ARGS`` with SIGTERM sent to the process when it saves its first knowledge file.
_SIGTERM_AT_KNOWLEDGE = """
import os, signal, sys
from dpriv.knowledge.tables import MarkovTables
real = MarkovTables.save
def save(self, path):
    os.kill(os.getpid(), signal.SIGTERM)
    real(self, path)
MarkovTables.save = save
sys.argv = ["dpriv", *sys.argv[1:]]
from dpriv.__main__ import main
main()
"""


@pytest.mark.slow
def test_sigterm_during_generate_then_force_replaces_what_it_wrote(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", _SIGTERM_AT_KNOWLEDGE, *GENERATE, "--out", str(tmp_path)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 143, res.stderr
    assert res.stderr.splitlines()[-1] == f"terminated (SIGTERM): {STAYS}"
    assert written_by(tmp_path / "history.parquet") == "generate" and not leftovers(tmp_path)
    res = generate(tmp_path, "--force")
    assert res.exit_code == 0, res.output
    assert all(written_by(tmp_path / name) == "generate" for name in GENERATED_FILES)


def test_an_experiment_interrupted_while_it_generates_its_data_runs_again(tmp_path, monkeypatch):
    """``dpriv experiment paper`` writes its history with the same files: a re-run refused the
    data/ an interrupted one left ("holds ['history.parquet'] but not ['policy.toml']")."""
    import dpriv.experiment as experiment

    class Released(Exception):
        """The re-run got past its data (the releases are not this test's)."""

    def stop(*args, **kwargs):
        raise Released

    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        m.setattr(MarkovTables, "save", interrupted)
        experiment.run_experiment(tmp_path, views=2, view_size=60, say=lambda _: None)
    assert written_by(tmp_path / "data" / "history.parquet") == "generate"
    monkeypatch.setattr(experiment, "release_history", stop)
    with pytest.raises(Released):
        experiment.run_experiment(tmp_path, views=2, view_size=60, say=lambda _: None)
    assert all(written_by(tmp_path / "data" / name) == "generate" for name in GENERATED_FILES)

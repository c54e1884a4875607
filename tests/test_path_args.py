"""A path argument of a Python entry point given as something else (session 47): ``release_history(
history, policy, 5)`` raised pathlib's bare ``TypeError: expected str, bytes or os.PathLike object,
not int`` from a decorator; ``run_experiment(5)``, ``read_tables(5)``, ``write_report(L, 5)`` alike,
``read_table(5)`` an AttributeError, ``Ledger(5)`` a LedgerError and ``attack(5, ...)`` its own
words. Each is now dpriv's input error from one check (:mod:`dpriv.path_args`), naming the
function, the argument and the types it takes, before anything is written."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from dpriv.errors import InputError, PathArgumentError
from dpriv.policy import ReleasePolicy

POLICY = ReleasePolicy(id="id", time="view", qi=["age"], sensitive="s", k=2, t=1, j=10)
HISTORY = pd.DataFrame({"id": [1, 2, 3, 4], "view": 1, "age": [30, 31, 32, 33], "s": ["a", "b", "a", "b"]})


def _calls(here: Path) -> dict[str, tuple]:
    """name -> (the call, its function, the argument named, what the message says it takes)."""
    from dpriv.attack import attack
    from dpriv.attack_files import save_gain
    from dpriv.datasets import medical_history, write_history
    from dpriv.experiment import run_experiment
    from dpriv.experiment_files import read_tables
    from dpriv.io import read_table
    from dpriv.ledger import Ledger
    from dpriv.release import release_history
    from dpriv.report.gains import gain_curves
    from dpriv.report.page import write_report

    gains = pd.DataFrame({"release": [1], "adversary_gain": [0.1]})
    ledger = "a Ledger or the ledger's folder"
    return {
        "release_history": (lambda: release_history(HISTORY, POLICY, 5), "ledger_dir", "the ledger's folder"),
        "release_history=": (lambda: release_history(HISTORY, POLICY, ledger_dir=3.0), "ledger_dir", "the"),
        "Ledger": (lambda: Ledger(5), "root", "the ledger's folder"),
        "attack": (lambda: attack(5, HISTORY, POLICY, "dk"), "ledger", ledger),
        "save_gain": (lambda: save_gain(gains, 5, "dk"), "ledger", ledger),
        "gain_curves": (
            lambda: gain_curves(here, attack_dir=5),
            "attack_dir",
            "the folder of attack results",
        ),
        "write_report": (lambda: write_report(here / "L", 5), "out_html", "the HTML page to write"),
        "run_experiment": (lambda: run_experiment(5), "out", "the folder to write into"),
        "read_tables": (lambda: read_tables(5), "out", "the folder run_experiment wrote"),
        "write_history": (
            lambda: write_history(5, medical_history(n_views=1, view_size=10)),
            "out_dir",
            "the folder to write into",
        ),
        "read_table": (lambda: read_table(5), "path", "a table's file, folder or URL"),
    }


@pytest.mark.parametrize("name", list(_calls(Path("."))))
def test_a_path_argument_given_a_number_is_named(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)  # a path made of the number would land here
    call, argument, takes = _calls(tmp_path)[name]
    function = name.rstrip("=")
    with pytest.raises(PathArgumentError) as info:
        call()
    said = str(info.value)
    assert said.startswith(f"{function}() takes {argument} as {takes}"), said
    assert "(a str or pathlib.Path), not " in said and ("int 5" in said or "float 3.0" in said), said
    assert isinstance(info.value, InputError) and isinstance(info.value, TypeError)  # as before: a TypeError
    assert os.listdir(tmp_path) == []  # nothing written


def test_a_frame_or_none_is_named_by_its_type_only(tmp_path):
    from dpriv.release import release_history

    with pytest.raises(
        PathArgumentError, match=r"takes ledger_dir as the ledger's folder .*, not DataFrame$"
    ):
        release_history(HISTORY, POLICY, HISTORY)
    with pytest.raises(PathArgumentError, match=r", not None$"):
        release_history(HISTORY, POLICY, None)


def test_read_table_takes_a_pathlib_path(tmp_path):
    """``read_table(Path(...))`` failed (``'PosixPath' object has no attribute 'split'``)
    though its docs and messages name it ``read_table(path)``."""
    from dpriv.io import read_table

    HISTORY.to_csv(tmp_path / "h.csv", index=False)
    got = read_table(tmp_path / "h.csv").compute().reset_index(drop=True)
    assert got.to_dict("list") == HISTORY.to_dict(
        "list"
    )  # the values (dtypes: read_table's, tested elsewhere)

"""Test helpers: a generated medical history written with a policy its small views pass, and
``dpriv release`` run on it in this process (the fixtures of the CLI and ledger tests, e.g.
tests/test_ledger_expect.py, tests/test_cluster_failures.py, tests/test_small_view_warning.py)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from click.testing import Result
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import MedicalHistory, medical_history, write_history

#: ``policy_extra`` of :func:`~dpriv.datasets.write_history`: views of 60..100 tuples suppress
#: more than the default max_suppression allows, which these tests do not test.
LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 0.8, "max_suppression": 1.0}}


class Loose(NamedTuple):
    """A history written by :func:`write_loose`: its folder and what was generated."""

    folder: Path
    mh: MedicalHistory


def write_loose(folder: Path, *, n_views: int, view_size: int, seed: int = 0) -> Loose:
    """``medical_history(n_views, view_size, seed=seed)`` written into ``folder``
    (``history.parquet``, ``policy.toml`` with :data:`LOOSE`, ``knowledge/``)."""
    mh = medical_history(n_views=n_views, view_size=view_size, seed=seed)
    write_history(folder, mh, policy_extra=LOOSE)
    return Loose(folder, mh)


def release(folder: Path, ledger: Path, *flags: object, data: str = "history.parquet") -> Result:
    """``dpriv release folder/data --ledger ledger --policy folder/policy.toml *flags``, in process."""
    args = ["release", folder / data, "--ledger", ledger, "--policy", folder / "policy.toml", *flags]
    return CliRunner().invoke(app, [str(a) for a in args])

"""``Ledger.policy()`` works from any working folder (a fresh user's drill, session 39, M3).

Its relative knowledge paths were left relative to the working folder, while ``attack(policy=None)``
and ``dpriv release`` without --policy read them from the ledger's recorded folder or its parent:
``release_history(history, Ledger(L).policy(), L)`` from another folder failed with
``KnowledgeFileError ... (<cwd>/knowledge/dk.npz does not exist)``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}


def test_the_ledgers_policy_continues_the_ledger_from_another_working_folder(tmp_path, monkeypatch):
    data = tmp_path / "w1"
    write_history(data, medical_history(n_views=3, view_size=60, seed=3), policy_extra=LOOSE)
    hist = pd.read_parquet(data / "history.parquet")
    policy = ReleasePolicy.from_toml(data / "policy.toml")
    assert not Path(policy.knowledge["dk"]).is_absolute()  # the case: a path relative to the policy
    release_history(hist[hist["view"] <= 2], policy, data / "ledger")
    elsewhere = tmp_path / "notebooks"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    led = Ledger(data / "ledger")
    release_history(hist, led.policy(), data / "ledger")
    assert led.last_index() == 3
    assert led.policy().knowledge_path("dk") == (data / "knowledge" / "dk.npz").resolve()

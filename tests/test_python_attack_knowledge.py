"""``attack(ledger, history, None, "dk")`` on a ledger released in Python from a policy file
with relative knowledge paths (session 42 drill, user A): the ledger records no folder for them
(``policy_base.json`` is written by ``dpriv release --policy FILE``), so from another working
folder the attack said only "[knowledge] dk = knowledge/dk.npz does not exist". It names the
folders looked in and what to pass now; the policy passed, the same attack runs."""

from __future__ import annotations

import pandas as pd
import pytest
from loose_history import write_loose

from dpriv.attack import attack
from dpriv.errors import KnowledgeFileError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def test_the_ledgers_own_policy_with_a_knowledge_file_not_found_says_where_and_what_to_pass(
    tmp_path, monkeypatch
):
    folder = write_loose(tmp_path / "w", n_views=2, view_size=100).folder
    history = pd.read_parquet(folder / "history.parquet")
    policy = ReleasePolicy.from_toml(folder / "policy.toml")
    release_history(history, policy, tmp_path / "L")
    monkeypatch.chdir(tmp_path)  # neither the ledger's parent nor here holds knowledge/
    with pytest.raises(KnowledgeFileError) as err:
        attack(tmp_path / "L", history, None, "dk")
    assert str(err.value) == (
        "[knowledge] dk = knowledge/dk.npz does not exist (the ledger's recorded policy; its relative "
        f"path looked for in {tmp_path}, then the current folder): pass the policy, attack(ledger, "
        "history, ReleasePolicy.from_toml(FILE), ...), whose knowledge paths are relative to FILE"
    )
    gain = attack(tmp_path / "L", history, policy, "dk")
    assert gain["release"].tolist() == [1, 2]

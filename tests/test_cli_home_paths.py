"""``~`` in the knowledge and hierarchy paths a policy names (s34): the path options expand it
(dpriv/cli/path_options.py), but ``[knowledge] dk = "~/k/dk.npz"`` was read as the folder ``~``
inside the policy's folder ("[knowledge] dk = /work/p/~/k/dk.npz does not exist"). A path
starting with ``~`` is now from the home folder, as a shell reads it; a relative one is still
from the policy file's folder."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.sources import adversary_knowledge


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of the test's own, holding a generated history with its knowledge tables."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write_history(home / "g", medical_history(n_views=2, view_size=150, seed=4))
    return home


def _policy_pointing_home(home, folder):
    """The generated policy, copied into ``folder``, its knowledge paths written as ``~/g/...``."""
    text = (home / "g" / "policy.toml").read_text()
    assert '"knowledge/dk.npz"' in text
    folder.mkdir()
    (folder / "policy.toml").write_text(text.replace('"knowledge/', '"~/g/knowledge/'))
    return folder / "policy.toml"


def test_a_policy_file_path_starting_with_tilde_is_from_the_home_folder(home, tmp_path):
    pol = ReleasePolicy.read_toml(_policy_pointing_home(home, tmp_path / "p"), {})
    assert pol.knowledge_path("dk") == home / "g" / "knowledge" / "dk.npz"
    assert pol.knowledge["dk-2"] == str(home / "g" / "knowledge" / "dk-2.npz")  # as recorded in a ledger
    assert adversary_knowledge("dk-1", pol).source.tables is not None  # the file is read
    # a relative path is still from the policy's folder; a Python policy's "~" from the home folder
    rel = pol.with_overrides(knowledge={"dk": "k/dk.npz"}, base_dir=str(tmp_path / "p"))
    assert rel.knowledge_path("dk") == tmp_path / "p" / "k" / "dk.npz"
    py = ReleasePolicy(
        qi=["age"], sensitive="s", knowledge={"dk": "~/dk.npz"}, hierarchies={"age": "~/a.csv"}
    )
    assert (py.knowledge_path("dk"), py.hierarchy_path("age")) == (home / "dk.npz", home / "a.csv")


@pytest.mark.slow
def test_release_and_attack_read_the_knowledge_a_policy_names_under_the_home_folder(home, tmp_path):
    """The command line: the defender's knowledge (``release``) and the adversary's (``attack``,
    from the ledger's recorded policy) both read from ``~/g/knowledge``; and ``--knowledge
    spm:~/corpus.csv`` reads the corpus from the home folder (fsspec expands it)."""
    policy = _policy_pointing_home(home, tmp_path / "p")
    history, ledger = home / "g" / "history.parquet", tmp_path / "L"
    run = CliRunner().invoke
    # thresholds under which nothing is suppressed
    flags = ["--policy", str(policy), "--no-cluster", "--k", "3", "--t", "0.6", "--j", "2"]
    res = run(app, ["release", str(history), "--ledger", str(ledger), *flags])
    assert res.exit_code == 0, res.output
    pd.read_parquet(history).to_csv(home / "corpus.csv", index=False)
    for knowledge in ("dk-2", "spm:~/corpus.csv"):
        out = tmp_path / f"gain_{knowledge[:3]}.csv"
        args = ["attack", str(ledger), "--history", str(history), "--knowledge", knowledge]
        res = run(app, [*args, "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert pd.read_csv(out)["release"].tolist() == [1, 2]

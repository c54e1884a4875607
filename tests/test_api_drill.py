"""Findings of a new user's Python-API drill.

1. ``save_gain`` wrote ``attack/gain_<k>.csv`` into any existing folder (a folder of the user's,
   one with someone else's ``manifest.json``); ``write_report`` wrote into a ledger's
   ``releases/<i>/``: both now refuse, nothing written.
2. ``attack`` with a policy whose QIs differ from the ledger's blamed the history; it now names
   the field, and ``policy=None`` reads the ledger's own policy (as ``dpriv attack`` does).
3. ``KPRWarning`` (and dpriv's other warnings) pointed at ``contextlib.py`` or a file of dpriv
   or pydantic, not at the line that called dpriv.
4. ``Ledger.read_view("1")`` read release 1; docstring cross-references name existing objects.
"""

from __future__ import annotations

import importlib
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli_safety import snapshot
from test_pbc import ROWS, visits_csv

from dpriv.attack import attack, attack_steps, save_gain
from dpriv.datasets import medical_history, write_history, write_pbc
from dpriv.errors import InputError, LedgerError, PolicyError
from dpriv.ledger import Ledger
from dpriv.metrics.kpr import KPRWarning, kpr
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history
from dpriv.report import write_report

GAIN = pd.DataFrame({"release": [1], "adversary_gain": [0.1]})


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A generated history (3 views x 200, its knowledge files and policy.toml beside it) and
    a ledger of it, released with the QIs age, gender, weight."""
    out = tmp_path_factory.mktemp("drill")
    mh = medical_history(n_views=3, view_size=200, seed=0)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.6, "j": 0.9, "max_suppression": 1.0}})
    policy = ReleasePolicy.from_toml(out / "policy.toml")
    assert list(policy.qi) == ["age", "gender", "weight"] and policy.k == 5
    return out, mh.history, policy, release_history(mh.history, policy, out / "led")


# -- 1. writers of a ledger's folders -------------------------------------------------------------
def test_save_gain_writes_only_into_a_ledger(released, tmp_path):
    out, *_ = released
    mine = tmp_path / "notaledger"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    webapp = tmp_path / "webapp"  # a manifest.json that is not a dpriv ledger's
    webapp.mkdir()
    (webapp / "manifest.json").write_text(json.dumps({"name": "app", "icons": []}))
    before = snapshot(tmp_path)
    with pytest.raises(LedgerError, match=r"notaledger holds no manifest.json: it is not a ledger folder"):
        save_gain(GAIN, mine, "dk")
    with pytest.raises(LedgerError, match=r"webapp/manifest.json is not a dpriv ledger's manifest"):
        save_gain(GAIN, str(webapp), "dk")
    with pytest.raises(LedgerError, match=r"led/releases holds no manifest.json"):
        save_gain(GAIN, out / "led" / "releases", "dk")  # a folder inside a ledger is not one
    assert snapshot(tmp_path) == before
    assert not (mine / "attack").exists() and not (webapp / "attack").exists()
    assert not (out / "led" / "releases" / "attack").exists()
    path = save_gain(GAIN, out / "led", "dk-3", assume_this_ledger=True)  # a ledger: its attack/ folder
    assert path == out / "led" / "attack" / "gain_dk-3.csv"
    assert pd.read_csv(path)["adversary_gain"].tolist() == [0.1]


def test_write_report_writes_into_a_ledger_only_in_its_attack_folder(released):
    out, *_ = released
    led = out / "led"
    before = snapshot(led)
    for where in ("releases/1/r.html", "r.html", "new/r.html"):
        with pytest.raises(InputError, match=r"out_html .* release ledger .*only its attack/ folder"):
            write_report(led, led / where)
    assert snapshot(led) == before and not (led / "new").exists()
    page = write_report(led, led / "attack" / "r.html")
    assert page.read_text().startswith("<!DOCTYPE html>")


# -- 2. the attack's policy against the ledger's --------------------------------------------------
def test_attack_refuses_a_policy_that_reads_the_releases_otherwise(released):
    out, history, policy, led = released
    domains = {c: d for c, d in policy.domains.items() if c != "weight"}
    fewer = ReleasePolicy.from_dict(policy.model_dump() | {"qi": ["age", "gender"], "domains": domains})
    named = r"the policy given to attack\(\) reads the releases differently .*"
    named += r"\(qi: 'weight' only in the ledger's\)"
    with pytest.raises(PolicyError, match=named + r".*pass policy=None to use the recorded policy"):
        attack(led, history, fewer, "dk", deductions=False)
    with pytest.raises(PolicyError, match=named):
        attack_steps(out / "led", history, fewer, "dk", deductions=False)
    order = policy.with_overrides(qi=["weight", "age", "gender"])
    with pytest.raises(PolicyError, match=r"qi: the same values in another order"):
        attack(led, history, order, "dk", deductions=False)
    other = policy.model_dump() | {"domains": {**policy.domains, "weight": [30, 200]}}
    with pytest.raises(PolicyError, match=r"domains.weight: .* only in the policy given"):
        attack(led, history, other, "dk", deductions=False)


def test_attack_without_a_policy_reads_the_ledgers(released, tmp_path):
    out, history, policy, led = released
    given = attack(led, history, policy, "dk", deductions=False)
    assert given["release"].tolist() == [1, 2, 3] and given["n_tuples"].gt(0).all()
    # the recorded policy, its knowledge file found beside the ledger (as dpriv attack without --policy)
    pd.testing.assert_frame_equal(attack(out / "led", history, None, "dk", deductions=False), given)
    steps = list(attack_steps(led, history, None, "dk", deductions=False))
    np.testing.assert_allclose([s.adversary_gain for s in steps], given["adversary_gain"])
    # thresholds may differ (the adversary reads the published groups): the same gains
    pd.testing.assert_frame_equal(
        attack(led, history, policy.with_overrides(k=7), "dk", deductions=False), given
    )
    empty = Ledger(tmp_path / "empty", create=True)
    with pytest.raises(LedgerError, match=r"empty holds no release yet \(no policy.json\)"):
        attack(empty, history, None, "dk")


def test_dpriv_attack_refuses_a_policy_file_that_reads_the_releases_otherwise(released, tmp_path):
    """``dpriv attack --policy FILE`` words the refusal of the Python API above in the command
    line's terms (the flag and the file, exit 2), and a policy file that cannot be read is named;
    the attack's folder is left as it was. A guard (s40): it passes on the code before
    ``dpriv attack --policy`` shared the command line's policy-file code."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    out, history, policy, led = released
    text = (out / "policy.toml").read_text()
    assert text.count('"weight"') == 1 and text.count("\nweight = ") == 1  # the QI and its domain
    other = tmp_path / "other.toml"
    other.write_text(text.replace('"weight"', '"weight2"').replace("\nweight = ", "\nweight2 = "))
    before = snapshot(out / "led")
    args = ["attack", str(out / "led"), "--history", str(out / "history.parquet"), "--knowledge", "dk"]
    res = CliRunner().invoke(app, [*args, "--policy", str(other)], terminal_width=400)
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert said.startswith(
        f"error: --policy {other} reads the releases differently from the policy ledger {out / 'led'} was "
        "released with (qi: 'weight' only in the ledger's; 'weight2' only in the file): the releases are "
        "read with the ledger's columns; omit --policy to use the recorded policy, or give a policy "
        "that declares the same columns"
    ), said
    res = CliRunner().invoke(app, [*args, "--policy", str(tmp_path / "none.toml")], terminal_width=400)
    assert res.exit_code == 2 and f"error: policy file {tmp_path / 'none.toml'} does not exist" in res.output
    assert snapshot(out / "led") == before  # no attack/ file, nothing else touched


# -- 3. warnings name the caller's line ------------------------------------------------------------
def _places(record: list[warnings.WarningMessage], category: type[Warning], text: str) -> set[str]:
    return {w.filename for w in record if issubclass(w.category, category) and text in str(w.message)}


def test_warnings_are_attributed_to_the_callers_line(tmp_path):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        write_pbc(tmp_path / "pbc", visits_csv(tmp_path, ROWS), min_view_size=1)  # through pbc_history
        kpr(pd.DataFrame({"a": [1, 2, 1, 2]}), pd.DataFrame({"a": [1, 2]}), ["a"])
        ReleasePolicy(id="i", qi=["a"], sensitive="s", retro_lever="k")
        view = pd.DataFrame({"i": range(20), "a": np.arange(20) + 20, "s": ["x"] * 20})
        pol = ReleasePolicy(
            id="i", qi=["a"], sensitive="s", k=2, t=1.0, j=10.0, allow_single_sensitive=True,
            knowledge={"defender": "ie"},
        )  # fmt: skip
        anonymize(view, pol)
    assert _places(w, UserWarning, "renumbered") == {__file__}
    assert _places(w, KPRWarning, "'a' has only 2 distinct") == {__file__}
    assert _places(w, UserWarning, "retro_lever set but the release gate is off") == {__file__}
    assert _places(w, UserWarning, "holds one value only ('x')") == {__file__}


# -- 4. a release index, docstring references -------------------------------------------------------
def test_read_view_takes_an_int_index(released):
    *_, led = released
    for bad in ("1", True, 1.0):
        with pytest.raises(InputError, match=rf"a release index is an int \(1, 2, ...\), not \w+ {bad!r}"):
            led.read_view(bad)
    with pytest.raises(InputError, match=r"not str '2'"):
        led.read_metrics("2")
    pd.testing.assert_frame_equal(led.read_view(np.int64(2)), led.read_view(2))
    assert led.read_view(2)["qi_group"].dtype == np.int64


def test_docstring_references_name_existing_objects():
    """Every :class:/:func:/... reference to ``dpriv.<module>.<name>`` in dpriv's sources
    resolves (numba_cache named dpriv.cluster.WorkerCompileNotice, which lives elsewhere)."""
    role = re.compile(r":(?:class|func|meth|data|mod|attr|exc):`~?(dpriv(?:\.\w+)+)`")
    stale = []
    for path in sorted((Path(__file__).parents[1] / "dpriv").rglob("*.py")):
        for name in sorted(set(role.findall(path.read_text()))):
            parts = name.split(".")
            cut = max(i for i in range(1, len(parts) + 1) if _importable(".".join(parts[:i])))
            obj = importlib.import_module(".".join(parts[:cut]))
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
            if obj is None:
                stale.append(f"{path.name}: {name}")
    assert stale == []


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True

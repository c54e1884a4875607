"""``dpriv verify --ledger``: the boxes of a ledger's release held to their own members (the
ledger's state says which respondent each QI-group holds). A drill: a box widened to a bound
that another tuple of the original holds verified ok, since without the membership some
assignment of the original's tuples still fitted it (dpriv.anonymity.coverage)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    root = tmp_path_factory.mktemp("members")
    res = run("generate", "medical", "--out", root / "gen", "--views", "2", "--view-size", "300")
    assert res.exit_code == 0, res.output
    # the Hilbert scan's boxes overlap: a widened bound often still fits some assignment
    policy = root / "gen/policy.toml"
    text = policy.read_text()
    assert 'grouping = "topdown"' in text
    policy.write_text(text.replace('grouping = "topdown"', 'grouping = "scan"'))
    res = run("release", root / "gen/history.parquet", "--ledger", root / "L", "--policy", policy)
    assert res.exit_code == 0, res.output
    return root


def _widened(root):
    """(view.parquet edited, QI-group, QI): release 2's first box whose max on a numeric QI,
    raised to the next value a tuple of view 2 holds, still verifies without the membership."""
    from dpriv.ledger import Ledger
    from dpriv.release import verify_view

    led = Ledger(root / "L")
    policy, rel = led.policy(), led.read_view(2)
    history = pd.read_parquet(root / "gen/history.parquet")
    view = history[history["view"] == 2]
    for g in rel["qi_group"].unique():
        for q in ("age", "weight"):
            top = rel.loc[rel["qi_group"] == g, f"{q}_max"].iloc[0]
            higher = sorted(v for v in view[q].unique() if v > top)
            if not higher:
                continue
            edited = rel.copy()
            edited.loc[edited["qi_group"] == g, f"{q}_max"] = higher[0]
            if verify_view(edited, history, policy, view=2).ok:
                return edited, g, q
    raise AssertionError("no widened box fits an assignment of the original's tuples")


def test_a_box_widened_to_another_tuples_value_fails_against_its_members(ledger):
    check = ["verify", "--ledger", ledger / "L", "--view", "2", "--history", ledger / "gen/history.parquet"]
    res = run(*check)
    assert res.exit_code == 0 and "ok: True" in res.output, res.output
    edited, group, q = _widened(ledger)
    edited.to_parquet(ledger / "L/releases/2/view.parquet", index=False)
    # the manifest of an early dpriv recorded no digest of the view (else the edit is refused first)
    manifest = json.loads((ledger / "L/manifest.json").read_text())
    for entry in manifest["releases"]:
        entry.pop("view_sha256")
    (ledger / "L/manifest.json").write_text(json.dumps(manifest))
    res = run(*check)
    said = " ".join(res.output.split())
    assert res.exit_code == 2, said
    assert (
        f"FAIL release 2: QI {q!r}: the interval of QI-groups {group} is not the true min/max of their tuples"
        in said
    )
    # no value of the box or of a member is printed: the release, the group and the QI only
    (fail,) = [line for line in res.output.splitlines() if "release 2: QI" in line]
    assert not any(c.isdigit() for c in fail.replace("release 2", "").replace(str(group), ""))

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
def made(tmp_path_factory):
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


@pytest.fixture
def ledger(made, tmp_path):
    """A copy of the module's ledger and history, for a test to edit."""
    import shutil

    shutil.copytree(made, tmp_path / "copy")
    return tmp_path / "copy"


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


def _members(root):
    from dpriv.ledger import Ledger

    state = Ledger(root / "L").read_state(2)
    return state[state["last_release"] == 2].set_index("respondent_id")["last_group"]


@pytest.mark.parametrize("edit", ["value", "row"])
def test_a_view_that_is_not_the_released_one_names_the_first_qi_group_that_differs(ledger, edit):
    """A drill: 'view 2 differs from the one committed' (and verify's 'the history's view 2 is
    not the one released') said nothing of where: the user had 300 rows to compare by hand."""
    history = pd.read_parquet(ledger / "gen/history.parquet")
    members = _members(ledger)
    rel = pd.read_parquet(ledger / "L/releases/2/view.parquet")
    first = rel["qi_group"].iloc[0]  # the released file's first group: the first to be compared
    rid = members[members == first].index[0]
    at = history.index[(history["view"] == 2) & (history["respondent_id"] == rid)][0]
    if edit == "value":  # another sensitive value for one member of the group
        old = history.at[at, "exam_result"]
        history.at[at, "exam_result"] = next(v for v in history["exam_result"].unique() if v != old)
        where = f"QI-group {first}: its members' sensitive values are not the ones it released"
    else:  # one member's row removed
        history = history.drop(index=at)
        n = int((rel["qi_group"] == first).sum())
        where = f"QI-group {first}: {n - 1} of its members are in the view where it released {n} tuples"
    edited = ledger / "edited.parquet"
    history.to_parquet(edited, index=False)
    res = run("verify", "--ledger", ledger / "L", "--view", "2", "--history", edited)
    said = " ".join(res.output.split())
    assert res.exit_code == 2, said
    assert (
        f"the history's view 2 is not the one released into {ledger / 'L'} (its rows differ from the "
        f"digest the ledger recorded; first difference: {where}): give the history that was released"
    ) in said
    res = run("release", edited, "--ledger", ledger / "L")  # a resumed history: the same place named
    said = " ".join(res.output.split())
    assert (
        res.exit_code == 2
        and f"view 2 differs from the one committed in the ledger (first difference: {where}): " in said
    ), said
    # no respondent id, no sensitive value in the refusal
    error = said[said.index("error: view 2 differs") :]
    assert "respondent_id" not in error
    assert not any(str(v) in error for v in history["exam_result"].unique())


def test_a_truncated_release_checked_against_its_members_says_so_without_a_warning(made):
    """A release file cut short, verified with its membership: the members of a QI-group no
    longer in the file were compared with a missing box (NaN), a NumPy RuntimeWarning ("invalid
    value encountered in greater_equal"), and the problem was not named; now the report says
    which QI-groups lost their rows and how many kept tuples they hold."""
    import warnings

    from dpriv.ledger import Ledger
    from dpriv.release import verify_view
    from dpriv.release_members import release_members

    led = Ledger(made / "L")
    policy, rel = led.policy(), led.read_view(2)
    history = pd.read_parquet(made / "gen/history.parquet")
    members = release_members(led.read_state(2), 2, policy)
    kept = rel["qi_group"].unique()[:3]
    cut = rel[rel["qi_group"].isin(kept)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = verify_view(cut, history, policy, view=2, members=members)
    assert not report.ok
    (said,) = [p for p in report.problems if "no row in the release" in p]
    lost = len(members) - int(members["_label"].isin(kept).sum())
    assert said.startswith("release 2: QI-groups ") and f" hold {lost} kept tuples of the view " in said
    assert said.endswith("the file was truncated or is not this release")
    assert not any("outside the interval" in p for p in report.problems)

"""The report drill of ``dpriv report`` on the experiment's ledgers: the title names what the
method enforces, the Releases table prints counts as integers, and a ledger whose manifest
lists no release is refused (as is ``dpriv attack`` on it)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.report import render_report
from dpriv.report.explain import report_title

POLICY = {
    "sensitive": "exam_result",
    "qi": ["age", "gender", "weight"],
    "k": 5,
    "t": 0.3,
    "j": 0.1,
    "l": 2,
    "bt_b": 0.3,
    "bt_t": 0.25,
}


def test_the_title_names_the_thresholds_the_method_enforces():
    """mondrian-l_l2 was titled "Mondrian, distinct l-diversity release (k = 5, t = 0.3, j = 0.1)":
    thresholds it does not enforce, and not its l."""
    by = "exam_result by age, gender, weight: "
    titles = {m: report_title({**POLICY, "method": m}) for m in ("mondrian-l", "mondrian-t", "mondrian-bt")}
    assert titles == {
        "mondrian-l": by + "Mondrian, distinct l-diversity release (k = 5, l = 2)",
        "mondrian-t": by + "Mondrian, t-closeness release (k = 5, t = 0.3)",
        "mondrian-bt": by + "Mondrian, (B,t)-privacy release (k = 5, bt_b = 0.3, bt_t = 0.25)",
    }
    histogram = report_title({**POLICY, "method": "histogram"})
    assert histogram == by + "one QI-group per view (histogram reference) release (k = 5)"
    assert report_title(POLICY) == by + "JS-reduce release (k = 5, t = 0.3, j = 0.1)"
    rbk = report_title({**POLICY, "method": "jsreduce", "rbk_closeness": 0.2})
    assert rbk == by + "JS-reduce release (k = 5, t = 0.3, j = 0.1, rbk_closeness = 0.2)"


def _cells(table: str) -> list[list[str]]:
    rows = re.findall(r"<tr data-release.*?</tr>", table)
    return [re.findall(r">([^<]*)</td>", row) for row in rows]


def test_counts_print_as_integers_when_a_release_kept_no_tuple():
    """jsreduce_t1.0_j0.2 (releases 3-4 fully suppressed): "k 25.0000, l 10.0000"."""
    from dpriv.report.page import _release_table
    from dpriv.report.tables import RELEASE_COLUMNS

    rows = [
        {"release": 1, "respondents": 300, "groups": 2, "released": 89, "suppressed": 211, "k": 25, "l": 10},
        {
            "release": 2,
            "respondents": 300,
            "groups": 0,
            "released": 0,
            "suppressed": 300,
            "k": None,
            "l": None,
        },
    ]
    releases = pd.DataFrame(rows, columns=[c for c, _, _ in RELEASE_COLUMNS])
    assert releases["k"].dtype == "float64"  # as release_frame builds it: None makes the column float
    cells = _cells(_release_table(releases, {**POLICY, "method": "jsreduce"}))
    assert [row[:5] + row[6:8] for row in cells] == [
        ["1", "300", "2", "89", "211", "25", "10"],
        ["2", "300", "0", "0", "300", "-", "-"],
    ]


def test_a_ledger_whose_manifest_lists_no_release_is_refused_by_report_and_attack(tmp_path):
    """A hand-made ledger with policy.json but no release in manifest.json: "report of 0
    release(s) written" and a header-only attack CSV (exit 0); now exit 2, nothing written."""
    from typer.testing import CliRunner

    from dpriv.cli import app
    from dpriv.datasets import medical_history, write_history
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = ReleasePolicy.from_toml(write_history(tmp_path / "data", mh), max_suppression=1.0)
    led = release_history(mh.history, policy, tmp_path / "gl").root
    manifest = json.loads((led / "manifest.json").read_text())
    (led / "manifest.json").write_text(json.dumps({**manifest, "releases": []}))
    history = tmp_path / "h.csv"
    mh.history.to_csv(history, index=False)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    said = "holds no committed release (its manifest.json lists none): nothing has been released into it yet"
    runs = [
        ["report", led, "--out", tmp_path / "r.html"],
        ["attack", led, "--history", history, "--knowledge", "dk", "--out", tmp_path / "gla.csv"],
        ["attack", led, "--history", history, "--knowledge", "dk"],  # to LEDGER/attack/gain_dk.csv
        [
            "attack",
            led,
            "--history",
            history,
            "--knowledge",
            "dk",
            "--policy",
            tmp_path / "data" / "policy.toml",
        ],
    ]
    for args in runs:
        res = CliRunner().invoke(app, list(map(str, args)))
        assert res.exit_code == 2 and said in res.output, (args, res.output)
        assert "Empty DataFrame" not in res.output
        assert sorted(p.name for p in tmp_path.rglob("*")) == before
    with pytest.raises(InputError, match="holds no committed release"):
        render_report(led)

"""The report drill of ``dpriv report`` on the experiment's ledgers: the title names what the
method enforces, the Releases table prints counts as integers, and a ledger whose manifest
lists no release is refused (as is ``dpriv attack`` on it)."""

from __future__ import annotations

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

"""How the report's plots and notes read to a new user (drill of session 33): one meaning per line
style, a verdict caption of the table's own columns, the defender's tail explained, and how to
read KPR near its reference."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd

from dpriv.report.explain import Check, Verdict
from dpriv.report.plots import plot_gains, plot_kpr
from dpriv.report.sections import kpr_section, tail_section, verdict_section
from dpriv.report.tail import TAIL_CURVE_COLUMNS, plot_tail


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _tail() -> dict[str, pd.DataFrame]:
    rows = [[1, 0.05, 0.0, 0.08, 0.0], [2, 0.10, 0.02, 0.15, 0.01]]
    return {"dk": pd.DataFrame(rows, columns=list(TAIL_CURVE_COLUMNS))}


def _defender() -> pd.DataFrame:
    return pd.DataFrame({"release": [1, 2], "confident_share": [0.0, 0.02]})  # the paper adversary's


def test_dashed_means_the_retrospective_adversary_only() -> None:
    """The drill: dashed was the histogram level in the gain plot and the retrospective adversary
    in the tail-risk plot. Levels a line is read against are dotted now."""
    gains = pd.DataFrame({"release": [1, 2], "adversary_gain": [0.1, 0.2], "histogram_gain": [0.2, 0.3]})
    lines = plot_gains({"dk": gains}).axes[0].lines
    assert {ln.get_label(): ln.get_linestyle() for ln in lines if not ln.get_label().startswith("_")} == {
        "dk": "-",
        "dk: histogram level (one QI-group)": ":",
    }
    releases = pd.DataFrame({"release": [1, 2], "kpr": [99.7, 99.8], "kpr_reference": [99.85, 99.85]})
    ref = [ln for ln in plot_kpr(releases).axes[0].lines if ln.get_label().startswith("reference")]
    assert [ln.get_linestyle() for ln in ref] == [":"]
    styles = {
        ln.get_label(): (ln.get_linestyle(), ln.get_marker())
        for ax in plot_tail(_tail(), _defender()).axes
        for ln in ax.lines
        if not ln.get_label().startswith("_")
    }
    assert styles == {
        "dk paper": ("-", "o"),
        "dk retrospective": ("--", "^"),
        "defender's own posteriors (metrics.json)": ("-", "None"),
    }


def test_the_defender_band_lies_under_the_adversary_line_it_equals() -> None:
    """The defender's posteriors are the paper adversary's with the same knowledge (no
    deduction): drawn black on top, they hid that line and looked like the highest risk."""
    right = plot_tail(_tail(), _defender()).axes[1]
    band = next(ln for ln in right.lines if ln.get_label().startswith("defender"))
    paper = next(ln for ln in right.lines if ln.get_label() == "dk paper")
    np.testing.assert_array_equal(band.get_ydata(), paper.get_ydata())
    assert band.get_zorder() < paper.get_zorder() and band.get_linewidth() > 3 * paper.get_linewidth()
    assert band.get_alpha() is not None and band.get_alpha() < 0.5


def test_the_tail_section_says_what_the_defender_line_is_and_why_it_can_be_highest() -> None:
    page = _text(tail_section(_tail(), _defender()))
    assert (
        "Wide grey band: the defender's own posteriors (metrics.json), the Ω posteriors (E14) the "
        "release loop computed before writing each release, with its own model of the adversary "
        "(the policy's [knowledge]) and the true QI-group membership: what the paper adversary "
        "with that same knowledge reads before any exact deduction, so its line runs on the band"
    ) in page
    assert "its share may lie above or below the band" in page
    assert "grey band" not in _text(tail_section(_tail(), _defender().assign(confident_share=np.nan)))


def _verdict(names: tuple[str, ...]) -> Verdict:
    return Verdict(1, 10, 10, tuple(Check(n, 1.0, 1.0, True, True) for n in names))


def test_the_verdict_caption_explains_the_table_s_own_columns() -> None:
    """The drill: a JS-reduce verdict (k, t, j, suppression) was captioned "k and l are ...",
    with no l column; l is mondrian-l's."""
    js = _text(verdict_section([_verdict(("k", "t", "j", "suppression"))], "jsreduce"))
    assert (
        "Each achieved value against the policy's threshold: k is the smallest QI-group size; t the "
        "largest EMD between a group and the view; j the largest JS divergence within a group's "
        "revised knowledge; suppression the share of the view's tuples left out (percent of the "
        "view). Respondents:"
    ) in js
    assert " l " not in js and "distinct sensitive values" not in js
    ml = _text(verdict_section([_verdict(("k", "t", "j", "l", "retro_gain", "suppression"))], "mondrian-l"))
    assert "; l the smallest number of distinct sensitive values in a group;" in ml
    assert "retrospective gain the largest mean gain (E10) of the retrospective adversary" in ml


def test_kpr_near_a_high_reference_says_how_to_read_it() -> None:
    """The drill: the raw view against itself scored 99.85 and the releases slightly below, with
    no word on what that means."""
    releases = pd.DataFrame(
        {
            "release": [1, 2],
            "respondents": [2000, 2000],
            "kpr": [99.65, 99.85],
            "kpr_reference": [99.85, 99.85],
        }
    )
    page = _text(kpr_section(releases))
    assert "itself): 99.85 %; a release's KPR minus its reference: -0.20 to +0.00 points." in page
    assert (
        "How to read it: the original records themselves single out 0.15 % of the respondents "
        "(100 % minus the reference). A release near its reference protects against this attack "
        "about as well as the unreleased view would; with a reference this close to 100 %, KPR has "
        "little room to tell releases apart: read k, t, j and the adversary gain for them. A release "
        "below its reference (here by up to 0.20 points: 4 respondent(s) in one release) leaves a "
        "lone look-alike for more respondents than the original does: its records are drawn at "
        "random in each QI-group's box, and (E21) counts a lone look-alike whichever respondent's "
        "record it was drawn for."
    ) in page
    low = _text(kpr_section(releases.assign(kpr=[80.0, 85.0], kpr_reference=[70.0, 75.0])))
    assert "single out 25.00 to 30.00 % of the respondents" in low
    assert "little room" not in low and "below its reference" not in low

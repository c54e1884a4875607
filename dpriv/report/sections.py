"""HTML pieces of the report page: table cells, images, and the sections that explain the
numbers (verdict per release, KPR with its reference line, the adversary knowledges, the tail).

Every text from data is escaped here; a cell keeps the exact value in ``data-value`` and shows
a rounded one. Suppression is shown in percent of the view's tuples everywhere.
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dpriv.attack_files import KPR_FILE
from dpriv.ledger import ATTACK_DIR
from dpriv.report.coverage import GAIN_DK, AttackResults
from dpriv.report.explain import (
    CHECK_TEXT,
    DEFENDER_TEXT,
    GAIN_TEXT,
    KNOWLEDGE_TEXT,
    KPR_TEXT,
    TAIL_TEXT,
    Verdict,
    describe_knowledge,
    knowledge_key,
    percent,
)
from dpriv.report.plots import plot_kpr, png_uri
from dpriv.report.tail import plot_tail

e = html.escape
#: A command quoted in a note (`dpriv attack ...`).
_CODE = re.compile(r"`([^`]*)`")


def fmt(value: Any, digits: int = 4) -> str:
    """Display text of a table cell: integers as is, floats with ``digits`` decimals."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.{digits}f}"
    return str(value)


def cell(value: Any, *, digits: int = 4, cls: str = "", text: str | None = None, attrs: str = "") -> str:
    """A ``<td>`` with the exact value in ``data-value`` and ``text`` (default: :func:`fmt`)."""
    if value is None or isinstance(value, bool | numbers.Integral):
        raw = "" if value is None else str(value)
    elif isinstance(value, numbers.Real):
        raw = "" if math.isnan(float(value)) else repr(float(value))
    else:
        raw = str(value)
    klass = f' class="{e(cls)}"' if cls else ""
    shown = fmt(value, digits) if text is None else text
    return f'<td{klass}{attrs} data-value="{e(raw)}">{e(shown)}</td>'


def img(fig, alt: str) -> str:
    return f'<img alt="{e(alt)}" src="{png_uri(fig)}">'


def _threshold(name: str, threshold: float) -> str:
    if name == "suppression":
        return f"suppression &le; {e(percent(threshold, 2))}"
    if name == "retro_gain":
        return f"retrospective gain &le; {e(f'{threshold:g}')}"
    sign = "&ge;" if name in ("k", "l") else "&le;"
    return f"{e(name)} {sign} {e(f'{threshold:g}')}"


def verdict_section(verdicts: list[Verdict], method: str) -> str:
    """The ``verdict`` table: one row per release, one column per threshold, then the verdict."""
    if not verdicts:
        return '<p class="note">No release to judge yet.</p>'
    first = verdicts[0].checks
    head = (
        '<th data-key="release">release</th><th data-key="respondents">respondents</th>'
        '<th data-key="released">released tuples</th>'
        + "".join(
            f'<th data-key="{e(c.name)}">{_threshold(c.name, c.threshold)}'
            f"{'' if c.enforced else ' (not enforced)'}</th>"
            for c in first
        )
        + '<th data-key="verdict">verdict</th>'
    )
    rows = []
    for v in verdicts:
        cells = [cell(v.release), cell(v.respondents), cell(v.released)]
        for c in v.checks:
            word = "-" if c.within is None else ("within" if c.within else "beyond")
            shown = (
                percent(c.achieved)
                if c.name == "suppression"
                else fmt(c.achieved, 4 if c.name in ("t", "j", "retro_gain") else 0)
            )
            attrs = "" if c.within is None else f' data-within="{str(c.within).lower()}"'
            cells.append(
                cell(
                    c.achieved,
                    cls="" if c.within is not False else "fail",
                    text=f"{shown} ({word})",
                    attrs=attrs,
                )
            )
        if not any(c.within is not None for c in v.checks):  # nothing recorded to check
            verdict = "unknown: its metrics.json records none of the policy's thresholds"
        else:
            verdict = "within the policy" if v.within else "beyond the policy: " + ", ".join(v.beyond)
        cells.append(cell(verdict, cls="" if v.within else "fail"))
        rows.append(f'<tr data-release="{v.release}">' + "".join(cells) + "</tr>")
    loose = [c.name for c in first if not c.enforced]
    # only the columns of this table: a JS-reduce verdict has no l (mondrian-l's), a drill found
    # the caption explaining l all the same
    said = "; ".join(CHECK_TEXT[c.name] for c in first if c.name in CHECK_TEXT)
    note = (
        f'<p class="note">Each achieved value against the policy\'s threshold: {e(said)}. '
        "Respondents: tuples of the view, one per respondent."
        + (
            f" The {e(method)} method does not guarantee {e(', '.join(loose))}: the policy states "
            "it, so a release beyond it is reported, not refused."
            if loose
            else ""
        )
        + "</p>"
    )
    return (
        f'<div style="overflow-x:auto"><table id="verdict"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{note}"
    )


def kpr_section(releases: pd.DataFrame) -> str:
    """The KPR plot with its reference line and what KPR means (a note when unknown)."""
    if releases.empty or releases["kpr"].isna().all():
        return (
            f'<p class="note">{e(KPR_TEXT)}</p><p class="note">No KPR is recorded for these '
            "releases (ledgers written by dpriv record it in metrics.json; or put release, kpr "
            f"in {ATTACK_DIR}/{KPR_FILE}).</p>"
        )
    parts = [img(plot_kpr(releases), "KPR per release with the original view's KPR against itself")]
    parts.append(f'<p class="note">{e(KPR_TEXT)}</p>')
    ref = releases["kpr_reference"]
    if ref.isna().all():
        parts.append(
            '<p class="note" id="kpr-reference-missing">The reference line needs the original '
            "history, which the report does not read by itself: run <code>dpriv report LEDGER "
            f"--history HISTORY</code> (or put a kpr_reference column in {ATTACK_DIR}/{KPR_FILE}).</p>"
        )
    else:
        known = releases[ref.notna()]
        gaps = known["kpr"] - known["kpr_reference"]
        refs = _span(fmt(float(known["kpr_reference"].min()), 2), fmt(float(known["kpr_reference"].max()), 2))
        parts.append(
            f'<p class="note" id="kpr-reference">Reference (the original view against itself): '
            f"{e(refs)} %; a release's KPR minus its reference: "
            f"{_span(f'{float(gaps.min()):+.2f}', f'{float(gaps.max()):+.2f}')} points.</p>"
        )
        parts.append(f'<p class="note" id="kpr-reading">{e(kpr_reading(known))}</p>')
    return "".join(parts)


def _span(low: str, high: str) -> str:
    """``"a to b"`` of two displayed values, or ``"a"`` when they read the same."""
    return low if low == high else f"{low} to {high}"


#: A reference KPR at least this high leaves the measure little room between it and 100 %.
_HIGH_REFERENCE = 95.0


def kpr_reading(known: pd.DataFrame) -> str:
    """How to read the KPR of releases against their reference (a drill: releases a few tenths
    below a reference of 99.85 % came with no word). ``known``: the rows of
    :func:`dpriv.report.release_frame` with a ``kpr_reference``. Both KPRs are over the same
    respondents (E21's n: the view's tuples), so a gap of g points is g * n / 100 respondents."""
    ref, gaps = known["kpr_reference"], known["kpr"] - known["kpr_reference"]
    share = _span(f"{100 - float(ref.max()):.2f}", f"{100 - float(ref.min()):.2f}")
    text = (
        f"How to read it: the original records themselves single out {share} % of the respondents "
        "(100 % minus the reference). A release near its reference protects against this attack "
        "about as well as the unreleased view would"
    )
    if float(ref.min()) >= _HIGH_REFERENCE:
        text += (
            "; with a reference this close to 100 %, KPR has little room to tell releases apart: "
            "read k, t, j and the adversary gain for them"
        )
    text += "."
    below = gaps < 0
    if below.any():
        respondents = pd.to_numeric(known["respondents"], errors="coerce")
        more = (-gaps[below] * respondents[below] / 100).round()
        count = f": {int(more.max())} respondent(s) in one release" if more.notna().any() else ""
        text += (
            f" A release below its reference (here by up to {-float(gaps.min()):.2f} points{count}) "
            "leaves a lone look-alike for more respondents than the original does: its records are "
            "drawn at random in each QI-group's box, and (E21) counts a lone look-alike whichever "
            "respondent's record it was drawn for."
        )
    return text


def knowledge_section(curves: Mapping[str, pd.DataFrame], retro: tuple[str, ...] = ()) -> str:
    """The ``knowledge`` table (every adversary knowledge of ``dpriv attack``, one sentence
    each, and which ones have results here: gain curves ``curves``, retrospective results of
    the names ``retro``) and what the gain is."""
    results = [(n, n) for n in curves] + [(n, f"{n} (retrospective)") for n in retro]  # (name, shown)
    present = {knowledge_key(n) for n, _ in results}
    rows = []
    for key, text in KNOWLEDGE_TEXT.items():
        names = ", ".join(s for n, s in results if knowledge_key(n) == key)
        shown = "dk-1, dk-2, dk-3" if key == "dk-n" else ("spm:PATH" if key == "spm" else key)
        rows.append(
            f'<tr data-knowledge="{e(key)}"><th>{e(shown)}</th><td>{e(text[0].upper() + text[1:])}.</td>'
            f"<td>{e(names) if key in present else 'not attacked'}</td></tr>"
        )
    extra = [s for n, s in results if not knowledge_key(n)]
    for name in extra:
        rows.append(
            f"<tr><th>{e(name)}</th><td>(not a knowledge of dpriv attack)</td><td>{e(name)}</td></tr>"
        )
    return (
        '<table id="knowledge" class="policy"><thead><tr><th>knowledge</th><th>the adversary...</th>'
        f"<th>results here</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<p class="note">{e(GAIN_TEXT)}</p>'
    )


def gains_table(results: AttackResults) -> str:
    """Largest gain, its release, the mean gain and the releases attacked per knowledge
    (``gains`` table); a knowledge whose results miss releases of the ledger has them in red."""
    rows = []
    for name, frame in results.curves.items():
        g = frame["adversary_gain"]
        worst = frame.loc[g.idxmax()] if g.notna().any() else None
        stale = "fail" if results.missing(name) else ""
        rows.append(
            f'<tr title="{e(describe_knowledge(name))}"><th>{e(name)}</th>'
            f"{cell(None if worst is None else float(worst['adversary_gain']))}"
            f"{cell(None if worst is None else int(worst['release']))}"
            f"{cell(float(g.mean()) if g.notna().any() else None)}"
            f"{cell(results.coverage(name), cls=stale)}</tr>"
        )
    return (
        '<table id="gains"><thead><tr><th>knowledge</th><th>largest gain</th><th>at release</th>'
        f"<th>mean gain</th><th>releases attacked</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def retro_table(results: AttackResults) -> str:
    """The retrospective adversary's results (``retro-gains`` table): per knowledge and as-of
    release, the largest gain over the releases attacked again then, its release, and the mean
    gain (:func:`dpriv.report.tail.retro_results`); an as-of release of the ledger without
    results is a row that says it is missing."""
    rows = []
    for name, frame in results.retros.items():
        title = e(describe_knowledge(name))
        parts = dict(tuple(frame.groupby("as_of", sort=True)))
        for as_of in sorted({*parts, *range(1, results.held + 1)}):
            head = f'<tr title="{title}"><th>{e(name)}</th>{cell(int(as_of))}'
            if as_of not in parts:
                rows.append(
                    f'{head}<td colspan="3" class="fail">missing: not attacked as of this release</td></tr>'
                )
                continue
            part = parts[as_of]
            g = part["adversary_gain"]
            worst = part.loc[g.idxmax()] if g.notna().any() else None
            rows.append(
                f"{head}{cell(None if worst is None else float(worst['adversary_gain']))}"
                f"{cell(None if worst is None else int(worst['release']))}"
                f"{cell(float(g.mean()) if g.notna().any() else None)}</tr>"
            )
    return (
        '<h3 id="retrospective">Retrospective adversary</h3>'
        '<table id="retro-gains"><thead><tr><th>knowledge</th><th>as of release</th><th>largest gain</th>'
        f"<th>at release</th><th>mean gain</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        '<p class="note">The retrospective adversary (attack/retro_&lt;knowledge&gt;.csv, <code>dpriv '
        "attack --adversary retrospective</code>) attacks every release again after each later one, "
        "with all the releases out by then: per as-of release, the largest gain (E10) over the "
        "releases attacked again and their mean.</p>"
    )


def stale_notes(results: AttackResults) -> str:
    """The results that miss releases of the ledger (:meth:`AttackResults.notes`), as a list
    above the gains (``stale-results``); ``""`` when every result covers every release."""
    notes = results.notes()
    if not notes:
        return ""
    texts = [_CODE.sub(r"<code>\1</code>", e(n[0].upper() + n[1:])) for n in notes]  # `cmd` as code
    items = "".join(f"<li>{t}.</li>" for t in texts)
    return (
        '<div class="stale" id="stale-results"><p>Out of date: the ledger holds '
        f"{results.held} release(s) and these results miss some of them (re-run <code>dpriv "
        f"report</code> after the attack):</p><ul>{items}</ul></div>"
    )


def tail_section(tails: Mapping[str, pd.DataFrame], defender: pd.DataFrame) -> str:
    """The tail-risk plot (paper / retrospective adversaries, the defender's own posteriors)
    and what it shows; a note on how to get the attack results when there are none."""
    parts = ['<h3 id="tail-risk">Tail risk: respondents named with 90 % confidence</h3>']
    has_defender = bool(defender["confident_share"].notna().any())
    if tails or has_defender:
        parts.append(
            img(
                plot_tail(tails, defender if has_defender else None),
                "mean gain and share of tuples at posterior >= 0.9 per release",
            )
        )
    parts.append(f'<p class="note">{e(TAIL_TEXT)}</p>')
    if has_defender:  # a drill: the highest line, and the page never said what it was
        parts.append(f'<p class="note" id="defender-tail">{e(DEFENDER_TEXT)}</p>')
    if not tails:
        parts.append(
            '<p class="note" id="tail-missing">No adversary tail yet: <code>dpriv attack LEDGER '
            f"--history HISTORY --knowledge dk</code> writes confident_share into {GAIN_DK}; re-run "
            "<code>dpriv report</code>.</p>"
        )
    return "".join(parts)

"""The report page: HTML of the policy, releases, privacy, utility and gain sections,
written atomically (see :mod:`dpriv.report`)."""

from __future__ import annotations

import datetime as _dt
import html
import math
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpriv.criteria import GUARANTEES, breaks
from dpriv.io import atomic_write
from dpriv.ledger import Ledger
from dpriv.report.plots import _png_uri, plot_gains, plot_privacy, plot_utility
from dpriv.report.tables import (
    ATTACK_DIR,
    RELEASE_COLUMNS,
    _j_unit,
    _ledger,
    _stored_policy,
    gain_curves,
    policy_summary,
    release_frame,
)
from dpriv.report.tail import plot_tail, tail_curves

# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Plots (matplotlib Figure objects, no pyplot: the caller's backend is left alone)
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;max-width:1150px;
color:#222;padding:0 1em}
h1{font-size:1.6em;border-bottom:2px solid #4f81bd;padding-bottom:.2em}
h2{font-size:1.25em;margin-top:1.8em;color:#2c4f7c}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.2em .45em;text-align:right}
th{background:#eef2f8}
table.policy td,table.policy th{text-align:left}
td.fail{background:#fbe3e3}
img{max-width:100%;height:auto;display:block;margin:.6em 0}
p.note{color:#555;font-size:.9em}
"""


def _fmt(value: Any, digits: int = 4) -> str:
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


def _cell(value: Any, *, digits: int = 4, cls: str = "") -> str:
    e = html.escape
    if value is None or isinstance(value, bool | numbers.Integral):
        raw = "" if value is None else str(value)
    elif isinstance(value, numbers.Real):
        raw = repr(float(value))
    else:
        raw = str(value)
    klass = f' class="{e(cls)}"' if cls else ""
    return f'<td{klass} data-value="{e(raw)}">{e(_fmt(value, digits))}</td>'


def _breaks(col: str, val: Any, policy: dict[str, Any]) -> bool:
    """Whether an achieved value breaks the policy threshold that its method guarantees
    (:data:`dpriv.criteria.GUARANTEES`; a red cell in the table)."""
    if col not in GUARANTEES.get(policy.get("method", "jsreduce"), ("k",)):
        return False
    return breaks(col, val, policy.get(col))


def _release_table(releases: pd.DataFrame, policy: dict[str, Any]) -> str:
    e = html.escape
    cols = [c for c in RELEASE_COLUMNS if not (c[0] == "kpr" and releases["kpr"].isna().all())]
    head = "".join(f'<th data-key="{e(key)}">{e(text)}</th>' for _, key, text in cols)
    body = []
    for row in releases.to_dict("records"):
        cells = []
        for col, _key, _ in cols:
            val = row[col]
            if isinstance(val, float) and val.is_integer() and col in ("groups", "released", "suppressed"):
                val = int(val)
            fail = _breaks(col, val, policy)
            digits = 2 if col == "seconds" else 4
            cells.append(_cell(val, digits=digits, cls="fail" if fail else ""))
        body.append(f'<tr data-release="{int(row["release"])}">' + "".join(cells) + "</tr>")
    return f'<table id="releases"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _img(fig, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="{_png_uri(fig)}">'


def render_report(
    ledger: Ledger | str | Path,
    *,
    gains: Mapping[str, pd.DataFrame] | None = None,
    title: str | None = None,
) -> str:
    """The report page of :func:`write_report` as a string (nothing written).

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    gains : mapping knowledge name -> DataFrame, optional
        Adversary gains (see :func:`gain_curves`).
    title : str, optional
        Page title; default "dpriv release report: <ledger folder name>".

    Returns
    -------
    str
        A complete HTML5 document.
    """
    e = html.escape
    led = _ledger(ledger)
    policy = _stored_policy(led)
    releases = release_frame(led)
    curves = gain_curves(led, gains)
    title = title or f"dpriv release report: {led.root.resolve().name}"
    j_unit = _j_unit(float(policy.get("log_base", 2.0)))
    n = len(releases)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # No external resource may load, even by accident (images are data: URIs).
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">",
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p class="note">{n} committed release(s); generated {e(_dt.date.today().isoformat())} by '
        "<code>dpriv report</code> from the public files of the ledger (manifest.json, policy.json, "
        "releases/&lt;i&gt;/metrics.json, attack/). The sensitive <code>state/</code> folder is not "
        "read.</p>",
        '<h2 id="policy">Policy</h2>',
        '<table class="policy">'
        + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in policy_summary(led))
        + "</table>",
        '<h2 id="releases-heading">Releases</h2>',
    ]
    if n == 0:
        parts.append('<p class="note">The ledger holds no committed release yet.</p>')
    else:
        parts += [
            f'<div style="overflow-x:auto">{_release_table(releases, policy)}</div>',
            '<p class="note">Released and suppressed tuples; suppression: suppressed share of the view. '
            "Achieved values: k, l: smallest QI-group size and smallest number of distinct sensitive "
            f"values in a group; t: largest EMD between a group and the view; j: largest JS divergence "
            f"({e(j_unit)}) within a group's revised background knowledge; average semiperimeter (E11): "
            f"mean normalized QI extent of a group (0 = exact values, {e(str(len(policy.get('qi', []))))} "
            "= whole domains); GCP (E24): global certainty penalty, suppressed tuples counted as fully "
            "generalized"
            + (
                ""
                if releases["kpr"].isna().all()
                else "; KPR (E21): knowledge protection rate of synthetic data drawn from the release"
            )
            + ". A red cell breaks a threshold the method guarantees.</p>",
        ]
    parts.append('<h2 id="privacy">Privacy</h2>')
    if n:
        parts.append(
            _img(
                plot_privacy(
                    releases,
                    t=policy.get("t"),
                    j=policy.get("j"),
                    j_unit=j_unit,
                    enforced=GUARANTEES.get(policy.get("method", "jsreduce"), ()),
                ),
                "achieved t and j per release against their thresholds",
            )
        )
    parts.append('<h2 id="utility">Utility</h2>')
    if n:
        parts.append(
            _img(
                plot_utility(releases, m=len(policy.get("qi", [])) or None),
                "suppression rate and average semiperimeter per release",
            )
        )
    parts.append('<h2 id="adversary-gain">Adversary gain</h2>')
    if curves:
        parts.append(_img(plot_gains(curves), "adversary gain per release for each adversary knowledge"))
        rows = []
        for name, frame in curves.items():
            g = frame["adversary_gain"]
            worst = frame.loc[g.idxmax()] if g.notna().any() else None
            rows.append(
                f"<tr><th>{e(name)}</th>{_cell(None if worst is None else float(worst['adversary_gain']))}"
                f"{_cell(None if worst is None else int(worst['release']))}"
                f"{_cell(float(g.mean()) if g.notna().any() else None)}</tr>"
            )
        parts.append(
            '<table id="gains"><thead><tr><th>knowledge</th><th>largest gain</th><th>at release</th>'
            f"<th>mean gain</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            '<p class="note">Adversary gain (E10): mean over the released tuples of the posterior on the '
            "true sensitive value minus its frequency in the QI-group. Read it next to the suppression: "
            "suppressed tuples do not enter it.</p>"
        )
    else:
        parts.append(
            '<p class="note">No attack results. Run <code>dpriv attack LEDGER --history HISTORY '
            "--knowledge dk --out LEDGER/attack/gain_dk.csv</code> (one file per knowledge) and "
            "re-run <code>dpriv report</code>.</p>"
        )
    tails = tail_curves(led.root / ATTACK_DIR)
    if tails:
        parts.append('<h3 id="tail-risk">Paper vs retrospective adversary, tail risk</h3>')
        parts.append(
            _img(plot_tail(tails), "mean gain and confident share per release, paper vs retrospective")
        )
        parts.append(
            '<p class="note">Solid: the paper adversary, each release attacked when it comes out '
            "(<code>attack/gain_&lt;knowledge&gt;.csv</code>); dashed: the retrospective adversary, "
            "each release attacked again after the last one (<code>dpriv attack --adversary "
            "retrospective --out LEDGER/attack/retro_&lt;knowledge&gt;.csv</code>). Right: share of "
            "the released tuples whose posterior on the true value is at least 0.9 (the mean hides "
            "them); the CSV files give the precision of those claims and the certain deductions.</p>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(
    ledger: Ledger | str | Path,
    out_html: str | Path,
    *,
    gains: dict[str, pd.DataFrame] | None = None,
) -> Path:
    """Write the self-contained HTML report of a ledger (see the module doc).

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    out_html : str or Path
        The page to write (its folder is created); overwritten atomically.
    gains : dict knowledge name -> DataFrame, optional
        Adversary gains per release (columns ``release``, ``adversary_gain``, e.g. the
        frames returned by :func:`dpriv.attack.attack`); merged with the
        ``attack/gain_<knowledge>.csv`` files of the ledger (passed frames win).

    Returns
    -------
    Path
        ``out_html``.

    Raises
    ------
    LedgerError
        ``ledger`` is not a ledger.
    InputError
        The ledger has no policy yet, or a gain / KPR table lacks its columns.
    """
    page = render_report(ledger, gains=gains)
    out = Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, page.encode("utf-8"), mode=None)
    return out

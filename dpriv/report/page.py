"""The report page: HTML of the policy, verdict, releases, privacy, utility, KPR and gain
sections, written atomically (see :mod:`dpriv.report`)."""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import pandas as pd

from dpriv.attack_files import results_folder
from dpriv.criteria import breaks, promised
from dpriv.io import atomic_write, made_folder
from dpriv.ledger import Ledger
from dpriv.path_args import path_arguments
from dpriv.report.coverage import GAIN_ANY, GAIN_DK, attack_results
from dpriv.report.explain import percent, report_title, verdicts
from dpriv.report.plots import plot_gains, plot_privacy, plot_utility
from dpriv.report.reference import reference_kprs
from dpriv.report.sections import (
    cell,
    gains_table,
    img,
    knowledge_section,
    kpr_section,
    retro_table,
    stale_notes,
    tail_section,
    verdict_section,
)
from dpriv.report.tables import (
    RELEASE_COLUMNS,
    as_ledger,
    defender_tail,
    j_unit_name,
    policy_summary,
    release_frame,
    released_policy,
)
from dpriv.report.tail import tail_curves

#: The page's sections (``<h2>``), in order.
HEADINGS = ("Policy", "Verdict", "Releases", "Privacy", "Utility", "KPR", "Adversary gain")

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
div.stale{background:#fff4d6;border-left:4px solid #d9a400;padding:.3em .8em;font-size:.9em}
"""


def _breaks(col: str, val: Any, policy: dict[str, Any]) -> bool:
    """Whether an achieved value breaks the policy threshold that its method guarantees
    (:func:`dpriv.criteria.promised`; a red cell in the table)."""
    if col not in promised(policy.get("method", "jsreduce"), policy.get("rbk_closeness")):
        return False
    return breaks(col, val, policy.get(col))


#: Columns of the Releases table that count (tuples, groups, members): shown as integers.
_COUNTS = ("respondents", "groups", "released", "suppressed", "k", "l", "regroupings", "withheld")


def _release_table(releases: pd.DataFrame, policy: dict[str, Any]) -> str:
    e = html.escape
    # KPR not computed, or no release gate: no empty columns
    optional = ("kpr", "kpr_reference", "retro_gain", "regroupings", "withheld", "rbk_closeness")
    skip = {c for c in optional if releases[c].isna().all()}
    cols = [c for c in RELEASE_COLUMNS if c[0] not in skip]
    head = "".join(f'<th data-key="{e(key)}">{e(text)}</th>' for _, key, text in cols)
    body = []
    for row in releases.to_dict("records"):
        cells = []
        for col, _key, _ in cols:
            val = row[col]
            if isinstance(val, float) and val.is_integer() and col in _COUNTS:
                val = int(val)  # a column with a missing value (NaN: "-") is float
            fail = _breaks(col, val, policy)
            if col == "suppression":  # one unit everywhere: percent of the view's tuples
                pct = None if val is None else 100 * float(val)
                over = (
                    val is not None
                    and policy.get("max_suppression") is not None
                    and (float(val) > float(policy["max_suppression"]) + 1e-12)
                )
                cells.append(cell(pct, text=percent(val), cls="fail" if over else ""))
                continue
            digits = 2 if col == "seconds" else 4
            cells.append(cell(val, digits=digits, cls="fail" if fail else ""))
        body.append(f'<tr data-release="{int(row["release"])}">' + "".join(cells) + "</tr>")
    return f'<table id="releases"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _history_reference(
    led: Ledger, history: pd.DataFrame | dd.DataFrame | str | Path | None
) -> dict[int, float] | None:
    return None if history is None else reference_kprs(led, history)


def render_report(
    ledger: Ledger | str | Path,
    *,
    gains: Mapping[str, pd.DataFrame] | None = None,
    title: str | None = None,
    history: pd.DataFrame | dd.DataFrame | str | Path | None = None,
    attack_dir: str | Path | None = None,
) -> str:
    """The report page of :func:`write_report` as a string (nothing written).

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    gains : mapping knowledge name -> DataFrame, optional
        Adversary gains (see :func:`gain_curves`).
    title : str, optional
        Page title; default from the policy (:func:`dpriv.report.explain.report_title`: its
        ``title``, else the sensitive attribute, the QIs, the method and the thresholds it enforces).
    history : pandas or Dask DataFrame or path, optional
        The original history: the KPR reference line (each view against itself,
        :func:`dpriv.report.reference.reference_kprs`) is computed from it.
    attack_dir : str or Path, optional
        Read the attack results (``gain_<knowledge>.csv``, ``retro_<knowledge>.csv``,
        ``kpr.csv``) from this folder instead of the ledger's ``attack/`` (``dpriv attack --out``
        for a ledger one cannot write in), with the same checks (of this ledger's releases).

    Returns
    -------
    str
        A complete HTML5 document with the sections of :data:`HEADINGS`.
    """
    from dpriv.ledger_checks import check_ledger_whole

    e = html.escape
    led = as_ledger(ledger, "render_report")
    check_ledger_whole(led, state=False)  # a damaged ledger (its last view truncated) is refused
    policy = released_policy(led)
    releases = release_frame(led, _history_reference(led, history), attack_dir)
    results = attack_results(led, gains, attack_dir)  # refuses another ledger's results
    folder = results_folder(led, attack_dir)
    curves = results.curves
    title = title or report_title(policy)
    j_unit = j_unit_name(float(policy.get("log_base", 2.0)))
    method = str(policy.get("method", "jsreduce"))
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
        f"releases/&lt;i&gt;/metrics.json, {e(folder.label)}). The sensitive <code>state/</code> folder "
        "is not read"
        + ("; the original history was read for the KPR reference line only" if history is not None else "")
        + ".</p>",
        '<h2 id="policy">Policy</h2>',
        '<table class="policy">'
        + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in policy_summary(led))
        + "</table>",
        '<h2 id="verdict-heading">Verdict</h2>',
        verdict_section(verdicts(releases, policy), method),
        '<h2 id="releases-heading">Releases</h2>',
    ]
    parts += [
        f'<div style="overflow-x:auto">{_release_table(releases, policy)}</div>',
        '<p class="note">Respondents: tuples of the view (one per respondent); released and '
        "suppressed tuples; suppression: suppressed tuples in percent of the view's tuples. "
        "Achieved values: k, l: smallest QI-group size and smallest number of distinct sensitive "
        f"values in a group; t: largest EMD between a group and the view; j: largest JS divergence "
        f"({e(j_unit)}) within a group's revised background knowledge; average semiperimeter (E11): "
        f"mean normalized QI extent of a group (0 = exact values, {e(str(len(policy.get('qi', []))))} "
        "= whole domains); GCP (E24): global certainty penalty, suppressed tuples counted as fully "
        "generalized"
        + (
            ""
            if releases["kpr"].isna().all()
            else "; KPR (E21): knowledge protection rate of synthetic data drawn from the release "
            "(see KPR below)"
        )
        + ". A red cell breaks a threshold the method guarantees (or the suppression limit).</p>",
    ]
    parts.append('<h2 id="privacy">Privacy</h2>')
    parts.append(
        img(
            plot_privacy(
                releases,
                t=policy.get("t"),
                j=policy.get("j"),
                j_unit=j_unit,
                enforced=promised(method, policy.get("rbk_closeness")),
            ),
            "achieved t and j per release against their thresholds",
        )
    )
    parts.append('<h2 id="utility">Utility</h2>')
    parts.append(
        img(
            plot_utility(releases, m=len(policy.get("qi", [])) or None),
            "suppression (percent of the view) and average semiperimeter per release",
        )
    )
    parts += ['<h2 id="kpr">KPR</h2>', kpr_section(releases)]
    retros = results.retros
    parts += ['<h2 id="adversary-gain">Adversary gain</h2>', knowledge_section(curves, tuple(retros))]
    parts.append(stale_notes(results))
    if curves:
        parts.append(img(plot_gains(curves), "adversary gain per release for each adversary knowledge"))
        parts.append(gains_table(results))
    elif retros:
        parts.append(
            '<p class="note" id="paper-missing">No paper-adversary results '
            f"({html.escape(GAIN_ANY)}), only the retrospective adversary's below. <code>dpriv attack "
            f"LEDGER --history HISTORY --knowledge dk</code> writes {GAIN_DK}; re-run <code>dpriv "
            "report</code>.</p>"
        )
    else:
        parts.append(
            '<p class="note">No attack results. Run <code>dpriv attack LEDGER --history HISTORY '
            f"--knowledge dk --out LEDGER/{GAIN_DK}</code> (one file per knowledge) and "
            "re-run <code>dpriv report</code>.</p>"
        )
    if retros:
        parts.append(retro_table(results))
    parts.append(tail_section(tail_curves(folder.path), defender_tail(led)))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


@path_arguments(
    ledgers={"ledger": Ledger}, out_html="the HTML page to write", attack_dir="the folder of attack results"
)
def write_report(
    ledger: Ledger | str | Path,
    out_html: str | Path,
    *,
    gains: dict[str, pd.DataFrame] | None = None,
    title: str | None = None,
    history: pd.DataFrame | dd.DataFrame | str | Path | None = None,
    attack_dir: str | Path | None = None,
) -> Path:
    """Write the self-contained HTML report of a ledger (see the module doc).

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    out_html : str or Path
        The page to write (its folder is created), atomically, and recorded in the folder's
        ``.dpriv-outputs`` (dpriv/output_record.py). An existing file is replaced only when an
        earlier report wrote it and it is unchanged since (``dpriv report --force``'s rule).
    gains : dict knowledge name -> DataFrame, optional
        Adversary gains per release (columns ``release``, ``adversary_gain``, e.g. the
        frames returned by :func:`dpriv.attack.attack`); merged with the
        ``attack/gain_<knowledge>.csv`` files of the ledger (passed frames win).
    title : str, optional
        Page title (default from the policy, see :func:`render_report`).
    history : pandas or Dask DataFrame or path, optional
        The original history, for the KPR reference line (see :func:`render_report`).
    attack_dir : str or Path, optional
        The folder of attack results to read instead of the ledger's ``attack/`` (see
        :func:`render_report`).

    Returns
    -------
    Path
        ``out_html``.

    Raises
    ------
    LedgerError
        ``ledger`` is not a ledger, or its last release is damaged (its view holds another
        count of tuples than its metrics.json records).
    InputError
        The ledger has no policy or no committed release yet, a gain / KPR table lacks its
        columns, or the history lacks the policy's time column or a QI; ``out_html`` does not
        end in .html or .htm, is a folder, lies in a release ledger outside its ``attack/``
        folder, or exists and is not a page an earlier report wrote (or has changed since):
        nothing is written.
    """
    from dpriv.cli.outputs import check_outside_ledger, check_replaceable, check_suffix
    from dpriv.output_record import record_output

    out = Path(out_html)
    check_suffix(out, "report", flag="out_html")  # HTML in a .txt or .csv file: refused
    check_outside_ledger(out, attack=True, flag="out_html")  # a ledger's record: its attack/ only
    # before any work: never another file (write_report has no force: it replaces only its own page)
    check_replaceable(out, "report", force=True, flag="out_html", replacer="write_report")
    page = render_report(ledger, gains=gains, title=title, history=history, attack_dir=attack_dir)
    with made_folder(out.parent):
        atomic_write(out, page.encode("utf-8"), mode=None)
        record_output(out, "report")
    return out

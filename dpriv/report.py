"""An HTML release report of a ledger: one self-contained page a data owner reads before publishing.

The page (:func:`write_report`) has five sections:

* **Policy** -- the ledger's policy (``policy.json``): columns, k, t (with its EMD ground),
  j (with its unit, from ``log_base``), the other release parameters and the knowledge
  sources;
* **Releases** -- one row per committed release from ``releases/<i>/metrics.json``:
  QI-groups, released and suppressed tuples, suppression rate, achieved k, l, t and j,
  average semiperimeter (E11), GCP (E24), KPR (E21) when known, seconds;
* **Privacy** -- achieved t (max EMD) and j (max JS) per release against their thresholds;
* **Utility** -- suppression rate and average semiperimeter per release;
* **Adversary gain** -- the gain (E10) per release of every adversary whose results exist.

Plots are PNG images from matplotlib embedded as base64 ``data:`` URIs; the page loads no
external resource (no script, stylesheet, font or image from elsewhere). Every text taken
from data (column names, values, knowledge names, file names) is escaped. The page never
contains respondent ids: it reads neither ``state/`` (sensitive) nor the released views,
only the public metrics and the adversary-gain tables; and it names files relative to the
ledger, never by absolute path.

Where results that are not in ``metrics.json`` come from (the convention)::

    ledger/attack/gain_<knowledge>.csv   columns release, adversary_gain (n_tuples optional):
                                         the output of ``dpriv attack LEDGER --knowledge
                                         <knowledge> --out LEDGER/attack/gain_<knowledge>.csv``
                                         (or a copy of it)
    ledger/attack/kpr.csv                columns release, kpr (percent, E21): the KPR of
                                         synthetic data drawn from release ``release``

``<knowledge>`` is the adversary's knowledge as given to ``dpriv attack`` (``dk``,
``snapshot``, ``dk-1``, ``ie``...); a ``:`` (``spm:PATH``) is not allowed in a file name,
so name such a file e.g. ``gain_spm.csv``. Gains passed to :func:`write_report` win over a
file of the same knowledge name. A KPR value in ``metrics.json`` (key ``kpr``) wins over
``attack/kpr.csv``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import math
import numbers
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpriv.errors import InputError
from dpriv.ledger import POLICY, Ledger

__all__ = [
    "ATTACK_DIR",
    "RELEASE_COLUMNS",
    "gain_curves",
    "kpr_values",
    "plot_gains",
    "plot_privacy",
    "plot_utility",
    "policy_summary",
    "release_frame",
    "render_report",
    "write_report",
]

#: Folder of a ledger holding attack results (``gain_<knowledge>.csv``, ``kpr.csv``).
ATTACK_DIR = "attack"
_GAIN_FILE = re.compile(r"^gain_(?P<name>[A-Za-z0-9_.+-]+)\.csv$")

#: Columns of :func:`release_frame`: (column, metrics.json key, header text of the report).
RELEASE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("release", "release", "release"),
    ("groups", "n_groups", "QI-groups"),
    ("released", "n_released", "released"),
    ("suppressed", "n_suppressed", "suppressed"),
    ("suppression", "suppression_rate", "suppression"),
    ("k", "k_achieved", "k"),
    ("l", "l_achieved", "l"),
    ("t", "t_achieved", "t (max EMD)"),
    ("j", "j_achieved", "j (max JS)"),
    ("semiperimeter", "average_semiperimeter", "avg semi-perimeter"),
    ("gcp", "gcp", "GCP"),
    ("kpr", "kpr", "KPR (%)"),
    ("seconds", "seconds", "seconds"),
)


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


def _ledger(ledger: Ledger | str | Path) -> Ledger:
    return ledger if isinstance(ledger, Ledger) else Ledger(ledger)


def _stored_policy(led: Ledger) -> dict[str, Any]:
    path = led.root / POLICY
    if not path.is_file():
        raise InputError(f"the ledger has no {POLICY}: nothing has been released into it yet")
    import json

    return json.loads(path.read_text())


def _j_unit(log_base: float) -> str:
    if math.isclose(log_base, 2.0):
        return "bits"
    if math.isclose(log_base, math.e):
        return "nats"
    if math.isclose(log_base, 10.0):
        return "bans (log base 10)"
    return f"log base {log_base:g} units"


def policy_summary(ledger: Ledger | str | Path) -> list[tuple[str, str]]:
    """The ledger's policy as (field, text) pairs, in reading order.

    t is stated with its EMD ground distance (``emd_ground``: ``equal`` -- every pair of
    sensitive values at distance 1 -- or ``ordered`` -- ``|i - j| / (m - 1)`` along the
    domain order) and j with its unit (bits for ``log_base = 2``). Knowledge files given
    by an absolute path are shown by their file name only.

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).

    Returns
    -------
    list of (str, str)
        Unescaped text; :func:`render_report` escapes it.
    """
    p = _stored_policy(_ledger(ledger))
    m = len(p.get("domains", {}).get(p.get("sensitive"), []) or [])
    ground = p.get("emd_ground", "equal")
    ground_text = (
        "equal ground distance (every two distinct values at distance 1)"
        if ground == "equal"
        else "ordered ground distance (|i - j| / (m - 1) along the domain order)"
    )
    log_base = float(p.get("log_base", 2.0))
    rows = [
        ("method", str(p.get("method", "jsreduce"))),
        ("quasi-identifiers", ", ".join(map(str, p.get("qi", [])))),
        ("sensitive attribute", f"{p.get('sensitive')} ({m} values)" if m else str(p.get("sensitive"))),
        ("respondent id column (never released)", str(p.get("id"))),
        ("time column", str(p.get("time"))),
        ("k (QI-group size)", str(p.get("k"))),
        ("t (EMD threshold)", f"{p.get('t')} -- Earth Mover's Distance with the {ground_text}"),
        (
            "j (Jensen-Shannon threshold)",
            f"{p.get('j')} {_j_unit(log_base)} -- JS divergence over the revised background knowledge",
        ),
        ("max_suppression", str(p.get("max_suppression"))),
        ("seed", str(p.get("seed"))),
    ]
    if p.get("method", "jsreduce") == "mondrian-l":
        rows.append(("l (distinct l-diversity)", str(p.get("l"))))
    if p.get("method") == "mondrian-bt":
        rows.append(("(B, t)-privacy", f"b = {p.get('bt_b')}, t = {p.get('bt_t')}"))
    for qi in p.get("qi", []):
        dom = p.get("domains", {}).get(qi)
        if dom is not None:
            rows.append((f"domain of {qi}", _short_list(dom)))
    knowledge = p.get("knowledge") or {}
    if knowledge:
        shown = []
        for key, val in knowledge.items():
            val = str(val)
            if Path(val).is_absolute():
                val = Path(val).name
            shown.append(f"{key} = {val}")
        rows.append(("defender's knowledge sources", "; ".join(shown)))
    return rows


def _short_list(values: list[Any]) -> str:
    text = [str(v) for v in values]
    return "[" + ", ".join(text if len(text) <= 8 else [*text[:4], "...", *text[-2:]]) + "]"


def kpr_values(ledger: Ledger | str | Path) -> dict[int, float]:
    """KPR (percent) per release from ``attack/kpr.csv`` (columns ``release``, ``kpr``).

    Returns an empty dict when the file is absent; raises :class:`InputError` when it
    lacks a column.
    """
    led = _ledger(ledger)
    path = led.root / ATTACK_DIR / "kpr.csv"
    if not path.is_file():
        return {}
    frame = pd.read_csv(path)
    missing = [c for c in ("release", "kpr") if c not in frame.columns]
    if missing:
        raise InputError(f"{ATTACK_DIR}/kpr.csv lacks column(s) {missing}; expected release, kpr (percent)")
    return {int(r): float(v) for r, v in zip(frame["release"], frame["kpr"], strict=True)}


def release_frame(ledger: Ledger | str | Path) -> pd.DataFrame:
    """Per-release metrics of a ledger as read from ``releases/<i>/metrics.json``.

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).

    Returns
    -------
    pandas.DataFrame
        One row per committed release, the columns of :data:`RELEASE_COLUMNS` (``release``,
        ``groups``, ``released``, ``suppressed``, ``suppression``, ``k``, ``l``, ``t``,
        ``j``, ``semiperimeter``, ``gcp``, ``kpr``, ``seconds``); values exactly as stored
        (``seconds`` summed over the steps). ``kpr`` is NaN where unknown (neither in
        ``metrics.json`` nor in ``attack/kpr.csv``); other missing values are None.
    """
    led = _ledger(ledger)
    kprs = kpr_values(led)
    rows = []
    for entry in led.committed():
        i = int(entry["index"])
        m = led.read_metrics(i)
        row = {col: m.get(key) for col, key, _ in RELEASE_COLUMNS}
        row["release"] = i
        if isinstance(row["seconds"], dict):
            row["seconds"] = float(sum(row["seconds"].values()))
        if row["kpr"] is None:
            row["kpr"] = kprs.get(i, math.nan)
        elif isinstance(row["kpr"], dict):  # a KPRResult.as_dict()
            row["kpr"] = row["kpr"].get("kpr", math.nan)
        rows.append(row)
    return pd.DataFrame(rows, columns=[c for c, _, _ in RELEASE_COLUMNS])


def _check_gain(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    missing = [c for c in ("release", "adversary_gain") if c not in frame.columns]
    if missing:
        raise InputError(
            f"adversary gains {where} lack column(s) {missing}; expected release, adversary_gain "
            "(the output of dpriv attack)"
        )
    out = frame[["release", "adversary_gain"]].copy()
    out["release"] = pd.to_numeric(out["release"], errors="raise").astype("int64")
    out["adversary_gain"] = pd.to_numeric(out["adversary_gain"], errors="coerce")
    return out.sort_values("release", kind="stable").reset_index(drop=True)


def gain_curves(
    ledger: Ledger | str | Path, gains: Mapping[str, pd.DataFrame] | None = None
) -> dict[str, pd.DataFrame]:
    """Adversary-gain curves of a ledger: those passed in, then ``attack/gain_<knowledge>.csv``.

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    gains : mapping knowledge name -> DataFrame, optional
        Frames with columns ``release`` and ``adversary_gain`` (the return value of
        :func:`dpriv.attack.attack`); they win over a file of the same name.

    Returns
    -------
    dict
        Knowledge name -> frame (``release``, ``adversary_gain``) sorted by release, names
        in alphabetical order.

    Raises
    ------
    InputError
        A frame or file without the two columns (the file is named relative to the ledger).
    """
    led = _ledger(ledger)
    out: dict[str, pd.DataFrame] = {}
    folder = led.root / ATTACK_DIR
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            match = _GAIN_FILE.match(path.name)
            if match and path.is_file():
                out[match["name"]] = _check_gain(pd.read_csv(path), f"{ATTACK_DIR}/{path.name}")
    for name, frame in (gains or {}).items():
        out[str(name)] = _check_gain(frame, f"passed for {name!r}")
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------------------
# Plots (matplotlib Figure objects, no pyplot: the caller's backend is left alone)
# --------------------------------------------------------------------------------------


def _figure(n: int, height: float = 3.2):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2 * n, height), dpi=100, layout="constrained")
    axes = fig.subplots(1, n, squeeze=False)[0]
    return fig, axes


def _series(frame: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(frame[col], errors="coerce").astype(float)


def plot_utility(releases: pd.DataFrame, *, m: int | None = None):
    """Suppression rate and average semiperimeter (E11) per release (two panels).

    Parameters
    ----------
    releases : pandas.DataFrame
        :func:`release_frame`.
    m : int, optional
        Number of QIs: the semiperimeter's maximum, drawn as a dotted line.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, (a1, a2) = _figure(2)
    x = releases["release"].to_numpy()
    a1.bar(x, 100 * _series(releases, "suppression"), color="#c0504d", width=0.7)
    a1.set(xlabel="release", ylabel="suppressed tuples (%)", title="Suppression per release")
    a1.set_ylim(bottom=0)
    a2.plot(x, _series(releases, "semiperimeter"), marker="o", color="#4f81bd")
    if m:
        a2.axhline(m, ls=":", color="grey", label=f"maximum ({m} QIs)")
        a2.legend(loc="lower right", fontsize=8)
    a2.set(xlabel="release", ylabel="average semiperimeter (E11)", title="Generalization per release")
    a2.set_ylim(bottom=0)
    for ax in (a1, a2):
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    return fig


def plot_privacy(
    releases: pd.DataFrame,
    *,
    t: float | None,
    j: float | None,
    j_unit: str = "bits",
    enforced: tuple[str, ...] = ("t", "j"),
):
    """Achieved t (max EMD) and j (max JS) per release against their thresholds.

    Parameters
    ----------
    releases : pandas.DataFrame
        :func:`release_frame`.
    t, j : float or None
        The policy's thresholds, drawn as dashed lines.
    j_unit : str
        Unit of j for the axis label.
    enforced : tuple of str
        The thresholds the release method guarantees; the others are labelled "not enforced"
        (e.g. t and j for a Mondrian l-diversity baseline).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, (a1, a2) = _figure(2)
    x = releases["release"].to_numpy()
    for ax, col, thr, label, color in (
        (a1, "t", t, "max EMD per release (t achieved)", "#9bbb59"),
        (a2, "j", j, f"max JS per release (j achieved, {j_unit})", "#8064a2"),
    ):
        ax.plot(x, _series(releases, col), marker="o", color=color, label="achieved")
        if thr is not None:
            note = "" if col in enforced else " (not enforced)"
            ax.axhline(thr, ls="--", color="#c0504d", label=f"threshold {thr:g}{note}")
        ax.set(xlabel="release", ylabel=label.split(" per")[0], title=label)
        top = max([v for v in (_series(releases, col).max(), thr) if v is not None and v == v] or [1.0])
        ax.set_ylim(0, 1.15 * top if top > 0 else 1.0)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    return fig


def plot_gains(curves: Mapping[str, pd.DataFrame]):
    """Adversary gain (E10) per release, one line per adversary knowledge.

    Parameters
    ----------
    curves : mapping knowledge name -> DataFrame
        :func:`gain_curves`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, (ax,) = _figure(1, height=3.6)
    fig.set_size_inches(8, 3.6)
    for name, frame in curves.items():
        ax.plot(frame["release"], frame["adversary_gain"], marker="o", label=name)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="release", ylabel="adversary gain (E10)", title="Adversary gain per release")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(title="knowledge", fontsize=8)
    return fig


def _png_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


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


#: Which thresholds a method guarantees (a red cell marks a release that breaks one).
_GUARANTEES = {"jsreduce": ("k", "t", "j"), "mondrian-t": ("k", "t")}


def _breaks(col: str, val: Any, policy: dict[str, Any]) -> bool:
    """Whether an achieved value breaks the policy threshold that its method guarantees."""
    method = policy.get("method", "jsreduce")
    if col not in _GUARANTEES.get(method, ("k",)) or val is None or policy.get(col) is None:
        return False
    if isinstance(val, float) and math.isnan(val):
        return False
    return val < policy[col] if col == "k" else val > policy[col] + 1e-9


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
                    enforced=_GUARANTEES.get(policy.get("method", "jsreduce"), ()),
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
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out

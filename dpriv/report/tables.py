"""The report's data, read from a ledger's public files: the policy, one row per release
(``metrics.json``), KPR values (see :mod:`dpriv.report`); the adversary-gain curves are
:mod:`dpriv.report.gains`' (re-exported here).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpriv.attack_files import KPR_FILE, as_ledger, read_result
from dpriv.errors import InputError
from dpriv.ledger import ATTACK_DIR, POLICY, Ledger  # noqa: F401 (ATTACK_DIR: public here too)
from dpriv.ledger_checks import NOTHING_RELEASED, check_released_any
from dpriv.report.gains import gain_curves  # noqa: F401  (public here too)

#: Columns of :func:`release_frame`: (column, metrics.json key, header text of the report).
RELEASE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("release", "release", "release"),
    ("respondents", "n_original", "respondents"),
    ("groups", "n_groups", "QI-groups"),
    ("released", "n_released", "released"),
    ("suppressed", "n_suppressed", "suppressed"),
    ("suppression", "suppression_rate", "suppression (% of the view)"),
    ("k", "k_achieved", "k"),
    ("l", "l_achieved", "l"),
    ("t", "t_achieved", "t (max EMD)"),
    ("j", "j_achieved", "j (max JS)"),
    ("rbk_closeness", "rbk_closeness_achieved", "RBK-closeness (max TV)"),
    ("semiperimeter", "average_semiperimeter", "avg semi-perimeter"),
    ("gcp", "gcp", "GCP"),
    ("kpr", "kpr", "KPR (%)"),
    ("kpr_reference", "kpr_reference", "KPR of the original itself (%)"),
    ("retro_gain", "gate.max_gain", "retrospective gain as of the release (gate)"),
    ("regroupings", "gate.regroupings", "regroupings by the gate"),
    ("withheld", "gate.n_withheld", "members withheld by the gate (retro_posterior_bound)"),
    ("seconds", "seconds", "seconds"),
)


#: The defenses beyond (k, t, j) a stored policy may set (docs/policy.md), shown when set.
DEFENSE_KEYS = (
    ("grouping", "grouping (scan: Algorithm 2; topdown: splits keeping k, t and j)"),
    ("release_format", "released format"),
    ("exit_values", "exit guard: terminal values"),
    ("posterior_bound", "posterior bound (no kept tuple's Omega posterior reaches it)"),
    ("rbk_closeness", "RBK-closeness (largest total variation of a group from its members' mean prior)"),
    ("retro_max_gain", "release gate: largest retrospective mean gain"),
    ("retro_posterior_bound", "release gate: retrospective posterior bound (members over it withheld)"),
    ("retro_attendance", "release gate: attendance its adversary assumes"),
    ("small_view", "views of fewer than k tuples (suppress: released fully suppressed)"),
)
#: Values of those keys that mean "off" (the library's defaults).
_OFF = (None, [], "scan", "generalized", "refuse")


def _defense_rows(p: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of each :data:`DEFENSE_KEYS` entry set in stored policy ``p``."""
    return [(label, str(p[key])) for key, label in DEFENSE_KEYS if p.get(key) not in _OFF]


def _entry(metrics: dict[str, Any], key: str) -> Any:
    """``metrics[key]``; ``"gate.max_gain"`` reads a nested record (the release gate's,
    dpriv/gate.py: its largest gain over releases 1..i as of i). None when absent."""
    outer, _, inner = key.partition(".")
    value = metrics.get(outer)
    if inner:
        return value.get(inner) if isinstance(value, dict) else None
    return value


def check_columns(frame: object, columns: tuple[str, ...], function: str, source: str) -> None:
    """InputError unless ``frame`` is a DataFrame holding ``columns`` (a plot or page helper
    given another object, or an empty frame); ``source`` says where such a frame comes from."""
    missing = list(columns) if not isinstance(frame, pd.DataFrame) else [c for c in columns if c not in frame]
    if missing:
        what = f"a {type(frame).__name__}" if not isinstance(frame, pd.DataFrame) else "a frame"
        raise InputError(f"{function}() takes {source}, not {what} without column(s) {missing}")


def released_policy(led: Ledger) -> dict[str, Any]:
    """The ledger's policy.json; InputError when it has none, or no committed release."""
    path = led.root / POLICY
    if not path.is_file():
        raise InputError(f"the ledger has no {POLICY}: {NOTHING_RELEASED}")
    check_released_any(led)
    return led.stored_policy()


def j_unit_name(log_base: float) -> str:
    """The unit of a JS divergence in ``log_base`` as the page prints it (``bits``, ``nats``, ...)."""
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
    p = released_policy(as_ledger(ledger, "policy_summary"))
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
            f"{p.get('j')} {j_unit_name(log_base)} -- JS divergence over the revised background knowledge",
        ),
        ("max_suppression", _max_suppression(p.get("max_suppression"))),
        ("seed", str(p.get("seed"))),
    ]
    rows += _defense_rows(p)
    if p.get("method", "jsreduce") == "mondrian-l":
        rows.append(("l (distinct l-diversity)", str(p.get("l"))))
    if p.get("method") == "mondrian-bt":
        rows.append(("(B, t)-privacy", f"b = {p.get('bt_b')}, t = {p.get('bt_t')}"))
    for qi in p.get("qi", []):
        dom = p.get("domains", {}).get(qi)
        if dom is not None:
            rows.append((f"domain of {qi}", _short_list(dom)))
        tree = (p.get("hierarchies") or {}).get(qi)
        if tree is not None:  # released as the group's lowest common node of this hierarchy
            text = f"{Path(str(tree)).name} (released as a group's lowest common node)"
            rows.append((f"hierarchy of {qi}", text))
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


def _max_suppression(limit: Any) -> str:
    """The suppression limit in the report's one unit: percent of the view's tuples."""
    if limit is None:
        return "None"
    return f"{100 * float(limit):g} % of the view's tuples per release"


def _short_list(values: list[Any]) -> str:
    text = [str(v) for v in values]
    return "[" + ", ".join(text if len(text) <= 8 else [*text[:4], "...", *text[-2:]]) + "]"


def kpr_values(
    ledger: Ledger | str | Path, column: str = "kpr", attack_dir: str | Path | None = None
) -> dict[int, float]:
    """KPR (percent) per release from ``attack/kpr.csv`` (``attack_dir``/kpr.csv when given;
    columns ``release``, ``kpr``, and optionally ``kpr_reference``: the KPR of the original view
    against itself).

    ``column`` is ``"kpr"`` or ``"kpr_reference"``. Returns an empty dict when the file (or
    the optional ``kpr_reference`` column) is absent; raises :class:`InputError` when it
    lacks ``release`` or ``kpr``.
    """
    from dpriv.attack_files import results_folder

    led = as_ledger(ledger, "kpr_values")
    folder, label = results_folder(led, attack_dir)
    path = folder / KPR_FILE
    if not path.is_file():
        return {}
    where = f"{label}{KPR_FILE}"
    frame = read_result(path, ["release", "kpr"], where, optional=(column,))
    if column not in frame.columns:  # a kpr.csv without the optional kpr_reference
        return {}
    return {int(r): float(v) for r, v in zip(frame["release"], frame[column], strict=True)}


def release_frame(
    ledger: Ledger | str | Path,
    reference: Mapping[int, float] | None = None,
    attack_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Per-release metrics of a ledger as read from ``releases/<i>/metrics.json``.

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    reference : mapping release -> float, optional
        KPR (percent) of each original view against itself
        (:func:`dpriv.report.reference.reference_kprs`); wins over ``attack/kpr.csv``.
    attack_dir : str or Path, optional
        The folder whose ``kpr.csv`` is read instead of ``attack/kpr.csv``.

    Returns
    -------
    pandas.DataFrame
        One row per committed release, the columns of :data:`RELEASE_COLUMNS` (``release``,
        ``respondents`` (the view's tuples ``n_original``: one per respondent), ``groups``,
        ``released``, ``suppressed``, ``suppression`` (a share in [0, 1]), ``k``, ``l``, ``t``, ``j``,
        ``rbk_closeness`` (None without the bound), ``semiperimeter``, ``gcp``, ``kpr``,
        ``kpr_reference``, ``retro_gain`` (the release gate's largest retrospective gain as of the
        release, None without a gate), ``regroupings`` (how many times the gate regrouped the release:
        int, None without a gate), ``withheld`` (members the gate withheld under
        ``retro_posterior_bound``: int, None without a gate or in a ledger written before it existed),
        ``seconds``); values exactly as stored (``seconds`` summed over the steps). ``kpr`` and
        ``kpr_reference`` are NaN where unknown (neither in ``metrics.json`` nor in ``attack/kpr.csv``
        nor passed); other missing values are None.
    """
    led = as_ledger(ledger, "release_frame")
    held = {int(r["index"]) for r in led.committed()}
    if reference is not None and not (
        isinstance(reference, Mapping)
        and all(
            k in held and isinstance(v, numbers.Real) and not isinstance(v, bool)
            for k, v in reference.items()
        )
    ):
        raise InputError(
            f"reference is a mapping release -> KPR (percent), e.g. reference_kprs(...), over the "
            f"releases of the ledger (1..{max(held, default=0)}), not {reference!r}"
        )
    kprs = kpr_values(led, attack_dir=attack_dir)
    refs = {**kpr_values(led, "kpr_reference", attack_dir), **(reference or {})}
    rows = []
    for entry in led.committed():
        i = int(entry["index"])
        m = led.read_metrics(i)
        row = {col: _entry(m, key) for col, key, _ in RELEASE_COLUMNS}
        row["release"] = i
        if isinstance(row["seconds"], dict):
            row["seconds"] = float(sum(row["seconds"].values()))
        if row["kpr"] is None:
            row["kpr"] = kprs.get(i, math.nan)
        elif isinstance(row["kpr"], dict):  # a KPRResult.as_dict()
            row["kpr"] = row["kpr"].get("kpr", math.nan)
        if i in refs:
            row["kpr_reference"] = refs[i]
        elif row["kpr_reference"] is None:
            row["kpr_reference"] = math.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=[c for c, _, _ in RELEASE_COLUMNS])


def defender_tail(ledger: Ledger | str | Path) -> pd.DataFrame:
    """The defender's own tail per release from ``metrics.json`` (``confident_share``:
    share of the kept tuples whose defender posterior on the true value is >= 0.9).

    Returns a frame with columns ``release`` (int64) and ``confident_share`` (float64, NaN
    where undefined or not recorded), one row per committed release.
    """
    led = as_ledger(ledger, "defender_tail")
    rows = []
    for entry in led.committed():
        i = int(entry["index"])
        share = led.read_metrics(i).get("confident_share")
        rows.append((i, math.nan if share is None else float(share)))
    return pd.DataFrame(rows, columns=["release", "confident_share"]).astype(
        {"release": "int64", "confident_share": "float64"}
    )

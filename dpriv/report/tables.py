"""The report's data, read from a ledger's public files: the policy, one row per release
(``metrics.json``), KPR values and adversary-gain curves (see :mod:`dpriv.report`).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpriv.attack_files import read_result
from dpriv.attack_stamp import check_same_releases, read_stamps
from dpriv.errors import InputError
from dpriv.ledger import ATTACK_DIR, POLICY, Ledger
from dpriv.release_check import NOTHING_RELEASED, check_released_any
from dpriv.report.coverage import NOT_OURS, check_held

_GAIN_FILE = re.compile(r"^gain_(?P<name>[A-Za-z0-9_.+-]+)\.csv$")


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


def _ledger(ledger: Ledger | str | Path) -> Ledger:
    return ledger if isinstance(ledger, Ledger) else Ledger(ledger)


def check_columns(frame: object, columns: tuple[str, ...], function: str, source: str) -> None:
    """InputError unless ``frame`` is a DataFrame holding ``columns`` (a plot or page helper
    given another object, or an empty frame); ``source`` says where such a frame comes from."""
    missing = list(columns) if not isinstance(frame, pd.DataFrame) else [c for c in columns if c not in frame]
    if missing:
        what = f"a {type(frame).__name__}" if not isinstance(frame, pd.DataFrame) else "a frame"
        raise InputError(f"{function}() takes {source}, not {what} without column(s) {missing}")


def _stored_policy(led: Ledger) -> dict[str, Any]:
    """The ledger's policy.json; InputError when it has none, or no committed release."""
    path = led.root / POLICY
    if not path.is_file():
        raise InputError(f"the ledger has no {POLICY}: {NOTHING_RELEASED}")
    check_released_any(led)
    return led.stored_policy()


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


def kpr_values(ledger: Ledger | str | Path, column: str = "kpr") -> dict[int, float]:
    """KPR (percent) per release from ``attack/kpr.csv`` (columns ``release``, ``kpr``, and
    optionally ``kpr_reference``: the KPR of the original view against itself).

    ``column`` is ``"kpr"`` or ``"kpr_reference"``. Returns an empty dict when the file (or
    the optional ``kpr_reference`` column) is absent; raises :class:`InputError` when it
    lacks ``release`` or ``kpr``.
    """
    led = _ledger(ledger)
    path = led.root / ATTACK_DIR / "kpr.csv"
    if not path.is_file():
        return {}
    where = f"{ATTACK_DIR}/kpr.csv"
    frame = read_result(path, ["release", "kpr"], where, optional=(column,))
    if column not in frame.columns:  # a kpr.csv without the optional kpr_reference
        return {}
    return {int(r): float(v) for r, v in zip(frame["release"], frame[column], strict=True)}


def release_frame(ledger: Ledger | str | Path, reference: Mapping[int, float] | None = None) -> pd.DataFrame:
    """Per-release metrics of a ledger as read from ``releases/<i>/metrics.json``.

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    reference : mapping release -> float, optional
        KPR (percent) of each original view against itself
        (:func:`dpriv.report.reference.reference_kprs`); wins over ``attack/kpr.csv``.

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
    led = _ledger(ledger)
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
    kprs = kpr_values(led)
    refs = {**kpr_values(led, "kpr_reference"), **(reference or {})}
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
    led = _ledger(ledger)
    rows = []
    for entry in led.committed():
        i = int(entry["index"])
        share = led.read_metrics(i).get("confident_share")
        rows.append((i, math.nan if share is None else float(share)))
    return pd.DataFrame(rows, columns=["release", "confident_share"]).astype(
        {"release": "int64", "confident_share": "float64"}
    )


def checked_gains(gains: object, where: str) -> dict[str, pd.DataFrame]:
    """``gains`` (knowledge name -> the frame :func:`dpriv.attack.attack` returns) checked
    and each in release order (:func:`_check_gain`); InputError for anything else."""
    if not isinstance(gains, Mapping):
        raise InputError(
            f"the adversary gains {where} must be a mapping knowledge name -> DataFrame (the frames "
            f"attack() returns), not a {type(gains).__name__}"
        )
    out = {}
    for name, frame in gains.items():
        if not isinstance(frame, pd.DataFrame):
            raise InputError(
                f"the adversary gains {where} for {name!r} are a {type(frame).__name__}, not a DataFrame: "
                "pass the frame attack() returns (read a saved gain CSV with pandas.read_csv)"
            )
        out[str(name)] = _check_gain(frame, f"{where} for {name!r}")
    return out


def _check_gain(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """A gain frame passed in (``release``: whole numbers >= 1, ``adversary_gain``: numbers in
    [-1, 1] (E10: a mean posterior minus a frequency) or blank), in release order."""
    missing = [c for c in ("release", "adversary_gain") if c not in frame.columns]
    if missing:
        raise InputError(
            f"adversary gains {where} lack column(s) {missing}; expected release, adversary_gain "
            "(the output of dpriv attack)"
        )
    if frame.columns.duplicated().any():
        raise InputError(
            f"adversary gains {where}: the columns must be named once, not {list(frame.columns)}"
        )
    if pd.api.types.is_bool_dtype(frame["release"]):
        raise InputError(
            f"adversary gains {where}: release must hold release indices 1, 2, ..., not booleans"
        )
    kept = ["release", "adversary_gain", *(["histogram_gain"] if "histogram_gain" in frame else [])]
    out = frame[kept].apply(pd.to_numeric, errors="coerce")
    release, gain = out["release"], out["adversary_gain"]
    if release.duplicated().any():
        raise InputError(
            f"adversary gains {where} hold release {int(release[release.duplicated()].iloc[0])} twice: a "
            "gain curve has one row per release (of a retrospective attack, keep as_of == its last release)"
        )
    bad = release.isna() | (release % 1 != 0) | (release < 1)
    for col in kept[1:]:  # the gain and, when given, its histogram level
        bad |= frame[col].notna() & ~out[col].between(-1.0, 1.0)
    if bad.any():
        row = int(bad.to_numpy().argmax())
        release, gain = (frame[c].iloc[[row]].tolist()[0] for c in ("release", "adversary_gain"))
        raise InputError(
            f"adversary gains {where}: row {row} holds release {release!r}, gain {gain!r}; a release "
            "is a whole number >= 1 and a gain a number in [-1, 1] (or blank)"
        )
    return _in_release_order(out.astype({"release": "int64"}).astype({c: "float64" for c in kept[1:]}))


def _in_release_order(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("release", kind="stable").reset_index(drop=True)


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
        Knowledge name -> frame (``release``, ``adversary_gain``, and ``histogram_gain`` where
        the attack wrote it) sorted by release, names in alphabetical order.

    Raises
    ------
    InputError
        A frame or file without the two columns (the file is named relative to the ledger), or
        naming a release the ledger does not hold (:func:`dpriv.report.coverage.check_held`).
    """
    led = _ledger(ledger)
    out: dict[str, pd.DataFrame] = {}
    folder = led.root / ATTACK_DIR
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            match = _GAIN_FILE.match(path.name)
            if match and path.is_file():
                where = f"{ATTACK_DIR}/{path.name}"
                out[match["name"]] = _in_release_order(
                    read_result(path, ["release", "adversary_gain"], where, optional=("histogram_gain",))
                )
    raw = {} if gains is None else gains
    passed = checked_gains(raw, "passed")
    held = len(led.committed())
    for name, frame in out.items():  # a file of another ledger's releases is refused
        if name not in passed:
            where = f"the results in {ATTACK_DIR}/gain_{name}.csv"
            check_held(frame, held, led.root, where, NOT_OURS)
            check_same_releases(read_stamps(folder / f"gain_{name}.csv"), led, where, NOT_OURS)
    for name, frame in passed.items():
        fix = "attack this ledger, or pass the gains of its own releases"
        check_held(frame, held, led.root, f"the gains of {name!r}", fix)
        check_same_releases(raw[name] if name in raw else frame, led, f"the gains of {name!r}", fix)
    return dict(sorted({**out, **passed}.items()))

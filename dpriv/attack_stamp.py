"""Attack results tied to the releases they were computed on.

A gain of release r depends on releases 1..r (the adversary's knowledge is revised by each);
a retrospective row (release r as of a) on releases 1..a. :func:`dpriv.attack.attack` (so
``dpriv attack``) and :func:`dpriv.attack.save_gain` give each row its :data:`STAMP`: a digest
of the manifest's entries (``input_sha``, ``view_sha256``) of those releases. ``dpriv report``,
``render_report(gains=...)`` and ``save_gain`` recompute it from the ledger and refuse a result
whose rows were computed on other releases: another ledger's file copied into ``attack/`` or
frame passed in, or a ledger made again since the attack with other data; a blank stamp is
refused as missing. A result without the column (written by an older dpriv, or by hand) is
checked by its ``n_tuples`` against each release's ``n_released`` instead. A row naming a
release the ledger does not hold is refused before that (:func:`check_held`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.errors import InputError
from dpriv.ledger import Ledger

#: Column of an attack result: 16 hex digits of the releases the row was computed on.
STAMP = "views_sha"

#: What to do about gains passed in Python whose rows carry no stamp.
RESTAMP = (
    "run the attack on this ledger again (dpriv.attack.attack, or dpriv attack, stamps every row) "
    "and pass its result as returned"
)


def prefix_digests(led: Ledger) -> dict[int, str]:
    """Release index -> :data:`STAMP` of releases 1..index of ``led`` (committed only)."""
    out, chain = {}, hashlib.sha256()
    for entry in led.committed():
        fields = {k: entry.get(k, "") for k in ("index", "input_sha", "view_sha256")}
        chain.update(json.dumps(fields, sort_keys=True).encode())
        out[int(entry["index"])] = chain.copy().hexdigest()[:16]
    return out


def _last(frame: pd.DataFrame) -> pd.Series:
    """Each row's last release it depends on (``as_of`` of a retrospective row, else
    ``release``), as numbers (NaN where it is not one)."""
    return pd.to_numeric(frame["as_of"] if "as_of" in frame else frame["release"], errors="coerce")


def stamped(frame: pd.DataFrame, led: Ledger | str | Path) -> pd.DataFrame:
    """``frame`` (an attack result of ``led``, a Ledger or its folder) with its :data:`STAMP`
    column (text; replaced where it is, else the last column); ``""`` on a row naming a release
    ``led`` does not hold."""
    digests = prefix_digests(led if isinstance(led, Ledger) else Ledger(led))
    stamps = pd.Series([digests.get(int(r), "") for r in _last(frame)], index=frame.index, dtype=str)
    return frame.assign(**{STAMP: stamps})


def _as_text(stamps: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(the stamps as text, blank or missing) of a :data:`STAMP` column, both shape (n,). A
    column of numbers (a CSV read without ``dtype=str`` whose every stamp was decimal digits)
    has its leading zeros back."""
    blank = stamps.isna().to_numpy() | (stamps.astype(str).str.strip() == "").to_numpy()
    text = stamps.astype(str)
    if pd.api.types.is_integer_dtype(stamps.dtype):
        text = text.str.zfill(16)
    return text.to_numpy(dtype=object), blank


def check_same_releases(
    frame: pd.DataFrame, led: Ledger, where: str, fix: str, *, unstamped: str = RESTAMP
) -> None:
    """Refuse (InputError) an attack result whose rows were computed on other releases than
    ``led``'s: a :data:`STAMP` that differs from the ledger's, or, without the column, an
    ``n_tuples`` that differs from the release's ``n_released`` (``metrics.json``); or whose
    column has a blank stamp on a row. Rows naming releases the ledger does not hold are left to
    :func:`check_held`. ``where`` names the result, ``fix`` says what to do
    about another ledger's rows, ``unstamped`` about a blank stamp."""
    if not len(frame) or "release" not in frame:
        return
    digests = prefix_digests(led)
    last = _last(frame)
    held = last.isin(list(digests)).to_numpy()
    rows, last = frame[held], last[held]
    if STAMP in frame:
        want = last.map(lambda r: digests[int(r)]).to_numpy()
        text, blank = _as_text(rows[STAMP])
        bad = rows[~blank & (text != want)]
        why = "were computed on other releases (their views_sha differs from this ledger's)"
        if not len(bad) and blank.any():  # not another ledger's stamp: none at all
            bad, fix = rows[blank], unstamped
            why = (
                "carry no views_sha (blank: the digest of the releases the row was computed on, "
                "which an attack writes on every row), so they cannot be checked against this ledger"
            )
    elif "n_tuples" in frame:
        release = pd.to_numeric(rows["release"]).astype("int64")  # held: whole numbers, perhaps as text
        released = {r: led.read_metrics(r).get("n_released") for r in set(release)}
        want = release.map(released)
        bad = rows[
            want.notna().to_numpy() & (pd.to_numeric(rows["n_tuples"], errors="coerce") != want).to_numpy()
        ]
        why = "count other numbers of tuples than this ledger's releases hold (n_tuples against n_released)"
    else:
        return
    if len(bad):
        releases = sorted({int(r) for r in pd.to_numeric(bad["release"])})
        raise InputError(f"{where} for release(s) {releases[:5]} {why}: {fix}")


def check_held(frame: pd.DataFrame, held: int, root: Path, where: str, fix: str) -> None:
    """Refuse (InputError) results whose ``release`` (and ``as_of``, of a retrospective result)
    name a release other than 1..``held``, the releases of the ledger at ``root``: ``where``
    names the results (a file relative to the ledger, or the gains passed), ``fix`` what to do."""
    found = {int(v) for c in ("release", "as_of") if c in frame for v in frame[c].dropna()}
    if unknown := sorted(found - set(range(1, held + 1))):
        raise InputError(
            f"{where} name release(s) {unknown[:5]} that {root} does not hold (it holds {held}): {fix}"
        )

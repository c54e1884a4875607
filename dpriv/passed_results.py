"""Attack results passed in by a caller (``render_report(gains=...)``, ``save_gain``), checked
before they are shown or written: a paper gain curve (one row per release) and a retrospective
result (one row per (release, as_of)) by one checker, :func:`checked_result`, that differs only
in its key columns and its words (:data:`PAPER`, :data:`RETRO`); several gain curves keyed by
knowledge name by :func:`checked_gains`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from dpriv.attack_stamp import STAMP
from dpriv.errors import InputError

#: Columns that tie results to the releases they were computed on
#: (:func:`dpriv.attack_stamp.check_same_releases`), kept as given.
TIES = ("n_tuples", STAMP)


@dataclass(frozen=True)
class Kind:
    """One kind of attack result: its key columns (one row for each value) and the words of
    its refusals (``{where}`` is where the frame was passed)."""

    key: tuple[str, ...]
    subject: str  # what the refusals call the frame
    gain_label: str  # how a refusal naming a bad row calls its adversary_gain
    rule: str  # what the values of a row must be
    one_row: str  # the end of the refusal of a key twice
    after: str = ""  # said after a refusal (save_gain: that nothing was written)


#: A gain curve (:func:`dpriv.attack.attack` with the paper adversary).
PAPER = Kind(
    key=("release",),
    subject="adversary gains {where}",
    gain_label="gain",
    rule="a release is a whole number >= 1 and a gain a number in [-1, 1] (or blank)",
    one_row="a gain curve has one row per release",
)
#: A retrospective attack's result (its ``as_of`` column).
RETRO = Kind(
    key=("release", "as_of"),
    subject="the retrospective results {where}",
    gain_label="adversary_gain",
    rule="release and as_of are whole numbers >= 1, as_of >= release, and a gain a number in [-1, 1] "
    "(or blank)",
    one_row="an attack gives one row per (release, as_of); nothing was written: pass the frame attack() "
    "returned",
    after="; nothing was written",
)

#: Told when a retrospective result is passed as a gain curve: it has a file of its own.
_SAVE_WHOLE = (
    "; a retrospective attack's result (its as_of column) is saved whole with "
    "save_gain(frame, ledger, knowledge), which writes attack/retro_<knowledge>.csv"
)


def checked_result(frame: pd.DataFrame, where: str, kind: Kind = PAPER) -> pd.DataFrame:
    """``frame``'s key columns (``kind.key``: int64), ``adversary_gain`` and, where given,
    ``histogram_gain`` (float64, a blank NaN), then :data:`TIES` as given, sorted by the key.

    Raises InputError, naming ``where``, when the frame lacks a key column or
    ``adversary_gain``, names a column twice, holds booleans as releases, a row whose release
    (or as_of) is not a whole number >= 1, an as_of before its release or a gain outside
    [-1, 1] (the first such row is named by its position), or a key twice."""
    subject = kind.subject.format(where=where)
    needed = [*kind.key, "adversary_gain"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InputError(
            f"{subject} lack column(s) {missing}; expected {', '.join(needed)} (the output of dpriv attack)"
        )
    if frame.columns.duplicated().any():
        raise InputError(f"{subject}: the columns must be named once, not {list(frame.columns)}")
    if any(pd.api.types.is_bool_dtype(frame[c]) for c in kind.key):
        raise InputError(f"{subject}: release must hold release indices 1, 2, ..., not booleans")
    kept = [*needed, *(["histogram_gain"] if "histogram_gain" in frame else [])]
    out = frame[kept].apply(pd.to_numeric, errors="coerce")
    bad = pd.Series(False, index=frame.index)
    for col in kind.key:
        bad |= out[col].isna() | (out[col] % 1 != 0) | (out[col] < 1)
    if "as_of" in kind.key:
        bad |= out["as_of"] < out["release"]
    for col in kept[len(kind.key) :]:  # the gain and, when given, its histogram level
        bad |= frame[col].notna() & ~out[col].between(-1.0, 1.0)
    if bad.any():
        row = int(bad.to_numpy().argmax())
        labels = {**{c: c for c in kind.key}, "adversary_gain": kind.gain_label}
        said = ", ".join(f"{label} {frame[c].iloc[[row]].tolist()[0]!r}" for c, label in labels.items())
        raise InputError(f"{subject}: row {row} holds {said}; {kind.rule}{kind.after}")
    out = out.astype(dict.fromkeys(kind.key, "int64")).astype(dict.fromkeys(kept[len(kind.key) :], "float64"))
    twice = out.duplicated(list(kind.key)).to_numpy()
    if twice.any():
        named = " as of ".join(str(v) for v in out.iloc[int(twice.argmax())][list(kind.key)].astype(int))
        hint = _SAVE_WHOLE if kind is PAPER and "as_of" in frame else ""
        raise InputError(f"{subject} hold release {named} twice: {kind.one_row}{hint}")
    # as given (positional: the frame's index may repeat), so that results passed on are checked again
    out = out.assign(**{c: frame[c].to_numpy() for c in TIES if c in frame})
    return out.sort_values(list(kind.key), kind="stable").reset_index(drop=True)


def checked_gains(gains: object, where: str) -> dict[str, pd.DataFrame]:
    """``gains`` (knowledge name -> the frame :func:`dpriv.attack.attack` returns) checked
    and each in release order (:func:`checked_result`: ``release``, ``adversary_gain``,
    ``histogram_gain`` and :data:`dpriv.passed_results.TIES` where given); InputError for anything else."""
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
        out[str(name)] = checked_result(frame, f"{where} for {name!r}")
    return out

"""The column types of a resumed history against the ones its ledger recorded (docs/ledger.md,
"Column types").

A ledger's files record the types of the input it released: the state's id column (the ids
the next release joins on), each numeric QI's released bounds (``<qi>_min``: int64 for integers,
float64 otherwise, :func:`dpriv.released.bound_dtype`; an Anatomy release holds the QI as it
was) and the sensitive column. A history whose types changed between weeks is refused before
anything is computed (:func:`resumed_types`): ids read as text where the state holds numbers
(``54`` and ``"54"`` are two respondents) would be joined with nobody's history, switching the
sequential defense off without a word (their order-free fingerprint, hashed as text, matches);
a QI read as float64 because the new week's lines write ``64.0`` makes every committed view
differ from its release, which the user was told only as "view 1 differs". Integer ids of
another width are cast to the ledger's dtype: the same respondents, hashes and bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpriv._dispatch import is_dask, meta_of
from dpriv.errors import InputError, LedgerError
from dpriv.id_format import shape_of, views_not_numbers
from dpriv.ledger import POLICY, SENSITIVE, Ledger
from dpriv.ledger_manifest import MANIFEST
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import bound_dtype
from dpriv.rows import MAX_ROWS_SHOWN, BadRow, describe, input_file, spans


@dataclass(frozen=True)
class Recorded:
    """The type a committed file records for policy column ``column``: its dtype as shown
    (``int64``, ``string``), its :func:`family`, ``where`` (the file, and its column when named
    otherwise) and whether the file holds the column's released bounds (``<qi>_min``, whose
    dtype is :func:`dpriv.released.bound_dtype` of the input's)."""

    column: str
    shown: str
    family: str
    where: str
    bounds: bool = False


def family(dtype) -> str:
    """What a dtype holds, as far as a release and the id join tell types apart."""
    if pd.api.types.is_bool_dtype(dtype):
        return "booleans"
    if pd.api.types.is_integer_dtype(dtype):
        return "integers"
    if pd.api.types.is_float_dtype(dtype):
        return "floats"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "dates"
    return "text"


def open_committed(ledger_dir: str | Path) -> tuple[Ledger | None, list[dict]]:
    """The ledger at ``ledger_dir`` and its committed entries; ``(None, [])`` for a new folder,
    and for a damaged manifest (refused, naming it, by the ledger's own checks)."""
    if not (Path(ledger_dir) / MANIFEST).is_file():
        return None, []
    ledger = Ledger(ledger_dir)
    try:
        return ledger, ledger.committed()
    except LedgerError:
        return None, []


def check_resumed_policy(ledger_dir: str | Path, fingerprint: dict, files: dict[str, str]) -> None:
    """Refuse (LedgerError, :meth:`~dpriv.ledger.Ledger.check_policy`) a policy other than the
    one the ledger at ``ledger_dir`` was started with, before its committed views' digests are
    compared: another QI or sensitive column changes every view's digest, which would otherwise
    be told as an edited row. Domains aside: inferred from the data, an edited row changes
    them, and that row is what to report (the whole policy is checked again once the views
    are). Nothing for a new folder or a ledger without a policy yet; nothing is written."""
    ledger = open_committed(ledger_dir)[0]
    if ledger is None or not (ledger.root / POLICY).is_file():
        return
    stored = ledger.stored_policy()
    given = {k: v for k, v in fingerprint.items() if k != "domains"}
    ledger.check_policy({**given, **{k: stored[k] for k in ("domains",) if k in stored}}, files)


def recorded_types(ledger: Ledger, index: int, policy: ReleasePolicy) -> list[Recorded]:
    """The types release ``index`` of ``ledger`` records: the id (its state), the numeric QIs
    (date QIs aside: released as calendar dates whatever their input) and the sensitive column
    (as it was); Anatomy: every QI as it was, not the sensitive column (its table writes the
    domain's values). A file or column that cannot be read is left out (a damaged ledger is
    refused, naming the file, by :func:`dpriv.ledger_checks.check_ledger_whole`); so are the
    categorical QIs, released as text whatever their type."""
    rdir = ledger.release_dir(index)
    anatomy = (rdir / SENSITIVE).exists()
    wanted = {} if anatomy else {policy.sensitive: (rdir / "view.parquet", policy.sensitive)}
    for q in policy.qi:
        if policy.kinds.get(q) != "date" and (anatomy or policy.kind(q) == "numeric"):
            wanted[q] = (rdir / "view.parquet", q if anatomy else f"{q}_min")
    try:
        wanted[policy.id] = (ledger.state_files(index)[0], policy.id)
    except LedgerError:
        pass
    found = (_recorded(col, path, name, ledger.root) for col, (path, name) in wanted.items())
    return [r for r in found if r is not None]


def _recorded(column: str, path: Path, name: str, root: Path) -> Recorded | None:
    """Column ``name`` of Parquet file ``path`` as :class:`Recorded`; None when it cannot be read
    or holds no type (Arrow ``null``: the sensitive column of a view released empty)."""
    try:
        arrow = pq.read_schema(path).field(name).type
        text = pa.types.is_string(arrow) or pa.types.is_large_string(arrow)
        dtype = np.dtype(object) if text else np.dtype(arrow.to_pandas_dtype())
    except (OSError, KeyError, TypeError, NotImplementedError, pa.ArrowException):
        return None
    if pa.types.is_null(arrow):
        return None
    where = path.relative_to(root).as_posix() + (f", column {name}" if name != column else "")
    return Recorded(column, "string" if text else dtype.name, family(dtype), where, name == f"{column}_min")


def resumed_types(history, policy: ReleasePolicy, ledger_dir: str | Path):
    """``history`` (pandas or Dask, prepared and resolved) for a release onto the ledger at
    ``ledger_dir``: InputError (exit 2, nothing written) naming each policy column whose type
    differs from the one the last committed release recorded (:func:`recorded_types`), and
    what to do; integer ids of another width are cast to the ledger's id dtype (InputError
    when one does not fit it). Unchanged without a committed release."""
    ledger, entries = open_committed(ledger_dir)
    if ledger is None or not entries:
        return history
    meta = meta_of(history)
    changed = []
    last = max(int(e["index"]) for e in entries)
    for rec in recorded_types(ledger, last, policy):
        if rec.column not in meta.columns:  # another column set: the policy check names it
            continue
        now = meta[rec.column].dtype
        if family(bound_dtype(now) if rec.bounds else now) != rec.family:
            changed.append((rec, now))
        elif rec.column == policy.id and rec.family == "integers" and rec.shown != str(now):
            history = _cast_ids(history, policy.id, rec)
    if changed:
        also = "".join(f"; also: column {r.column!r} is {t} (the ledger: {r.shown})" for r, t in changed[1:])
        raise InputError(_message(history, policy, *changed[0], view=last + 1) + also)
    return history


def _cast_ids(history, id_col: str, rec: Recorded):
    """``history`` with its integer ids as the ledger's integer dtype ``rec.shown``, whose
    hashes (the state's buckets, the release's digests) are those of the committed releases:
    int32 -1 and int64 -1 hash apart. InputError naming an id the dtype cannot hold."""
    target = np.dtype(rec.shown)
    col = history[id_col]
    bounds = dask.compute(col.min(), col.max()) if is_dask(col) else (col.min(), col.max())
    lo, hi = (int(v) for v in bounds)
    info = np.iinfo(target)
    if lo < info.min or hi > info.max:
        raise InputError(
            f"id column {id_col!r} holds {lo if lo < info.min else hi}, which the ledger's {rec.shown} "
            f"ids ({rec.where}) cannot hold: give ids within [{info.min}, {info.max}], or start a new "
            "ledger for ids of another type"
        )
    return history.astype({id_col: target})


class Cause(NamedTuple):
    """What made a column of integers floats (:func:`_cause`): the text for the message, whether
    the values are whole numbers and one as the input writes it (``"64.0"``; "" when unknown)."""

    text: str
    whole: bool
    example: str


def _message(history, policy: ReleasePolicy, rec: Recorded, now, view: int) -> str:
    """Why the type of ``rec.column`` (``now`` in the input) cannot differ from the ledger's,
    what made it so (a CSV's lines such as ``64.0``) and how to convert it back. ``view``: the
    next view to release."""
    c = rec.column
    cause = _cause(history, policy, rec, now)
    head = f"{c!r} is {now} in this input where the ledger recorded {rec.shown} ({rec.where}){cause.text}"
    if c == policy.id:
        value = _first(history[c])  # a real id for the example
        other = _as_family(value, rec.family)  # the same text for an object column of ints
        pair = f"{value!r} and {other!r}" if repr(value) != repr(other) else "an id and it as another type"
        where, fix = _text_ids(history, policy, rec, now, view)
        return (
            f"id column {head}{where}; the new views are joined with the respondents' state on the id, "
            f"by value and type ({pair} are two respondents), so each of their tuples would be released "
            "as if its respondent had no history: the sequential defense would be off without a word; "
            f"{fix or _fix(rec, now, cause)}"
        )
    what = "QI" if c in policy.qi else "sensitive column"
    publish = bound_dtype(now) if rec.bounds else now
    numbers = {rec.family, family(now)} == {"integers", "floats"}  # 45 hashed as text is not 45.0
    differ = ", and the views already released would no longer match the ones committed" if numbers else ""
    return (
        f"{what} {head}; the next release would publish it as {publish} where the committed "
        f"releases hold {rec.shown}{differ}: {_fix(rec, now, cause)}"
    )


def _text_ids(history, policy: ReleasePolicy, rec: Recorded, now, view: int) -> tuple[str, str | None]:
    """For ids read as text where the ledger holds numbers: which views write them so, and,
    when some ids are not numbers (``'R3977'``: pd.to_numeric cannot read them), the fix
    (None: converting the column works). The ids' shape only, no id (:mod:`dpriv.id_format`)."""
    if family(now) != "text" or rec.family == "text" or not policy.time:
        return "", None
    views, ids = views_not_numbers(history, policy.id, policy.time)
    if not views:
        return f"; every view holds its ids so, view {view} (the next to release) included", None
    first, *rest = views
    also = f"; so do views {spans(rest)}" if len(rest) > 1 else f"; so does view {rest[0]}" if rest else ""
    where = (
        f"; view {first} writes ids that are not numbers ({views[first]} of its ids, like "
        f"{shape_of(ids)}{also})"
    )
    return where, (
        f"pd.to_numeric cannot read such ids: give view {first} the ids its respondents have in the "
        f"views released ({rec.shown}: the same respondent, the same id), or start a new ledger (a "
        "ledger's column types are fixed by its first release)"
    )


def _as_family(value, recorded_family: str):
    """``value`` as the ledger's ids hold it (``54`` -> ``'54'``, ``'54'`` -> ``54``)."""
    if recorded_family == "text":
        return str(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return int(number) if recorded_family == "integers" and number.is_integer() else number


def _fix(rec: Recorded, now, cause: Cause) -> str:
    """What to do: convert the column back to the ledger's type (pandas), or a new ledger."""
    c, new = rec.column, "start a new ledger (a ledger's column types are fixed by its first release)"
    if rec.family == "text":
        return (
            f"give {c!r} as text, written as in the weeks released (leading zeros kept; a CSV's column "
            f"of digits is read as numbers: give such a history as Parquet with {c!r} as text), or {new}"
        )
    if not cause.whole:
        return f"correct the values if they are meant as whole numbers, or {new}"
    read = f"pd.to_numeric(frame[{c!r}])" if family(now) == "text" else f"frame[{c!r}]"
    back = f"convert {c!r} back to {rec.shown} (pandas: frame[{c!r}] = {read}.astype({rec.shown!r}))"
    if cause.example:
        whole = cause.example.strip().split(".")[0]
        back = f"write the values as whole numbers ({whole}, not {cause.example.strip()}) or {back}"
    return f"{back} before releasing, or {new}"


#: A whole number as a CSV writes it (``64``, ``-3``); ``64.0`` and ``6.4e1`` are not.
_WHOLE = re.compile(r"^\s*[-+]?\d+\s*$")
#: A whole number written with a decimal point (``64.0``, ``64.``).
_POINT_ZERO = re.compile(r"^\s*[-+]?\d+\.0*\s*$")


def _cause(history, policy: ReleasePolicy, rec: Recorded, now) -> Cause:
    """For integers read as floats: the lines of a CSV whose text is not a whole number (``64.0``),
    else whether the values are whole numbers; nothing to say for another change of type."""
    if rec.family != "integers" or family(now) != "floats":
        return Cause("", True, "")
    source = input_file()
    found = _csv_rows(source.path, rec.column, policy) if source is not None and source.csv else None
    if found is not None:
        rows, count, example = found
        where = describe(rows, count, policy.time, whole=True)
        if _POINT_ZERO.match(example):
            return Cause(
                f"; it is read as {now} because lines write whole numbers as {example!r} ({where})",
                True,
                example,
            )
        return Cause(f"; lines write numbers that are not whole, such as {example!r} ({where})", False, "")
    fraction = _first_fraction(history[rec.column])
    if fraction is not None:
        return Cause(f"; it holds {fraction:g}, not a whole number", False, "")
    first = float(_first(history[rec.column]))
    return Cause(f" (its values are whole numbers stored as {now})", True, repr(first))


def _first_fraction(col) -> float | None:
    """The first value of a float column that is not a whole number, or None."""
    fractions = col[(col % 1) != 0]
    return None if (found := _first(fractions)) is None else float(found)


def _first(col):
    """The first value of a pandas or Dask column (None when it is empty), as a Python value."""
    head = col.head(1, npartitions=-1) if is_dask(col) else col.head(1)
    return as_python(head.iloc[0]) if len(head) else None


def _csv_rows(path: str, column: str, policy: ReleasePolicy) -> tuple[list[BadRow], int, str] | None:
    """The rows of the CSV ``path`` whose ``column`` is not written as a whole number: the first
    :data:`~dpriv.rows.MAX_ROWS_SHOWN` (position in the file, time), their count and the
    first text; the file read again as text by pyarrow, batch by batch (on this refusal only).
    None when the file cannot be read so (the message then names no lines)."""
    from pyarrow import csv as arrow_csv

    from dpriv.csv_read import sniff_delimiter

    keep = [c for c in dict.fromkeys([policy.time, column]) if c]
    rows: list[BadRow] = []
    count, start, example = 0, 0, ""
    try:
        as_text = arrow_csv.ConvertOptions(include_columns=keep, column_types={column: pa.string()})
        parse = arrow_csv.ParseOptions(delimiter=sniff_delimiter(path), newlines_in_values=True)
        reader = arrow_csv.open_csv(path, parse_options=parse, convert_options=as_text)
        for batch in reader:
            frame = batch.to_pandas()
            bad = np.flatnonzero(~frame[column].fillna("").str.match(_WHOLE).to_numpy(dtype=bool))
            rows += _bad_rows(frame, bad[: MAX_ROWS_SHOWN - len(rows)], start, policy)
            example = example or (str(frame[column].iloc[bad[0]]) if len(bad) else "")
            count, start = count + len(bad), start + len(frame)
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return None
    return (rows, count, example) if count else None


def _bad_rows(frame: pd.DataFrame, positions: np.ndarray, start: int, policy: ReleasePolicy) -> list[BadRow]:
    """:class:`~dpriv.rows.BadRow` of ``frame``'s rows ``positions`` (a batch starting at row ``start``)."""
    sub = frame.iloc[positions]
    times = sub[policy.time].tolist() if policy.time else [None] * len(sub)
    at = (start + positions).tolist()
    return [BadRow(p, p, t) for p, t in zip(at, times)]

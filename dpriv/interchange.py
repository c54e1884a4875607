"""The interchange export of a released view (``dpriv export``; docs/released-format.md
"Interchange export"), and its reading back.

dpriv's released format keeps exact typed bounds (``<qi>_min``/``<qi>_max``) and an int64
group label. Tools that read anonymized tables as ARX writes them (ARX itself, pyCANON,
sdcMicro, a spreadsheet) expect one column per QI holding the generalized value as text,
suppressed records marked with ``*``, and no 19-digit number that a spreadsheet rounds. This
module turns a released view into that shape (:func:`to_interchange`) and back
(:func:`from_interchange`). The generalized values are spelled as ARX writes its hierarchy
labels (``spelling="arx"``, the default): a value that is not generalized stands alone, a range
is ``lo-hi`` without brackets (ARX's own example hierarchies: ``0-4``, ``5-9``):

* a numeric QI ``q``: one column ``q`` with ``lo-hi`` (the group's true min and max, bounds
  inclusive, shortest decimal text: ``45-52``, ``72.5-80``, ``-3--1``), or ``45`` when the
  group has one value; a date QI ``first/last`` in ISO 8601 (``2024-01-06/2024-01-12``: ``-``
  is inside the dates), or the one day;
* a categorical QI: its released cell (a value set ``{F,M}`` with the escape rule of
  :mod:`dpriv.released`, or a hierarchy node), a set of one value written as that value
  (``Male``, not ``{Male}``) unless the value holds ``,``, ``{``, ``}`` or ``\\`` (then the
  escaped set, which reads back unambiguously);
* ``qi_group``: a short opaque text label ``G001`` ... (rank of the released int64 label,
  which is a seeded hash: the rank says nothing about where a group lies);
* suppressed tuples (their number comes from the release's metrics): appended rows with
  ``*`` in every column, the sensitive one included. ARX's suppression string is ``*``;
  ARX keeps a suppressed record's sensitive value unless configured to suppress that
  attribute type too, but dpriv never publishes the sensitive value of a tuple that failed
  t or j, so it is ``*`` here (ARX's ``setSuppressedAttributeTypes`` with the sensitive type).
  Tools that check k, l or t treat such rows apart (ARX does): drop the rows whose
  ``qi_group`` is ``*`` before handing the table to pyCANON, or export with
  ``suppressed="omit"`` (a kept group generalized to ``*`` in every QI, a hierarchy's root,
  keeps its ``G...`` label and its sensitive values).

``spelling="dpriv"`` writes the spelling of exports before December 2026: ``[lo-hi]`` always
(``[45-45]``), ``[first/last]``, value sets always braced (``{Male}``). Reading accepts both.

Two QI-groups may carry the same generalized text (hierarchy nodes, equal bounds): a tool that
groups rows by the QI text (pyCANON) then sees one class where dpriv released two;
:attr:`Interchange.n_text_classes` counts the classes such a tool sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from dpriv.dates import bound_days, is_date_dtype
from dpriv.errors import InputError
from dpriv.interchange_text import (  # noqa: F401 (format_number, parse_interval: public here too)
    Spelling,
    arx_cell,
    date_interval_text,
    format_number,
    interval_text,
    parse_dates,
    parse_interval,
)
from dpriv.released import GROUP, escape_value, parse_value_set
from dpriv.rows import rows_named

#: ARX's default suppression string: every cell of a suppressed record.
SUPPRESSED = "*"
#: Prefix of the short group labels.
GROUP_PREFIX = "G"


@dataclass(frozen=True)
class Layout:
    """Which released columns are which: ``numeric`` QIs (each with ``<q>_min``, ``<q>_max``),
    ``categorical`` QIs (one text column each), the ``sensitive`` column; ``qi`` in order."""

    qi: list[str]
    numeric: list[str]
    categorical: list[str]
    sensitive: str


@dataclass(frozen=True)
class Interchange:
    """Result of :func:`to_interchange`.

    Attributes
    ----------
    table : DataFrame of shape (n_kept + n_marked, 1 + n_qi + 1), object (text) columns
        ``qi_group``, one column per QI in policy order, the sensitive column; the kept rows
        in the released order, then ``n_marked`` rows of ``*``.
    n_kept : released (kept) tuples.
    n_marked : suppressed tuples appended as ``*`` rows (0 with ``suppressed="omit"``).
    n_groups : QI-groups.
    layout : the columns read from the released view.
    n_text_classes : distinct QI texts of the kept rows (the classes of a tool that groups by
        the QI columns); below ``n_groups`` when groups share their generalized text.
    """

    table: pd.DataFrame
    n_kept: int
    n_marked: int
    n_groups: int
    layout: Layout
    n_text_classes: int


#: The policy's columns as a Python call gives them, beside the command's ``--policy F``.
_IN_PYTHON = "qi=[...], sensitive=... in Python"


def group_names(labels: np.ndarray) -> np.ndarray:
    """Short opaque text label per row for the int64 QI-group ``labels`` (shape (n,)): ``G``
    and the 1-based rank of the label among the distinct labels, zero-padded to one width
    (``G001`` ... ``G250``), so the names sort as the labels do and a spreadsheet keeps them
    as text. Object array of shape (n,)."""
    uniques, inverse = np.unique(np.asarray(labels), return_inverse=True)
    width = len(str(len(uniques)))
    names = np.array([f"{GROUP_PREFIX}{i:0{width}d}" for i in range(1, len(uniques) + 1)], dtype=object)
    return names[inverse.reshape(-1)]


def layout_of(columns: list[str], qi: list[str] | None = None, sensitive: str | None = None) -> Layout:
    """The QIs and the sensitive column of a released view with ``columns``.

    With the policy's ``qi`` and ``sensitive``, the columns must be exactly the released
    format of those (``qi_group``; per QI ``<q>_min``, ``<q>_max`` when the view has that
    pair, else ``<q>``; the sensitive column). Without them, they are read from the format's
    fixed order (docs/released-format.md): ``qi_group`` first, the sensitive column last, a
    ``<q>_min``, ``<q>_max`` pair per numeric QI and one column per categorical QI between.

    Raises
    ------
    InputError
        A column is missing or extra (named, with the expected list), or the view is not in
        the released format (no ``qi_group`` first, an unpaired ``_min``/``_max``).
    """
    cols = [str(c) for c in columns]
    if qi is not None and sensitive is not None:
        num = [q for q in qi if f"{q}_min" in cols and f"{q}_max" in cols]
        expected = [GROUP]
        for q in qi:
            expected += [f"{q}_min", f"{q}_max"] if q in num else [q]
        expected.append(sensitive)
        if cols != expected:
            missing = [c for c in expected if c not in cols]
            extra = [c for c in cols if c not in expected]
            raise InputError(
                f"the released view has the columns {cols}, but the policy's released format is "
                f"{expected} (missing {missing}, extra {extra}): export the view released under this "
                f"policy, or give its policy (--policy F, or --ledger L --view I; {_IN_PYTHON})"
            )
        return Layout(list(qi), num, [q for q in qi if q not in num], sensitive)
    if len(cols) < 3 or cols[0] != GROUP:
        raise InputError(
            f"the table has the columns {cols}: a released view starts with {GROUP!r}, then the "
            "generalized QIs, then the sensitive column; export a view written by dpriv "
            "anonymize or a ledger's release (--ledger L --view I)"
        )
    body, found, num = cols[1:-1], [], []
    i = 0
    while i < len(body):
        c = body[i]
        if c.endswith("_min"):
            q = c[: -len("_min")]
            if i + 1 >= len(body) or body[i + 1] != f"{q}_max":
                raise InputError(
                    f"column {c!r} is not followed by {q + '_max'!r}: a numeric QI of a released view "
                    f"has the pair <qi>_min, <qi>_max; give the policy (--policy F; {_IN_PYTHON}) if the "
                    "columns are named otherwise"
                )
            found.append(q)
            num.append(q)
            i += 2
        else:
            if c.endswith("_max"):
                raise InputError(f"column {c!r} has no {c[:-4] + '_min'!r} before it (a numeric QI's pair)")
            found.append(c)
            i += 1
    return Layout(found, num, [q for q in found if q not in num], cols[-1])


def to_interchange(
    released: pd.DataFrame,
    *,
    qi: list[str] | None = None,
    sensitive: str | None = None,
    n_suppressed: int | None = None,
    suppressed: Literal["mark", "omit"] = "mark",
    dates: list[str] | None = None,
    spelling: Spelling = "arx",
    hierarchies: list[str] | None = None,
) -> Interchange:
    """A released view in the interchange shape (module docstring).

    Parameters
    ----------
    released : DataFrame of a released view (docs/released-format.md), pandas.
    qi, sensitive : the policy's QIs (in order) and sensitive column (optional: the layout
        is then read from the column order, :func:`layout_of`).
    dates : QIs of kind date (the policy's); a bound column of Arrow/NumPy dates is one
        without being named (a CSV release holds its dates as ISO text: name them).
    n_suppressed : tuples the release suppressed (``metrics.json``'s ``n_suppressed``);
        required with ``suppressed="mark"``.
    suppressed : ``"mark"`` appends ``n_suppressed`` rows of ``*`` (ARX); ``"omit"`` leaves
        them out (the released rows only, as pyCANON wants them).
    spelling : ``"arx"`` (``45-52``, ``45``, ``Male``) or ``"dpriv"`` (``[45-52]``, ``[45-45]``,
        ``{Male}``: the exports before December 2026); module docstring.
    hierarchies : QIs released as hierarchy nodes (the policy's ``[hierarchies]``): their
        cells are names, written verbatim in either spelling.

    Returns
    -------
    Interchange

    Raises
    ------
    InputError
        The layout is wrong (:func:`layout_of`), a numeric bound is missing or not a
        number, a bound pair is inverted, a group's generalized cells differ between its
        rows, ``n_suppressed`` is missing or negative with ``suppressed="mark"``, or
        ``suppressed`` is neither mark nor omit, ``spelling`` is neither arx nor dpriv. Each
        message names the column and the fix.
    """
    if spelling not in ("arx", "dpriv"):
        raise InputError(
            f"spelling = {spelling!r}: choose 'arx' (45-52, Male) or 'dpriv' ([45-52], {{Male}})"
        )
    if suppressed not in ("mark", "omit"):
        raise InputError(f"suppressed = {suppressed!r}: choose 'mark' (rows of '*', as ARX) or 'omit'")
    lay = layout_of(list(released.columns), qi, sensitive)  # first: a table that is no released view
    if suppressed == "mark":
        if n_suppressed is None:
            raise InputError(
                "the number of suppressed tuples is unknown (no metrics): give the release's "
                "metrics.json (--metrics F; n_suppressed=N in Python), or leave them out (--suppressed "
                'omit; suppressed="omit" in Python)'
            )
        if int(n_suppressed) < 0:
            raise InputError(f"n_suppressed = {n_suppressed} is negative; it counts suppressed tuples")
    n = len(released)
    labels = released[GROUP]
    if labels.isna().any():
        raise InputError(f"column {GROUP!r} has missing labels: this is not a released view")
    out: dict[str, np.ndarray] = {GROUP: group_names(labels.to_numpy())}
    codes, _ = pd.factorize(labels, sort=True)
    for q in lay.qi:
        if q in lay.numeric:
            out[q] = _intervals(released, q, codes, q in (dates or []), spelling)
        else:
            cells = released[q]
            if cells.isna().any():
                raise InputError(
                    f"column {q!r} has empty cells: every kept row carries its group's value set"
                )
            text = cells.astype(str).to_numpy(dtype=object)
            _same_within_groups(text, codes, q)
            if spelling == "arx" and q not in (hierarchies or []):  # a node name is never a set
                uniques, inverse = np.unique(text, return_inverse=True)
                text = np.array([arx_cell(u) for u in uniques], dtype=object)[inverse.reshape(-1)]
            out[q] = text
    out[lay.sensitive] = released[lay.sensitive].to_numpy(dtype=object)
    index = pd.RangeIndex(n)
    # object (text) columns under pandas 2 and 3 alike (pandas 3 would infer its str dtype)
    table = pd.DataFrame({c: pd.Series(v, dtype=object, index=index) for c, v in out.items()}, index=index)
    n_text = len(table.drop_duplicates(subset=lay.qi)) if n else 0
    marked = int(n_suppressed) if suppressed == "mark" else 0
    if marked:
        stars = pd.DataFrame(
            SUPPRESSED, index=pd.RangeIndex(n, n + marked), columns=table.columns, dtype=object
        )
        table = pd.concat([table, stars])
    return Interchange(table, n, marked, int(codes.max()) + 1 if n else 0, lay, n_text)


def from_interchange(
    table: pd.DataFrame,
    *,
    qi: list[str],
    numeric: list[str],
    dates: list[str] | None = None,
    hierarchies: list[str] | None = None,
) -> pd.DataFrame:
    """An interchange table in either spelling (:func:`to_interchange`, or a table as ARX writes
    it, e.g. read with ``pd.read_csv(f, dtype=str, keep_default_na=False)``) in the released
    view's columns.

    Each ``numeric`` QI ``q`` (of ``qi``) becomes ``q_min``, ``q_max`` in its place (int64 when
    every bound is an integer, else float64; ``datetime64`` at midnight for ``dates``); a
    categorical QI (the others, unless a hierarchy node in ``hierarchies``) becomes its value set
    (``Male`` -> ``{Male}``, ``{F, M}`` -> ``{F,M}``); other columns (``qi_group``, the
    sensitive one) stay as they are. Rows whose ``qi_group`` is ``*`` (suppressed tuples of a
    ``suppressed="mark"`` export) are dropped. DataFrame of the kept rows, index kept.

    Raises
    ------
    InputError
        A QI column is missing, or a numeric cell is no interval (column, row and the fix
        named; ``*`` in a numeric column, ARX's suppressed record, is told as such).
    """
    missing = [q for q in qi if q not in table.columns]
    if missing:
        raise InputError(f"the table has no column {missing} of the QIs {qi}: give the QIs it holds")
    if GROUP in table.columns:
        table = table[table[GROUP].astype(str) != SUPPRESSED]
    out: dict[str, object] = {}
    for c in table.columns:
        cells = table[c].astype(str)
        if c in numeric:
            uniques, inverse = np.unique(cells.to_numpy(dtype=object), return_inverse=True)
            read = parse_dates if c in (dates or []) else parse_interval
            bounds = []
            for u in uniques:
                try:
                    bounds.append(read(u))
                except InputError as exc:
                    row = int(np.flatnonzero(cells.to_numpy(dtype=object) == u)[0]) + 1
                    hint = " (a suppressed record: drop such rows first)" if u == SUPPRESSED else ""
                    raise InputError(f"column {c!r}, row {row}: {exc}{hint}") from None
            for i, end in enumerate(("_min", "_max")):
                values = [b[i] for b in bounds]
                out[c + end] = pd.Series(
                    np.array(values)[inverse.reshape(-1)] if values else np.array([], dtype=np.int64),
                    index=table.index,
                )
        elif c in qi and c not in (hierarchies or []):
            sets = {u: "{" + ",".join(map(escape_value, parse_value_set(u))) + "}" for u in cells.unique()}
            out[c] = pd.Series(cells.map(sets).to_numpy(dtype=object), index=table.index, dtype=object)
        else:
            out[c] = table[c]
    return pd.DataFrame(out, index=table.index)


def _not_numbers(bounds: pd.Series, column: str, q: str) -> str:
    """Why the bound column ``column`` of QI ``q`` cannot be read, and what to do: bounds of a date
    QI written as ISO text (a CSV release of dpriv anonymize) need the QI named as a date; any
    other text is no dpriv release."""
    first = next((str(v) for v in bounds.tolist() if pd.notna(v)), "")
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", first):
        return (
            f"column {column!r} holds dates written as text ({first!r}), as a CSV release holds the "
            f"bounds of a date QI: name {q!r} as a date, with the policy the release was made with "
            f'(--policy F, its [kinds] {q} = "date"; dates=[{q!r}] in Python)'
        )
    return (
        f"column {column!r} holds {bounds.dtype} values, not numbers: a numeric QI's bounds are numbers; "
        "is this a released view of dpriv?"
    )


def _intervals(
    released: pd.DataFrame, q: str, codes: np.ndarray, date: bool, spelling: Spelling
) -> np.ndarray:
    """The interval text per row of numeric QI ``q`` (of dates for a ``date`` QI, or for bounds
    held as dates) in ``spelling``, formatted once per group."""
    lo_c, hi_c = f"{q}_min", f"{q}_max"
    date = date or is_date_dtype(released[lo_c].dtype)
    if date:
        released = released.assign(**{c: bound_days(released[c], c, q) for c in (lo_c, hi_c)})
    for c in (lo_c, hi_c):
        x = released[c]
        if not pd.api.types.is_numeric_dtype(x.dtype) or pd.api.types.is_bool_dtype(x.dtype):
            raise InputError(_not_numbers(x, c, q))
        if x.isna().any():
            where = rows_named(released, x.isna().to_numpy())
            raise InputError(f"column {c!r} has missing bounds ({where}): not a released view")
    lo, hi = released[lo_c].to_numpy(), released[hi_c].to_numpy()
    if (lo > hi).any():
        where = rows_named(released, lo > hi)
        raise InputError(f"QI {q!r}: {lo_c} > {hi_c} ({where}): not a released view")
    if len(codes) == 0:
        return np.array([], dtype=object)
    _same_within_groups(lo, codes, lo_c)
    _same_within_groups(hi, codes, hi_c)
    first = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes))[::-1]  # a row of each group
    write = date_interval_text if date else interval_text
    text = np.array(
        [write(a, b, spelling) for a, b in zip(lo[first].tolist(), hi[first].tolist())], dtype=object
    )
    return text[codes]


def _same_within_groups(values: np.ndarray, codes: np.ndarray, column: str) -> None:
    """InputError unless every row of a QI-group carries the same cell; the message tells a
    row-level column (an id added to the view, which shifts the columns read by their order)."""
    spread = pd.Series(values).groupby(codes).nunique()
    if (spread > 1).any():
        every = pd.Series(values).nunique() == len(values)
        raise InputError(
            f"column {column!r} differs between rows of {int((spread > 1).sum())} QI-group(s): every row "
            "of a QI-group carries the same generalized value; this is not a released view of dpriv"
            + (
                f" ({column!r} differs on every row: a respondent id or another row-level column?)"
                if every
                else ""
            )
            + f". Without a policy the columns are read by their order: give it (--policy F; {_IN_PYTHON}) "
            "to have an extra column named, and never publish a view with respondent ids"
        )

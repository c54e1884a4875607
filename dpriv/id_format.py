"""How respondent ids are written, for messages that must not print them.

A week whose ids are written otherwise than the weeks released (``'R003977'`` where the ledger
holds ``'3977'``, text where it holds integers) switches the sequential defense off for that
week: nobody's history is found. The refusals say so by the ids' *shape*
(:func:`shape_of`: ``"1 letter + 6 digits"`` against ``"1-4 digits"``), never by an id: the
ledger's ``state/`` links ids to posteriors and is kept private.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask

#: How many ids of a view (or a state) are looked at for their shape.
SAMPLE = 20
#: An id written as a whole number (``3977``, ``-3``): pd.to_numeric reads it.
WHOLE = r"\s*[-+]?\d+\s*"
#: More runs than this (``a1b2-c3``: a UUID, a hash) are described by length and characters.
_MAX_RUNS = 4
_DIGITS = frozenset("0123456789")


def _kind(ch: str) -> str:
    return "digit" if ch in _DIGITS else "letter" if ch.isalpha() else ch


def _runs(text: str) -> list[tuple[str, int]]:
    """``'R003977'`` -> ``[("letter", 1), ("digit", 6)]``."""
    return [(kind, len(list(group))) for kind, group in itertools.groupby(text, key=_kind)]


def _span(lengths: list[int]) -> str:
    low, high = min(lengths), max(lengths)
    return f"{low}" if low == high else f"{low}-{high}"


def _named(kind: str, lengths: list[int]) -> str:
    if kind in ("digit", "letter"):
        return f"{_span(lengths)} {kind}{'s' if max(lengths) > 1 else ''}"
    return repr(kind) if max(lengths) == 1 else f"{_span(lengths)} x {kind!r}"


def shape_of(values: Iterable) -> str:
    """The shape of ids ``values`` without any id: ``"integers of 1-4 digits"``,
    ``"1-4 digits"`` (text), ``"1 letter + 6 digits"``, ``"36 characters: letters, digits and
    '-'"``; the two most common shapes of a sample that has several (``"... or ..."``)."""
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    values = [v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))]
    if not values:
        return "no ids"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return f"integers of {_named('digit', [len(str(abs(v))) for v in values])}"
    if all(isinstance(v, int | float) for v in values):
        return "numbers"
    shapes: dict[tuple, list[list[int]]] = {}
    for text in map(str, values):
        runs = _runs(text)
        if not runs:
            key, lengths = ("empty",), [0]
        elif len(runs) > _MAX_RUNS:  # described by its characters and length
            key, lengths = ("chars", *sorted({k for k, _ in runs})), [len(text)]
        else:
            key, lengths = tuple(k for k, _ in runs), [n for _, n in runs]
        shapes.setdefault(key, []).append(lengths)
    common = sorted(shapes.items(), key=lambda item: -len(item[1]))[:2]
    return " or ".join(_described(key, found) for key, found in common)


def _described(key: tuple, found: list[list[int]]) -> str:
    if key == ("empty",):
        return "empty text"
    if key[0] == "chars":
        kinds = [f"{k}s" if k in ("digit", "letter") else repr(k) for k in key[1:]]
        listed = ", ".join(kinds[:-1]) + f" and {kinds[-1]}" if len(kinds) > 1 else kinds[0]
        return f"{_span([n[0] for n in found])} characters: {listed}"
    return " + ".join(_named(kind, [n[i] for n in found]) for i, kind in enumerate(key))


def representative(col: pd.Series, k: int = SAMPLE) -> list:
    """Up to ``k`` first values of the pandas column ``col`` and its extremes: the shortest and
    longest written as text, and the smallest and largest of a numeric column. The first values
    alone may all be short (a state sorted by id holds its 1-2 digit ids first while the others
    have 4): :func:`shape_of` spans the lengths of what it is given."""
    values = col.dropna()
    if not len(values):
        return []
    lengths = values.astype(str).str.len().to_numpy()
    picks = [values.iloc[int(lengths.argmin())], values.iloc[int(lengths.argmax())]]
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        picks += [values.min(), values.max()]
    return values.head(k).tolist() + [p.item() if isinstance(p, np.generic) else p for p in picks]


def sample(col: pd.Series, k: int = SAMPLE) -> list:
    """:func:`representative` values of a pandas or Dask column: on Dask, those of each
    partition reach the client (never the column), and the representatives of them are kept."""
    if not is_dask(col):
        return representative(col, k)
    found = col.map_partitions(
        lambda part: pd.Series(representative(part, k), dtype=object), meta=(col.name, object)
    )
    return representative(found.compute().reset_index(drop=True), k)


def _not_numbers(part: pd.DataFrame, id_col: str, time_col: str, k: int) -> pd.DataFrame:
    """Per view of ``part``: how many of its ids are not written as whole numbers, and up to
    ``k`` of them (for their shape)."""
    bad = ~part[id_col].astype(str).str.fullmatch(WHOLE).to_numpy(dtype=bool)
    sub = part.loc[bad, [time_col, id_col]]
    rows = [(int(t), len(g), g[id_col].head(k).tolist()) for t, g in sub.groupby(time_col, sort=True)]
    return pd.DataFrame(rows, columns=["time", "n", "ids"]).astype({"time": "int64", "n": "int64"})


def views_not_numbers(history, id_col: str, time_col: str) -> tuple[dict[int, int], list]:
    """The views of a history (pandas or Dask) whose ids are not all whole numbers written as
    text: {view: how many such ids} in view order, and up to :data:`SAMPLE` of the first such
    view's (for :func:`shape_of`). Per partition on Dask, only counts and samples reach the
    client."""
    cols = history[[id_col, time_col]]
    if is_dask(cols):
        meta = _not_numbers(cols._meta, id_col, time_col, SAMPLE)
        found = cols.map_partitions(_not_numbers, id_col, time_col, SAMPLE, meta=meta).compute()
    else:
        found = _not_numbers(cols, id_col, time_col, SAMPLE)
    counts = found.groupby("time")["n"].sum().sort_index()
    if not len(counts):
        return {}, []
    first = int(counts.index[0])
    ids = [i for found_ids in found.loc[found["time"] == first, "ids"] for i in found_ids][:SAMPLE]
    return {int(t): int(n) for t, n in counts.items()}, ids

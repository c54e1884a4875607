"""Which column of an input a column the policy names was probably renamed to: ``Age`` or
``age_years`` for ``age`` (a new-user drill, s41: a history whose column was renamed was told
only "missing column(s) ['age']; the input has [...]", whatever its format).

One rule for every place that finds a policy column missing (a CSV or Parquet file, a Parquet
folder or list of files whose parts differ): :func:`renamed_hint`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


def _key(name: object) -> str:
    """``name`` as compared: case folded, runs of spaces, ``-`` and ``.`` read as ``_``."""
    return re.sub(r"[\s.\-_]+", "_", str(name).strip().casefold())


def renamed_to(missing: str, candidates: Iterable[object]) -> object | None:
    """The column of ``candidates`` that ``missing`` was most likely renamed to, or None: the
    same name but for case and separators (``Age``, ``AGE``, ``exam-result``), else one that
    starts or ends with it as a word (``age_years``, ``patient_age``), else the closest by
    :func:`difflib.get_close_matches` (cutoff 0.8: ``weigth``)."""
    given = [c for c in candidates if str(c) != missing]
    want = _key(missing)
    same = [c for c in given if _key(c) == want]
    if same:
        return same[0]
    words = [c for c in given if _key(c).startswith(want + "_") or _key(c).endswith("_" + want)]
    if len(words) == 1:  # two (age_min, age_max: a released view) say nothing of a rename
        return words[0]
    close = difflib.get_close_matches(want, [_key(c) for c in given], n=1, cutoff=0.8)
    return next((c for c in given if _key(c) == close[0]), None) if close else None


def renamed_hint(missing: Iterable[str], candidates: Iterable[object]) -> str:
    """``" (did you mean 'Age' for 'age'?)"`` for the ``missing`` columns with a likely new name
    among ``candidates`` (the input's columns the policy does not name); ``""`` when none has one."""
    pool = list(candidates)
    pairs = [(m, found) for m in missing if (found := renamed_to(m, pool)) is not None]
    if not pairs:
        return ""
    return " (did you mean " + ", ".join(f"{str(new)!r} for {old!r}" for old, new in pairs) + "?)"


def misspelled_hint(name: str, columns: Iterable[str], entries: Iterable[str], table: str) -> str:
    """``"; is the QI 'wieght' a misspelling of 'weight'? ..."`` for a ``table`` entry ``name``
    that names no policy column while one of ``columns`` without an entry of its own there looks
    like it (:func:`renamed_to`), else ``""``. A drill (s46): ``qi = [...,
    "wieght"]`` was refused as "[domains] names 'weight', which is neither a QI nor the sensitive
    column", pointing at the entry that was right."""
    bare = [c for c in columns if c not in set(entries)]
    typo = renamed_to(name, bare)
    if typo is None:
        return ""
    return (
        f"; the policy column {typo!r} has no {table} entry: if it is a misspelling of {name!r}, "
        f"correct it where the columns are named ([columns] or --qi/--sensitive), else correct {table}"
    )

"""The input's column names against its policy: each named once, the policy's columns present
(:func:`missing_columns`, with what a missing column may mean), and the columns the policy does
not name, which are left out of the release (:func:`unused_note`).

Every entry point checks these before a value is read (:func:`dpriv.inputs.prepare_view`,
:func:`dpriv.raw_checks.check_raw`); a refusal is an :class:`~dpriv.errors.InputError` naming the
columns and the fix.
"""

from __future__ import annotations

import re
import warnings

from dpriv.column_hints import renamed_hint
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP
from dpriv.user_warning import warn_user
from dpriv.wording import Named, argument_named


def policy_columns(policy: ReleasePolicy) -> list[str]:
    return [c for c in dict.fromkeys([policy.id, *policy.qi, policy.sensitive])]


def duplicate_columns(columns, source: str = "the input") -> None:
    """Raise InputError if a column name occurs twice (a frame built by hand; a CSV header
    is checked on its raw text by :func:`dpriv.io.read_table`)."""
    names = [str(c) for c in columns]
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise InputError(
            f"{source} has the column(s) {dup} more than once; rename or drop the copies so that "
            "each column name is unique"
        )


def unused_columns(columns, policy: ReleasePolicy) -> list[str]:
    """Columns of the input the policy does not name: they are dropped from the release."""
    named = {policy.id, *policy.qi, policy.sensitive, *([policy.time] if policy.time else [])}
    return [str(c) for c in columns if c not in named]


#: How :func:`unused_note` starts.
UNUSED = "not released: column(s)"
#: How a Python caller adds a QI to a policy (a command's user passes --qi).
ADD_QI = "policy.with_overrides(qi=[*policy.qi, COLUMN]) in Python"


def unused_note(columns, policy: ReleasePolicy, named: Named = argument_named) -> str | None:
    """``not released: column(s) ['name'] ...`` for the input's columns the policy does not name;
    how to add a QI in a Python caller's words, or with ``named=flag_named`` in ``dpriv``'s
    (``--qi``). None when a column the policy names is missing: that input is refused
    (:func:`missing_columns`), and the note before the refusal named the misspelt column's true
    name among those "not released" (``region`` for a policy's ``Region``)."""
    extra = unused_columns(columns, policy)
    if not extra or any(c not in set(map(str, columns)) for c in policy_columns(policy)):
        return None
    how = ADD_QI if named is argument_named else named("qi")
    return (
        f"{UNUSED} {extra} (not named by the policy as id, time, QI or sensitive); "
        f"a quasi-identifier among them belongs in the policy's qi ({how}) to be released generalized "
        "(never an identifier)"
    )


def warn_unused(columns, policy: ReleasePolicy) -> None:
    """:func:`unused_note` (in a Python caller's words) as a UserWarning, the user's line named,
    unless a ``dpriv`` command printed it itself (:func:`said_unused`)."""
    if note := unused_note(columns, policy):
        warn_user(note)


def said_unused() -> None:
    """In a ``dpriv`` command (inside its ``catch_warnings``), which prints the note as its own
    line: the library's warning of it is not printed again."""
    warnings.filterwarnings("ignore", message=re.escape(UNUSED))


_DEFAULT_ID = ReleasePolicy.model_fields["id"].default


def missing_columns(columns, policy: ReleasePolicy, frame: str | None = None) -> None:
    """Raise InputError listing every policy column absent from ``columns``; its advice names
    ``dpriv``'s flags, or, given ``frame`` (the name of a Python caller's frame: ``"view"``),
    the policy's fields and pandas."""
    wanted = [policy.id, *policy.qi, policy.sensitive]
    absent = [c for c in wanted if c not in columns]
    if not absent:
        return
    if GROUP in columns or any(f"{c}_min" in columns and f"{c}_max" in columns for c in absent):
        raise InputError(
            f"missing column(s) {absent}; the input has {list(columns)}, which looks like a released "
            "(already generalized) view: dpriv releases original data only, feed the original view"
        )
    unnamed = [c for c in columns if c not in (*wanted, policy.time)]
    raise InputError(
        f"missing column(s) {absent}; the input has {list(columns)}{renamed_hint(absent, unnamed)}. "
        + (
            "Rename the columns or pass --id/--qi/--sensitive (or [columns] in the policy)."
            if frame is None
            else "Rename the columns or name them in the policy's id, qi and sensitive fields."
        )
        + _missing_hints(list(columns), policy.id in absent and policy.id == _DEFAULT_ID, frame)
    )


def _missing_hints(columns: list, no_id: bool, frame: str | None = None) -> str:
    """What a missing column may mean: a table without ids (``no_id``: the default id column is
    missing; the fix in a Python caller's words given ``frame``, :func:`missing_columns`), or a
    file whose first line is data, not a header (a third or more of its column names are numbers)."""
    numbers = [c for c in columns if re.fullmatch(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*", str(c))]
    if not columns:  # a Parquet file of no columns: no header line to add, no id column to name
        return " The input has no columns at all (an empty table): give the file that holds the data."
    hints = []
    if 3 * len(numbers) >= len(columns):
        hints.append(
            f" The file seems to have no header row (column names such as {numbers[:3]} look like "
            "data): add a first line naming the columns."
        )
    if no_id and frame == "view":  # one view: its rows may be numbered as the ids
        hints.append(
            f" A table without respondent ids: number its rows as the id with {frame}.assign({_DEFAULT_ID}="
            f"range(len({frame}))), or name its id column in the policy's id field."
        )
    elif no_id and frame is not None:  # a history: one id per respondent, the same in every view
        hints.append(" A table without respondent ids: name its id column in the policy's id field.")
    elif no_id:
        hints.append(
            " A table without respondent ids: pass --add-row-id to number its rows as the id "
            "(or --id C to name its id column)."
        )
    return "".join(hints)

"""The checks of a whole input before any view of it is released: the domains the policy does
not declare, filled from the data (:func:`resolve_policy`), and a history's release indices
(:func:`check_history`). The per-view and per-row checks are in :mod:`dpriv.validate`."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import NamedTuple

import dask
import dask.dataframe as dd
import pandas as pd

from dpriv._dispatch import is_dask, to_pandas
from dpriv.errors import InputError, PolicyError, check_count
from dpriv.input_columns import missing_columns, policy_columns, unused_columns
from dpriv.part_footers import one_value
from dpriv.policy import ReleasePolicy
from dpriv.policy_hierarchies import hierarchy_domains
from dpriv.policy_values import check_inferred_exit_values
from dpriv.raw_checks import check_raw
from dpriv.row_problems import problems_of
from dpriv.rows import PROBLEM_COLUMNS, bad_rows, describe, input_file, spans
from dpriv.same_text import check_same_text
from dpriv.validate import check_rows, check_some_value
from dpriv.view_summary import ViewSummary, counts_and_digest, counts_meta, summary_of


def resolve_policy(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, recorded: Collection[str] = ()
) -> tuple[ReleasePolicy, list[str]]:
    """Fill the domains the policy does not declare from the data (computes those columns).

    Raw checks come first (:func:`dpriv.raw_checks.check_raw`): a missing column, an empty
    view, generalized values such as ``[45-52]`` or ``*``, numbers stored as text; the row
    checks of the resolved policy last over a whole history (:func:`check_rows`), so that the
    bad rows of every view are named at once. ``recorded``: columns whose domain a resumed ledger
    recorded (:func:`dpriv.ledger_domains.recorded_columns`), their spellings judged against it
    (:func:`dpriv.ledger_domains.refuse_outside_recorded`, by row) rather than against each other.
    """
    check_raw(view, policy)
    policy, notes = hierarchy_domains(view, policy)  # before inference: the hierarchy gives the levels
    if not policy.is_resolved():
        cols = [c for c in (*policy.qi, policy.sensitive) if c not in policy.domains and c in view.columns]
        data = to_pandas(view[cols])
        check_some_value(view, data, policy)  # all missing: no domain to infer
        check_same_text(view, data.drop(columns=[c for c in cols if c in recorded]), policy)
        check_inferred_exit_values(data, policy)
        resolved, inferred = policy.resolve(data)
        notes = notes + inferred + date_hints(data, policy, resolved)
        policy = resolved
    if policy.time:  # every view of a history at once (one view is checked whole by validate_view)
        try:
            check_rows(view, policy)
        except InputError as exc:
            raise InputError(f"{exc}{renamed_hint(view, policy)}") from None
    return policy, notes


def renamed_hint(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> str:
    """``"; column 'wt' appears only in view 5, where 'weight' is missing: renamed? ..."``, for
    each column the policy does not name that holds values only in views where a column it names
    holds none (a column renamed in some weeks: the bad rows of the history's message); ``""``
    otherwise, and without a time column."""
    unused = set(unused_columns(view.columns, policy))
    extra = [c for c in view.columns if str(c) in unused]
    if not extra or policy.time not in view.columns:  # one view (a time the view lacks), or no time
        return ""
    named = policy_columns(policy)
    counts = view.groupby(policy.time)[[*named, *extra]].count()  # non-missing cells per view
    counts = counts.compute() if is_dask(counts) else counts
    hints = []
    for col in extra:
        present = set(counts.index[counts[col] > 0])
        for name in named:
            if present and present <= set(counts.index[counts[name] == 0]):
                hints.append(
                    f"; column {col!r} appears only in {policy.time} {spans(present)}, where {name!r} "
                    f"is missing: renamed? name it {name!r} there"
                )
    return "".join(hints)


#: An ISO 8601 calendar date, optionally with a time (``2024-03-01``, ``2024-03-01T08:30``).
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][\d:.+\-Z]*)?$")


def date_hints(data: pd.DataFrame, given: ReleasePolicy, resolved: ReleasePolicy | None) -> list[str]:
    """A hint per QI inferred categorical (no kind, domain or hierarchy given) whose values are
    all ISO dates: ``"'adm' looks like dates: pass --date adm to release it as date
    intervals"`` (a warning: the release goes on with sets of exact dates). ``resolved``:
    ``given`` resolved on ``data``, or None (not resolved yet: a text column is inferred
    categorical, :func:`date_hints_of`)."""
    hints = []
    for name in given.qi:
        if name in given.kinds or name in given.domains or name in given.hierarchies:
            continue
        if name not in data.columns or (resolved is not None and resolved.kinds.get(name) != "categorical"):
            continue
        col = data[name].dropna()
        if col.empty or pd.api.types.is_numeric_dtype(col.dtype):
            continue
        text = col.astype(str).str.strip()
        if not text.str.match(_ISO_DATE).all():
            continue
        if pd.to_datetime(text, format="ISO8601", errors="coerce").isna().any():
            continue  # 2024-13-45 matches the pattern but is no date
        hints.append(
            f"warning: {name!r} looks like dates: pass --date {name} to release it as date "
            f'intervals (or [kinds] {name} = "date" in the policy; in Python, '
            f"policy.with_overrides(kinds={{**policy.kinds, {name!r}: 'date'}}))"
        )
    return hints


def date_hints_of(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> list[str]:
    """:func:`date_hints` for a view or history before its policy is resolved (``dpriv
    release`` says them as ``dpriv anonymize`` does): reads only the QIs a hint may concern,
    those with no kind, domain or hierarchy given (none with a ledger's recorded policy)."""
    cols = [
        q
        for q in policy.qi
        if q in view.columns
        and q not in policy.kinds
        and q not in policy.domains
        and q not in policy.hierarchies
    ]
    if not cols:
        return []
    return date_hints(to_pandas(view[cols]), policy, None)


def check_until(until: object) -> None:
    """InputError unless ``until`` (release the views up to this index) is None or an int >= 1."""
    check_count("until", until, "release the views up to this index", optional=True)


def check_npartitions(npartitions: object) -> None:
    """InputError unless ``npartitions`` (Hilbert ranges per view) is None or an int >= 1 (0
    fell back to the default without a word, -3 failed deep inside Dask)."""
    check_count("npartitions", npartitions, "Hilbert ranges per view, --npartitions", optional=True)


def check_loop_args(until: object, npartitions: object, on_release: object) -> None:
    """``release_history``'s loop arguments: :func:`check_until`, :func:`check_npartitions`,
    and ``on_release`` a function or None (a TypeError after release 1 was committed before)."""
    check_until(until)
    check_npartitions(npartitions)
    check_callback("on_release", on_release, "(index, metrics)")


def check_callback(name: str, fn: object, takes: str) -> None:
    """InputError unless the callback argument ``name`` is a function (of ``takes``) or None."""
    if fn is not None and not callable(fn):
        raise InputError(f"{name} must be a function of {takes} or None, not {fn!r}")


def missing_time(columns, policy: ReleasePolicy) -> str:
    """The message for a policy's time column the input lacks, with both ways out."""
    return (
        f"missing time column {policy.time!r}; the input has {list(columns)}: a history needs the "
        f"view index of each row in column {policy.time!r} (or [columns] time naming the column "
        "that holds it); for one view (dpriv anonymize) leave time out of the policy"
    )


def check_history(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> list[int]:
    """The release indices 1..n of a history; refuses a history without rows (header only), gaps
    and a missing time column."""
    _check_history_columns(history, policy)
    return _history_indices(history, policy)


def _check_history_columns(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> str:
    """:func:`check_history`'s checks of the names of the columns (no row read); the name of the
    time column, once the policy names one and the history has it."""
    if not policy.time:
        # a statistics office with one table reaches for release to run a baseline (s43, user C)
        raise PolicyError(
            'a history needs a time column: set [columns] time (e.g. "view") or --time C, the column '
            "holding each row's release index 1..n. One table is released by dpriv anonymize, with "
            "JS-reduce or a Mondrian baseline (--method mondrian-l; --add-row-id for a table without "
            "ids); into a ledger it is a history of one view: add a column of 1s (pandas: "
            "frame.assign(view=1)) and, if the table has no respondent id, a column numbering its rows"
        )
    missing_columns(history.columns, policy)
    if policy.time not in history.columns:
        raise InputError(missing_time(history.columns, policy))
    return policy.time


def _history_indices(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> list[int]:
    """:func:`check_history` once its columns are checked: the checks reading the time column."""
    t = history[policy.time]
    bad_type = not pd.api.types.is_integer_dtype(t.dtype)
    if is_dask(t):  # each part's distinct times, then the whole's here: Dask's drop_duplicates shuffles
        parts = t.map_partitions(pd.Series.drop_duplicates, meta=t._meta)
        has_nan, idx, n = dask.compute(t.isna().any(), parts, t.shape[0])
        idx = idx.drop_duplicates()
    else:
        has_nan, idx, n = t.isna().any(), t.drop_duplicates(), len(t)
    if n == 0:  # a header-only file reads as text columns: not a time column problem
        raise InputError(
            f"{input_file().path if input_file() else 'the history'} has a header but no rows "
            f"(columns {list(history.columns)}): give the file that holds the views' tuples"
        )
    if has_nan or bad_type:
        problems = problems_of(history, _time_problems, policy)
        header = policy.time in {str(v) for v in idx.tolist()}  # a file appended with its header
        fix = "delete the header line(s) repeated inside the file" if header else "renumber the views"
        as_int = f"store them as integers (e.g. frame[{policy.time!r}].astype(int))"
        rows = sorted((r for found in problems["rows"] for r in found), key=lambda r: r.position)
        count = int(problems["count"].sum()) if rows else 0
        if not header and not has_nan and all(isinstance(v, str) for v in idx.tolist()):
            fix = as_int
        elif not header and not has_nan and not rows:  # 1.0, 2.0
            fix = f"write them as whole numbers (1, not 1.0): {as_int}"
        elif not header and has_nan and count == _blank_rows(history):
            fix = "delete these empty rows (every cell blank, such as a CSV's trailing ',,,,' lines)"
        elif not header and has_nan:
            fix = "give each of these rows the index of its view (1..n), or delete them"
        where = f" ({describe(rows, count, None, whole=True)})" if rows else ""
        raise InputError(
            f"time column {policy.time!r} must hold release indices 1, 2, ... (integers, no NaN); "
            f"it holds {_not_indices(idx)}{where}: {fix}"
        )
    idx = sorted(int(i) for i in idx)
    if idx != list(range(1, len(idx) + 1)):
        raise InputError(
            f"time column {policy.time!r} must hold consecutive release indices 1..n; "
            f"found {idx[:10]}: a history holds every view from the first on (a ledger skips the "
            "views it has already released), so add the missing views, or renumber the views if "
            "they were numbered wrongly"
        )
    return idx


class CheckedHistory(NamedTuple):
    """:func:`checked_history`'s result: the ``history`` to release from (pandas or Dask, the
    columns it was given; a Dask one of one view persisted) and its release ``indices`` (int,
    1..n in order, cut at ``until``)."""

    history: pd.DataFrame | dd.DataFrame
    indices: list[int]


def checked_history(
    history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, until: int | None = None
) -> CheckedHistory:
    """The history to release from and its release indices up to ``until`` (:class:`CheckedHistory`;
    :func:`check_history`'s refusals). A Dask history of ONE view comes persisted (on the
    workers under a distributed client): its raw and row checks, its digests and the release's
    ``rbk`` step then read the input once instead of once each (issue 13), and the release
    persists that view in its ``rbk`` step anyway. A history of several views stays as it was
    given (each view a filter of it, pushed down to a Parquet reader), as does a pandas one."""
    # once, before the footers are read (nothing read yet): a policy without a time column, or a
    # history without it, is refused here, so the footers are only asked about a column it has
    time = _check_history_columns(history, policy)
    # the footers tell one view (its time column one value, no null): persisted before its time
    # column is checked, which then reads it from memory (the same rows: same result and words)
    persisted = is_dask(history) and one_value(history, time)
    if persisted:  # one read of the files serves the time column's check and the release (issue 13)
        history = history.persist()
    indices = _history_indices(history, policy)
    if is_dask(history) and len(indices) == 1 and not persisted:
        history = history.persist()
    return CheckedHistory(history, indices[:until])


def _blank_rows(frame: pd.DataFrame | dd.DataFrame) -> int:
    """How many rows of ``frame`` have every cell missing."""
    blank = frame.isna().all(axis=1).sum()
    return int(blank.compute() if is_dask(blank) else blank)


def _time_problems(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """The rows of ``part`` whose time is not a whole number (missing, text, 1.5)."""
    num = pd.to_numeric(part[policy.time].astype(object), errors="coerce")
    bad = (num.isna() | (num % 1 != 0)).to_numpy()
    found = [(0, policy.time, "release indices", bad_rows(part, bad, None), int(bad.sum()))]
    return pd.DataFrame(found if bad.any() else [], columns=PROBLEM_COLUMNS)


def _not_indices(values: pd.Series) -> str:
    """The first (up to 5) distinct values of a time column that are not whole numbers, as text
    for a message (missing values named as such)."""
    bad = []
    for v in values.tolist():
        if pd.isna(v):
            bad.append("a missing value")
            continue
        try:
            whole = float(v).is_integer()
        except (TypeError, ValueError):
            whole = False
        if not whole:
            bad.append(repr(v))
    texts = sorted({repr(v) for v in values.tolist() if isinstance(v, str)})
    if not bad and texts:  # "1", "2": numbers written as text (a column built as strings)
        return f"numbers written as text ({', '.join(texts[:5])})"
    return ", ".join(sorted(set(bad))[:5]) or "whole numbers of a non-integer type"


def history_summaries(
    history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, indices: list[int]
) -> dict[int, ViewSummary]:
    """The :class:`~dpriv.view_summary.ViewSummary` of views ``indices`` of a history whose rows
    :func:`resolve_policy` has checked (:func:`dpriv.validate.check_rows`, every view at once):
    the same sizes, sensitive counts and digests as :func:`dpriv.validate.validate_view` of each
    view, in one pass over the history (one compute on Dask instead of one per view: the
    per-view round trips were most of a small history's time on a cluster, issue 13). The
    views' sizes are judged by :func:`dpriv.ledger_checks.check_views`.
    """
    if is_dask(history):
        meta = counts_meta(policy).assign(time=pd.Series(dtype="int64"), n=pd.Series(dtype="int64"))
        stats = history.map_partitions(_view_stats, policy, meta=meta).compute()
    else:
        stats = _view_stats(history, policy)
    out = {}
    for i in indices:
        rows = stats[stats["time"] == i]
        out[i] = summary_of(rows.drop(columns=["time", "n"]), int(rows["n"].sum()))
    return out


def _view_stats(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """:func:`dpriv.view_summary.counts_and_digest` of each view present in ``part``, with its time
    and its number of rows in ``part``."""
    t = part[policy.time].to_numpy()
    if len(t) and (t == t[0]).all():  # one view (a 10^6 release's part): no split, no copy
        views = [counts_and_digest(part, policy).assign(time=int(t[0]), n=len(part))]
    else:
        views = [
            counts_and_digest(v, policy).assign(time=int(i), n=len(v)) for i, v in part.groupby(policy.time)
        ]
    meta = counts_meta(policy).assign(time=pd.Series(dtype="int64"), n=pd.Series(dtype="int64"))
    return pd.concat([meta, *views], ignore_index=True).astype(meta.dtypes.to_dict())

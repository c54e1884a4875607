"""Input validation of a view against its ReleasePolicy, before anything runs.

One pandas kernel (:func:`partition_problems`) finds the problems of a frame; on Dask it
runs per partition and the results are gathered with the view's size, its sensitive
counts and its duplicate ids in ONE compute. The first problem found raises one
:class:`~dpriv.errors.InputError` naming the column, the offending rows (the first
:data:`~dpriv.rows.MAX_ROWS_SHOWN` over all partitions and views, by their line in the input
file where :func:`dpriv.rows.rows_of` names it) and the fix. The checks before the domains are
inferred (:func:`dpriv.raw_checks.check_raw`) come first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.domain_codes import codes as codes  # re-exported: many modules import it from here
from dpriv.errors import InputError, PolicyError
from dpriv.input_columns import missing_columns
from dpriv.level_problems import add_unknown, add_unknown_levels, domain_word
from dpriv.policy import ReleasePolicy, as_python
from dpriv.policy_fix import declare_categorical
from dpriv.raw_checks import GENERALIZED, offending_rows
from dpriv.repeated_keys import duplicate_rows, key_columns, may_repeat
from dpriv.row_problems import lazy_problems, placed, problems_message, problems_of
from dpriv.rows import MAX_ROWS_SHOWN, PROBLEM_COLUMNS, csv_rows, input_file, missing_message
from dpriv.user_warning import warn_user
from dpriv.value_types import huge_values
from dpriv.view_summary import ViewSummary, counts_and_digest, counts_meta, summary_of
from dpriv.wording import counted


def first_problem(
    problems: pd.DataFrame, policy: ReleasePolicy, *, whole: bool = False, checked: int | None = None
) -> str:
    """One message for the problems found, the first in full and the others after it
    (:func:`dpriv.row_problems.problems_message`): rows over all partitions (and all views of a
    history), the first :data:`MAX_ROWS_SHOWN` named, by their line in the input file when
    ``whole`` (the frame checked is that file, whole and in order: :func:`dpriv.rows.describe`)."""
    return problems_message(problems, policy.time, whole=whole, checked=checked)


def check_rows(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    source: str = "the input",
    inferred: frozenset[str] = frozenset(),
) -> None:
    """The row checks of :func:`validate_view` (missing values, text in a numeric QI, values
    outside the domains; then a respondent twice in one view of a history) over the whole ``view``
    (every view of a history at once), so that one message names the bad rows of all views by
    their line in the input file (first :data:`MAX_ROWS_SHOWN`, then how many more). InputError.
    ``inferred``: the columns whose domain no policy given declares (a resumed ledger's, inferred
    from its first release): a value outside it is said to be outside its *inferred* domain."""
    history = bool(policy.time) and policy.time in view.columns
    if is_dask(view):  # the hash check of repeated (time, id) keys in the same compute
        found, repeats = dask.compute(
            lazy_problems(view, partition_problems, policy, csv_rows(), inferred),
            may_repeat(view[key_columns(view, policy)]) if history else False,
        )
        problems = placed(view, found)
    else:
        problems, repeats = partition_problems(view, policy, csv_rows(), inferred), history
    if not len(problems) and repeats:
        problems = duplicate_rows(view, policy, hashed=True)
    if len(problems):
        message = first_problem(problems, policy, whole=True)
        raise InputError(message if input_file() or policy.time else f"{source}: {message}")


def _empty_problems(part: pd.DataFrame, policy: ReleasePolicy, names: list[str], csv: bool) -> pd.DataFrame:
    """The rows of ``part`` missing a value of ``names``, columns that hold no value at all
    (``csv``: of a CSV file, :func:`dpriv.rows.missing_message`)."""
    found = [
        (
            1,
            name,
            missing_message(name, every=True, csv=csv),
            offending_rows(part, mask, policy),
            int(mask.sum()),
        )
        for name in names
        if (mask := part[name].isna().to_numpy()).any()
    ]
    return pd.DataFrame(found, columns=PROBLEM_COLUMNS).astype({"order": "int64", "count": "int64"})


def check_some_value(
    view: pd.DataFrame | dd.DataFrame, data: pd.DataFrame, policy: ReleasePolicy, source: str = "the input"
) -> None:
    """InputError naming the columns of ``data`` (``view``'s columns whose domains are to be
    inferred) that hold no value at all, before an inference that would find no domain."""
    empty = [c for c in data.columns if data[c].isna().all()]
    if empty:
        problems = problems_of(view, _empty_problems, policy, empty, csv_rows())
        message = first_problem(problems, policy, whole=True)
        raise InputError(message if input_file() or policy.time else f"{source}: {message}")


def check_unique_ids(view: pd.DataFrame, policy: ReleasePolicy, source: str = "the input") -> None:
    """Refuse (InputError) a view, or a history, in which a respondent holds two tuples of one
    view, naming the id and rows (a verification against such an original would count a
    respondent twice). ``view`` is the input file as read (rows named by their line in it
    under :func:`dpriv.rows.rows_of`)."""
    problems = duplicate_rows(view, policy)
    if len(problems):
        raise InputError(f"{source}: {first_problem(problems, policy, whole=True)}")


#: anonymize given a whole history: its repeated ids are the respondents' later views.
_HISTORY_HINT = (
    "; or, if this file is a whole history (one view per time), release it with dpriv release "
    "FILE --ledger LEDGER (release_history(history, policy, ledger) in Python) and its time "
    "column ([columns] time, e.g. --time view)"
)


def _outside_domain(policy: ReleasePolicy, name: str, shown: list, domain: list, how: str) -> str:
    """The message of values ``shown`` of QI ``name`` outside its ``domain`` (``how``: "declared"
    or "inferred", :func:`dpriv.level_problems.domain_word`); a date QI's (held as days since
    1970-01-01) as dates, not as those day numbers, saying how a domain written as numbers is
    read (a numeric domain given to a date column; not said of an inferred one)."""
    from dpriv.dates import shown_domain

    first, last = shown_domain(policy, name, domain)
    values = shown_domain(policy, name, shown)
    said = f"QI {name!r} has values {values} outside its {how} domain [{first}, {last}]"
    # before the fix, whose words policy_fix.with_domain_hint rewrites
    if policy.kinds.get(name) == "date" and how == "declared":
        said += " (a date QI: write its [domains] bounds as dates; numbers there count days from 1970-01-01)"
    return f"{said}: widen [domains] or correct the data"


def partition_problems(
    part: pd.DataFrame, policy: ReleasePolicy, csv: bool = False, inferred: frozenset[str] = frozenset()
) -> pd.DataFrame:
    """Problems of one frame as rows (order, column, message, rows); empty when valid. ``csv``:
    the frame is a CSV file's rows (:func:`dpriv.rows.csv_rows`), said in a missing value's message;
    ``inferred``: the columns whose domain is said to be inferred, not declared (:func:`check_rows`)."""
    found: list[tuple] = []

    def add(order: int, column: str, mask: np.ndarray, message: str) -> None:
        if mask.any():
            found.append((order, column, message, offending_rows(part, mask, policy), int(mask.sum())))

    for name in [policy.id, *policy.qi, policy.sensitive]:
        add(1, name, part[name].isna().to_numpy(), missing_message(name, csv=csv))
    for name in policy.qi:
        col = part[name].dropna()
        if policy.kind(name) == "numeric":
            num = part[name]
            if not (pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)):
                num = pd.to_numeric(part[name].astype(object), errors="coerce")
                text = (num.isna() & part[name].notna()).to_numpy()
                if text.any():
                    _add_text(add, part[name], text, name)
                    continue
                # numbers stored as text under a declared domain (a float column: type_problems)
                if huge := huge_values(num.to_numpy(dtype=np.float64, na_value=np.nan), name):
                    add(3, name, *huge)
            lo, hi = policy.domains[name]
            # a nullable column's comparison holds NA for a missing value (reported on its own)
            out = ((num < lo) | (num > hi)).to_numpy(dtype=bool, na_value=False)
            shown = pd.unique(np.asarray(num)[out])[:5].tolist() if out.any() else []
            add(3, name, out, _outside_domain(policy, name, shown, [lo, hi], domain_word(name, inferred)))
        else:
            text = part[name].astype(str)
            add(
                2,
                name,
                (part[name].notna() & (text.str.strip() == "")).to_numpy(),
                f"categorical QI {name!r} has empty strings; give them a level or drop the rows",
            )
            add_unknown_levels(add, part, policy, name, domain_word(name, inferred))
    sensitive = f"sensitive column {policy.sensitive!r}"
    how = domain_word(policy.sensitive, inferred)
    add_unknown(add, part, policy.sensitive, policy.sensitive_domain, sensitive, "domain", how=how)
    return pd.DataFrame(found, columns=PROBLEM_COLUMNS).astype({"order": "int64", "count": "int64"})


def _add_text(add, col: pd.Series, text: np.ndarray, name: str) -> None:
    """Problems for text in numeric QI ``name`` (``text``: the rows): generalized-looking
    values (:data:`GENERALIZED`) and other text are two problems, each with its own fix."""
    gen = text & col.astype(str).str.match(GENERALIZED).to_numpy()
    if gen.any():
        add(
            2,
            name,
            gen,
            f"numeric QI {name!r} holds text such as {col[gen].iloc[0]!r}; an already generalized "
            "file (intervals like '[45-52]' or '*') cannot be released again: feed the original "
            "data, or declare the QI categorical in [kinds]",
        )
    other = text & ~gen
    if other.any():
        values = pd.unique(col[other].to_numpy())
        shown = ", ".join(repr(v) for v in values[:5]) + (
            f" and {len(values) - 5} more" if len(values) > 5 else ""
        )
        # the example is the column's own: the number in its first text holding one, if any
        numbers = ((v, re.search(r"-?\d+(?:\.\d+)?", str(v))) for v in values[:5])
        example = next((f" (e.g. {n.group()} for {v!r})" for v, n in numbers if n), "")
        add(
            2,
            name,
            other,
            f"numeric QI {name!r} holds text that is not a number: {shown}; correct each to a number"
            f"{example} or drop the rows, or declare the QI categorical ({declare_categorical(name)})",
        )


def validate_view(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, *, allow_small: bool = False
) -> ViewSummary:
    """Check ``view`` against a resolved ``policy``; return its size and sensitive counts.

    Raises
    ------
    InputError
        missing column, NaN in id/QI/sensitive, text in a numeric QI, a value outside a
        declared domain, an unknown sensitive value, a duplicate id, an empty view.
    PolicyError
        k larger than the view (unless ``allow_small``: a history whose policy has
        ``small_view = "suppress"`` releases such a view fully suppressed).
    """
    missing_columns(view.columns, policy)
    if not policy.is_resolved():
        absent = [c for c in (*policy.qi, policy.sensitive) if c not in policy.domains]
        raise PolicyError(f"no domain for {absent}; declare [domains] or let dpriv infer them (resolve)")
    csv = csv_rows(policy.time is None)  # as the message's lines: only for a view that is the whole file
    if is_dask(view):
        problems = lazy_problems(view, partition_problems, policy, csv)
        counts = view.map_partitions(counts_and_digest, policy, meta=counts_meta(policy))
        ids = view[policy.id].value_counts()
        dups = ids[ids > 1]
        problems, counts, dups, n = dask.compute(
            problems, counts, dups.head(MAX_ROWS_SHOWN, npartitions=-1), view[policy.id].shape[0]
        )  # rows counted on one column: Dask cannot sample some others (decimal128(1, 1))
    else:
        problems, counts = partition_problems(view, policy, csv), counts_and_digest(view, policy)
        vc = view[policy.id].value_counts()
        dups, n = vc[vc > 1].head(MAX_ROWS_SHOWN), len(view)
    if len(problems):  # lines of the input file only for a view that is the whole file
        raise InputError(first_problem(placed(view, problems), policy, whole=policy.time is None))
    if len(dups):  # the rows, by their line in the input file
        found = duplicate_rows(view, policy, hashed=True)
        if not len(found):  # each respondent once per view of the time column: several views
            raise InputError(_several_views(view, policy))
        message = first_problem(found, policy, whole=policy.time is None)
        raise InputError(message + (_HISTORY_HINT if not policy.time else ""))
    if n == 0:
        raise InputError("the view is empty: there is nothing to release")
    check_size(int(n), policy, allow_small)
    return summary_of(counts, int(n))


def _several_views(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> str:
    """The refusal of a one-view command's input that holds several views of the time column with
    respondents in more than one: how many views it holds, and which (a drill, s46: the message
    named the first such respondent by her id, which said less of the input and put an id in the
    terminal's log)."""
    times = view[policy.time].drop_duplicates()
    times = [as_python(t) for t in (times.compute() if is_dask(times) else times)]
    try:
        times.sort()
    except TypeError:  # values of several types (1 and '2'): in the order of their text
        times.sort(key=repr)
    shown = f"{times[0]!r}..{times[-1]!r}" if len(times) > 3 else ", ".join(map(repr, times))
    return (
        f"the input holds {len(times)} views of the time column {policy.time!r} ({shown}), with "
        "respondents in more than one: this command releases one view; release a history with dpriv "
        f"release (release_history), or keep the rows of one view (e.g. {policy.time} = {times[-1]!r})"
    )


def check_k_below_largest(
    summaries: Mapping[int, ViewSummary], policy: ReleasePolicy, to_release: bool = True
) -> None:
    """PolicyError when k exceeds every view of ``summaries``: the per-view refusal's advice,
    ``small_view = "suppress"``, would then publish only empty releases (a fresh user's drill,
    s40), so the message names the largest view and asks for a smaller k. Under ``small_view =
    "suppress"`` (the policy asks for such views to be released empty) a UserWarning says the
    same when views are ``to_release``: each would publish nothing (s41: they were written silently)."""
    if not summaries:
        return
    i, largest = max(summaries.items(), key=lambda item: item[1].n_rows)
    if policy.k <= largest.n_rows:
        return
    said = (
        f"k = {policy.k} exceeds every view of the history (the largest, {policy.time} = {i}, holds "
        f"{largest.n_rows} tuples)"
    )
    fix = f"choose k of at most {largest.n_rows} ([privacy] k or --k)"
    if policy.small_view != "suppress":
        raise PolicyError(f'{said}: {fix}; small_view = "suppress" would release every view empty')
    if to_release:
        warn_user(
            f'{said}: with small_view = "suppress" every view is released empty (every tuple '
            f"suppressed, nothing published); {fix} to publish them"
        )


#: Why ``small_view = "merge"`` is refused (docs/policy.md, "Views smaller than k").
MERGE_REFUSED = (
    'small_view = "merge" is refused: a view merged into the next release would put tuples of '
    "two times in one release (a respondent of both views twice, her knowledge revised (E7) "
    "and estimated (E14) as if she had one tuple, t measured against a mixture of two views) "
    'and the last view has no next one; use small_view = "suppress" (the small view is '
    'released empty and recorded in the ledger) or "refuse" (the default); see docs/policy.md'
)


def refuse_merge(policy: ReleasePolicy) -> None:
    """PolicyError :data:`MERGE_REFUSED` for a history's policy with ``small_view = "merge"``."""
    if policy.small_view == "merge":
        raise PolicyError(MERGE_REFUSED)


def check_size(n: int, policy: ReleasePolicy, allow_small: bool) -> None:
    """PolicyError when k is larger than a view of ``n`` rows (unless ``allow_small``)."""
    if policy.k > n and not allow_small:
        hint = ', or set small_view = "suppress" in [privacy] (this view is then released fully '
        hint = hint + "suppressed and the history goes on)" if policy.time else ""
        raise PolicyError(
            f"k = {policy.k} is larger than the view ({counted(n, 'row')}): lower k or add data{hint}"
        )

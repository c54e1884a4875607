"""Checks that need no cluster, run before one is started, so that a bad file is refused at once
(issue 16 item 7); everything else is checked later on the whole view (:mod:`dpriv.validate`)."""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd

from dpriv.errors import InputError
from dpriv.input_checks import missing_time
from dpriv.input_columns import missing_columns
from dpriv.policy import ReleasePolicy
from dpriv.raw_checks import is_text, raw_problems
from dpriv.validate import first_problem

#: Rows of the first partition that :func:`preflight` reads.
PREFLIGHT_ROWS = 1000


def preflight(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, source: str = "the input") -> None:
    """Checks that need no cluster, run before one is started (a bad file is refused at once).

    The columns come from the frame's meta (no data read): a missing id/QI/sensitive column,
    and, for a policy with a time column, a missing time column. Then the first
    :data:`PREFLIGHT_ROWS` rows of the first partition (one block read) are searched for
    generalized or placeholder values (``[45-52]``, ``{F,M}``, ``*``, ``?``), which no later
    row can make right. Everything else is checked later on the whole view
    (:func:`dpriv.raw_checks.check_raw`, :func:`dpriv.validate.validate_view`). The hierarchy
    files of the policy are read and checked too.

    Raises InputError naming the column, the rows found and the fix.
    """
    missing_columns(view.columns, policy)
    for q in policy.hierarchies:
        policy.hierarchy(q)  # reads and checks the file (InputError naming the row and the fix)
    if policy.time and policy.time not in view.columns:
        raise InputError(missing_time(view.columns, policy))
    columns = [c for c in (*policy.qi, policy.sensitive) if c not in policy.domains and is_text(view[c])]
    if not columns:
        return
    if isinstance(view, dd.DataFrame):
        head = view.head(PREFLIGHT_ROWS, npartitions=1, compute=True)
    else:
        head = view.head(PREFLIGHT_ROWS)
    problems = raw_problems(head, policy, columns)
    problems = problems[problems["order"] == 1]  # generalized values; the rest needs every row
    if len(problems):
        raise InputError(f"{source}: {first_problem(problems, policy, whole=True, checked=len(head))}")

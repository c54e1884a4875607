"""Changes of the sensitive value the policy's own model rules out, warned about before a release.

Two kinds, counted per view to release (one tuple per respondent and view):

* a respondent recorded with an exit value (policy ``exit_values``: ``deceased``, ``discharged``)
  in an earlier view of the history who is in the view again;
* a respondent whose value changed since the view just before, in a way the defender's
  sequential knowledge (a table file's BK^seq of order 1) gives probability zero in every
  knowledge class (``liver_1`` -> ``alzheimer_3``).

Both are most often an export's mistake (an id reused, a value recorded in the wrong column or
week), but may be true, and an existing ledger's data may hold them: the release is not refused,
it treats them as the data says; :func:`warn_value_jumps` names the view, the counts and the
values involved (values of the sensitive domain, never an id) and what to check.

Counted without collecting the history: the id, time and sensitive columns of the views up to
the last one to release (the earlier views' exit rows only, and the view before the first one to
release), per bucket of the id on Dask (:func:`dpriv.state_buckets.by_bucket`), a count per view and
pair of values to the client; in process for a pandas history.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.domain_codes import codes
from dpriv.exit_guard import exit_codes
from dpriv.knowledge.tables import MarkovTables
from dpriv.policy import ReleasePolicy
from dpriv.state_buckets import by_bucket
from dpriv.user_warning import warn_user

#: Value pairs named in a warning, the most frequent first; the rest counted.
MAX_PAIRS = 4
_COUNTS = {"time": "int64", "exit": "bool", "prev": "int64", "cur": "int64", "n": "int64"}


def _jumps(
    rows: pd.DataFrame, cols: tuple[str, str, str], exits: np.ndarray, zero: np.ndarray, first: int
) -> pd.DataFrame:
    """Per (view >= ``first``, kind, previous code, code): the tuples of ``rows`` (id, time,
    sensitive ``cols``; whole respondents) after an exit (``exit`` True; ``prev``: the exit
    value) or after a change ``zero`` forbids from the view just before (``exit`` False)."""
    id_col, time_col, s_col = cols
    rows = rows.sort_values([id_col, time_col], kind="stable")
    ids = rows[id_col].to_numpy()
    time = rows[time_col].to_numpy(np.int64)
    s = rows[s_col].to_numpy(np.int64)
    same = np.zeros(len(rows), dtype=bool)
    same[1:] = ids[1:] == ids[:-1]  # the row before is the same respondent's
    is_exit = (s >= 0) & exits[np.maximum(s, 0)]
    # the position of the respondent's first exit row (len(rows): none), carried along her rows
    starts = np.flatnonzero(~same)
    group = np.cumsum(~same) - 1
    exit_at = np.where(is_exit, np.arange(len(rows)), len(rows))
    first_exit = np.minimum.reduceat(exit_at, starts) if len(rows) else exit_at
    at = first_exit[group]
    after_exit = np.arange(len(rows)) > at
    prev = np.full(len(rows), -1, dtype=np.int64)
    prev[1:] = np.where(same[1:] & (time[1:] == time[:-1] + 1), s[:-1], -1)
    jump = ~after_exit & (prev >= 0) & (s >= 0) & zero[np.maximum(prev, 0), np.maximum(s, 0)]
    keep = (time >= first) & (after_exit | jump)
    shown_prev = np.where(after_exit, s[np.minimum(at, len(rows) - 1)], prev)
    found = pd.DataFrame(
        {"time": time[keep], "exit": after_exit[keep], "prev": shown_prev[keep], "cur": s[keep], "n": 1}
    )
    return _summed(found)


def _summed(found: pd.DataFrame) -> pd.DataFrame:
    """``found``'s counts summed per (time, exit, prev, cur), with the dtypes of ``_COUNTS``: one
    row per tuple found in a part, and the rows of every part on Dask (a respondent's rows are in
    one part, but a pair of values in many)."""
    return found.groupby(["time", "exit", "prev", "cur"], as_index=False)["n"].sum().astype(_COUNTS)


def value_jumps(
    history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, todo: list[int], tables: MarkovTables | None
) -> pd.DataFrame:
    """The counts of :func:`_jumps` for the views ``todo`` of ``history`` (pandas or Dask):
    columns time, exit, prev, cur (codes of the sensitive domain), n (int64). ``tables``: the
    defender's fixed tables (None: IE, mined from the data, so no change is ruled out)."""
    m = len(policy.sensitive_domain)
    exits = np.isin(np.arange(m), exit_codes(policy) if policy.exit_values else [])
    zero = np.zeros((m, m), dtype=bool)
    if tables is not None and tables.order >= 1:
        zero = tables.tables[1].max(axis=0) == 0  # (M, M): zero in every knowledge class
        zero &= ~exits[:, None]  # after an exit: said as a return, not as a change
    empty = pd.DataFrame({c: pd.Series(dtype=t) for c, t in _COUNTS.items()})
    # views count from 1: a first view alone has no earlier row to return or change from (a
    # 10^6 first release would otherwise pay a shuffle of the whole view for nothing)
    if not todo or max(todo) <= 1 or not (exits.any() or zero.any()):
        return empty
    t, s_col = history[policy.time], policy.sensitive
    first, last = min(todo), max(todo)
    code = "_code"
    wanted = (t >= first - 1) & (t <= last)
    if exits.any():  # an earlier view's exits; its other rows cannot come back from an exit
        held = [v for v, e in zip(policy.sensitive_domain, exits) if e]  # in the data's type
        wanted |= (t < first - 1) & history[s_col].isin(held)
    rows = history[wanted][[policy.id, policy.time, s_col]]
    domain = list(policy.sensitive_domain)

    def coded(part: pd.DataFrame) -> pd.DataFrame:
        return part[[policy.id, policy.time]].assign(**{code: codes(part[s_col], domain)})

    cols = (policy.id, policy.time, code)
    if not is_dask(rows):
        return _jumps(coded(rows), cols, exits, zero, first)
    keyed = by_bucket(rows.map_partitions(coded, meta=coded(rows._meta)), policy.id, rows.npartitions)
    return _summed(keyed.map_partitions(_jumps, cols, exits, zero, first, meta=empty).compute())


def warn_value_jumps(
    history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, todo: list[int], tables: MarkovTables | None
) -> None:
    """A warning per view of ``todo`` holding returns after an exit or changes the knowledge
    rules out (:func:`value_jumps`): the counts and the values involved, what to check."""
    found = value_jumps(history, policy, todo, tables)
    values = [str(v) for v in policy.sensitive_domain]
    for time, view in found.groupby("time", sort=True):
        said = []
        for after_exit, part in view.groupby("exit", sort=False):
            part = part.sort_values(["n", "prev", "cur"], ascending=[False, True, True])
            pairs = [
                f"{values[p]!r} -> {values[c]!r} ({n})" for p, c, n in part[["prev", "cur", "n"]].to_numpy()
            ]
            more = f" and {len(pairs) - MAX_PAIRS} more" if len(pairs) > MAX_PAIRS else ""
            shown = ", ".join(pairs[:MAX_PAIRS]) + more
            n = int(part["n"].sum())
            if after_exit:
                said.append(
                    f"{n} respondent(s) recorded with an exit value ([release] exit_values) in an earlier "
                    f"view are in it again ({shown})"
                )
            else:
                said.append(
                    f"{n} respondent(s) changed value since view {time - 1} in a way the policy's "
                    f"sequential knowledge gives probability zero ({shown})"
                )
        warn_user(
            f"view {time}: {'; '.join(sorted(said))}; check the export (an id given to another "
            "respondent, a value recorded in the wrong week or column?): the release treats them as "
            "the data says"
        )

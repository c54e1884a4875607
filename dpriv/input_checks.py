"""The checks of a whole input before any view of it is released: the domains the policy does
not declare, filled from the data (:func:`resolve_policy`), and a history's release indices
(:func:`check_history`). The per-view and per-row checks are in :mod:`dpriv.validate`."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import pandas as pd

from dpriv._dispatch import is_dask, to_pandas
from dpriv.errors import InputError, PolicyError
from dpriv.hierarchy import hierarchy_domains
from dpriv.policy import ReleasePolicy
from dpriv.rows import input_file
from dpriv.validate import check_raw, check_rows, missing_columns


def resolve_policy(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy
) -> tuple[ReleasePolicy, list[str]]:
    """Fill the domains the policy does not declare from the data (computes those columns).

    Raw checks come first (:func:`dpriv.validate.check_raw`): a missing column, an empty
    view, generalized values such as ``[45-52]`` or ``*``, numbers stored as text; the row
    checks of the resolved policy last over a whole history (:func:`check_rows`), so that the
    bad rows of every view are named at once.
    """
    check_raw(view, policy)
    policy, notes = hierarchy_domains(view, policy)  # before inference: the hierarchy gives the levels
    if not policy.is_resolved():
        cols = [c for c in (*policy.qi, policy.sensitive) if c not in policy.domains and c in view.columns]
        policy, inferred = policy.resolve(to_pandas(view[cols]))
        notes = notes + inferred
    if policy.time:  # every view of a history at once (one view is checked whole by validate_view)
        check_rows(view, policy)
    return policy, notes


def check_history(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> list[int]:
    """The release indices 1..n of a history; refuses a history without rows (header only), gaps
    and a missing time column."""
    if not policy.time:
        raise PolicyError('a history needs a time column: set [columns] time (e.g. "view")')
    missing_columns(history.columns, policy)
    if policy.time not in history.columns:
        raise InputError(f"missing time column {policy.time!r}; the input has {list(history.columns)}")
    t = history[policy.time]
    bad_type = not pd.api.types.is_integer_dtype(t.dtype)
    if is_dask(t):
        has_nan, idx, n = dask.compute(t.isna().any(), t.drop_duplicates(), t.shape[0])
    else:
        has_nan, idx, n = t.isna().any(), t.drop_duplicates(), len(t)
    if n == 0:  # a header-only file reads as text columns: not a time column problem
        raise InputError(
            f"{input_file().path if input_file() else 'the history'} has a header but no rows "
            f"(columns {list(history.columns)}): there is nothing to release; give the file that "
            "holds the views' tuples"
        )
    if has_nan or bad_type:
        raise InputError(
            f"time column {policy.time!r} must hold release indices 1, 2, ... (integers, no NaN)"
        )
    idx = sorted(int(i) for i in idx)
    if idx != list(range(1, len(idx) + 1)):
        raise InputError(
            f"time column {policy.time!r} must hold consecutive release indices 1..n; "
            f"found {idx[:10]}: renumber the views"
        )
    return idx

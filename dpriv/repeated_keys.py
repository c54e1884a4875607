"""A respondent twice in one view: the rows whose key (time and id in a history, the id in one
view) occurs twice (:func:`duplicate_rows`), and, on Dask, whether any may, found on the workers
from one 64-bit hash per row (:func:`may_repeat`).

The exact count per key (a groupby of every key of the history into one task) was the largest
part of a 10^6-row history's input checks (issue 13); it now runs only when two rows share a
hash. Equal keys always have equal hashes, so a "no" is exact; a "maybe" (a true repeat or a
hash collision) leaves the answer to the exact count (:func:`duplicate_rows`), which
names the rows. Only one boolean reaches the client.
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.policy import ReleasePolicy
from dpriv.row_problems import lazy_problems, placed
from dpriv.rows import PROBLEM_COLUMNS, bad_rows


def _hashable(dtype) -> bool:
    """Whether equal values of ``dtype`` (as a groupby finds them) always hash alike: integers
    and text. Not floats (``-0.0`` and ``0.0`` hash apart) nor objects (``1`` and ``1.0`` are
    one key but two texts): their keys are counted exactly."""
    if isinstance(dtype, pd.StringDtype):
        return True
    return pd.api.types.is_integer_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)


def _row_hashes(part: pd.DataFrame) -> pd.DataFrame:
    """uint64 hash of each row of ``part`` (its key columns), in column ``h``: frames, which the
    reduction stacks (Series would be taken as rows)."""
    return pd.DataFrame({"h": pd.util.hash_pandas_object(part, index=False).to_numpy(dtype=np.uint64)})


def _any_twice(hashes: pd.DataFrame) -> bool:
    """Whether some hash occurs twice over all parts (one sort, on a worker)."""
    every = np.sort(hashes["h"].to_numpy(dtype=np.uint64))
    return bool((every[1:] == every[:-1]).any())


def may_repeat(keys: dd.DataFrame) -> dd.Scalar | bool:
    """Lazily (a Dask Scalar, to compute with other checks): False when no two rows of ``keys``
    (the key columns of a Dask frame) are equal, True when some may be. Key columns of other
    dtypes than integers and text are always "maybe" (plain True: counted exactly)."""
    if not all(_hashable(t) for t in keys.dtypes):
        return True
    return keys.reduction(_row_hashes, aggregate=_any_twice, split_every=False, meta=(None, bool))


DUPLICATE = (
    "duplicate {id!r} within one view: a view holds at most one tuple per respondent: keep one "
    "row per respondent (e.g. the latest exam)"
)


def key_columns(frame, policy: ReleasePolicy) -> list[str]:
    """What a respondent may hold once: (time, id) in a history, the id in one view."""
    return [policy.time, policy.id] if policy.time and policy.time in frame.columns else [policy.id]


def _duplicate_part(part: pd.DataFrame, policy: ReleasePolicy, keys: pd.Index | None) -> pd.DataFrame:
    """The rows of ``part`` whose :func:`key_columns` is in ``keys`` (None: duplicated within ``part``)."""
    cols = key_columns(part, policy)
    if keys is None:
        mask = part.duplicated(cols, keep=False).to_numpy()
    else:
        mask = pd.MultiIndex.from_frame(part[cols]).isin(keys) if len(cols) > 1 else part[cols[0]].isin(keys)
    found = [
        (4, policy.id, DUPLICATE.format(id=policy.id), bad_rows(part, mask, policy.time), int(mask.sum()))
    ]
    out = pd.DataFrame(found if mask.any() else [], columns=PROBLEM_COLUMNS)
    return out.astype({"order": "int64", "count": "int64"})


def duplicate_rows(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, hashed: bool = False):
    """Rows of a history whose respondent has two tuples in one view, over every view, or of
    one view (no time column) whose id occurs twice (on Dask: a hash per key, then, only if two
    hashes are equal, one count per key (``hashed``: the hashes were found equal already), then,
    only if some count is above 1, their rows)."""
    if not is_dask(view):
        return _duplicate_part(view, policy, None)
    # the key columns alone: Dask cannot sample some others (decimal128(1, 1))
    key = key_columns(view, policy)
    if not hashed and not dask.compute(may_repeat(view[key]))[0]:
        return pd.DataFrame([], columns=PROBLEM_COLUMNS)
    sizes = view[key].groupby(key).size()
    dup = sizes[sizes > 1].compute()
    if not len(dup):
        return pd.DataFrame([], columns=PROBLEM_COLUMNS)
    return placed(view, lazy_problems(view, _duplicate_part, policy, dup.index).compute())

"""A view whose ids are (almost) all unknown, after views whose respondents came back: refused.

The sequential defense finds each respondent's history by her id (the state's join). A week
whose ids are written otherwise (``'R003977'`` where the earlier weeks wrote ``'3977'``: the same
dtype, so :mod:`dpriv.resume_types` sees no change) matches nobody: every tuple is released as
a first-timer's, RBK forgets what the earlier releases revealed (a drill: max JS 0.55 instead
of 1.25, the state doubled), and nothing said so. :func:`check_new_ids` refuses such a view
before anything is written (InputError, exit 2) unless the caller says the respondents really
are new (``allow_new_ids``, ``dpriv release --allow-new-ids``).

The rule (docs/ledger.md, "New ids"): view ``i`` is refused when fewer than
:data:`KNOWN_SHARE` of its ids are known (in the ledger's state, or in a view released before it
in the same run) while, over the views before it from the second on, at least
:data:`EARLIER_SHARE` of the tuples were of respondents seen before, and that share predicts at
least :data:`EXPECTED_KNOWN` known ids in view ``i`` (a small view may hold new respondents
only, by chance). A history whose views never shared respondents (a fresh sample each week)
is never refused, nor is its second view. In the medical generator's histories (24 views)
each view from the second on shares 87-100 % of its ids with the views before it at
attendance 1.0, 50-94 % at 0.5 (the least at view 2) and 19-93 % at 0.2: far from both bounds.

Counted without moving a view: ``new[i]``, the ids of view ``i`` seen neither in the state nor
in an earlier view of the run, per bucket of the id (the state's own buckets,
:func:`dpriv.state_buckets.by_bucket`: only the views' id and time columns move on Dask) and summed on
the client (a count per view and bucket); a view's ids are its tuples (one per respondent and
view). The views committed before the run count from their sizes and the state's rows: their
tuples beyond the state's respondents are returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from dpriv._dispatch import is_dask, to_dask
from dpriv.errors import InputError
from dpriv.id_format import representative, sample, shape_of
from dpriv.policy import ReleasePolicy
from dpriv.rows import spans
from dpriv.state_buckets import by_bucket
from dpriv.state_parts import HeldState
from dpriv.view_summary import ViewSummary

if TYPE_CHECKING:
    from dpriv.ledger import Ledger

#: A view is refused when fewer than this share of its ids are known ...
KNOWN_SHARE = 0.01
#: ... while at least this share of the tuples of the views before it (from the second on)
#: were of respondents seen before ...
EARLIER_SHARE = 0.10
#: ... and that share predicts at least this many known ids in the view.
EXPECTED_KNOWN = 10
#: The state is read into this process for the count when it has at most this many rows and
#: the history is a pandas frame (as an in-process release reads it).
SMALL_STATE = 500_000


@dataclass(frozen=True)
class Overlap:
    """View ``view`` against the respondents known before it: ``ids`` (its tuples), ``known``
    (the state's respondents and those first seen in views of the run before it), ``shared``
    (its ids among them), and ``returned``/``earlier``: the tuples of respondents seen before,
    and all tuples, of the views before it from the second on."""

    view: int
    ids: int
    known: int
    shared: int
    returned: int
    earlier: int

    @property
    def suspicious(self) -> bool:
        """The rule of this module: almost no id known, where the views before it overlapped."""
        return (
            self.known > 0
            and self.shared < KNOWN_SHARE * self.ids
            and self.earlier > 0
            and self.returned >= EARLIER_SHARE * self.earlier
            and self.ids * self.returned >= EXPECTED_KNOWN * self.earlier
        )


def overlaps(
    sizes: dict[int, int], new: dict[int, int], committed: set[int], n_state: int, todo: list[int]
) -> list[Overlap]:
    """The :class:`Overlap` of each view of ``todo`` (in order) from the views' tuple counts
    ``sizes`` (every view of the history), ``new`` (ids of each view of ``todo`` seen neither in
    the state nor in an earlier view of ``todo``), the ``committed`` views and the state's
    ``n_state`` respondents (ids of the committed views)."""
    done = [sizes[j] for j in sorted(committed) if j in sizes]
    returned, earlier = max(sum(done) - n_state, 0), sum(done[1:])
    known, out = n_state, []
    for i in todo:
        fresh = new.get(i, 0)
        out.append(Overlap(i, sizes[i], known, sizes[i] - fresh, returned, earlier))
        known += fresh
        if i > 1:  # a first view has nobody to come back
            returned, earlier = returned + sizes[i] - fresh, earlier + sizes[i]
    return out


def _new_counts(rows: pd.DataFrame, known: pd.DataFrame | None, id_col: str, time_col: str) -> pd.DataFrame:
    """Per view of ``rows`` (id, time): its ids not in ``known`` (a frame with the id column,
    or None) nor in an earlier view of ``rows``; columns time, new (int64)."""
    if known is not None and len(known):
        rows = rows[~rows[id_col].isin(known[id_col]).to_numpy(dtype=bool)]
    first = rows.sort_values(time_col, kind="stable").drop_duplicates(id_col)
    counts = first.groupby(time_col, sort=True).size()
    return pd.DataFrame({"time": counts.index.to_numpy(np.int64), "new": counts.to_numpy(np.int64)})


@dataclass(frozen=True)
class KnownIds:
    """The ids of a ledger's last state, read from its Parquet parts ``files`` (the id column
    only): ``rows`` respondents, in parts that are ``buckets`` buckets of the id (None: not
    known to be; :class:`dpriv.state_parts.HeldState`)."""

    files: list[Path]
    rows: int
    buckets: int | None

    @classmethod
    def of(cls, ledger: Ledger, held: HeldState | None) -> KnownIds | None:
        """The ids of ``ledger``'s last committed state (``held``: as the release takes it)."""
        return None if held is None else cls(ledger.state_files(ledger.last_index()), held.rows, held.buckets)

    def pandas(self, id_col: str) -> pd.DataFrame:
        return pd.concat([_read_ids(str(f), id_col) for f in self.files], ignore_index=True)

    def dask(self, id_col: str) -> dd.DataFrame:
        """One partition per part (read on the workers, which may run in another folder)."""
        meta = pq.read_schema(self.files[0]).empty_table().select([id_col]).to_pandas()
        return dd.from_map(_read_ids, [str(f.absolute()) for f in self.files], id_col=id_col, meta=meta)

    def sample(self, id_col: str) -> list:
        """:func:`dpriv.id_format.representative` ids of each part, then of them all (for their
        shape): the first ids of a part are its smallest when it is sorted by id. Read part by
        part, only when a view is refused."""
        found = [i for f in self.files for i in representative(_read_ids(str(f), id_col)[id_col])]
        return representative(pd.Series(found, dtype=object))


def _read_ids(path: str, id_col: str) -> pd.DataFrame:
    return pd.read_parquet(path, columns=[id_col])


def new_per_view(
    history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, todo: list[int], known: KnownIds | None
) -> dict[int, int]:
    """For each view of ``todo``: its ids seen neither in the state (``known``; None: none
    yet) nor in an earlier view of ``todo``. In process for a pandas history and a state of at
    most :data:`SMALL_STATE` rows; else per bucket of the id on Dask (the state's parts where
    they lie when they are its buckets), counts to the client."""
    id_col, time_col = policy.id, policy.time
    rows = history[history[time_col].isin(todo)][[id_col, time_col]]
    if not is_dask(rows) and (known is None or known.rows <= SMALL_STATE):
        counts = _new_counts(rows, known.pandas(id_col) if known else None, id_col, time_col)
    else:
        rows = rows if is_dask(rows) else to_dask(rows, 1)
        meta = _new_counts(rows._meta, None, id_col, time_col)
        if known is None:
            left = by_bucket(rows, id_col, rows.npartitions)
            parts = left.map_partitions(_new_counts, None, id_col, time_col, meta=meta)
        else:
            state = known.dask(id_col)
            n = known.buckets or max(state.npartitions, rows.npartitions)
            right = by_bucket(state, id_col, n, held=known.buckets)
            parts = dd.map_partitions(
                _new_counts, by_bucket(rows, id_col, n), right, id_col, time_col, meta=meta,
                clear_divisions=True,
            )  # fmt: skip
        counts = parts.compute()
    summed = counts.groupby("time")["new"].sum()
    return {int(t): int(n) for t, n in summed.items()}


def check_new_ids(
    history: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    summaries: dict[int, ViewSummary],
    todo: list[int],
    ledger: Ledger,
    held: HeldState | None,
) -> None:
    """InputError (exit 2, before anything is written) naming the first view of ``todo`` that
    the rule of this module finds :attr:`Overlap.suspicious`: its ids, the ids known, those
    shared, the shape of its ids and of the known ones (:func:`dpriv.id_format.shape_of`, no
    id), and what to do. ``summaries``: every view of the history; ``ledger``: the ledger
    released into, ``held``: its last state (None: none yet). Nothing is counted when no view
    of ``todo`` could be refused (none after a second view)."""
    if not any(i > 2 for i in todo):  # view 2 has no earlier overlap to compare with
        return
    known = KnownIds.of(ledger, held)
    committed = {int(r["index"]) for r in ledger.committed()}
    sizes = {i: s.n_rows for i, s in summaries.items()}
    found = overlaps(
        sizes, new_per_view(history, policy, todo, known), committed, held.rows if held else 0, todo
    )
    found = next((o for o in found if o.suspicious), None)
    if found is not None:
        raise InputError(_message(history, policy, found, known, todo))


def _message(history, policy: ReleasePolicy, o: Overlap, known: KnownIds | None, todo: list[int]) -> str:
    """The refusal of view ``o.view``: the counts, the ids' shapes (a sample of each), what to do."""
    i, id_col = o.view, policy.id
    before = [j for j in todo if j < i]
    view_ids = sample(history[history[policy.time] == i][id_col])
    known_ids = known.sample(id_col) if known is not None else []
    if len(known_ids) < 2 and before:  # a state of one respondent, or none: the run's views
        known_ids += sample(history[history[policy.time].isin(before)][id_col])
    where = ["the ledger's state"] if known is not None else []
    where += [f"view{'s' if len(before) > 1 else ''} {spans(before)} of this run"] if before else []
    views = "view 2" if i == 3 else f"views 2..{i - 1}"
    shared = "none" if o.shared == 0 else f"only {o.shared}"
    return (
        f"view {i}: {shared} of its {o.ids} ids {'is' if o.shared == 0 else 'are'} among the "
        f"{o.known} respondents known ({' and '.join(where)}), where {100 * o.returned / o.earlier:.0f} % "
        f"of the tuples of {views} were of respondents seen before; its ids look like "
        f"{shape_of(view_ids)}, the known ones like {shape_of(known_ids)}. Were the ids of view {i} "
        "written in another format? Each of its tuples would be released as a new respondent's, "
        "without what the earlier releases revealed of her: the sequential defense would be off for "
        f"view {i}. Nothing was released; give view {i} the ids its respondents have in the earlier "
        "views, or, if they really are new respondents, run again with --allow-new-ids "
        "(release_history(..., allow_new_ids=True))"
    )

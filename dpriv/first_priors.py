"""The priors of a first release attached after Generalize's shuffle (issue 13, shuffle step).

At a first release (an empty state) RBK^sv is BK^sv, a lookup of each tuple's QI class in
the background table (:func:`dpriv.rbk.revised_view`): the M float64 ``p__<value>`` columns
(~150 B of the ~240 B of a tuple at M = 19) need not travel through the range shuffle. When
nothing before it reads them (:func:`deferred`: no Hilbert key on the prior, no Anatomy
ordering, the greedy release), the view goes to Generalize without them and
:meth:`FirstPriors.attach` looks them up per part after the shuffle, putting them where
:func:`dpriv.rbk.revised_view` put them (after the view's columns, before the key columns):
the same frame, bit for bit, as attaching them before.
"""

from __future__ import annotations

from dataclasses import dataclass

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, map_frame, shared
from dpriv.anonymity.persistent import PGROUP
from dpriv.hilbert.keys import HKEY, TIE, is_anatomy
from dpriv.knowledge.tables import MarkovTables
from dpriv.policy import ReleasePolicy
from dpriv.rbk import background_priors
from dpriv.released import SCODE
from dpriv.state import STATE, pk_columns

KEY_COLUMNS = (HKEY, TIE, SCODE)  # added by dpriv.hilbert.keys.add_keys, after the priors


def with_first_priors(part: pd.DataFrame, tables: MarkovTables, policy: ReleasePolicy) -> pd.DataFrame:
    """``part`` with its BK^sv in the ``p__<value>`` columns, inserted before the first key
    column (``_hkey``, ``_tie``, ``_s``) or at the end; the index is kept."""
    # one float64 block of M columns (column-major: each column one run), not M blocks: every
    # later take and to_numpy of the priors (verify, pk, regroup) is 2x-50x slower over M blocks
    prior = np.asarray(background_priors(tables.classes.classify(part), tables), dtype=float)
    cols = list(part.columns)
    at = min((cols.index(c) for c in KEY_COLUMNS if c in cols), default=len(cols))
    block = pd.DataFrame(prior, index=part.index, columns=policy.prior_columns, copy=False)
    return pd.concat([part.iloc[:, :at], block, part.iloc[:, at:]], axis=1)


@dataclass(frozen=True)
class FirstPriors:
    """The priors of a first release, to attach after the shuffle (:func:`deferred`)."""

    tables: MarkovTables
    policy: ReleasePolicy

    def attach(self, frame: pd.DataFrame | dd.DataFrame) -> pd.DataFrame | dd.DataFrame:
        """:func:`with_first_priors` on a pandas frame, per partition (lazy) on a Dask one."""
        meta = with_first_priors(frame._meta, self.tables, self.policy) if is_dask(frame) else None
        return map_frame(with_first_priors, frame, shared(self.tables, frame), self.policy, meta=meta)


def deferred(
    view: pd.DataFrame | dd.DataFrame,
    state: pd.DataFrame | dd.DataFrame,
    tables: MarkovTables,
    policy: ReleasePolicy,
    window: int,
) -> tuple[pd.DataFrame | dd.DataFrame, FirstPriors] | None:
    """``(the view as :func:`dpriv.rbk.revised` would give it but without the priors, the
    priors to attach)`` when they can wait for the shuffle, else None: the state is an empty
    pandas frame whose columns :func:`dpriv.rbk.revised_view` looks up directly (the id of the
    view's dtype; no persistent groups, nothing else), the view holds no state or prior
    column, and neither the Hilbert key (``prior_key``) nor the order (Anatomy) reads them.
    The caller's grouping must be Generalize's (the baselines read the priors at once)."""
    if policy.prior_key or is_anatomy(policy) or not isinstance(state, pd.DataFrame) or len(state):
        return None
    meta = view._meta if is_dask(view) else view
    pk = sum(pk_columns(window, policy), [])
    known = {policy.id, *STATE, *pk}
    held = {*STATE, *pk, PGROUP, *policy.prior_columns}
    if policy.id not in state.columns or state[policy.id].dtype != meta[policy.id].dtype:
        return None
    if set(state.columns) - known or held & set(meta.columns):
        return None
    frame = view.map_partitions(_reset, meta=meta) if is_dask(view) else _reset(view)
    return frame, FirstPriors(tables, policy)


def _reset(part: pd.DataFrame) -> pd.DataFrame:
    """As :func:`dpriv.rbk.revised_view` leaves a view: a RangeIndex."""
    return part.reset_index(drop=True)

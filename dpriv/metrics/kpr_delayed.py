"""KPR (E21, E22) on Dask DataFrames as one small Delayed graph: the counts of
:func:`dpriv.metrics.kpr_dask.dask_counts` in about 2 P + 3 tasks instead of ~130 (issue 13:
the scheduler's and the workers' event loops cost grows with the task count).

The Dask DataFrame path runs each step of docs/algorithms.md §5.2 as its own operation over
every partition (the row counts of both tables, the distinct-value probe, the raw-profile
``groupby.size``, the filter to ``U``, the bin statistics' reduction, the binned profiles, the
concatenation, the ``groupby.sum``, the sums of ``B1`` and ``S``): 8 + 8 partitions gave ~130
tasks, most of them tiny. Here, with the same kernels (:mod:`dpriv.metrics.kpr_dask`):

1. per original partition, one task (:func:`_profile_part`): its rows, its distinct-value
   probe and the sizes of its raw profiles (``groupby.size``, missing values a level);
2. one task (:func:`_unique_stage`): the sizes summed per profile, ``U`` (size 1), the exact bin
   statistics over it and the grids, ``|U|`` and its missing categorical values; one more
   picks the grids out (only they go to the avatars' tasks, not ``U``);
3. per avatar partition, one task (:func:`_avatar_part`): the binned profiles counted;
4. one task (:func:`_matched`): ``U``'s binned profiles and the avatars' counts summed per
   binned profile, then ``|B1|`` and ``|S|``.

The counts are integers and the bin statistics exact (:mod:`dpriv.metrics.exact_sums`), so
the figures are those of the Dask DataFrame path and of the pandas path for any partitioning
(``tests/test_kpr_delayed.py`` compares the three). Categorical variables whose categories
are not known from the dtypes add the DataFrame path's tree reduction of their labels
(:func:`~dpriv.metrics.kpr_dask.shared_domains`, the same function). Inputs of more than
:data:`~dpriv.metrics.kpr_dask.PARTITIONS_PER_SPLIT` partitions go to the DataFrame path,
which spreads the profile counts over several tasks (``split_out``); up to that, it held them
in one task too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import dask
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.metrics.kpr_binning import Specs, finalize_specs
from dpriv.metrics.kpr_dask import (
    PARTITIONS_PER_SPLIT,
    Distinct,
    binned_part,
    dask_counts,
    distinct_chunk,
    distinct_merge,
    raw_part,
    shared_domains,
    u_stats_chunk,
)
from dpriv.metrics.kpr_kernel import Counts, Setup


class _ProfilePart(NamedTuple):
    """One original partition: its rows, distinct-value probe and raw-profile sizes
    (the profile columns ``k<i>``/``m<i>`` and ``_n``, int64)."""

    n: int
    distinct: Distinct
    sizes: pd.DataFrame


class _Unique(NamedTuple):
    """Step 2: ``U``'s raw profiles, the grids, and the counts read off the original table."""

    u: pd.DataFrame
    specs: Specs
    n: int
    n_u: int
    n_distinct: tuple[int, ...]
    cat_missing: tuple[int, ...]


class _AvatarPart(NamedTuple):
    """One avatar partition: its rows and its binned profiles counted (``b<i>`` and ``_a``)."""

    n: int
    counts: pd.DataFrame


def _profile_part(
    part: pd.DataFrame,
    known: Sequence[str],
    numeric: Sequence[bool],
    domains: Sequence[np.ndarray],
    nums: list,
) -> _ProfilePart:
    raw = raw_part(part, known, numeric, domains)
    sizes = raw.groupby(list(raw.columns), sort=False, dropna=False).size().to_frame("_n").reset_index()
    return _ProfilePart(len(part), distinct_chunk(part, nums) if nums else Distinct([]), sizes)


def _unique_stage(parts: list[_ProfilePart], numeric: Sequence[bool], setup: Setup) -> _Unique:
    keys = [c for c in parts[0].sizes.columns if c != "_n"]
    # an empty partition's sizes are left out (their key dtypes may not be the others')
    sizes = pd.concat([p.sizes for p in parts if len(p.sizes)] or [parts[0].sizes], ignore_index=True)
    total = sizes.groupby(keys, sort=False, dropna=False)["_n"].sum().reset_index()
    u = total.loc[total["_n"].to_numpy() == 1, keys].reset_index(drop=True)
    specs = finalize_specs(
        [u_stats_chunk(u, numeric)], setup.num_names, setup.tolerance, setup.padding, setup.ddof
    )
    distinct = distinct_merge([p.distinct for p in parts]) if setup.num_names else Distinct([])
    cat_missing = tuple(int((u[f"k{i}"] == 0).sum()) for i, nm in enumerate(numeric) if not nm)
    n_distinct = tuple(len(v) for v in distinct.values)
    return _Unique(u, specs, sum(p.n for p in parts), len(u), n_distinct, cat_missing)


def _specs_of(unique: _Unique) -> Specs:
    return unique.specs


def _avatar_part(
    part: pd.DataFrame,
    numeric: Sequence[bool],
    specs: Specs,
    known: Sequence[str],
    domains: Sequence[np.ndarray],
) -> _AvatarPart:
    binned = binned_part(part, numeric, specs, 1, False, known, numeric, domains)
    keys = [c for c in binned.columns if c not in ("_o", "_a")]
    return _AvatarPart(len(part), binned.groupby(keys, sort=False)[["_a"]].sum().reset_index())


def _matched(unique: _Unique, avatars: list[_AvatarPart], numeric: Sequence[bool]) -> Counts:
    specs = unique.specs
    n_syn = sum(a.n for a in avatars)
    if specs.errors:  # the caller raises; the DataFrame path's counts are not read then either
        return Counts(unique.n, n_syn, unique.n_u, specs, 0, 0, unique.n_distinct, unique.cat_missing)
    bu = binned_part(unique.u, numeric, specs, 0, True)
    keys = [c for c in bu.columns if c not in ("_o", "_a")]
    counted = [a.counts.assign(_o=0)[[*keys, "_o", "_a"]] for a in avatars if len(a.counts)]
    both = pd.concat([bu, *counted], ignore_index=True)
    agg = both.groupby(keys, sort=False)[["_o", "_a"]].sum()
    b1 = agg["_a"].to_numpy() == 1
    n_b1, n_s = int(b1.sum()), int(agg["_o"].to_numpy()[b1].sum())
    return Counts(unique.n, n_syn, unique.n_u, specs, n_b1, n_s, unique.n_distinct, unique.cat_missing)


def delayed_counts(original: Any, synthetic: Any, setup: Setup) -> Counts:
    """The counts of (E21) when either table is a Dask DataFrame (a pandas one is wrapped in
    one partition), in one ``dask.compute`` of a Delayed graph; only the per-partition profile
    counts move between workers, no table reaches the client. ``setup`` as for
    :func:`dpriv.metrics.kpr_kernel.pandas_counts`; the same :class:`Counts` as
    :func:`dpriv.metrics.kpr_dask.dask_counts` (which runs them for more than
    :data:`~dpriv.metrics.kpr_dask.PARTITIONS_PER_SPLIT` partitions)."""
    import dask.dataframe as dd

    if not is_dask(original):
        original = dd.from_pandas(original, npartitions=1)
    if not is_dask(synthetic):
        synthetic = dd.from_pandas(synthetic, npartitions=1)
    if max(original.npartitions, synthetic.npartitions) > PARTITIONS_PER_SPLIT:
        # the DataFrame path spreads the profiles over several tasks there (split_out > 1);
        # here one task would hold them all (~0.3 GB at 10^7)
        return dask_counts(original, synthetic, setup)
    known, numeric, nums = list(setup.known), setup.numeric, setup.num_names
    cat_names = [k for k, nm in zip(known, numeric, strict=True) if not nm]
    domains = shared_domains(original, synthetic, cat_names) if cat_names else []
    task = dask.delayed
    firsts = [
        task(_profile_part, pure=True)(p, known, numeric, domains, nums) for p in original[known].to_delayed()
    ]
    unique = task(_unique_stage, pure=True)(firsts, numeric, setup)
    specs = task(_specs_of, pure=True)(unique)
    avatar = task(_avatar_part, pure=True)
    avatars = [avatar(p, numeric, specs, known, domains) for p in synthetic[known].to_delayed()]
    (counts,) = dask.compute(task(_matched, pure=True)(unique, avatars, numeric))
    return counts

"""KPR (E21, E22) on Dask DataFrames: the counts of :func:`dpriv.metrics.kpr.kpr` without
bringing a table to the client, with the integer codes of :mod:`dpriv.metrics.kpr_codes`.

One Dask dispatch per step of docs/algorithms.md §5.2, one ``dask.compute`` of a handful of
scalars at the end:

0. categorical domains: from the dtypes when every categorical known variable has known
   categories in both tables (nothing computed), else one tree reduction of the distinct
   labels of each partition (small: one entry per distinct value);
1. raw profiles of the originals: one ``map_partitions`` (numeric values + missing flags,
   categorical codes on the shared domain; no string per record);
3. ``U``: ``groupby(...).size()`` over the raw profiles, tree-reduced into
   ``split_out = ceil(npartitions / 16)`` partitions (a partition of the profile table
   holds the distinct profiles of ~16 input partitions; more output partitions only add
   shuffle tasks);
4. bin grids: one exact tree reduction (:func:`dpriv.metrics.kpr_binning.var_stats`);
5-8. binned profiles of ``U`` and of the avatars (one ``map_partitions`` each), one
   ``groupby(...).sum()`` counting per binned profile the records of ``U`` and the avatars.

Exact statistics and exact bins make the result independent of the partitioning: the same
figures as the pandas path (:mod:`dpriv.metrics.kpr_kernel`) for any number of partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.metrics.kpr_binning import (
    Grid,
    Partial,
    Specs,
    bin_values,
    finalize_specs,
    merge_partials,
    var_stats,
)
from dpriv.metrics.kpr_codes import local_codes, numeric_values, shared_domain, to_domain
from dpriv.metrics.kpr_kernel import Counts, Setup
from dpriv.metrics.kpr_validation import LOW_CARDINALITY

#: Input partitions per output partition of the profile tables (``split_out``).
PARTITIONS_PER_SPLIT = 16


@dataclass
class _LabelSets:
    """Distinct labels of each categorical variable seen so far (tree-reduction state)."""

    sets: list[set[str]]


@dataclass
class Distinct:
    """Up to 11 distinct non-missing values per numeric column (float64 arrays)."""

    values: list[np.ndarray]


def distinct_chunk(part: pd.DataFrame, names: Sequence[str]) -> Distinct:
    """Bounded low-cardinality probe of one partition (§5.2 step 2 warning)."""
    out = []
    for name in names:
        v = pd.unique(part[name].to_numpy(dtype=np.float64, na_value=np.nan))
        v = v[~np.isnan(v)]
        out.append(v[: LOW_CARDINALITY + 1])
    return Distinct(out)


def distinct_merge(parts: pd.Series | Sequence[Distinct]) -> Distinct:
    """The union of partitions' probes (:func:`distinct_chunk`), cut again at 11 values per column."""
    parts = list(parts)
    out = []
    for j in range(len(parts[0].values)):
        u = np.unique(np.concatenate([p.values[j] for p in parts]))
        out.append(u[: LOW_CARDINALITY + 1])
    return Distinct(out)


def _labels_chunk(part: pd.DataFrame, names: Sequence[str]) -> _LabelSets:
    """The labels each categorical column ``names`` holds in one partition (one set per column)."""
    return _LabelSets([set(local_codes(part[name])[1].tolist()) for name in names])


def _labels_merge(parts: pd.Series | Sequence[_LabelSets]) -> _LabelSets:
    """The union, column by column, of partitions' label sets (:func:`_labels_chunk`)."""
    parts = list(parts)
    return _LabelSets([set().union(*(p.sets[j] for p in parts)) for j in range(len(parts[0].sets))])


def _domains_from(sets_o: _LabelSets, sets_s: _LabelSets) -> list[np.ndarray]:
    """The shared domain of each categorical variable (sorted labels of both tables, one array each)."""
    return [shared_domain([list(a), list(b)]) for a, b in zip(sets_o.sets, sets_s.sets, strict=True)]


def _known_categories(frame: Any, name: str) -> bool:
    """Whether ``frame[name]`` (Dask) is categorical with its categories known from the meta."""
    dt = frame._meta[name].dtype
    return isinstance(dt, pd.CategoricalDtype) and bool(frame[name].cat.known)


def shared_domains(original: Any, synthetic: Any, cat_names: list[str]) -> Any:
    """Shared domain of each categorical variable: a list of label arrays, or a Dask
    Delayed of it (one tree reduction per table) when some categories are unknown."""
    if all(_known_categories(f, c) for f in (original, synthetic) for c in cat_names):
        return [
            shared_domain([local_codes(original._meta[c])[1], local_codes(synthetic._meta[c])[1]])
            for c in cat_names
        ]
    import dask

    def labels(frame: Any) -> Any:
        return frame[cat_names].reduction(
            _labels_chunk,
            aggregate=_labels_merge,
            combine=_labels_merge,
            meta=object,
            chunk_kwargs={"names": cat_names},
        )

    return dask.delayed(_domains_from)(labels(original), labels(synthetic))


def raw_part(
    part: pd.DataFrame, known: Sequence[str], numeric: Sequence[bool], domains: Sequence[np.ndarray]
) -> pd.DataFrame:
    """Raw profile of each original, one column ``k{i}`` per variable: NumPy integers as
    they are; floats as float64 with NaN for missing (a level of its own: the groupby keeps
    NaN keys) and ``-0.0`` as ``0.0``; nullable integers as int64 with missing set to 0
    plus a flag ``m{i}``; categorical: the int64 code on the shared domain (0 = missing)."""
    cols: dict[str, Any] = {}
    j = 0
    for i, (name, num) in enumerate(zip(known, numeric, strict=True)):
        if num:
            s = part[name]
            vals, miss = numeric_values(s)
            if vals.dtype.kind == "f":
                cols[f"k{i}"] = vals + 0.0
            else:
                cols[f"k{i}"] = vals
                if not (isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu"):
                    cols[f"m{i}"] = miss
        else:
            cols[f"k{i}"] = to_domain(*local_codes(part[name]), domains[j])
            j += 1
    return pd.DataFrame(cols, index=pd.RangeIndex(len(part)))


def _num_of(part: pd.DataFrame, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Values and missing mask of numeric variable ``i`` in a raw profile table."""
    vals = part[f"k{i}"].to_numpy()
    if f"m{i}" in part.columns:
        return vals, part[f"m{i}"].to_numpy(dtype=bool)
    if vals.dtype.kind == "f":
        return vals, np.isnan(vals)
    return vals, np.zeros(len(vals), dtype=bool)


def u_stats_chunk(u: pd.DataFrame, numeric: Sequence[bool]) -> Partial:
    """Partial statistics of the numeric variables over a partition of ``U`` (step 4)."""
    out = []
    for i, num in enumerate(numeric):
        if num:
            vals, miss = _num_of(u, i)
            out.append(var_stats(vals[~miss]))
    return Partial(out)


def binned_part(
    part: pd.DataFrame, numeric: Sequence[bool], specs: Specs, origin: int, raw: bool, *args: Any
) -> pd.DataFrame:
    """Binned profile ``b{i}`` (float64 bins of numeric variables, int64 codes of
    categorical ones) plus ``_o`` / ``_a`` (1 for a record of ``U`` / an avatar). ``part``
    is a raw profile table (``raw``) or an input partition (then ``args`` are ``known``
    and the domains and the raw profile is built first)."""
    if not raw:
        part = raw_part(part, *args)
    cols: dict[str, Any] = {}
    j = 0
    for i, num in enumerate(numeric):
        if num:
            cols[f"b{i}"] = bin_values(*_num_of(part, i), specs.grids[j])
            j += 1
        else:
            cols[f"b{i}"] = part[f"k{i}"].to_numpy(dtype=np.int64)
    n = len(part)
    cols["_o"] = np.full(n, 1 - origin, dtype=np.int64)
    cols["_a"] = np.full(n, origin, dtype=np.int64)
    return pd.DataFrame(cols, index=pd.RangeIndex(n))


def dask_counts(original: Any, synthetic: Any, setup: Setup) -> Counts:
    """The counts of (E21) when either table is a Dask DataFrame (a pandas one is wrapped in
    one partition); one ``dask.compute`` of scalars, no table on the client. ``setup`` as
    for :func:`dpriv.metrics.kpr_kernel.pandas_counts`."""
    import dask
    import dask.dataframe as dd

    if not is_dask(original):
        original = dd.from_pandas(original, npartitions=1)
    if not is_dask(synthetic):
        synthetic = dd.from_pandas(synthetic, npartitions=1)
    known, numeric, num_names = list(setup.known), setup.numeric, setup.num_names
    cat_names = [k for k, nm in zip(known, numeric, strict=True) if not nm]
    domains = shared_domains(original, synthetic, cat_names) if cat_names else []
    orig_k, syn_k = original[known], synthetic[known]
    empty = [np.array([], dtype=object) for _ in cat_names]
    meta_raw = raw_part(orig_k._meta, known, numeric, empty)
    enc_o = orig_k.map_partitions(raw_part, known, numeric, domains, meta=meta_raw)
    keys = list(meta_raw.columns)
    split = -(-max(original.npartitions, synthetic.npartitions) // PARTITIONS_PER_SPLIT)
    # step 3: U = raw profiles of size 1 (partitioned result, never gathered)
    sizes = enc_o.groupby(keys, sort=False, dropna=False).size(split_out=split).to_frame("_n").reset_index()
    u = sizes[sizes["_n"] == 1][keys]
    # step 4: one exact tree reduction -> bin grids (a Dask Scalar, used by the binning)
    specs = u.reduction(
        u_stats_chunk,
        aggregate=finalize_specs,
        combine=merge_partials,
        meta=object,
        chunk_kwargs={"numeric": numeric},
        aggregate_kwargs={
            "names": num_names,
            "tolerance": setup.tolerance,
            "padding": setup.padding,
            "ddof": setup.ddof,
        },
    )
    # steps 5-8: per binned profile the number of U records (_o) and of avatars (_a)
    dummy = Specs(tuple(Grid(0.0, 1.0, 1.0, 1.0) for _ in num_names), (), ())
    meta_bin = binned_part(meta_raw, numeric, dummy, 0, True)
    bu = u.map_partitions(binned_part, numeric, specs, 0, True, meta=meta_bin)
    bs = syn_k.map_partitions(binned_part, numeric, specs, 1, False, known, numeric, domains, meta=meta_bin)
    both = dd.concat([bu, bs], ignore_unknown_divisions=True)
    bkeys = [c for c in meta_bin.columns if c not in ("_o", "_a")]
    agg = both.groupby(bkeys, sort=False)[["_o", "_a"]].sum(split_out=split)
    b1 = agg["_a"] == 1
    n_b1 = b1.sum()
    n_s = agg["_o"].where(b1, 0).sum()
    if num_names:
        distinct = original[num_names].reduction(
            distinct_chunk,
            aggregate=distinct_merge,
            combine=distinct_merge,
            meta=object,
            chunk_kwargs={"names": num_names},
        )
    else:
        distinct = Distinct([])
    # records of U missing each categorical variable (code 0), as the pandas path counts them
    cat_missing = [(u[f"k{i}"] == 0).sum() for i, nm in enumerate(numeric) if not nm]
    n, n_syn, n_u, specs_v, n_b1, n_s, distinct_v, cat_missing_v = dask.compute(
        original.shape[0], synthetic.shape[0], u.shape[0], specs, n_b1, n_s, distinct, cat_missing
    )
    n_distinct = tuple(len(v) for v in distinct_v.values)
    missing = tuple(int(c) for c in cat_missing_v)
    return Counts(int(n), int(n_syn), int(n_u), specs_v, int(n_b1), int(n_s), n_distinct, missing)

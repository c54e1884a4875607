"""KPR (E21, E22), the pandas kernel: the counts of :func:`dpriv.metrics.kpr.kpr` on two
in-memory tables with integer codes (:mod:`dpriv.metrics.kpr_codes`) and ``np.bincount``.

Steps (docs/algorithms.md §5.2): 3. ``U`` = the originals whose raw profile key occurs once;
4. exact bin statistics over ``U`` (:func:`dpriv.metrics.kpr_binning.var_stats`); 5-8. the
binned profile keys of ``U`` and of the avatars, chunk by chunk (temporaries of
``CHUNK`` rows, not of the whole table), ``|B1|`` and ``|S|`` by one ``np.bincount``.
The values are the ones of the Dask path and of the exact-fraction oracle of the tests:
only the representation of the profiles changed (integers instead of strings).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv.metrics.kpr_binning import Grid, Partial, Specs, bin_values, finalize_specs, var_stats
from dpriv.metrics.kpr_codes import (
    BIN_OFFSET,
    CHUNK,
    MAX_CARD,
    categorical_codes,
    match_counts,
    numeric_values,
    profile_key,
    raw_numeric_codes,
    unique_rows,
)
from dpriv.metrics.kpr_validation import LOW_CARDINALITY


@dataclass(frozen=True)
class Setup:
    """The checked inputs of one KPR computation (:func:`dpriv.metrics.kpr.kpr`), as both
    paths take them: the ``known`` variables, whether each is numeric (binned), and the
    binning's ``tolerance``, ``padding`` and ``ddof``."""

    known: tuple[str, ...]
    numeric: tuple[bool, ...]
    tolerance: float
    padding: float
    ddof: int

    @property
    def num_names(self) -> list[str]:
        """The numeric (binned) known variables, in ``known`` order."""
        return [k for k, nm in zip(self.known, self.numeric, strict=True) if nm]


@dataclass(frozen=True)
class Counts:
    """What both paths count: n, |avatars|, |U|, the bin grids, |B1|, |S|, the number
    of distinct non-missing values of each numeric known variable in the original table
    (capped at the low-cardinality limit + 1) and the number of records of U missing each
    categorical known variable (a numeric one's is in its bin report: ``count``)."""

    n: int
    n_synthetic: int
    n_unique: int
    specs: Specs
    n_b1: int
    n_matched: int
    n_distinct: tuple[int, ...]
    cat_missing: tuple[int, ...] = ()


def binned_card(grid: Grid | None) -> int | None:
    """Number of binned codes of a numeric variable (regular bins + 4 sentinels), ``None``
    when that passes 2**62 (the float bins are then renumbered, not offset)."""
    n_bins = 0 if grid is None else int(grid.exact.n_bins if grid.exact is not None else grid.n_bins)
    card = n_bins + BIN_OFFSET
    return card if card < MAX_CARD else None


def _few_distinct(s: pd.Series) -> int:
    """Distinct non-missing values among the first 4096 of a column (a lower bound of its
    number of distinct values: enough to know it passes the low-cardinality limit)."""
    return int(pd.Series(s.iloc[:4096]).nunique())


def _chunked_key(n: int, codes_of: Callable[[int, slice], np.ndarray], cards: Sequence[int]) -> np.ndarray:
    """Mixed-radix key (product of ``cards`` < 2**62) of ``n`` records, ``CHUNK`` rows at a
    time; ``codes_of(i, rows)`` gives the codes of variable ``i`` on a slice of rows."""
    key = np.empty(n, dtype=np.int64)
    for start in range(0, n, CHUNK):
        rows = slice(start, min(n, start + CHUNK))
        k = codes_of(0, rows)
        for i in range(1, len(cards)):
            k = k * cards[i] + codes_of(i, rows)
        key[rows] = k
    return key


def pandas_counts(original: pd.DataFrame, synthetic: pd.DataFrame, setup: Setup) -> Counts:
    """The counts of (E21) on two pandas tables (the ``setup.known`` columns are read).

    ``setup.numeric[i]`` tells whether ``setup.known[i]`` is binned (validated by
    :func:`dpriv.metrics.kpr_validation.validate_kpr`). Bin grids with errors (infinite or
    too large values) are returned in ``specs.errors`` with ``|B1| = |S| = 0``; the caller
    raises.
    """
    known, numeric = setup.known, setup.numeric
    n, n_syn = len(original), len(synthetic)
    codes: list[np.ndarray] = []
    cards: list[int] = []
    cat_codes: dict[int, np.ndarray] = {}
    syn_cat: dict[int, np.ndarray] = {}
    n_distinct: list[int] = []
    cat_card: dict[int, int] = {}
    separated = False  # a numeric variable alone tells every original apart: U = all of them
    for i, (name, num) in enumerate(zip(known, numeric, strict=True)):
        if num:
            if separated and _few_distinct(original[name]) > LOW_CARDINALITY:
                n_distinct.append(LOW_CARDINALITY + 1)  # its raw codes are not needed
                continue
            c, card, nd = raw_numeric_codes(original[name])
            n_distinct.append(min(nd, LOW_CARDINALITY + 1))
            separated |= nd == n
        else:
            c, syn_cat[i], card = categorical_codes(original[name], synthetic[name])
            cat_card[i] = card
            cat_codes[i] = c
        codes.append(c)
        cards.append(card)
    u_idx = np.arange(n) if separated else np.flatnonzero(unique_rows(codes, cards))
    u_cat = {i: c[u_idx] for i, c in cat_codes.items()}
    cat_missing = tuple(int(np.count_nonzero(u_cat[i] == 0)) for i in sorted(u_cat))  # code 0: missing
    del cat_codes
    del codes
    u_num: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    stats = []
    for i, (name, num) in enumerate(zip(known, numeric, strict=True)):
        if num:
            vals, miss = numeric_values(original[name].iloc[u_idx])
            u_num[i] = (vals, miss)
            stats.append(var_stats(vals[~miss], binary=False))
    specs = finalize_specs([Partial(stats)], setup.num_names, setup.tolerance, setup.padding, setup.ddof)
    if specs.errors:
        return Counts(n, n_syn, len(u_idx), specs, 0, 0, tuple(n_distinct), cat_missing)
    grids: dict[int, Grid | None] = dict(zip(u_num, specs.grids, strict=True))
    bcards = [cat_card[i] if i in cat_card else binned_card(grids[i]) for i in range(len(known))]

    def u_bins(i: int, rows: slice) -> np.ndarray:
        vals, miss = u_num[i]
        return bin_values(vals[rows], miss[rows], grids[i])

    def s_bins(i: int, rows: slice) -> np.ndarray:
        vals, miss = numeric_values(synthetic[known[i]].iloc[rows])
        return bin_values(vals, miss, grids[i])

    def u_codes(i: int, rows: slice) -> np.ndarray:
        return u_cat[i][rows] if i in u_cat else (u_bins(i, rows) + BIN_OFFSET).astype(np.int64)

    def s_codes(i: int, rows: slice) -> np.ndarray:
        return syn_cat[i][rows] if i in syn_cat else (s_bins(i, rows) + BIN_OFFSET).astype(np.int64)

    if all(c is not None for c in bcards) and math.prod(bcards) < MAX_CARD:  # type: ignore[arg-type]
        card = math.prod(bcards)  # type: ignore[arg-type]
        key_u = _chunked_key(len(u_idx), u_codes, bcards)  # type: ignore[arg-type]
        key_s = _chunked_key(n_syn, s_codes, bcards)  # type: ignore[arg-type]
    else:  # huge grids: the profile key renumbered jointly over U and the avatars
        n_u = len(u_idx)
        jcodes, jcards = [], []
        for i, c in enumerate(bcards):
            if c is None:  # more than 2**62 bins: renumber the float bins themselves
                fb = np.concatenate([u_bins(i, slice(0, n_u)), s_bins(i, slice(0, n_syn))])
                both, uniq = pd.factorize(fb)
                c = len(uniq)
            else:
                both = np.concatenate([u_codes(i, slice(0, n_u)), s_codes(i, slice(0, n_syn))])
            jcodes.append(np.asarray(both, dtype=np.int64))
            jcards.append(int(c))
        key, card = profile_key(jcodes, jcards)
        key_u, key_s = key[:n_u], key[n_u:]
    n_b1, n_s = match_counts(key_u, key_s, card)
    return Counts(n, n_syn, len(u_idx), specs, n_b1, n_s, tuple(n_distinct), cat_missing)

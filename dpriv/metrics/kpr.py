"""Knowledge Protection Rate (KPR) of a synthetic table, docs/algorithms.md §5 (E21), (E22).

KPR is the percentage of original records for which an attacker who knows a few variables
(the *known variables*) cannot find a unique, approximately matching synthetic record
("avatar")::

    U   = original records whose raw known-variable profile occurs exactly once
    B1  = binned avatar profiles that occur exactly once among the avatars
    S   = {x in U : b(x) in B1}                                            (E21)
    KPR = 100 * (1 - |S| / n)          n = number of original records (duplicates included)

Numeric variables are binned by (E22) with ``step = tolerance * |mean|`` over
``[min - padding * sigma, max + padding * sigma]``, statistics taken on the non-missing
values of ``U``; categorical variables are compared by value label. Every edge case of
docs/algorithms.md §5.3 is handled as decided there (see :func:`kpr`).

Both pandas and Dask DataFrames are accepted. Labels are compared as integer codes on a
domain shared by the two tables and profiles as int64 keys (:mod:`dpriv.metrics.kpr_codes`).
The pandas path (:mod:`dpriv.metrics.kpr_kernel`) counts with ``np.bincount``; the Dask
path (:mod:`dpriv.metrics.kpr_delayed`, one small Delayed graph with the kernels of
:mod:`dpriv.metrics.kpr_dask`) never brings a table to the client: each partition counts
its own raw profiles, one task sums them into ``U`` and its exact bin statistics, each
avatar partition counts its binned profiles, one task matches them, and a single
``dask.compute`` fetches the counts. (:func:`dpriv.metrics.kpr_dask.dask_counts`, the same
steps as Dask DataFrame operations, ~130 tasks instead of ~20, is kept as the tests' second
path.)

The bin statistics are computed with *exact* (rational) sums, so the mean and the variance
are the correctly rounded values of the exact ones, independent of the partitioning: the
pandas path and the Dask path (any number of partitions) give bit-identical bins and
therefore identical results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpriv._dispatch import is_dask, shuffle_method
from dpriv.errors import InputError
from dpriv.metrics.kpr_binning import (
    ABOVE,
    BELOW,
    MISSING,
    NO_BINS,
    BinSpec,
    bin_index,
)
from dpriv.metrics.kpr_delayed import delayed_counts
from dpriv.metrics.kpr_inputs import size_warning
from dpriv.metrics.kpr_kernel import Setup, pandas_counts
from dpriv.metrics.kpr_validation import LOW_CARDINALITY, KPRWarning, validate_kpr
from dpriv.user_warning import warn_user

__all__ = [
    "ABOVE",
    "BELOW",
    "MISSING",
    "NO_BINS",
    "BinSpec",
    "KPRResult",
    "KPRWarning",
    "bin_index",
    "kpr",
]


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KPRResult:
    """Result of :func:`kpr`.

    Attributes
    ----------
    kpr : float
        Knowledge Protection Rate in percent, in ``[0, 100]`` (E21).
    n : int
        Number of original records ``n`` (the denominator, duplicates included).
    n_synthetic : int
        Number of synthetic records (may differ from ``n``).
    n_unique_original : int
        ``|U|``, originals whose raw known-variable profile is unique.
    n_unique_synthetic_profiles : int
        ``|B1|``, binned avatar profiles occurring exactly once.
    n_matched : int
        ``|S|``, records of ``U`` whose binned profile is in ``B1``; ``|S| <= |U|``.
    bins : Mapping[str, BinSpec]
        Bin grid of every numeric known variable (categorical ones have none).
    known : tuple of str
        The known variables, in the order given.
    note : str
        Human-readable remarks on degenerate cases ("" when none), e.g.
        ``"no original record is unique: KPR = 100"``.
    """

    kpr: float
    n: int
    n_synthetic: int
    n_unique_original: int
    n_unique_synthetic_profiles: int
    n_matched: int
    bins: Mapping[str, BinSpec] = field(hash=False)
    known: tuple[str, ...] = ()
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (for ``metrics.json``)."""
        return {
            "kpr": self.kpr,
            "n": self.n,
            "n_synthetic": self.n_synthetic,
            "n_unique_original": self.n_unique_original,
            "n_unique_synthetic_profiles": self.n_unique_synthetic_profiles,
            "n_matched": self.n_matched,
            "known": list(self.known),
            "bins": {k: vars(v) for k, v in self.bins.items()},
            "note": self.note,
        }


@shuffle_method()
def kpr(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    *,
    tolerance: float = 0.05,
    padding: float = 0.1,
    ddof: int = 1,
) -> KPRResult:
    """Knowledge Protection Rate of a synthetic table, docs/algorithms.md §5.2 (E21), (E22).

    Parameters
    ----------
    original : pandas.DataFrame or dask.dataframe.DataFrame, shape (n, p)
        The original records; ``n > 0``. Only the ``known`` columns are read.
    synthetic : pandas.DataFrame or dask.dataframe.DataFrame, shape (n_avatar, q)
        The synthetic records ("avatars"); ``n_avatar`` may differ from ``n`` (even 0).
        If either table is a Dask DataFrame the Dask path is used (a pandas table is then
        wrapped in one partition).
    known : sequence of str, non-empty, no repeats
        The variables the attacker knows; present in both tables. Integer/float dtypes
        (not bool) are numeric and binned; object, str, category and bool are categorical
        and compared by value label (category codes are never compared). A variable must
        have the same kind in both tables. Datetime, timedelta, period, interval and
        complex dtypes are refused.
    tolerance : float, default 0.05
        Bin width as a fraction of ``|mean|`` (> 0).
    padding : float, default 0.1
        Range padding as a fraction of the standard deviation (>= 0):
        ``lo = min - padding * std``, ``hi = max + padding * std``.
    ddof : int, default 1
        Delta degrees of freedom of the standard deviation (>= 0).

    Returns
    -------
    KPRResult
        ``kpr = 100 * (1 - |S| / n)`` in ``[0, 100]`` and the intermediate counts and bins.

    Raises
    ------
    InputError
        Empty or repeated ``known``, a name missing from a table (a released view's
        ``<name>_min`` / ``<name>_max`` are named as such), a refused dtype, a variable
        numeric in one table and categorical in the other (its first value that is not a
        number named, with its row), an empty original
        table, infinite (or overflowing) values of a numeric variable among the unique
        originals, invalid ``tolerance``/``padding``/``ddof``.

    Warns
    -----
    KPRWarning
        A numeric known variable has at most 10 distinct values in the original table
        (probably a coded category; it is binned as numeric, which amounts to a
        near-exact match). One table has twice the rows of the other or more (legal, §5.3,
        but a profile repeated within a table is never a unique match: a whole history
        against one view reads as ~100); the warning names a column of the larger table
        that looks like a history's time column (:func:`dpriv.metrics.kpr_inputs.size_warning`).

    Notes
    -----
    Decisions of docs/algorithms.md §5.3:

    * ``U`` groups the **raw** profiles; a missing value is its own level (both in ``U``
      and in the matching); statistics skip missing values.
    * Bin statistics over the non-missing values of each numeric variable in ``U``:
      mean and variance are the correctly rounded exact values (rational arithmetic,
      independent of the partitioning), ``std = sqrt(var)``; with not more than ``ddof``
      values, ``std = 0``.
    * ``step = tolerance * |mean|`` (mean < 0 uses the absolute value); if that is 0,
      ``tolerance * (max - min)``; if that is 0 too, a single bin (exact equality).
      A constant column gives ``lo == hi`` and one bin.
    * (E22) by :func:`bin_index`, edges never materialised; avatars outside ``[lo, hi]``
      fall in the sentinel bins below/above (they count as avatar profiles but never match
      a record of ``U``). A variable with no non-missing value in ``U`` has no grid: its
      non-missing avatar values fall in :data:`NO_BINS`.
    * Duplicated original profiles are excluded from ``U`` but stay in ``n``; duplicated
      binned avatar profiles are excluded from ``B1``. ``U`` empty gives ``KPR = 100``.
    * The match is on the binned profile only (the formula), not a +/- tolerance window:
      two values 1 % apart may fall in adjacent bins.

    Examples
    --------
    The test vector of docs/algorithms.md §5.3:

    >>> import pandas as pd
    >>> o = pd.DataFrame({"age": [30, 30, 45, 50, 62, 70], "sex": list("MMFFMF")})
    >>> a = pd.DataFrame({"age": [31, 46, 47, 63, 90, 52], "sex": list("MFFMFF")})
    >>> kpr(o, a, ["age", "sex"]).kpr
    50.0
    """
    if not is_dask(original) and len(original) == 0:  # before the types: a header-only CSV reads as text
        raise InputError("kpr: the original table has no rows; KPR needs n > 0 records")
    known_t, numeric = validate_kpr(original, synthetic, known, tolerance, padding, ddof)
    setup = Setup(known_t, numeric, float(tolerance), float(padding), int(ddof))
    counts = delayed_counts if is_dask(original) or is_dask(synthetic) else pandas_counts
    res = counts(original, synthetic, setup)
    n, n_syn, n_u, specs, n_b1, n_s = res.n, res.n_synthetic, res.n_unique, res.specs, res.n_b1, res.n_matched
    if n == 0:
        raise InputError("kpr: the original table has no rows; KPR needs n > 0 records")
    if specs.errors:
        raise InputError("kpr: " + "; ".join(specs.errors))
    num_names = setup.num_names
    for name, n_values in zip(num_names, res.n_distinct, strict=True):
        if n_values <= LOW_CARDINALITY:
            warn_user(  # the caller's line, not contextlib's (the @shuffle_method() frame)
                f"kpr: numeric known variable {name!r} has only {n_values} distinct "
                "value(s) in the original table; if it is a coded category, cast it to "
                "'category' in both tables (it is binned as numeric here)",
                KPRWarning,
            )
    if hint := size_warning(original, synthetic, n, n_syn, known_t):
        warn_user(hint, KPRWarning)
    notes = []
    if n_u == 0:
        notes.append("no original record is unique: KPR = 100")
    else:
        reports = dict(zip(num_names, specs.reports, strict=True))
        cat_names = [k for k in known_t if k not in reports]
        # records of U missing each variable, numeric or categorical alike (a drill found a
        # blank number noted and a blank text cell not)
        missing = {k: n_u - r.count for k, r in reports.items()} | dict(zip(cat_names, res.cat_missing))
        for name in known_t:
            if missing[name] == n_u:
                notes.append(f"{name!r} is missing in every unique original: only missing values match")
            elif name in reports and reports[name].step == 0.0:
                notes.append(f"{name!r} is 0 in every unique original: single bin, exact match")
            if 0 < missing[name] < n_u:  # legal (a missing value is its own level) but worth saying
                notes.append(
                    f"{name!r} is missing in {missing[name]} of {n_u} unique originals: "
                    "a missing value matches only a missing value"
                )
    if n_syn == 0:
        notes.append("the synthetic table is empty: no avatar can match")
    return KPRResult(
        kpr=100.0 * (1.0 - n_s / n),
        n=n,
        n_synthetic=n_syn,
        n_unique_original=n_u,
        n_unique_synthetic_profiles=n_b1,
        n_matched=n_s,
        bins=dict(zip(num_names, specs.reports, strict=True)),
        known=known_t,
        note="; ".join(notes),
    )

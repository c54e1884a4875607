"""Knowledge Protection Rate (KPR) of a synthetic table, ALGORITHMS.md §5 (E21), (E22).

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
ALGORITHMS.md §5.3 is handled as decided there (see :func:`kpr`).

Both pandas and Dask DataFrames are accepted. The Dask path never brings a table to the
client: the uniqueness counts and the semi-join are ``groupby(...).size()`` /
``groupby(...).sum()`` with ``split_out`` (the profile tables stay partitioned), the bin
statistics are one tree reduction, and a single ``dask.compute`` fetches the handful of
scalars at the end.

The bin statistics are computed with *exact* (rational) sums, so the mean and the variance
are the correctly rounded values of the exact ones, independent of the partitioning: the
pandas path and the Dask path (any number of partitions) give bit-identical bins and
therefore identical results.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from dpriv.errors import InputError

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

#: Sentinel bin of a numeric value below ``lo`` (E22). Regular bins are ``0, 1, 2, ...``.
BELOW = -1.0
#: Sentinel bin of a numeric value above ``hi`` (E22).
ABOVE = -2.0
#: Sentinel bin of a missing value (NaN / NA): missing is its own level (§5.3).
MISSING = -3.0
#: Sentinel bin of every non-missing value of a variable that has no non-missing value in
#: ``U`` (so no bin grid exists); such values can never match an original of ``U``.
NO_BINS = -4.0

_LOW_CARDINALITY = 10  # numeric known variable with <= 10 distinct values -> warning (§5.2)


class KPRWarning(UserWarning):
    """A KPR input that is legal but probably not what the user meant."""


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BinSpec:
    """Bin grid of one numeric known variable (E22), as reported in :class:`KPRResult`.

    Attributes
    ----------
    lo, hi : float
        ``min - padding * sigma`` and ``max + padding * sigma`` over the non-missing values
        of the variable in ``U``; NaN when there is no such value.
    step : float
        Bin width ``tolerance * |mean|``; ``tolerance * (max - min)`` when the mean is 0;
        0.0 when that is 0 too (then one bin: exact equality). NaN when no bins exist.
    n_bins : int
        Number of regular bins ``max(1, ceil((hi - lo) / step))`` (may be astronomically
        large: bins are never materialised); 1 when ``step == 0``; 0 when no bins exist;
        -1 when the count overflows float64 (``(hi - lo) / step`` is infinite).
    mean, std : float
        Mean and standard deviation (``ddof`` of the call) of the non-missing values in
        ``U``; the std is 0.0 when there are not more than ``ddof`` values.
    count : int
        Number of non-missing values of the variable in ``U``.
    """

    lo: float
    hi: float
    step: float
    n_bins: int
    mean: float
    std: float
    count: int


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


# --------------------------------------------------------------------------------------
# exact sums (partition independent statistics)
# --------------------------------------------------------------------------------------

_ExactSum = tuple[int, int]  # (numerator, exponent): value = numerator * 2**exponent


def _exact_sum(values: np.ndarray, extra_exp: np.ndarray | int = 0) -> _ExactSum:
    """Exact sum of ``values * 2**extra_exp`` (finite float64, shape (k,)).

    Every float64 is ``M * 2**E`` with an integer ``|M| < 2**53``; the mantissas are summed
    in int64 per exponent (split in 26-bit halves so no overflow below 2**36 terms) and the
    few per-exponent totals are combined as Python integers.
    """
    values = np.asarray(values, dtype=np.float64)
    extra = np.broadcast_to(np.asarray(extra_exp, dtype=np.int64), values.shape)
    keep = values != 0.0
    if not keep.any():
        return (0, 0)
    values, extra = values[keep], extra[keep]
    mant, exp = np.frexp(values)
    m = (mant * 9007199254740992.0).astype(np.int64)  # * 2**53, exact
    e = exp.astype(np.int64) + extra - 53
    order = np.argsort(e, kind="stable")
    es = e[order]
    ms = m[order]
    high = ms >> 26  # arithmetic shift: ms = high * 2**26 + low, 0 <= low < 2**26
    low = ms - (high << 26)
    starts = np.flatnonzero(np.concatenate(([True], es[1:] != es[:-1])))
    s_high = np.add.reduceat(high, starts)
    s_low = np.add.reduceat(low, starts)
    e0 = int(es[0])
    total = 0
    for sh, sl, eg in zip(s_high.tolist(), s_low.tolist(), es[starts].tolist(), strict=True):
        total += ((sh << 26) + sl) << (eg - e0)
    return (total, e0)


def _add_exact(a: _ExactSum, b: _ExactSum) -> _ExactSum:
    if a[0] == 0:
        return b
    if b[0] == 0:
        return a
    e = min(a[1], b[1])
    return ((a[0] << (a[1] - e)) + (b[0] << (b[1] - e)), e)


def _to_fraction(a: _ExactSum) -> Fraction:
    num, e = a
    return Fraction(num << e) if e >= 0 else Fraction(num, 1 << -e)


def _exact_sum_of_squares(values: np.ndarray) -> _ExactSum:
    """Exact ``sum(values**2)`` of finite float64 values (error-free TwoProduct).

    Each value is scaled to its mantissa ``f`` in ``[0.5, 1)`` so that ``f*f`` neither
    overflows nor underflows; ``f*f = p + err`` exactly with ``p = fl(f*f)`` and ``err``
    from Veltkamp's split; both parts are then summed exactly with exponent ``2 * exp``.
    """
    f, exp = np.frexp(np.asarray(values, dtype=np.float64))
    c = 134217729.0 * f  # 2**27 + 1
    fh = c - (c - f)
    fl = f - fh
    p = f * f
    err = ((fh * fh - p) + 2.0 * fh * fl) + fl * fl
    e2 = 2 * exp.astype(np.int64)
    return _add_exact(_exact_sum(p, e2), _exact_sum(err, e2))


@dataclass
class _VarStats:
    """Mergeable partial statistics of one numeric variable (non-missing values only)."""

    count: int = 0
    n_inf: int = 0
    total: _ExactSum = (0, 0)
    total_sq: _ExactSum = (0, 0)
    vmin: float = math.inf
    vmax: float = -math.inf

    def merge(self, other: _VarStats) -> _VarStats:
        return _VarStats(
            self.count + other.count,
            self.n_inf + other.n_inf,
            _add_exact(self.total, other.total),
            _add_exact(self.total_sq, other.total_sq),
            min(self.vmin, other.vmin),
            max(self.vmax, other.vmax),
        )


@dataclass
class _Partial:
    """Partial statistics of ``U`` over a partition: one entry per numeric variable."""

    stats: list[_VarStats]

    def merge(self, other: _Partial) -> _Partial:
        return _Partial([a.merge(b) for a, b in zip(self.stats, other.stats, strict=True)])


@dataclass(frozen=True)
class _Grid:
    """Internal bin grid of one numeric variable, or ``None`` in :class:`_Specs` when no
    non-missing value exists in ``U``."""

    lo: float
    hi: float
    step: float
    n_bins: float  # float: may exceed int64


@dataclass(frozen=True)
class _Specs:
    """Bin grids of the numeric variables (in known order) + the problems found."""

    grids: tuple[_Grid | None, ...]
    reports: tuple[BinSpec, ...]
    errors: tuple[str, ...]


# --------------------------------------------------------------------------------------
# kernels (one pandas partition in, one out): shared by the pandas and the Dask paths
# --------------------------------------------------------------------------------------


def _key_names(n_known: int) -> list[str]:
    return [c for i in range(n_known) for c in (f"k{i}", f"m{i}")]


def _labels(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Value labels of a categorical column as (str array, missing mask); shape (n,).

    Category dtype: the *labels* of the codes (``str(label)``), never the codes; other
    dtypes: ``str(value)``. The same conversion for both tables, so ``"M"`` of a category
    column equals ``"M"`` of an object/str column, and ``True`` of a bool column equals
    ``True`` of an object column.
    """
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        mask = codes < 0
        cats = pd.Series(np.asarray(s.cat.categories, dtype=object), dtype=object)
        labels = cats.astype("str").to_numpy(dtype=object)
        if len(labels) == 0:
            return np.full(len(s), "", dtype=object), mask
        out = labels[np.where(mask, 0, codes)]
        out[mask] = ""
        return out, mask
    mask = s.isna().to_numpy(dtype=bool)
    if ptypes.is_string_dtype(s.dtype) and not ptypes.is_object_dtype(s.dtype):
        return s.to_numpy(dtype=object, na_value=""), mask
    vals = pd.Series(s.to_numpy(dtype=object), dtype=object).where(~mask, "")
    return vals.astype("str").to_numpy(dtype=object), mask


def _encode_raw(part: pd.DataFrame, known: Sequence[str], numeric: Sequence[bool]) -> pd.DataFrame:
    """Raw known-variable profile of each record, without NaN in the keys.

    Returns a DataFrame of shape (n, 2 * len(known)): for variable ``i``, ``k{i}`` holds the
    value (numeric: its own integer dtype or float64 with missing set to 0; categorical:
    the ``str`` label, missing set to ``""``) and ``m{i}`` (bool) the missing flag, so
    that a missing value is a level of its own and no groupby ever drops it.
    """
    cols: dict[str, Any] = {}
    for i, (name, num) in enumerate(zip(known, numeric, strict=True)):
        s = part[name]
        if num:
            dt = s.dtype
            if isinstance(dt, np.dtype) and dt.kind in "iu":
                vals = s.to_numpy()
                mask = np.zeros(len(s), dtype=bool)
            elif ptypes.is_integer_dtype(dt):  # nullable Int64 / UInt64 / pyarrow ints
                mask = s.isna().to_numpy(dtype=bool)
                target = np.uint64 if ptypes.is_unsigned_integer_dtype(dt) else np.int64
                vals = s.to_numpy(dtype=target, na_value=0)
            else:
                vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
                mask = np.isnan(vals)
                vals = np.where(mask, 0.0, vals) + 0.0  # + 0.0 maps -0.0 to 0.0
            cols[f"k{i}"] = vals
        else:
            vals, mask = _labels(s)
            cols[f"k{i}"] = pd.array(vals, dtype="str")
        cols[f"m{i}"] = mask
    return pd.DataFrame(cols, index=pd.RangeIndex(len(part)))


def bin_index(y: np.ndarray, lo: float, hi: float, step: float, n_bins: float) -> np.ndarray:
    """Bin index of numeric values by (E22); float64 array of the shape of ``y``.

    ``floor((y - lo) / step)`` for ``lo <= y <= hi`` (left-closed bins, the last one
    extended to include ``hi``: an index ``>= n_bins`` is mapped to ``n_bins - 1``),
    :data:`BELOW` for ``y < lo``, :data:`ABOVE` for ``y > hi``, :data:`MISSING` for NaN.
    ``step == 0`` means a single bin (index 0). Bin edges are never materialised, so a
    huge ``(hi - lo) / step`` costs nothing. The indices are float64 (exact integers up to
    2**53; beyond, still the same float for the same input in both tables).

    Parameters
    ----------
    y : ndarray of float64, shape (k,)
    lo, hi : float
        Finite, ``lo <= hi``.
    step : float
        ``>= 0``.
    n_bins : float
        ``max(1, ceil((hi - lo) / step))``, 1 when ``step == 0``.
    """
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if step > 0:
            idx = np.minimum(np.floor((y - lo) / step), n_bins - 1.0)
        else:
            idx = np.zeros_like(y)
        out = np.where(y < lo, BELOW, np.where(y > hi, ABOVE, idx))
    out[np.isnan(y)] = MISSING
    return out


def _bin_frame(keys: pd.DataFrame, numeric: Sequence[bool], specs: _Specs, origin: int) -> pd.DataFrame:
    """Binned profile of encoded records (output of :func:`_encode_raw`).

    Numeric ``k{i}`` become float64 bin indices (sentinels for below/above/missing, no
    ``m{i}``); categorical ``k{i}``/``m{i}`` are kept. Adds ``_o`` = ``origin == 0`` and
    ``_a`` = ``origin == 1`` (int64) to count originals of U and avatars per profile.
    """
    cols: dict[str, Any] = {}
    j = 0
    for i, num in enumerate(numeric):
        if num:
            grid = specs.grids[j]
            j += 1
            y = keys[f"k{i}"].to_numpy(dtype=np.float64)
            miss = keys[f"m{i}"].to_numpy(dtype=bool)
            if grid is None:
                b = np.full(len(y), NO_BINS)
            else:
                b = bin_index(y, grid.lo, grid.hi, grid.step, grid.n_bins)
            b[miss] = MISSING
            cols[f"k{i}"] = b
        else:
            cols[f"k{i}"] = keys[f"k{i}"].array
            cols[f"m{i}"] = keys[f"m{i}"].to_numpy(dtype=bool)
    n = len(keys)
    cols["_o"] = np.full(n, 1 if origin == 0 else 0, dtype=np.int64)
    cols["_a"] = np.full(n, 1 if origin == 1 else 0, dtype=np.int64)
    return pd.DataFrame(cols, index=pd.RangeIndex(n))


def _binned_key_names(numeric: Sequence[bool]) -> list[str]:
    names: list[str] = []
    for i, num in enumerate(numeric):
        names.append(f"k{i}")
        if not num:
            names.append(f"m{i}")
    return names


def _stats_chunk(u: pd.DataFrame, numeric: Sequence[bool]) -> _Partial:
    """Partial statistics of the numeric variables over a partition of ``U``."""
    out = []
    for i, num in enumerate(numeric):
        if not num:
            continue
        y = u[f"k{i}"].to_numpy(dtype=np.float64)[~u[f"m{i}"].to_numpy(dtype=bool)]
        inf = np.isinf(y)
        n_inf = int(inf.sum())
        if n_inf:
            y = y[~inf]
        if len(y) == 0:
            out.append(_VarStats(n_inf=n_inf))
            continue
        out.append(
            _VarStats(
                count=len(y),
                n_inf=n_inf,
                total=_exact_sum(y),
                total_sq=_exact_sum_of_squares(y),
                vmin=float(y.min()),
                vmax=float(y.max()),
            )
        )
    return _Partial(out)


def _merge_partials(parts: pd.Series | Sequence[_Partial]) -> _Partial:
    it = iter(list(parts))
    acc = next(it)
    for p in it:
        acc = acc.merge(p)
    return acc


def _finalize_specs(
    parts: pd.Series | Sequence[_Partial],
    names: Sequence[str],
    tolerance: float,
    padding: float,
    ddof: int,
) -> _Specs:
    """Bin grids (§5.2 step 4, §5.3) from the merged exact statistics of ``U``."""
    total = _merge_partials(parts)
    grids: list[_Grid | None] = []
    reports: list[BinSpec] = []
    errors: list[str] = []
    nan = math.nan
    for name, st in zip(names, total.stats, strict=True):
        if st.n_inf:
            errors.append(
                f"known variable {name!r} has {st.n_inf} infinite value(s) among the unique "
                "original records; replace them by NaN (a level of its own) or finite values"
            )
        if st.count == 0:
            grids.append(None)
            reports.append(BinSpec(nan, nan, nan, 0, nan, nan, 0))
            continue
        n = st.count
        s1 = _to_fraction(st.total)
        mean_q = s1 / n
        mean = float(mean_q)
        if n - ddof > 0:
            ss = _to_fraction(st.total_sq) - s1 * s1 / n  # exact sum of squared deviations
            try:
                var = float(ss / (n - ddof))
            except OverflowError:
                var = math.inf
            std = math.sqrt(var)
        else:
            std = 0.0  # not more than ddof values: no observed spread [proposed]
        with np.errstate(over="ignore"):
            lo = st.vmin - padding * std
            hi = st.vmax + padding * std
            step = tolerance * abs(mean)
            if step == 0.0:  # mean 0 (or underflow): 5 % of the range of U [proposed]
                step = tolerance * (st.vmax - st.vmin)
        if not all(math.isfinite(v) for v in (std, lo, hi, step)):
            errors.append(
                f"known variable {name!r}: values too large in magnitude to bin "
                f"(min {st.vmin!r}, max {st.vmax!r}, std {std!r}); rescale the column "
                "in both tables (e.g. change its unit)"
            )
            grids.append(None)
            reports.append(BinSpec(lo, hi, step, 0, mean, std, n))
            continue
        if step > 0.0:
            ratio = (hi - lo) / step
            n_bins = max(1.0, math.ceil(ratio) if math.isfinite(ratio) else math.inf)
        else:
            n_bins = 1.0  # single bin: exact equality (constant column with mean 0)
        grids.append(_Grid(lo, hi, step, float(n_bins)))
        reports.append(BinSpec(lo, hi, step, int(n_bins) if math.isfinite(n_bins) else -1, mean, std, n))
    return _Specs(tuple(grids), tuple(reports), tuple(errors))


@dataclass
class _Distinct:
    """Up to 11 distinct non-missing values per numeric column (float64 arrays)."""

    values: list[np.ndarray]


def _distinct_chunk(part: pd.DataFrame, names: Sequence[str]) -> _Distinct:
    """Bounded low-cardinality probe of one partition (§5.2 step 2 warning)."""
    out = []
    for name in names:
        v = pd.unique(part[name].to_numpy(dtype=np.float64, na_value=np.nan))
        v = v[~np.isnan(v)]
        out.append(v[: _LOW_CARDINALITY + 1])
    return _Distinct(out)


def _distinct_merge(parts: pd.Series | Sequence[_Distinct]) -> _Distinct:
    parts = list(parts)
    out = []
    for j in range(len(parts[0].values)):
        u = np.unique(np.concatenate([p.values[j] for p in parts]))
        out.append(u[: _LOW_CARDINALITY + 1])
    return _Distinct(out)


# --------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------


def _is_dask(obj: Any) -> bool:
    return type(obj).__module__.startswith("dask.") and hasattr(obj, "npartitions")


def _kind(dtype: Any) -> str:
    """'numeric', 'categorical' or 'refused' for a column dtype (§5.2 step 2)."""
    if ptypes.is_bool_dtype(dtype):
        return "categorical"
    if isinstance(dtype, pd.CategoricalDtype):
        return "categorical"
    if (
        ptypes.is_datetime64_any_dtype(dtype)
        or ptypes.is_timedelta64_dtype(dtype)
        or isinstance(dtype, pd.PeriodDtype | pd.IntervalDtype)
        or ptypes.is_complex_dtype(dtype)
    ):
        return "refused"
    if ptypes.is_numeric_dtype(dtype):
        return "numeric"
    if ptypes.is_object_dtype(dtype) or ptypes.is_string_dtype(dtype):
        return "categorical"
    return "refused"


def _validate(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    tolerance: float,
    padding: float,
    ddof: int,
) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    for label, obj in (("original", original), ("synthetic", synthetic)):
        if not (isinstance(obj, pd.DataFrame) or _is_dask(obj)):
            raise InputError(
                f"kpr: the {label} table must be a pandas or Dask DataFrame, got {type(obj).__name__}"
            )
    if isinstance(known, str) or not isinstance(known, Sequence):
        raise InputError(f"kpr: `known` must be a list of column names, e.g. ['age', 'sex'], got {known!r}")
    known_t = tuple(known)
    if not known_t:
        raise InputError("kpr: `known` is empty; give at least one known variable")
    bad = [k for k in known_t if not isinstance(k, str)]
    if bad:
        raise InputError(f"kpr: known variable names must be strings, got {bad!r}")
    dup = sorted({k for k in known_t if known_t.count(k) > 1})
    if dup:
        raise InputError(f"kpr: known variable(s) {dup} listed more than once; list each once")
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance > 0):
        raise InputError(f"kpr: tolerance must be a finite number > 0, got {tolerance!r}")
    if not (isinstance(padding, int | float) and math.isfinite(padding) and padding >= 0):
        raise InputError(f"kpr: padding must be a finite number >= 0, got {padding!r}")
    if isinstance(ddof, bool) or not isinstance(ddof, int | np.integer) or ddof < 0:
        raise InputError(f"kpr: ddof must be an integer >= 0, got {ddof!r}")
    for label, obj in (("original", original), ("synthetic", synthetic)):
        missing = [k for k in known_t if k not in obj.columns]
        if missing:
            raise InputError(
                f"kpr: known variable(s) {missing} not found in the {label} table "
                f"(columns: {list(map(str, obj.columns))}); fix the names or the table"
            )
    numeric: list[bool] = []
    for k in known_t:
        ko, ks = _kind(original.dtypes[k]), _kind(synthetic.dtypes[k])
        for label, kind, dt in (
            ("original", ko, original.dtypes[k]),
            ("synthetic", ks, synthetic.dtypes[k]),
        ):
            if kind == "refused":
                raise InputError(
                    f"kpr: known variable {k!r} has dtype {dt} in the {label} table; "
                    "dates, durations and other non-numeric, non-categorical types are "
                    "refused (5 % of their mean is meaningless): cast the column in both "
                    "tables, e.g. to a number of days or to a category"
                )
        if ko != ks:
            raise InputError(
                f"kpr: known variable {k!r} is {ko} in the original table "
                f"({original.dtypes[k]}) but {ks} in the synthetic table "
                f"({synthetic.dtypes[k]}); cast it to the same type in both tables"
            )
        numeric.append(ko == "numeric")
    return known_t, tuple(numeric)


# --------------------------------------------------------------------------------------
# the two execution paths
# --------------------------------------------------------------------------------------


def _pandas_path(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    known: tuple[str, ...],
    numeric: tuple[bool, ...],
    tolerance: float,
    padding: float,
    ddof: int,
) -> tuple[int, int, int, _Specs, int, int, list[np.ndarray]]:
    enc_o = _encode_raw(original, known, numeric)
    enc_s = _encode_raw(synthetic, known, numeric)
    keys = _key_names(len(known))
    u = enc_o[~enc_o.duplicated(keys, keep=False)]
    num_names = [k for k, nm in zip(known, numeric, strict=True) if nm]
    specs = _finalize_specs([_stats_chunk(u, numeric)], num_names, tolerance, padding, ddof)
    both = pd.concat(
        [_bin_frame(u, numeric, specs, 0), _bin_frame(enc_s, numeric, specs, 1)],
        ignore_index=True,
    )
    agg = both.groupby(_binned_key_names(numeric), sort=False)[["_o", "_a"]].sum()
    b1 = agg["_a"].to_numpy() == 1
    n_s = int(agg["_o"].to_numpy()[b1].sum())
    distinct = _distinct_chunk(original, num_names).values if num_names else []
    return len(original), len(synthetic), len(u), specs, int(b1.sum()), n_s, distinct


def _dask_path(
    original: Any,
    synthetic: Any,
    known: tuple[str, ...],
    numeric: tuple[bool, ...],
    tolerance: float,
    padding: float,
    ddof: int,
) -> tuple[int, int, int, _Specs, int, int, list[np.ndarray]]:
    import dask
    import dask.dataframe as dd

    if not _is_dask(original):
        original = dd.from_pandas(original, npartitions=1)
    if not _is_dask(synthetic):
        synthetic = dd.from_pandas(synthetic, npartitions=1)
    orig_k = original[list(known)]
    syn_k = synthetic[list(known)]
    meta_raw = _encode_raw(orig_k._meta, known, numeric)
    enc_o = orig_k.map_partitions(_encode_raw, known, numeric, meta=meta_raw)
    enc_s = syn_k.map_partitions(_encode_raw, known, numeric, meta=_encode_raw(syn_k._meta, known, numeric))
    keys = _key_names(len(known))
    split_o = max(1, original.npartitions)
    # step 3: U = raw profiles of size 1 (partitioned result, never gathered)
    sizes = enc_o.groupby(keys, sort=False).size(split_out=split_o)
    sizes = sizes.to_frame("_n").reset_index()
    u = sizes[sizes["_n"] == 1][keys]
    num_names = [k for k, nm in zip(known, numeric, strict=True) if nm]
    # step 4: one exact tree reduction -> bin grids (a Dask Scalar, used by the binning)
    specs = u.reduction(
        _stats_chunk,
        aggregate=_finalize_specs,
        combine=_merge_partials,
        meta=object,
        chunk_kwargs={"numeric": numeric},
        aggregate_kwargs={
            "names": num_names,
            "tolerance": tolerance,
            "padding": padding,
            "ddof": ddof,
        },
    )
    # steps 5-8: binned U (origin 0) + binned avatars (origin 1), one groupby -> per binned
    # profile the number of U records (_o) and of avatars (_a); B1 = {_a == 1}
    dummy = _Specs(tuple(_Grid(0.0, 1.0, 1.0, 1.0) for _ in num_names), (), ())
    meta_bin = _bin_frame(meta_raw, numeric, dummy, 0)
    bu = u.map_partitions(_bin_frame, numeric, specs, 0, meta=meta_bin)
    bs = enc_s.map_partitions(_bin_frame, numeric, specs, 1, meta=meta_bin)
    both = dd.concat([bu, bs], ignore_unknown_divisions=True)
    split_b = max(1, bu.npartitions + bs.npartitions)
    agg = both.groupby(_binned_key_names(numeric), sort=False)[["_o", "_a"]].sum(split_out=split_b)
    b1 = agg["_a"] == 1
    n_b1 = b1.sum()
    n_s = agg["_o"].where(b1, 0).sum()
    n = enc_o.shape[0]
    n_syn = enc_s.shape[0]
    n_u = u.shape[0]
    if num_names:
        distinct = original[num_names].reduction(
            _distinct_chunk,
            aggregate=_distinct_merge,
            combine=_distinct_merge,
            meta=object,
            chunk_kwargs={"names": num_names},
        )
    else:
        distinct = _Distinct([])
    n, n_syn, n_u, specs_v, n_b1, n_s, distinct_v = dask.compute(n, n_syn, n_u, specs, n_b1, n_s, distinct)
    return int(n), int(n_syn), int(n_u), specs_v, int(n_b1), int(n_s), distinct_v.values


def kpr(
    original: Any,
    synthetic: Any,
    known: Sequence[str],
    *,
    tolerance: float = 0.05,
    padding: float = 0.1,
    ddof: int = 1,
) -> KPRResult:
    """Knowledge Protection Rate of a synthetic table, ALGORITHMS.md §5.2 (E21), (E22).

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
        Empty or repeated ``known``, a name missing from a table, a refused dtype, a
        variable numeric in one table and categorical in the other, an empty original
        table, infinite (or overflowing) values of a numeric variable among the unique
        originals, invalid ``tolerance``/``padding``/``ddof``.

    Warns
    -----
    KPRWarning
        A numeric known variable has at most 10 distinct values in the original table
        (probably a coded category; it is binned as numeric, which amounts to a
        near-exact match).

    Notes
    -----
    Decisions of ALGORITHMS.md §5.3:

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
    The test vector of ALGORITHMS.md §5.3:

    >>> import pandas as pd
    >>> o = pd.DataFrame({"age": [30, 30, 45, 50, 62, 70], "sex": list("MMFFMF")})
    >>> a = pd.DataFrame({"age": [31, 46, 47, 63, 90, 52], "sex": list("MFFMFF")})
    >>> kpr(o, a, ["age", "sex"]).kpr
    50.0
    """
    known_t, numeric = _validate(original, synthetic, known, tolerance, padding, ddof)
    tolerance, padding, ddof = float(tolerance), float(padding), int(ddof)
    if _is_dask(original) or _is_dask(synthetic):
        res = _dask_path(original, synthetic, known_t, numeric, tolerance, padding, ddof)
    else:
        res = _pandas_path(original, synthetic, known_t, numeric, tolerance, padding, ddof)
    n, n_syn, n_u, specs, n_b1, n_s, distinct = res
    if n == 0:
        raise InputError("kpr: the original table has no rows; KPR needs n > 0 records")
    if specs.errors:
        raise InputError("kpr: " + "; ".join(specs.errors))
    num_names = [k for k, nm in zip(known_t, numeric, strict=True) if nm]
    for name, vals in zip(num_names, distinct, strict=True):
        if len(vals) <= _LOW_CARDINALITY:
            warnings.warn(
                f"kpr: numeric known variable {name!r} has only {len(vals)} distinct "
                "value(s) in the original table; if it is a coded category, cast it to "
                "'category' in both tables (it is binned as numeric here)",
                KPRWarning,
                stacklevel=2,
            )
    notes = []
    if n_u == 0:
        notes.append("no original record is unique: KPR = 100")
    else:
        for name, rep in zip(num_names, specs.reports, strict=True):
            if rep.count == 0:
                notes.append(f"{name!r} is missing in every unique original: only missing values match")
            elif rep.step == 0.0:
                notes.append(f"{name!r} is 0 in every unique original: single bin, exact match")
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

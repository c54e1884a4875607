"""Per-group statistics of a release, vectorised: the group table the criteria read
(:func:`group_statistics`: size, distinct l, the exact EMD fraction to the view), and the
divergences of the members' priors per group (:func:`js_per_group` (E8),
:func:`tv_per_group`, RBK-closeness). One ``bincount`` over (group, sensitive code) gives the
(G, M) count matrix; numba loops over groups turn counts and group-sorted priors into the
statistics. No Python loop runs per group or per tuple. The criteria themselves are in
:mod:`dpriv.criteria`, which re-exports these names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from dpriv.divergence import GROUNDS, emd_num_den, emd_within, entropy, js_from_sums, tv_from_sums
from dpriv.errors import InputError, PolicyError
from dpriv.kernel_args import kernel_input, read_only
from dpriv.released import GROUP
from dpriv.validate import codes
from dpriv.wording import counted

#: EMD ground name by its code in the numba kernels.
GROUND_NAMES = {code: name for name, code in GROUNDS.items()}


# --------------------------------------------------------------------------------------
# numba kernels (loops over groups, calling the shared divergence arithmetic)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _emd_all(counts, view_counts, view_size, ground):
    """EMD fraction of every group: counts (G, M) int64 -> num (G,), den (G,) int64."""
    g = counts.shape[0]
    num = np.empty(g, dtype=np.int64)
    den = np.empty(g, dtype=np.int64)
    for i in range(g):
        size = 0
        for c in counts[i]:
            size += c
        num[i], den[i] = emd_num_den(counts[i], size, view_counts, view_size, ground)
    return num, den


@njit(cache=True)
def within_all(num, den, t):
    """``emd_within`` for every group: bool (G,)."""
    out = np.empty(num.shape[0], dtype=np.bool_)
    for i in range(num.shape[0]):
        out[i] = emd_within(num[i], den[i], t)
    return out


@njit(cache=True)
def _js_all(priors, starts, log_base):
    """Equal-weight JS (E8) of each segment ``priors[starts[g]:starts[g+1]]`` (group-sorted;
    ``priors`` (n, M) float64 in C or Fortran order, read in place). A row equal to the one
    before it has that row's entropy: it is reused, not recomputed (priors repeat: a part of
    the 10^6 benchmark's first release holds 4 distinct prior rows); the same bits either way."""
    g = starts.shape[0] - 1
    m = priors.shape[1]
    out = np.empty(g, dtype=np.float64)
    sum_p = np.empty(m)
    h = 0.0
    for i in range(g):
        sum_p[:] = 0.0
        sum_h = 0.0
        for x in range(starts[i], starts[i + 1]):
            same = x > 0
            for c in range(m):
                sum_p[c] += priors[x, c]
                same = same and priors[x, c] == priors[x - 1, c]
            if not same:
                h = entropy(priors[x], log_base)
            sum_h += h
        out[i] = js_from_sums(sum_p, sum_h, starts[i + 1] - starts[i], log_base)
    return out


@njit(cache=True)
def _tv_all(priors, s, starts, m):
    """RBK-closeness distance of each segment (group-sorted rows): sensitive codes ``s``."""
    g = starts.shape[0] - 1
    out = np.empty(g, dtype=np.float64)
    for i in range(g):
        sum_p = np.zeros(m)
        counts = np.zeros(m, dtype=np.int64)
        for x in range(starts[i], starts[i + 1]):
            sum_p += priors[x]
            counts[s[x]] += 1
        out[i] = tv_from_sums(counts, sum_p, starts[i + 1] - starts[i])
    return out


def tv_per_group(priors: np.ndarray, s: np.ndarray, labels: np.ndarray | pd.Series) -> pd.Series:
    """RBK-closeness distance of every group, indexed by label: the total variation between
    the group's sensitive distribution (codes ``s`` (n,) in [0, M)) and the mean of its
    members' priors (``priors`` (n, M), rows summing to 1); float64 in [0, 1]."""
    order, starts, uniq = label_segments(labels)
    p = kernel_input(priors if order is None else priors[order], np.float64)
    codes_ = kernel_input(np.asarray(s) if order is None else np.asarray(s)[order], np.int64)
    return pd.Series(_tv_all(p, codes_, starts, p.shape[1]), index=uniq)


def js_per_group(priors: np.ndarray, labels: np.ndarray | pd.Series, log_base: float) -> pd.Series:
    """JS (E8, equal weights, ``log_base``) of the priors of every group, indexed by label."""
    order, starts, uniq = label_segments(labels)
    rows = np.asarray(priors if order is None else priors[order])
    if not (rows.flags.c_contiguous or rows.flags.f_contiguous):  # a frame's to_numpy: Fortran order, no copy
        rows = np.ascontiguousarray(rows)
    # read-only either way (one compiled signature a layout: dpriv.kernel_args)
    return pd.Series(_js_all(read_only(rows), starts, float(log_base)), index=uniq)


def label_segments(labels: np.ndarray | pd.Series) -> tuple[np.ndarray | None, np.ndarray, pd.Index]:
    """The rows of each group of ``labels`` ((n,), no missing label) as segments: the stable
    row order that groups them (int64 (n,); None when the rows are grouped in label order
    already), the segment starts (int64 (G+1,), the last one n) and the sorted distinct labels
    (the per-group index)."""
    values = np.asarray(labels)
    if values.dtype.kind in "iu" and bool(np.all(values[1:] >= values[:-1])):
        # integer labels in order (a release's parts, sorted by label): no hash, sort or gather
        starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]]) if len(values) else np.arange(0)
        return None, np.r_[starts, len(values)].astype(np.int64), pd.Index(values[starts])
    g_codes, uniq = pd.factorize(labels, sort=True)
    order = np.argsort(g_codes, kind="stable")
    return order, np.searchsorted(g_codes[order], np.arange(len(uniq) + 1)).astype(np.int64), uniq


# --------------------------------------------------------------------------------------
# per-group statistics
# --------------------------------------------------------------------------------------
def group_statistics(
    released: pd.DataFrame,
    qi_columns: list[str],
    sensitive: str,
    domain: list,
    view_counts: np.ndarray,
    ground: str,
    group_column: str | None = GROUP,
) -> pd.DataFrame:
    """Size, distinct l and EMD to the view distribution of every QI-group of a release.

    Parameters
    ----------
    released : pandas DataFrame, one row per released tuple.
    qi_columns : the generalized QI columns of ``released``; used to form the groups when
        ``group_column`` is None (a group = one tuple of generalized QI values, as in any
        generalized table, e.g. pyCANON's fixtures), and copied into the result then.
    sensitive : name of the sensitive column.
    domain : D[S], the M sensitive values in order (the order matters for the ordered ground).
    view_counts : int64 array of shape (M,), counts of S over the whole original view
        (P_V of (E9), computed before suppression); non-negative, positive sum N.
    ground : ``"equal"`` (E18) or ``"ordered"`` (E19, rank distance ``|i-j|/(M-1)``).
    group_column : column holding the QI-group label; None groups by ``qi_columns``.

    Returns
    -------
    pandas DataFrame with one row per group, sorted by group:
    ``qi_group`` (the label; 0..G-1 in sorted QI-tuple order when ``group_column`` is None,
    followed then by the ``qi_columns`` values), ``size`` (int64, |Q|), ``l`` (int64, number
    of distinct sensitive values, §4.2), ``emd_num``/``emd_den`` (int64, exact EMD
    fraction) and ``emd`` (float64 in [0, 1], ``emd_num / emd_den``).

    Raises
    ------
    InputError
        ``view_counts`` not of shape (M,) / negative / summing to 0, a sensitive value
        outside ``domain``, a missing group label.
    PolicyError
        An unknown ``ground``.
    """
    m = len(domain)
    vc = kernel_input(view_counts, np.int64)
    if vc.shape != (m,):
        raise InputError(f"view_counts has shape {vc.shape}; expected ({m},), one count per domain value")
    if (vc < 0).any() or vc.sum() == 0:
        raise InputError(f"view_counts must be non-negative with a positive sum, got {vc.tolist()}")
    if ground not in GROUNDS:
        raise PolicyError(f"unknown EMD ground {ground!r}; expected one of {sorted(GROUNDS)}")
    s = codes(released[sensitive], domain)
    if (s < 0).any():
        raise InputError(  # by count: a sensitive value is never printed
            f"sensitive column {sensitive!r} holds {counted(int((s < 0).sum()), 'value')} outside the "
            f"domain given ({m} values; the values are not printed): correct those rows or give the "
            "whole domain"
        )

    if group_column is not None:
        gid, labels = pd.factorize(released[group_column], sort=True)
        if (gid < 0).any():
            raise InputError(f"group column {group_column!r} has missing labels")
        keys = pd.DataFrame({GROUP: labels})
    elif len(qi_columns) == 0 or len(released) == 0:
        gid = np.zeros(len(released), dtype=np.int64)
        keys = pd.DataFrame({GROUP: np.arange(min(len(released), 1), dtype=np.int64)})
        for q in qi_columns:
            keys[q] = released[q].iloc[:1].to_numpy()
    else:
        grouped = released.groupby(list(qi_columns), sort=True, dropna=False, observed=True)
        gid = grouped.ngroup().to_numpy()
        keys = grouped.size().reset_index()[list(qi_columns)]
        keys.insert(0, GROUP, np.arange(len(keys), dtype=np.int64))

    n_groups = len(keys)
    flat = np.asarray(gid, dtype=np.int64) * m + s
    counts = np.bincount(flat, minlength=n_groups * m).astype(np.int64).reshape(n_groups, m)
    num, den = _emd_all(counts, vc, int(vc.sum()), GROUNDS[ground])
    out = keys.reset_index(drop=True)
    out["size"] = counts.sum(axis=1)
    out["l"] = (counts > 0).sum(axis=1).astype(np.int64)
    out["emd_num"] = num
    out["emd_den"] = den
    out["emd"] = num / np.maximum(den, 1)
    return out

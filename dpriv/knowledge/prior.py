"""Sensitive-value background knowledge BK^sv (docs/algorithms.md §1.2, §2.5, §3.1).

* :func:`class_prior` -- the paper's setting: the empirical distribution of S in each
  knowledge class of a :class:`~dpriv.knowledge.tables.ClassMap` (e.g. the 18 age-third x
  weight-third x gender classes); :func:`tuple_prior` spreads it to the tuples.
* :func:`kernel_prior` -- [LLZ]'s kernel-regression prior (E12) with the Epanechnikov
  product kernel (E13) over normalised QIs, computed by grid bucketing (cells of side B,
  3^m neighbour cells), never an n x n matrix;
* :func:`kernel_prior_dask` -- the same on a Dask DataFrame (the only function here that
  touches Dask, through the frame's own methods; no Dask import).
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
import pandas as pd

from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap


def _check_s(s, n: int, m: int) -> np.ndarray:
    s = np.asarray(s)
    if s.shape != (n,):
        raise InputError(f"sensitive codes must have shape ({n},), got {s.shape}")
    if n and not np.issubdtype(s.dtype, np.integer):
        raise InputError(f"sensitive codes must be integers 0..M-1, got dtype {s.dtype}")
    if n and (s.min() < 0 or s.max() >= m):
        raise InputError(
            f"sensitive codes must lie in 0..{m - 1}; got [{s.min()}, {s.max()}]: encode S "
            "in the policy's domain order"
        )
    return s.astype(np.int64)


def class_prior(
    frame: pd.DataFrame,
    classmap: ClassMap,
    s_codes: np.ndarray,
    M: int,
    alpha: float = 0.0,
) -> np.ndarray:
    """Empirical distribution of S per knowledge class (BK^sv of the paper, §2.5).

    ``prior[c, s] = (count(c, s) + α) / (count(c) + α M)``. A class with no tuple (and
    α = 0) gets the distribution of S over the whole frame; an empty frame gives uniform
    rows.

    Parameters
    ----------
    frame : pandas.DataFrame
        Tuples with the QI columns of ``classmap``.
    classmap : ClassMap
        QI values -> class; a map with no QIs gives one class (the global distribution).
    s_codes : ndarray of int, shape (len(frame),)
        Sensitive codes in ``0..M-1`` (policy domain order).
    M : int
        Size of the sensitive domain.
    alpha : float, default 0
        Additive smoothing, >= 0.

    Returns
    -------
    ndarray of float64, shape (classmap.n_classes, M)
        Rows sum to 1.

    Raises
    ------
    InputError
        Missing QI columns, unknown categorical levels, codes out of range, alpha < 0.
    """
    if M < 1:
        raise InputError(f"the sensitive domain size M must be >= 1, got {M}")
    if alpha < 0 or not np.isfinite(alpha):
        raise InputError(f"smoothing alpha must be a finite number >= 0, got {alpha!r}")
    return prior_from_counts(class_counts(frame, classmap, s_codes, M), alpha)


def class_counts(frame: pd.DataFrame, classmap: ClassMap, s_codes: np.ndarray, M: int) -> np.ndarray:
    """Counts of S per knowledge class: int64 (classmap.n_classes, M). Counts of several
    frames (e.g. the partitions of a Dask view) add up to the counts of their union."""
    s = _check_s(s_codes, len(frame), M)
    c = classmap.n_classes
    return np.bincount(classmap.classify(frame) * M + s, minlength=c * M).reshape(c, M)


def prior_from_counts(counts: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """:func:`class_prior` from the class counts of :func:`class_counts`."""
    M = counts.shape[1]
    if alpha < 0 or not np.isfinite(alpha):
        raise InputError(f"smoothing alpha must be a finite number >= 0, got {alpha!r}")
    cnt = np.asarray(counts).astype(np.float64)
    tot = cnt.sum(axis=1, keepdims=True)
    glob = cnt.sum(axis=0)
    glob = glob / glob.sum() if glob.sum() > 0 else np.full(M, 1.0 / M)
    with np.errstate(divide="ignore", invalid="ignore"):
        prior = (cnt + alpha) / (tot + alpha * M)
    empty = (tot[:, 0] + alpha * M) <= 0
    prior[empty] = glob
    return prior


def tuple_prior(frame: pd.DataFrame, classmap: ClassMap, priors: np.ndarray) -> np.ndarray:
    """Per-tuple BK^sv: ``priors[classmap.classify(frame)]``, float64 (len(frame), M).

    Raises InputError if ``priors`` does not have one row per class.
    """
    priors = np.asarray(priors, dtype=np.float64)
    if priors.ndim != 2 or priors.shape[0] != classmap.n_classes:
        raise InputError(
            f"priors must have shape ({classmap.n_classes}, M), one row per class; got {priors.shape}"
        )
    return priors[classmap.classify(frame)]


@numba.njit(cache=True, nogil=True)
def _nw_kernel(uq, qkey, off_keys, qpid, src_p, src_pts, src_key, src_s, src_w, B, M):  # pragma: no cover
    """For each distinct QI vector, sum the Epanechnikov product weights of the sources in
    the 3^m neighbour cells (sources sorted by cell key), except the sources at the same
    QI vector (added exactly by the caller)."""
    nq, m = uq.shape
    num = np.zeros((nq, M))
    den = np.zeros(nq)
    for i in range(nq):
        for o in range(off_keys.shape[0]):
            key = qkey[i] + off_keys[o]
            lo = np.searchsorted(src_key, key, side="left")
            hi = np.searchsorted(src_key, key, side="right")
            for j in range(lo, hi):
                if src_p[j] == qpid[i]:
                    continue
                w = src_w[j]
                for a in range(m):
                    u = (uq[i, a] - src_pts[j, a]) / B[a]
                    if u < 0:
                        u = -u
                    if u >= 1.0:
                        w = 0.0
                        break
                    w *= 0.75 * (1.0 - u * u)
                if w != 0.0:
                    num[i, src_s[j]] += w
                    den[i] += w
    return num, den


def kernel_prior(
    qi_norm: np.ndarray,
    s: np.ndarray,
    M: int,
    bandwidth: float | np.ndarray,
    include_self: bool = True,
) -> np.ndarray:
    """Nadaraya-Watson prior (E12) with the Epanechnikov product kernel (E13).

    ``P(q_i)_s = Σ_j K_B(q_i, q_j) 1[s_j = s] / Σ_j K_B(q_i, q_j)`` with
    ``K_B(q, q') = Π_a K(|q_a - q'_a| / B_a)``, ``K(u) = 3/4 (1 - u²) 1[|u| < 1]`` (the
    ``1/B_a`` factors cancel). Computed on the distinct QI vectors (queries) against the
    distinct (QI vector, value) pairs with their multiplicity (sources), so discrete QIs
    such as the paper's ages/weights cost O(distinct²) at most; only sources in the 3^m
    grid cells (side ``B_a``) around a query's cell are visited (a numba loop, no n x n
    matrix; O(n) memory). Cost still grows like n² · (2B)^m for continuous QIs and a
    large B.

    Parameters
    ----------
    qi_norm : ndarray of float, shape (n, m)
        QI values normalised to [0, 1] (distance on attribute a = ``|q_a - q'_a|``;
        encode a categorical QI without hierarchy as 0/1 per level pair, or use B < 1 so
        that distinct levels at distance 1 never mix).
    s : ndarray of int, shape (n,)
        Sensitive codes, ``0..M-1``.
    M : int
        Size of the sensitive domain.
    bandwidth : float or ndarray of float, shape (m,)
        B (> 0), one for all QIs or one per QI.
    include_self : bool, default True
        Whether tuple i is its own neighbour (then every denominator is positive). With
        False, a tuple without neighbour gets the distribution of S over all tuples.

    Returns
    -------
    ndarray of float64, shape (n, M)
        Prior of each tuple; rows sum to 1.

    Raises
    ------
    InputError
        Bad shapes, non-finite QIs or QIs outside [0, 1], B <= 0, codes out of range, or a
        grid too fine to index (increase B).
    """
    q = np.asarray(qi_norm, dtype=np.float64)
    if q.ndim != 2:
        raise InputError(f"qi_norm must have shape (n, m), got {q.shape}")
    n, m = q.shape
    if M < 1:
        raise InputError(f"the sensitive domain size M must be >= 1, got {M}")
    s = _check_s(s, n, M)
    if not np.isfinite(q).all() or (n and (q.min() < 0 or q.max() > 1)):
        raise InputError("qi_norm must be finite and normalised to [0, 1] (see docs/algorithms.md §3.1)")
    B = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (m,)).copy()
    if not (np.isfinite(B).all() and (B > 0).all()):
        raise InputError(f"bandwidth must be > 0, got {bandwidth!r}")
    if n == 0:
        return np.zeros((0, M))

    return _kernel_core(q, s, q, s, np.ones(n), M, B, exclude_self=not include_self)


def _kernel_core(
    q: np.ndarray,
    s: np.ndarray,
    src_pts: np.ndarray,
    src_s: np.ndarray,
    src_w: np.ndarray,
    M: int,
    B: np.ndarray,
    exclude_self: bool,
) -> np.ndarray:
    """(E12) for query tuples ``q`` (n, m) / ``s`` (n,) against weighted sources
    (``src_pts`` (k, m), ``src_s`` (k,), ``src_w`` (k,) multiplicities). With
    ``exclude_self`` each query's own (point, value) counts one source less."""
    n, m = q.shape
    glob = np.bincount(src_s, weights=src_w, minlength=M)
    glob = glob / glob.sum() if glob.sum() > 0 else np.full(M, 1.0 / M)
    # distinct points over queries and sources; sources aggregated by (point, value)
    pts, pid = np.unique(np.vstack([q, src_pts]), axis=0, return_inverse=True)
    pid = pid.reshape(-1)
    qid, spid = pid[:n], pid[n:]
    uqid, inv = np.unique(qid, return_inverse=True)
    inv = inv.reshape(-1)
    scode, sinv = np.unique(spid * M + src_s, return_inverse=True)
    sw = np.bincount(sinv.reshape(-1), weights=src_w, minlength=scode.size)
    sp, ss = scode // M, scode % M

    cells = np.floor(pts / B).astype(np.int64)  # 0..ceil(1/B)
    side = cells.max(axis=0) + 3  # +1 margin on each side for the neighbour offsets
    if np.sum(np.log2(side.astype(np.float64))) > 62:
        raise InputError(
            f"bandwidth {B.tolist()} is too small for {m} QIs (grid cannot be indexed); increase B"
        )
    radix = np.cumprod(np.r_[1, side[:-1]]).astype(np.int64)
    key = (cells + 1) @ radix
    skey = key[sp]
    order = np.argsort(skey, kind="stable")
    offsets = np.array(np.meshgrid(*([[-1, 0, 1]] * m), indexing="ij")).reshape(m, -1).T
    num_u, den_u = _nw_kernel(
        np.ascontiguousarray(pts[uqid]),
        key[uqid],
        offsets @ radix,
        uqid,
        sp[order],
        np.ascontiguousarray(pts[sp[order]]),
        skey[order],
        ss[order],
        sw[order],
        B,
        M,
    )
    # sources at the query's own point (distance 0, weight (3/4)^m), added exactly
    same_pts = np.zeros((pts.shape[0], M))
    np.add.at(same_pts, (sp, ss), sw)
    same = same_pts[qid]
    if exclude_self:
        same[np.arange(n), s] = np.maximum(same[np.arange(n), s] - 1.0, 0.0)
    k0 = 0.75**m
    num = num_u[inv] + k0 * same
    den = den_u[inv] + k0 * same.sum(axis=1)
    empty = den <= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den[:, None]
    out[empty] = glob
    return out / out.sum(axis=1, keepdims=True)


def kernel_prior_dask(
    ddf,
    qi_cols: Sequence[str],
    s_col: str,
    M: int,
    bandwidth: float | np.ndarray,
    include_self: bool = True,
    value_names: Sequence[str] | None = None,
):
    """:func:`kernel_prior` on a Dask DataFrame, partition by partition.

    The sources of (E12) are the distinct (QI vector, value) pairs of the whole frame with
    their multiplicities, collected once on the client (one ``groupby().size()``; small
    when the QIs are discrete, as in the paper: at most |D[QI]| x M rows, but O(n) for
    continuous QIs); each partition's tuples are then scored against them with
    ``map_partitions``, so partition boundaries do not change the result.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        Holds ``qi_cols`` (floats normalised to [0, 1]) and ``s_col`` (int codes 0..M-1).
    qi_cols : sequence of str
        The normalised QI columns (m of them).
    s_col : str
        The sensitive-code column.
    M, bandwidth, include_self
        As in :func:`kernel_prior`.
    value_names : sequence of str, optional
        Names of the M values; output columns are ``p__<value>`` (default ``p__0..``).

    Returns
    -------
    dask.dataframe.DataFrame
        float64 columns ``p__<value>`` (M of them), same index and partitions as ``ddf``;
        each row sums to 1.

    Raises
    ------
    InputError
        Missing columns or the errors of :func:`kernel_prior` (raised at compute time for
        the per-partition checks).
    """
    qi_cols = list(qi_cols)
    missing = [c for c in [*qi_cols, s_col] if c not in ddf.columns]
    if missing:
        raise InputError(f"columns {missing} not found; available: {list(ddf.columns)}")
    names = list(value_names) if value_names is not None else [str(v) for v in range(M)]
    if len(names) != M:
        raise InputError(f"value_names must hold M={M} names, got {len(names)}")
    m = len(qi_cols)
    B = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (m,)).copy()
    if not (np.isfinite(B).all() and (B > 0).all()):
        raise InputError(f"bandwidth must be > 0, got {bandwidth!r}")
    src = ddf[[*qi_cols, s_col]].groupby([*qi_cols, s_col], observed=True).size().compute()
    src = src.rename("n").reset_index()
    src_pts = src[qi_cols].to_numpy(dtype=np.float64)
    if not np.isfinite(src_pts).all() or (len(src) and (src_pts.min() < 0 or src_pts.max() > 1)):
        raise InputError(f"columns {qi_cols} must be finite and normalised to [0, 1]")
    src_s = _check_s(src[s_col].to_numpy(), len(src), M)
    src_w = src["n"].to_numpy(dtype=np.float64)
    columns = [f"p__{v}" for v in names]
    meta = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in columns})

    def _partition(part: pd.DataFrame) -> pd.DataFrame:
        q = part[qi_cols].to_numpy(dtype=np.float64)
        if len(part) == 0:
            return pd.DataFrame(np.zeros((0, M)), index=part.index, columns=columns)
        s = _check_s(part[s_col].to_numpy(), len(part), M)
        out = _kernel_core(q, s, src_pts, src_s, src_w, M, B, exclude_self=not include_self)
        return pd.DataFrame(out, index=part.index, columns=columns)

    return ddf.map_partitions(_partition, meta=meta)

"""Posterior knowledge PK^sv of the respondents of QI-groups (docs/algorithms.md §1.3, §3.3).

* :func:`omega_posterior` -- the Ω-estimate (E14), vectorised over many QI-groups with
  segment sums; this is what the release loop and the adversary use (``pk_method="omega"``).
* :func:`exact_product_posterior` (E4), :func:`exact_sum_posterior` (E2) and
  :func:`closed_form_sum_posterior` (E3) -- one group at a time; the two enumerations are
  test oracles (k! configurations, refused for k > 8).

Conventions: sensitive values are int codes ``0..M-1`` in the policy's domain order; a
prior / posterior is a float64 row of length ``M`` summing to 1. Degenerate case for every
method [derived]: when no configuration (or no prior mass) supports the group, the
posterior is the group's frequencies ``m_Q(s) / |Q|``.
"""

from __future__ import annotations

import itertools

import numpy as np

from dpriv.errors import InputError, PolicyError

#: Column prior sums below this are treated as 0 by the Ω zero guard (docs/findings.md pitfall 3).
OMEGA_ZERO_THRESHOLD = 1e-200

#: Largest group the enumeration oracles accept (k! configurations).
MAX_ENUMERATION_K = 8


def _check_group_inputs(s: np.ndarray, priors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(s)
    priors = np.asarray(priors, dtype=np.float64)
    if s.ndim != 1:
        raise InputError(f"sensitive codes must be a 1-d int array, got shape {s.shape}")
    if priors.ndim != 2 or priors.shape[0] != s.shape[0]:
        raise InputError(f"priors must have shape (n, M) with n = len(s) = {s.shape[0]}, got {priors.shape}")
    if s.size and not np.issubdtype(s.dtype, np.integer):
        raise InputError(f"sensitive codes must be integers 0..M-1, got dtype {s.dtype}")
    m = priors.shape[1]
    if s.size and (s.min() < 0 or s.max() >= m):
        raise InputError(
            f"sensitive codes must lie in 0..{m - 1} (the domain size is the prior width {m}); "
            f"got values in [{s.min()}, {s.max()}]: encode S in the policy's domain order"
        )
    return s.astype(np.int64), priors


def omega_posterior(groups: np.ndarray, s: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Ω-estimate (E14) of the posterior of every tuple, for many QI-groups at once.

    For a group E with value counts ``n_E(s)`` and prior matrix Π (|E| x M)::

        ω(t, s) = n_E(s) · Π[t, s] / Σ_{t' ∈ E} Π[t', s],   P(t)_s = ω(t, s) / Σ_s' ω(t, s')

    Zero guards (docs/algorithms.md §3.3, docs/findings.md pitfall 3): a column sum below
    :data:`OMEGA_ZERO_THRESHOLD` (while ``n_E(s) > 0``) gives ``ω(t, s) = n_E(s)/|E|`` for
    every tuple of the group; a row of ω that sums to 0 or is not finite (e.g. NaN priors)
    is replaced by the group frequencies ``n_E(s)/|E|``.

    Parameters
    ----------
    groups : ndarray of int, shape (n,)
        QI-group label of each tuple; any integers, not necessarily sorted or contiguous.
    s : ndarray of int, shape (n,)
        True sensitive code of each tuple, in ``0..M-1``.
    priors : ndarray of float64, shape (n, M)
        Prior of each tuple's respondent (RBK^sv, or BK^sv for first-time respondents);
        non-negative.

    Returns
    -------
    ndarray of float64, shape (n, M)
        Posterior of each tuple, in the input order. Rows sum to 1 and are 0 on values that
        do not occur in the tuple's group.

    Raises
    ------
    InputError
        On mismatched shapes, non-integer codes or codes outside ``0..M-1``.
    """
    s, priors = _check_group_inputs(s, priors)
    groups = np.asarray(groups)
    if groups.shape != s.shape:
        raise InputError(f"groups must have shape {s.shape} like s, got {groups.shape}")
    n, m = priors.shape
    if n == 0:
        return np.zeros((0, m))

    # group-sort (stable so that equal labels keep the input order); input already grouped in
    # order (the pk step's canonical order) moves nothing: no (n, M) gather, no scatter back
    ordered = bool(np.all(groups[1:] >= groups[:-1]))
    order = None if ordered else np.argsort(groups, kind="stable")
    g_sorted = groups if ordered else groups[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    gid = np.cumsum(np.r_[False, g_sorted[1:] != g_sorted[:-1]])  # 0..G-1 per sorted row
    n_groups = starts.size
    sizes = np.diff(np.r_[starts, n]).astype(np.float64)

    pi = priors if ordered else priors[order]
    s_sorted = s if ordered else s[order]
    counts = np.bincount(gid * m + s_sorted, minlength=n_groups * m).reshape(n_groups, m)
    counts = counts.astype(np.float64)
    freq = counts / sizes[:, None]  # (G, M)
    colsum = np.add.reduceat(pi, starts, axis=0)  # (G, M)

    small = ~(colsum >= OMEGA_ZERO_THRESHOLD)  # also catches NaN column sums
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = np.where(small, 0.0, counts / np.where(small, 1.0, colsum))  # n_E(s)/ΣΠ
        omega = pi * scale[gid]
        guard = small & (counts > 0)
        if guard.any():  # the (n, M) gathers of the guard only when a group needs it (rare)
            omega = np.where(guard[gid], freq[gid], omega)
        rowsum = omega.sum(axis=1)
        bad = ~np.isfinite(rowsum) | (rowsum <= 0)
        post = np.divide(omega, np.where(bad, 1.0, rowsum)[:, None], out=omega)  # omega is not read again
    if bad.any():
        post[bad] = freq[gid[bad]]
    if ordered:
        return post
    out = np.empty_like(post)
    out[order] = post
    return out


def _frequencies(s: np.ndarray, m: int) -> np.ndarray:
    return np.bincount(s, minlength=m).astype(np.float64) / s.size


def _enumerate(s_group: np.ndarray, priors_group: np.ndarray, product: bool) -> np.ndarray:
    s, priors = _check_group_inputs(s_group, priors_group)
    k, m = priors.shape
    if k == 0:
        raise InputError("a QI-group must hold at least one tuple")
    if k > MAX_ENUMERATION_K:
        raise PolicyError(
            f"exact enumeration of a group of {k} tuples needs {k}! configurations; it is "
            f"limited to k <= {MAX_ENUMERATION_K}: use pk_method='omega' (or 'exact_sum', "
            "whose closed form (E3) is O(k^2))"
        )
    p = priors[:, s]  # p[b, a] = prior of respondent b for the value of tuple a
    perms = np.array(list(itertools.permutations(range(k))), dtype=np.int64)  # (k!, k)
    # perms[c, b] = tuple assigned to respondent b in configuration c
    entries = p[np.arange(k)[None, :], perms]  # (k!, k): p[b, c(b)]
    degree = entries.prod(axis=1) if product else entries.sum(axis=1)
    total = degree.sum()
    freq = _frequencies(s, m)
    if not np.isfinite(total) or total <= 0:
        return np.tile(freq, (k, 1))
    post = np.zeros((k, m))
    vals = s[perms]  # (k!, k): value carried by the tuple of respondent b
    for b in range(k):
        np.add.at(post[b], vals[:, b], degree)
    post /= total
    return post / post.sum(axis=1, keepdims=True)


def exact_product_posterior(s_group: np.ndarray, priors_group: np.ndarray) -> np.ndarray:
    """Exact random-worlds posterior (E4) of ONE QI-group, by enumerating its k! configurations.

    A configuration assigns each tuple to one respondent; its degree is the product of the
    priors of the single associations (E4). Test oracle only (cost O(k! k)).

    Parameters
    ----------
    s_group : ndarray of int, shape (k,)
        Sensitive codes of the group's tuples, in ``0..M-1``.
    priors_group : ndarray of float64, shape (k, M)
        Prior of each of the group's k respondents.

    Returns
    -------
    ndarray of float64, shape (k, M)
        Row b is the posterior of respondent b; rows sum to 1. Falls back to the group
        frequencies when every configuration has degree 0.

    Raises
    ------
    PolicyError
        If k > 8 (:data:`MAX_ENUMERATION_K`).
    InputError
        On an empty group or malformed inputs.
    """
    return _enumerate(s_group, priors_group, product=True)


def exact_sum_posterior(s_group: np.ndarray, priors_group: np.ndarray) -> np.ndarray:
    """Exact posterior (E2) with additive confidence degrees (E1), by enumeration, ONE group.

    Test oracle for :func:`closed_form_sum_posterior`. Same parameters, return value and
    errors as :func:`exact_product_posterior` (PolicyError for k > 8).
    """
    return _enumerate(s_group, priors_group, product=False)


def closed_form_sum_posterior(s_group: np.ndarray, priors_group: np.ndarray) -> np.ndarray:
    """Closed form (E3) of the additive-degree posterior (E2) of ONE group, O(k^2).

    With ``p[b, a] = priors[b, s[a]]``, ``S = Σ p``, row sums ``R_b`` and column sums
    ``C_a``: ``PK(r_b)_s = Σ_{a: s_a = s} (k p[b,a] + S - R_b - C_a) / ((k-1) S)`` for
    k >= 2; the indicator of the tuple's value for k = 1.

    Parameters
    ----------
    s_group : ndarray of int, shape (k,)
        Sensitive codes of the group's tuples, in ``0..M-1``.
    priors_group : ndarray of float64, shape (k, M)
        Prior of each respondent of the group.

    Returns
    -------
    ndarray of float64, shape (k, M)
        Rows sum to 1; the group frequencies if ``S`` is 0 or not finite.

    Raises
    ------
    InputError
        On an empty group or malformed inputs.
    """
    s, priors = _check_group_inputs(s_group, priors_group)
    k, m = priors.shape
    if k == 0:
        raise InputError("a QI-group must hold at least one tuple")
    freq = _frequencies(s, m)
    if k == 1:
        return freq[None, :].copy()
    p = priors[:, s]
    total = p.sum()
    if not np.isfinite(total) or total <= 0:
        return np.tile(freq, (k, 1))
    contrib = (k * p + total - p.sum(axis=1, keepdims=True) - p.sum(axis=0, keepdims=True)) / (
        (k - 1) * total
    )  # (k respondents, k tuples)
    post = np.zeros((k, m))
    np.add.at(post, (slice(None), s), contrib)
    post = np.clip(post, 0.0, None)
    return post / post.sum(axis=1, keepdims=True)

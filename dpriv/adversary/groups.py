"""One Ω step per QI-group from published value counts, with optional exact-deduction masks.

Shared by the paper and the retrospective adversary (docs/algorithms.md §3.3, (E14)): the group's
released multiset of sensitive values (``counts``) and each member's prior give every member's
posterior by :func:`dpriv.knowledge.posterior.omega_posterior` (same zero guards). A mask
``allowed`` (bool, what each tuple may still hold, e.g. from exact deductions) multiplies the
priors before Ω and the posteriors after it, so a posterior is never positive on a value the
mask excludes.
"""

from __future__ import annotations

import numpy as np

from dpriv.errors import InputError
from dpriv.knowledge.posterior import omega_posterior


def released_codes(group: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sensitive codes aligned on the tuples with the same multiset per group as ``counts``.

    Parameters
    ----------
    group : ndarray of int64, shape (n,)
        Group of each tuple, in ``0 .. G - 1``.
    counts : ndarray of int64, shape (G, M)
        Released value counts of each group; row sums must equal the group sizes.

    Returns
    -------
    ndarray of int64, shape (n,)
        A code per tuple such that each group holds exactly its released multiset (which
        member gets which code is arbitrary: Ω only reads the counts).

    Raises
    ------
    InputError
        Group sizes that differ from the counts' row sums.
    """
    group = np.asarray(group, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    g, m = counts.shape
    sizes = np.bincount(group, minlength=g) if group.size else np.zeros(g, np.int64)
    if sizes.size != g or not np.array_equal(sizes, counts.sum(axis=1)):
        raise InputError("group sizes differ from the released value counts of the groups")
    order = np.argsort(group, kind="stable")
    out = np.empty(group.size, dtype=np.int64)
    out[order] = np.repeat(np.tile(np.arange(m, dtype=np.int64), g), counts.ravel())
    return out


def masked_omega(
    groups: np.ndarray, s: np.ndarray, priors: np.ndarray, allowed: np.ndarray | None = None
) -> np.ndarray:
    """Ω posterior (E14) with a mask: :func:`omega_posterior` on ``priors * allowed``, times
    ``allowed``, renormalised.

    Parameters
    ----------
    groups : ndarray of int, shape (n,)
        QI-group label of each tuple (any integers).
    s : ndarray of int, shape (n,)
        Sensitive codes, only read through each group's counts (which member holds which
        code does not matter).
    priors : ndarray of float64, shape (n, M)
        Each member's prior (non-negative; Ω depends on each row's scale: pass distributions).
    allowed : ndarray of bool, shape (n, M), optional
        Values each tuple may hold; None: plain :func:`omega_posterior`.

    Returns
    -------
    ndarray of float64, shape (n, M)
        Rows sum to 1; 0 on values absent from the group and on values ``allowed`` excludes
        (a row the mask empties after Ω falls back to the group frequencies times the mask,
        then to the plain frequencies if even that is empty: a mask that contradicts the
        counts).

    Raises
    ------
    InputError
        Mismatched shapes.
    """
    priors = np.asarray(priors, dtype=np.float64)
    if allowed is None:
        return omega_posterior(groups, s, priors)
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape != priors.shape:
        raise InputError(f"allowed must have shape {priors.shape}, got {allowed.shape}")
    post = omega_posterior(groups, s, priors * allowed) * allowed
    tot = post.sum(axis=1)
    bad = ~(tot > 0)
    if bad.any():
        freq = omega_posterior(groups, s, np.ones_like(priors))[bad]  # equal priors: m_Q(s)/|Q|
        masked = freq * allowed[bad]
        post[bad] = np.where((masked.sum(axis=1) > 0)[:, None], masked, freq)
        tot = post.sum(axis=1)
    return post / tot[:, None]


#: How far apart (in units in the last place, per entry) two priors may lie and still count as
#: one prior in :func:`gain_terms`: the revision (E7) of respondents of one class with the same
#: past gives rows that differ by up to 5 ulps (summation order), what (E14) cannot resolve.
SAME_PRIOR_ULPS = 8


def gain_terms(
    groups: np.ndarray,
    posteriors: np.ndarray,
    truth: np.ndarray,
    frequencies: np.ndarray,
    priors: np.ndarray,
    allowed: np.ndarray | None = None,
) -> np.ndarray:
    """Per-tuple term of the gain (E10): the posterior on the true value minus its frequency in
    the tuple's QI-group; exactly 0.0 for every member of a group whose members all hold one
    prior (each entry within :data:`SAME_PRIOR_ULPS` ulps of the first member's) and whose
    deduction masks (``allowed``) exclude none of the values the group holds.

    (E14) gives such members the group's frequencies m_Q(s)/|Q| themselves (docs/algorithms.md
    §3.3: "equal priors give the frequencies"); the floating-point Ω misses them by an ulp or so
    (its column sums and row normalisation round), so their terms read +-5e-17 and a release of
    such groups (an ``ie`` adversary's, whose priors are its tables' rows) a mean gain of +-1e-17
    where ``dpriv attack`` printed 0.0000. Every other term is the plain difference, bit for bit.

    Parameters
    ----------
    groups : ndarray of int, shape (n,), the QI-group of each tuple (any integers)
    posteriors : ndarray of float64, shape (n, M), the adversary's posterior of each tuple
    truth : ndarray of int, shape (n,), true sensitive codes in ``0 .. M-1``
    frequencies : ndarray of float64, shape (n,), m_Q(true s)/|Q| of each tuple
    priors : ndarray of float64, shape (n, M), the priors the posteriors were computed from
    allowed : ndarray of bool, shape (n, M), optional, the exact-deduction mask used

    Returns
    -------
    ndarray of float64, shape (n,), in [-1, 1]
    """
    truth = np.asarray(truth, dtype=np.int64)
    n = truth.size
    terms = posteriors[np.arange(n), truth] - frequencies
    if n == 0:
        return terms
    _, first, gi = np.unique(np.asarray(groups), return_index=True, return_inverse=True)
    gi = gi.reshape(-1)
    ref = priors[first[gi]]
    apart = np.abs(priors - ref) > SAME_PRIOR_ULPS * np.spacing(np.maximum(np.abs(priors), np.abs(ref)))
    same = ~(apart | np.isnan(priors)).any(axis=1)  # a NaN prior: its term left as it is
    if allowed is not None:  # a mask only on values the group does not hold changes no posterior
        held = np.zeros((first.size, priors.shape[1]), dtype=bool)
        held[gi, truth] = True
        same &= (np.asarray(allowed, dtype=bool) | ~held[gi]).all(axis=1)
    exact = np.bincount(gi, weights=~same, minlength=first.size)[gi] == 0
    return np.where(exact, 0.0, terms)


def group_posterior(
    group: np.ndarray,
    counts: np.ndarray,
    priors: np.ndarray,
    allowed: np.ndarray | None = None,
    *,
    phantoms: np.ndarray | None = None,
    phantom_priors: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`masked_omega` from each group's released counts instead of per-tuple codes.

    Parameters
    ----------
    group : ndarray of int64, shape (n,)
        Group of each tuple, ``0 .. G - 1``.
    counts : ndarray of int64, shape (G, M)
        Released value counts per group (with ``phantoms``: real and counterfeit together).
    priors : ndarray of float64, shape (n, M)
        Each member's prior.
    allowed : ndarray of bool, shape (n, M), optional
        Values each tuple may hold.
    phantoms : ndarray of int64, shape (G,), optional
        Counterfeit tuples published in each group (issue 12, direction 4; a study kernel,
        docs/results/counterfeit-study/): Ω runs over the n members plus ``phantoms[g]``
        phantom members per group, which absorb their share of the counts and are left out
        of the result. None (default): no phantoms, the plain Ω.
    phantom_priors : ndarray of float64, shape (G, M), optional
        The counterfeit rule's distribution in each group, the phantoms' prior (required with
        ``phantoms``); a phantom may hold only values where it is positive.

    Returns
    -------
    ndarray of float64, shape (n, M), as :func:`masked_omega` (the real members only).

    Raises
    ------
    InputError
        Mismatched shapes, group sizes (plus phantoms) that differ from the counts, negative
        phantom counts, or ``phantoms`` without ``phantom_priors``.
    """
    priors = np.asarray(priors, dtype=np.float64)
    if phantoms is not None:
        return _with_phantoms(group, counts, priors, allowed, phantoms, phantom_priors)
    s = released_codes(group, counts)
    if priors.shape != (s.size, counts.shape[1]):
        raise InputError(f"priors must have shape {(s.size, counts.shape[1])}, got {priors.shape}")
    return masked_omega(group, s, priors, allowed)


def _with_phantoms(group, counts, priors, allowed, phantoms, phantom_priors) -> np.ndarray:
    """:func:`group_posterior` over the members plus each group's phantoms (rows appended after
    the members, prior ``phantom_priors[g]``, allowed where it is positive); the members' rows."""
    group = np.asarray(group, dtype=np.int64)
    phantoms = np.asarray(phantoms, dtype=np.int64)
    g, m = np.shape(counts)
    if phantom_priors is None or np.shape(phantom_priors) != (g, m) or phantoms.shape != (g,):
        raise InputError(f"phantoms must have shape {(g,)} and phantom_priors {(g, m)}")
    if (phantoms < 0).any():
        raise InputError("phantom counts must be >= 0")
    n = group.size
    if priors.shape != (n, m):
        raise InputError(f"priors must have shape {(n, m)}, got {priors.shape}")
    fake = np.repeat(np.arange(g, dtype=np.int64), phantoms)
    q = np.asarray(phantom_priors, dtype=np.float64)[fake]
    member = np.ones((n, m), dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if member.shape != (n, m):
        raise InputError(f"allowed must have shape {(n, m)}, got {member.shape}")
    both = np.concatenate([group, fake])
    s = released_codes(both, counts)
    post = masked_omega(both, s, np.concatenate([priors, q]), np.concatenate([member, q > 0]))
    return post[:n]

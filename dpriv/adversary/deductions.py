"""Exact deductions over a released history (issue 11, item 2; docs/algorithms.md §1.1 "Exact deductions").

What an adversary who knows the QI-group membership (docs/algorithms.md §1.1) and the support of
the exact model (which values can follow which, :class:`dpriv.knowledge.tables.MarkovTables`)
can exclude with *certainty*, combining three sources iterated to a fixed point:

* **the model** (:func:`chain_support`): the chain's feasible context states (the last
  <= ``order`` results; an empty context before the first exam). One step per exam: the
  order-0 table for a first exam, the order-L table after L < order results, the
  top-order table afterwards (``MarkovTables.predict``; ``dpriv.datasets._simulate``).
  A zero row (a context after ``deceased``/``discharged``, two diseases, a jump of two
  stages) has no successor. Allowed sets are propagated forward and backward along each
  respondent's released history as sets of states. Between two released tuples of one
  respondent, the exams the adversary did not see can only be suppressed ones: at most one
  per view in between that suppressed something (or is not in ``releases``), so the gap is
  a range of hidden steps (0 when nothing was suppressed in between) and the sets go through
  multi-step reachability. With ``attendance == 1`` a view certainly admitting newcomers
  (below) examined every active respondent, which sets a lower bound on the gap.
* **the group counts** (:func:`group_feasibility`): value ``s`` stays possible for member
  ``b`` iff some complete assignment of the group's published multiset to its members,
  each within her allowed set, gives ``b`` an ``s`` (one max flow + SCCs per release).
* **presence**: released at ``i`` and absent at ``i + 1`` => the exam at ``i`` ended her
  history (a state with no successor: ``deceased``/``discharged``), only when certain under
  the generator: ``attendance == 1`` (every active respondent is examined every week),
  nothing suppressed at ``i + 1`` and view ``i + 1`` certainly admitted newcomers (so the
  view-size cap did not bind): more first-time respondents in ``V*_{i+1}`` than tuples
  suppressed in all earlier views (each earlier-examined respondent never released before
  accounts for at least one of them).

Every step only removes values that no history consistent with the model and the releases
gives, so the true value is never excluded (tests/test_deductions.py asserts it on real
releases). The fixed point is sound, not complete (per-tuple sets, not joint histories).
Compiled kernels (numba): the chain pass 64 respondents per machine word, each state set
a word per state (:mod:`dpriv.adversary.chain_kernel`), the group counts group by group on the
value nodes (:mod:`dpriv.adversary.assign_kernel`); no per-tuple Python loop. Measured (every
prefix of a 24 x 5,000 ledger, as ``dpriv attack --adversary retrospective`` deduces them; 2
shared cores): 0.5-0.8 s of CPU against 3.0-4.4 s for the NumPy/SciPy passes they replace, the
same masks (``benchmarks/bench_deductions.py``).

**A head start** (``start=``): every pass is monotone and only removes values, so from masks that
hold the greatest fixed point and that the passes leave as they are where the constraints did not
change, they reach that fixed point re-checking only what changed: the fixed point without the
presence channel (it and the gap bound only add constraints), or that of a prefix of the releases
(issue 13): the constraints among earlier tuples (gaps, groups, views admitting newcomers) are read
from views up to theirs, and a later release only adds its tuples, links to them and exits at the
release before it, so earlier masks only narrow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpriv.adversary._assign import NoAssignment, group_feasibility
from dpriv.adversary.chain_kernel import chain_pass
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.support import ChainSupport, chain_support
from dpriv.errors import InputError
from dpriv.knowledge.tables import MarkovTables

__all__ = ["ChainSupport", "Deductions", "chain_support", "deduce", "group_feasibility", "presence_known"]


def presence_known(attendance: float | None) -> bool:
    """Whether ``attendance`` unlocks the presence channel and the lower bound on gaps (1.0
    only); it is all :func:`deduce` reads of the attendance, so two attendances with the same
    answer give the same deductions."""
    return attendance is not None and float(attendance) >= 1.0


# --------------------------------------------------------------------------------------
# The fixed point
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deductions:
    """What is certain about every released tuple (:func:`deduce`).

    Attributes
    ----------
    allowed : list of bool arrays, one (n_i, M) per release
        Values each released tuple can still hold (rows in the order of
        ``releases[i].respondent``, columns in domain order); the true value is always among
        them. Ready to use as a mask of a posterior: zero the excluded values, renormalise.
    exited : list of bool arrays, one (n_i,) per release
        Tuples the presence channel marked as the last exam (released at i, certainly absent
        at i + 1).
    admits_new : bool array of shape (n_releases,)
        Releases whose view certainly admitted newcomers (the view-size cap did not bind);
        only computed with ``attendance == 1``.
    rounds : int
        Passes (chain + counts) until nothing changed.
    seconds : float
        Wall time of :func:`deduce`.
    exit_value : bool array of shape (M,)
        The model's exit (terminal) values (:attr:`ChainSupport.exit_value`).
    presence : bool
        Whether the presence channel and the gap bound were used (:func:`presence_known`).
    converged : bool
        Whether the passes stopped because nothing changed (not at ``max_rounds``).
    n_certain : int64 array of shape (n_releases,)
        Tuples whose allowed set is a single value.
    n_exit : int64 array of shape (n_releases,)
        Of those, tuples deduced to be an exit (``deceased``/``discharged``): the respondent
        left the data after this release and the adversary knows how.
    n_presence : int64 array of shape (n_releases,)
        Of those, tuples the presence channel marked (:attr:`exited`). Given the membership
        and the counts this channel is implied by the model alone (a respondent seen later
        is no exit; the group's exit count then falls on the others), so ``n_certain`` is
        the same with ``attendance=None``; it matters to a weaker adversary.
    """

    allowed: list[np.ndarray]
    exited: list[np.ndarray]
    admits_new: np.ndarray
    rounds: int
    seconds: float
    exit_value: np.ndarray
    presence: bool = False
    converged: bool = True
    n_certain: np.ndarray = field(init=False)
    n_exit: np.ndarray = field(init=False)
    n_presence: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        single = [a.sum(axis=1) == 1 for a in self.allowed]
        to_exit = [c & (a & self.exit_value).any(axis=1) for c, a in zip(single, self.allowed)]
        marked = [c & e for c, e in zip(single, self.exited)]

        def count(masks):
            return np.array([int(x.sum()) for x in masks], dtype=np.int64)

        object.__setattr__(self, "n_certain", count(single))
        object.__setattr__(self, "n_exit", count(to_exit))
        object.__setattr__(self, "n_presence", count(marked))

    def certain_value(self, i: int) -> np.ndarray:
        """Deduced value code of each tuple of release position ``i`` (int64, -1 if not certain)."""
        a = self.allowed[i]
        return np.where(a.sum(axis=1) == 1, a.argmax(axis=1), -1)

    def n_values(self, i: int) -> np.ndarray:
        """Size of each tuple's allowed set in release position ``i``."""
        return self.allowed[i].sum(axis=1)


def deduce(
    releases: list[ObservedRelease],
    tables: MarkovTables,
    *,
    attendance: float | None,
    max_rounds: int = 100,
    support: ChainSupport | None = None,
    start: Deductions | None = None,
) -> Deductions:
    """Exact deductions over ``releases`` (module doc), iterated to a fixed point.

    Parameters
    ----------
    releases : list of ObservedRelease
        In increasing ``index`` order (not necessarily consecutive: a missing release counts
        as one that may have suppressed anyone and admitted no one for certain).
    tables : MarkovTables
        The exact model (its support is what matters): e.g. ``medical_history(...).knowledge``.
    attendance : float or None
        The generator's probability that an active respondent is examined in a week. Only
        ``1.0`` unlocks the presence channel and the lower bound on gaps; ``None``
        (unknown) acts like ``< 1``.
    max_rounds : int
        Safety bound on the fixed-point passes.
    support : ChainSupport, optional
        Precomputed :func:`chain_support` of ``tables``.
    start : Deductions, optional
        A head start (module doc): :func:`deduce` of the same ``tables`` and of the same
        ``releases`` or of their first ``p`` (``releases[:p]``), that converged, without the
        presence channel (``presence`` False) or with the presence channel of this call. The
        result is the one without ``start`` (if that converges), bit for bit; ``rounds`` and
        ``seconds`` count this call only.

    Returns
    -------
    Deductions

    Raises
    ------
    InputError
        Releases out of order, counts of the wrong width, or releases that contradict the
        model (:class:`dpriv.adversary._assign.NoAssignment`: some tuple left with no possible
        value, or no complete assignment of a group); a ``start`` of more releases or other
        shapes, with the presence channel when this call has none, or not converged.
    """
    tick = time.perf_counter()
    m = tables.n_values
    idx = [r.index for r in releases]
    if any(b <= a for a, b in zip(idx, idx[1:])) or (idx and idx[0] < 1):
        raise InputError(f"releases must have increasing indices >= 1, got {idx}")
    for r in releases:
        if r.counts.ndim != 2 or r.counts.shape[1] != m:
            raise InputError(f"release {r.index}: counts have shape {r.counts.shape}, expected (G, {m})")
    sure = presence_known(attendance)
    sup = support if support is not None else chain_support(tables)
    n_rel = len(releases)
    sizes = np.array([len(r.respondent) for r in releases], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offs[-1])
    if start is not None:
        _check_start(start, releases, m, sure)
    if n_rel == 0:
        return Deductions([], [], np.zeros(0, bool), 0, time.perf_counter() - tick, sup.exit_value, sure)
    # respondent ids of any type (int, float, text) as int64 codes (never printed)
    ids = pd.concat([pd.Series(np.asarray(r.respondent)) for r in releases], ignore_index=True)
    rid = pd.factorize(ids)[0].astype(np.int64)
    cls = np.concatenate([np.asarray(r.cls, dtype=np.int64) for r in releases])
    view = np.repeat(np.array(idx, dtype=np.int64), sizes)

    # previous / next released tuple of the same respondent
    order = np.lexsort((view, rid))
    same = rid[order][1:] == rid[order][:-1]
    twice = same & (view[order][1:] == view[order][:-1])
    if twice.any():
        k = int(order[1:][twice][0])
        raise InputError(f"a respondent has two tuples in release {int(view[k])}; keep one")
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]

    # per view 1..last: suppressed tuples (-1: view not given, unknown)
    last = idx[-1]
    nsupp = np.full(last + 2, -1, dtype=np.int64)
    nsupp[idx] = [int(r.n_suppressed) for r in releases]
    hides = nsupp != 0
    hides[0] = False
    hidden_cum = np.cumsum(hides)
    # views certainly admitting newcomers (attendance 1): first-time respondents outnumber
    # every tuple suppressed before (unknown views: unbounded)
    first_count = np.zeros(last + 2, dtype=np.int64)
    np.add.at(first_count, view[prev < 0], 1)
    per_view = np.where(nsupp < 0, n + 1, nsupp)
    per_view[0] = 0
    cap_before = np.concatenate([[0], np.cumsum(per_view)[:-1]])  # sum over views < v
    certified = np.zeros(last + 2, dtype=bool)
    if sure:
        certified[idx] = first_count[idx] > cap_before[idx]
    cert_cum = np.cumsum(certified)

    # hidden steps before each tuple: [lo, hi]
    a = np.where(prev >= 0, view[np.maximum(prev, 0)], 0)
    hi = hidden_cum[view - 1] - hidden_cum[a]
    lo = np.where(prev >= 0, cert_cum[view - 1] - cert_cum[a], 0)
    lo = np.minimum(lo, hi)

    # presence: released at i, certainly absent at i + 1
    exited = np.zeros(n, dtype=bool)
    if sure:
        nv = view + 1
        watch = (nv <= last) & (nsupp[np.minimum(nv, last + 1)] == 0) & certified[np.minimum(nv, last + 1)]
        present_next = (nxt >= 0) & (view[np.maximum(nxt, 0)] == nv)
        exited = watch & ~present_next

    cut = [slice(int(offs[r]), int(offs[r + 1])) for r in range(n_rel)]
    counts = [np.asarray(r.counts, dtype=np.int64) for r in releases]
    groups = [np.asarray(r.group, dtype=np.int64) for r in releases]
    allowed = np.concatenate([c[g] > 0 for c, g in zip(counts, groups)]) if n else np.zeros((0, m), bool)
    pattern = sup.class_support[cls]
    model = (
        sup.src,
        sup.value,
        sup.dst,
        np.ascontiguousarray(sup.edge_allowed),
        np.ascontiguousarray(sup.dead_end),
    )

    def contradiction(k: int) -> NoAssignment:  # an empty set admits no assignment: the same contradiction
        return NoAssignment(
            f"release {int(view[k])}: a released tuple has no possible value; the releases "
            "contradict the model (wrong tables, attendance or releases?)"
        )

    # each respondent's tuples in release order: order[hstart[r]:hstart[r + 1]] (resp: 0 .. n_resp - 1
    # in the order of rid, so in that of order)
    resp = rid + 1 if n and rid.min() < 0 else rid  # factorize's codes, NaN (-1) first: np.unique's ranks
    n_resp = int(resp.max()) + 1 if n else 0
    hstart = np.concatenate([[0], np.cumsum(np.bincount(resp, minlength=n_resp))]).astype(np.int64)
    chain_todo = np.ones(n_resp, dtype=bool)  # respondents whose masks changed
    group_todo = [np.ones(r.n_groups, dtype=bool) for r in releases]
    if start is not None and n:
        # a fixed point over its releases (every group fits its counts); a history passes differently
        # only with a later tuple, a new exit or a gap bound it lacked (lo > 0; kept with presence)
        p, n_old = len(start.allowed), int(offs[len(start.allowed)])
        had_exit = np.zeros(n, dtype=bool)
        if p:
            allowed[:n_old] = np.concatenate(start.allowed)
            had_exit[:n_old] = np.concatenate(start.exited)
        touched = (exited & ~had_exit) | (np.arange(n) >= n_old)
        if not start.presence:
            touched |= lo > 0
        chain_todo = np.bincount(resp[touched], minlength=n_resp) > 0
        group_todo = [np.full(r.n_groups, k >= p) for k, r in enumerate(releases)]
    rounds, converged = 0, False
    while rounds < max_rounds:
        rounds += 1
        # chain pass (forward-backward: exact along each history for the current masks)
        changed = np.zeros(n, dtype=bool)
        chain_pass(order, hstart, chain_todo, lo, hi, exited, pattern, allowed, changed, *model)
        if changed.any() and not allowed[changed].any(axis=1).all():
            raise contradiction(int(np.flatnonzero(~allowed.any(axis=1))[0]))
        # group counts (idempotent: only groups with a member changed by the chain pass)
        old = allowed.copy()
        for r, c in enumerate(cut):
            g = groups[r]
            todo = group_todo[r]
            todo[g[changed[c]]] = True
            if not todo.any():
                continue
            sel = np.flatnonzero(todo[g])
            gsel, gi = np.unique(g[sel], return_inverse=True)
            allowed[c.start + sel] = group_feasibility(gi, counts[r][gsel], allowed[c.start + sel])
            todo[:] = False
        changed = (allowed != old).any(axis=1)
        if not changed.any():
            converged = True
            break
        chain_todo = np.bincount(resp[changed], minlength=n_resp) > 0
    return Deductions(
        allowed=[allowed[c].copy() for c in cut],
        exited=[exited[c].copy() for c in cut],
        admits_new=certified[idx].copy(),
        rounds=rounds,
        seconds=time.perf_counter() - tick,
        exit_value=sup.exit_value.copy(),
        presence=sure,
        converged=converged,
    )


def _check_start(start: Deductions, releases: list[ObservedRelease], m: int, sure: bool) -> None:
    """InputError unless ``start`` can start :func:`deduce` over ``releases`` (its doc)."""
    shapes = [(len(r.respondent), m) for r in releases][: len(start.allowed)]
    if [a.shape for a in start.allowed] != shapes or len(start.allowed) > len(releases):
        raise InputError(f"start has masks of shapes {[a.shape for a in start.allowed]}, not {shapes}")
    if (start.presence and not sure) or not start.converged:
        raise InputError("start must be deductions that converged, with no presence channel or this call's")

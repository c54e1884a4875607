"""The retrospective (smoothing) adversary: every earlier release attacked again "as of" each
later one (issue 11; docs/algorithms.md §1.1 assumptions, §1.4 BK^seq, §3.3 Ω (E14), (E10)).

After release ``a`` is out, the adversary of §1.1 (exact BK^seq, QI-group membership known)
re-reads every release ``i <= a`` in the light of releases ``1 .. a``:

1. **Evidence of each release** (computed once, when release ``j`` comes out): the forward
   prediction of each member's value at ``j`` given releases ``< j`` (a forward pass over her
   feasible context states, :mod:`dpriv.adversary.smoothing`), one Ω step per group of ``j``
   with those priors, and the member's *emission* ``e_j = Ω posterior / prediction`` (what
   her group says about her, the Ω likelihood ``n_Q(s)/Σ_Q prior(s)`` up to a constant). The
   forward filter's marginal at ``j`` is that Ω posterior.
2. **As of a**: per respondent, forward-backward over her steps up to ``a`` gives the
   *cavity* prior of each of her releases ``i`` (everything except group ``i``'s own
   evidence); then ONE Ω step per group of ``i`` with the members' cavity priors gives the
   posteriors of release ``i`` as of ``a``. Each group's counts enter each posterior once:
   no loopy re-use of a group's evidence (docs/findings.md: loopier variants were overconfident).

As of ``a = 1`` this is the paper adversary's PK of release 1 (BK^sv priors, one Ω).
Conventions: a respondent's first appearance is her first exam (BK^sv), as in the paper
adversary; with ``attendance=None`` (default) absences carry no information and her chain
advances once per appearance (the paper adversary's reading of a history); with an
``attendance`` q absences are modelled (no exam with 1 - q; an exam suppressed with q times
the release's published suppression share; exited respondents are absent for sure), which
reveals exits. Masks ``allowed`` (exact deductions, bool (n_i, M) per release) multiply the
priors before every Ω and the posteriors after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from dpriv.adversary.groups import group_posterior
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.smoothing import ABS, OBS, CompiledTables, forward_backward
from dpriv.adversary.tail import tail_risk
from dpriv.errors import InputError
from dpriv.knowledge.tables import MarkovTables


@dataclass(frozen=True)
class AsOf:
    """The retrospective adversary's posteriors of releases ``1 .. as_of`` after ``as_of``.

    Attributes
    ----------
    as_of : int
        Release index after which the adversary attacks (``ObservedRelease.index``).
    releases : tuple of int
        Indices of the attacked releases ``i <= as_of``, in order.
    posteriors : tuple of ndarray of float64, shape (n_i, M)
        Posterior of every tuple of each attacked release, aligned on its ObservedRelease
        arrays; rows sum to 1.
    allowed : tuple of ndarray of bool, shape (n_i, M), or None
        The masks used (known as of ``as_of``), None without masks.
    """

    as_of: int
    releases: tuple[int, ...]
    posteriors: tuple[np.ndarray, ...]
    allowed: tuple[np.ndarray, ...] | None = None


class _Steps:
    """Every respondent's steps (one per release from her first appearance), sorted by
    (respondent, release); OBS where she is released, ABS where absent (if modelled)."""

    def __init__(self, observed: Sequence[ObservedRelease], absences: bool) -> None:
        p_count = len(observed)
        rid = np.concatenate([o.respondent for o in observed])
        self.ids, inv = np.unique(rid, return_inverse=True)
        n_r = self.ids.size
        sizes = [o.respondent.size for o in observed]
        pos = np.repeat(np.arange(p_count), sizes)
        tup = np.concatenate([np.arange(s) for s in sizes]) if sizes else np.zeros(0, np.int64)
        present = np.zeros((n_r, p_count), dtype=bool)
        present[inv, pos] = True
        if present.sum() != rid.size:
            raise InputError("a respondent appears twice in one release")
        first = present.argmax(axis=1)
        self.cls = np.zeros(n_r, dtype=np.int64)
        cls_all = np.concatenate([o.cls for o in observed]).astype(np.int64)
        at_first = pos == first[inv]
        self.cls[inv[at_first]] = cls_all[at_first]
        grid = np.arange(p_count)[None, :] >= first[:, None]
        keep = grid & (present | absences)
        r_idx, p_idx = np.nonzero(keep)  # row-major: sorted by (respondent, release)
        self.resp, self.pos = r_idx.astype(np.int64), p_idx.astype(np.int64)
        self.kind = np.where(present[r_idx, p_idx], OBS, ABS).astype(np.int8)
        self.start = np.searchsorted(self.resp, np.arange(n_r)).astype(np.int64)
        # step index of every released tuple, per release
        key = self.resp * p_count + self.pos
        self.key = key
        self.p_count = p_count
        self.tuple_step = []
        for p in range(p_count):
            r = inv[pos == p][np.argsort(tup[pos == p])]
            self.tuple_step.append(np.searchsorted(key, r * p_count + p).astype(np.int64))
        self.tuple_resp = [inv[pos == p][np.argsort(tup[pos == p])] for p in range(p_count)]

    def end_at(self, p: int) -> np.ndarray:
        """Exclusive end of each respondent's window of steps at releases <= position p."""
        r = np.arange(self.ids.size, dtype=np.int64)
        return np.searchsorted(self.key, r * self.p_count + p, side="right").astype(np.int64)


Masks = Sequence[np.ndarray] | Callable[[int], Sequence[np.ndarray]] | None


def _check_masks(
    observed: Sequence[ObservedRelease], masks: Sequence[np.ndarray], m: int
) -> list[np.ndarray]:
    if len(masks) != len(observed):
        raise InputError(f"allowed has {len(masks)} masks for {len(observed)} releases")
    out = []
    for o, a in zip(observed, masks):
        if np.shape(a) != (o.respondent.size, m):
            raise InputError(f"allowed mask of release {o.index} must have shape {(o.respondent.size, m)}")
        out.append(np.asarray(a, dtype=bool))
    return out


def _check(observed: Sequence[ObservedRelease], tables: MarkovTables) -> None:
    m = tables.n_values
    idx = [o.index for o in observed]
    if idx != sorted(set(idx)):
        raise InputError(f"observed releases must be in increasing release order, got {idx}")
    for o in observed:
        if o.counts.shape[1] != m:
            raise InputError(f"release {o.index} has {o.counts.shape[1]} sensitive values, the tables {m}")
        if o.cls.size and (o.cls.min() < 0 or o.cls.max() >= tables.classes.n_classes):
            raise InputError(f"release {o.index}: knowledge classes outside the tables' class map")


def retrospective_posteriors(
    observed: Sequence[ObservedRelease],
    tables: MarkovTables,
    *,
    allowed: Masks = None,
    attendance: float | None = None,
) -> Iterator[AsOf]:
    """Posteriors of every release as of each release (module doc); one :class:`AsOf` per
    release, in order.

    Parameters
    ----------
    observed : sequence of ObservedRelease
        The committed releases, in increasing index order (membership known, §1.1).
    tables : MarkovTables
        The adversary's BK^sv / BK^seq (e.g. the generator's exact order-3 model); classes
        are read from ``ObservedRelease.cls``.
    allowed : sequence of ndarray of bool, shape (n_i, M), or callable, optional
        Exact-deduction masks per release (True = the tuple may hold the value), the same
        for every as-of release; or ``allowed(k)`` giving the masks of the releases at
        positions ``0 .. k`` as known after the release at position ``k`` (deductions from
        releases ``<= k`` only; a mask multiplies the emissions too, so later knowledge
        tightens the evidence of earlier releases).
    attendance : float in (0, 1], optional
        Exam probability q of the model; None: absences are not modelled.

    Yields
    ------
    AsOf
        Posteriors of releases ``1 .. a`` after release ``a``.

    Raises
    ------
    InputError
        Releases out of order, shapes that do not match the tables, a respondent twice in a
        release, masks of the wrong shape, or an attendance outside (0, 1].
    """
    observed = list(observed)
    _check(observed, tables)
    static = (
        None if allowed is None or callable(allowed) else _check_masks(observed, allowed, tables.n_values)
    )
    if attendance is not None and not 0.0 < float(attendance) <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    if not observed:
        return
    compiled = CompiledTables(tables)
    m = tables.n_values
    steps = _Steps(observed, absences=attendance is not None)
    n_steps = steps.resp.size
    sigma = np.zeros(n_steps)
    for p, o in enumerate(observed):
        n_all = o.respondent.size + o.n_suppressed
        sigma[steps.pos == p] = o.n_suppressed / n_all if n_all else 0.0
    emission = np.zeros((n_steps, m))
    cavity = np.zeros((n_steps, m))

    def passes(rows: np.ndarray, backward: bool = True) -> np.ndarray:
        """Forward(-backward) over ``rows`` with the current emissions; fills ``cavity``."""
        return forward_backward(
            compiled, rows, steps.start, end, steps.kind, emission, sigma, steps.cls, cavity,
            attendance=attendance, backward=backward,
        )
    live = np.ones(steps.ids.size)
    for a, obs in enumerate(observed):
        end = steps.end_at(a)
        at_a = steps.tuple_step[a]
        members = steps.tuple_resp[a]
        if allowed is None:
            masks = [None] * (a + 1)
        elif static is not None:
            masks = static[: a + 1]
        else:
            masks = _check_masks(observed[: a + 1], allowed(a), tables.n_values)
        stale = np.zeros(steps.ids.size, dtype=bool)  # respondents whose evidence tightened
        if static is None and allowed is not None:
            for i in range(a):
                idx = steps.tuple_step[i]
                new = emission[idx] * masks[i]
                changed = (new != emission[idx]).any(axis=1)
                emission[idx] = new
                stale[steps.tuple_resp[i][changed]] = True
        # 1. forward prediction at a, Ω of the groups of a, the members' emissions
        emission[at_a] = 1.0
        passes(members, backward=False)
        prior = cavity[at_a]
        post = group_posterior(obs.group, obs.counts, prior, masks[a])
        with np.errstate(divide="ignore", invalid="ignore"):
            emission[at_a] = np.where(prior > 0, post / np.where(prior > 0, prior, 1.0), post)
        # 2. forward-backward for the respondents with a step at a (absent ones only while
        #    they may still be active), then one Ω per group of every release i <= a
        active = live > 0
        active[members] = True
        rows = np.flatnonzero(((end > _end_before(steps, a)) & active) | stale)
        live_new = passes(rows)
        live[rows] = live_new[rows]
        posts = []
        for i, o in enumerate(observed[: a + 1]):
            posts.append(group_posterior(o.group, o.counts, cavity[steps.tuple_step[i]], masks[i]))
        used = None if allowed is None else tuple(masks)
        yield AsOf(obs.index, tuple(o.index for o in observed[: a + 1]), tuple(posts), used)


def _end_before(steps: _Steps, a: int) -> np.ndarray:
    return steps.end_at(a - 1) if a > 0 else steps.start.copy()


def retrospective_attack(
    observed: Sequence[ObservedRelease],
    tables: MarkovTables,
    *,
    allowed: Masks = None,
    attendance: float | None = None,
) -> list[dict]:
    """Mean gain (E10) and tail risk of every release as of every later release.

    Same parameters and errors as :func:`retrospective_posteriors`.

    Returns
    -------
    list of dict
        One row per (release, as_of) with ``release <= as_of``, ordered by as_of then release:
        ``release``, ``as_of`` and the fields of :class:`dpriv.adversary.tail.TailRisk`.
    """
    observed = list(observed)
    by_index = {o.index: o for o in observed}
    rows = []
    for snap in retrospective_posteriors(observed, tables, allowed=allowed, attendance=attendance):
        for k, (i, post) in enumerate(zip(snap.releases, snap.posteriors)):
            o = by_index[i]
            mask = None if snap.allowed is None else snap.allowed[k]
            risk = tail_risk(post, o.truth, o.frequencies(), mask)
            rows.append({"release": i, "as_of": snap.as_of, **risk.as_row()})
    return rows

"""The retrospective adversary's last as-of snapshot only, with each respondent's forward
messages carried from one release to the next (the release gate's path; issue 12, direction 6).

:func:`dpriv.adversary.retrospective.retrospective_posteriors` yields every as-of snapshot and
runs, at every as-of release ``a``, the whole window of every respondent it touches from her
first step (:func:`dpriv.adversary.smoothing.forward_backward`): O(a) steps per respondent
per as-of release, O(T^2) per reading of ``T`` releases. The gate keeps only the last snapshot.
:func:`retrospective_last` computes that snapshot with the same sequence of as-of steps (the
evidence of release ``a`` needs the forward predictions given releases ``< a``), but

* the forward message of every step is computed once and stored
  (:class:`dpriv.adversary.retro_trellis.Trellis`): an as-of step costs one forward step per
  respondent it touches, not her whole window;
* the backward pass and the Ω steps of the as-of snapshots the gate does not read are skipped:
  one backward pass per respondent, over the window of her last forward-backward in the
  whole-window path (a respondent whose chance of still being in the data fell to 0 is not
  processed again while absent, exactly as there), then one Ω per group of every release.
  The backward pass stays O(T) per respondent whose window grew: the bound is on every
  release as of the last, and a new step changes the backward messages of all earlier ones.

The result is the same bytes as the last snapshot of ``retrospective_posteriors`` (the steps
are the same floating-point operations in the same order; tests/test_gate_incremental.py
compares both on seeded histories with exits, returns and masks).

:class:`Reading` keeps the messages (and the cavities) of one reading to extend it with the
next release when nothing it read has changed: the same tables object and attendance, the
earlier releases and their masks unchanged; a respondent whose window did not grow keeps her
cavities (no backward pass). With exact deductions the masks of earlier releases change at
almost every release (later releases exclude values of earlier tuples), and the evidence of
every release depends on the masks through Ω, so the gate then reads the history again
(still O(T) per check, not O(T^2)). A reading with fewer or as many releases as the last one
(the gate regrouping a candidate) also starts over.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpriv.adversary.compiled import CompiledTables
from dpriv.adversary.groups import group_posterior
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.retro_parts import Steps
from dpriv.adversary.retro_trellis import Trellis
from dpriv.adversary.retrospective import AsOf, checked_masks, retrospective_posteriors
from dpriv.adversary.smoothing import attendance_q
from dpriv.errors import InputError
from dpriv.knowledge.tables import MarkovTables


def _sigma(observed: Sequence[ObservedRelease]) -> np.ndarray:
    out = []
    for o in observed:
        n_all = o.respondent.size + o.n_suppressed
        out.append(o.n_suppressed / n_all if n_all else 0.0)
    return np.asarray(out, dtype=np.float64)


@dataclass
class Sweep:
    """The forward side of one reading of releases ``0 .. a_done - 1`` (positions).

    Attributes
    ----------
    steps : Steps
        Every respondent's steps.
    emission : ndarray of float64, shape (n_steps, M)
        The emission of every OBS step read so far.
    trellis : Trellis
        The stored forward messages.
    live : ndarray of float64, shape (n_respondents,)
        Alive mass after each respondent's last processed window (1 before any).
    last_end : ndarray of int64, shape (n_respondents,)
        Exclusive end of each respondent's last processed window (her start before any).
    cavity : ndarray of float64, shape (n_steps, M)
        The cavity of every OBS step after the last backward pass.
    touched : ndarray of bool, shape (n_respondents,)
        Respondents whose window changed since the last backward pass.
    a_done : int
        As-of steps taken.
    """

    steps: Steps
    emission: np.ndarray
    trellis: Trellis
    live: np.ndarray
    last_end: np.ndarray
    cavity: np.ndarray
    touched: np.ndarray
    a_done: int = 0


def _sweep(observed, compiled: CompiledTables, attendance, per_step: float = 0.0) -> Sweep:
    steps = Steps(observed, absences=attendance is not None)
    n_steps, m = steps.resp.size, compiled.m
    sigma = _sigma(observed)[steps.pos] if n_steps else np.zeros(0)
    emission = np.zeros((n_steps, m))
    q = attendance_q(attendance, steps.kind)
    trellis = Trellis(compiled, steps.start, steps.kind, emission, sigma, steps.cls, q, per_step)
    n_r = steps.ids.size
    live, last_end, touched = np.ones(n_r), steps.start.copy(), np.zeros(n_r, bool)
    return Sweep(steps, emission, trellis, live, last_end, np.zeros_like(emission), touched)


def _advance(sw: Sweep, observed, masks, a: int) -> None:
    """As-of step ``a`` of the whole-window path (``Part.predict`` then ``Part.absorb``, one
    partition, static masks), with the forward messages stored."""
    s, tr = sw.steps, sw.trellis
    at_a, members = s.tuple_step[a], s.tuple_resp[a]
    upto = s.start.copy()
    upto[members] = at_a
    tr.forward(members, upto)  # the steps before a (stored ones kept)
    prior = tr.predict(members, at_a)
    obs = observed[a]
    post = group_posterior(obs.group, obs.counts, prior, masks[a])
    with np.errstate(divide="ignore", invalid="ignore"):
        sw.emission[at_a] = np.where(prior > 0, post / np.where(prior > 0, prior, 1.0), post)
    end = s.end_at(a)
    active = sw.live > 0
    active[members] = True
    rows = np.flatnonzero((end > s.end_before(a)) & active)
    tr.forward(rows, end)
    tr.live(rows, end, sw.live)
    sw.last_end[rows] = end[rows]
    sw.touched[rows] = True
    sw.a_done = a + 1


def _snapshot(sw: Sweep, observed, masks, with_masks: bool) -> AsOf:
    """One backward pass per respondent over her last processed window (only those whose
    window changed since the last pass: the others' cavities stand), one Ω per group."""
    s = sw.steps
    rows = np.flatnonzero(sw.touched & (sw.last_end > s.start))
    sw.trellis.backward(rows, sw.last_end, sw.cavity)
    sw.touched[:] = False
    cav, steps = sw.cavity, s.tuple_step
    posts = [group_posterior(o.group, o.counts, cav[steps[i]], masks[i]) for i, o in enumerate(observed)]
    used = tuple(masks) if with_masks else None
    return AsOf(observed[-1].index, tuple(o.index for o in observed), tuple(posts), used)


def retrospective_last(
    observed: Sequence[ObservedRelease],
    tables: MarkovTables,
    *,
    allowed: Sequence[np.ndarray] | None = None,
    attendance: float | None = None,
) -> AsOf:
    """Posteriors of every release as of the last one: the last :class:`AsOf` of
    :func:`dpriv.adversary.retrospective.retrospective_posteriors` (the same bytes), in
    O(releases) forward steps per respondent instead of O(releases^2).

    Parameters
    ----------
    observed, tables, attendance
        As :func:`~dpriv.adversary.retrospective.retrospective_posteriors`; at least one release.
    allowed : sequence of ndarray of bool, shape (n_i, M), optional
        Masks of every release, the same for every as-of step (a callable, masks known as of
        each release, is not supported here: use ``retrospective_posteriors``).

    Returns
    -------
    AsOf
        Posteriors (n_i, M) of every release as of the last.

    Raises
    ------
    InputError
        As ``retrospective_posteriors``; no release; a callable ``allowed``.
    """
    reading = Reading(tables, attendance)
    return reading.read(observed, allowed)


class Reading:
    """A reading of a growing history as of its last release, kept between calls.

    :meth:`read` reads ``observed`` as of its last release; when the releases it read last
    time are a prefix of ``observed`` with the same masks, it continues from the stored
    forward messages (one as-of step per new release) instead of reading from release 1.

    Parameters
    ----------
    tables : MarkovTables
        The adversary's model; :meth:`read` with another tables object starts over.
    attendance : float or None
    """

    def __init__(self, tables: MarkovTables, attendance: float | None) -> None:
        self.tables, self.attendance = tables, attendance
        self.compiled = CompiledTables(tables)
        self._observed: list[ObservedRelease] = []
        self._masks: list[np.ndarray | None] = []
        self._sweep: Sweep | None = None
        self.reused = 0  # as-of steps taken over from the previous reading (for tests, benchmarks)

    @property
    def stored_states(self) -> int:
        """States stored over all steps (12 bytes each: int32 code, float64 α)."""
        return 0 if self._sweep is None else int(self._sweep.trellis.fill[0])

    @property
    def capacity_grown(self) -> int:
        """Times the stored messages' flat arrays were full and doubled (this reading)."""
        return 0 if self._sweep is None else self._sweep.trellis.grown

    def read(
        self,
        observed: Sequence[ObservedRelease],
        allowed: Sequence[np.ndarray] | None = None,
        tables: MarkovTables | None = None,
    ) -> AsOf:
        """The last snapshot of ``observed`` (see :func:`retrospective_last`)."""
        observed = list(observed)
        if callable(allowed):
            raise InputError("retrospective_last takes the masks of every release, not a callable")
        if tables is not None and tables is not self.tables:  # another model: start over
            self.tables, self.compiled, self._sweep = tables, CompiledTables(tables), None
        static = checked_masks(observed, self.tables, allowed, self.attendance)
        if not observed:
            raise InputError("retrospective_last needs at least one release")
        masks = static if static is not None else [None] * len(observed)
        keep = self._kept(observed, masks)
        sw = self._extend(observed, keep)
        for a in range(sw.a_done, len(observed)):
            _advance(sw, observed, masks, a)
        self._sweep, self._observed, self._masks = sw, observed, list(masks)
        return _snapshot(sw, observed, masks, static is not None)

    def _kept(self, observed, masks) -> int:
        """How many as-of steps of the previous reading stay valid for ``observed``."""
        old = self._observed
        if self._sweep is None or len(old) >= len(observed):
            return 0
        for k, (o, p) in enumerate(zip(old, observed)):
            if o is not p and not _same_release(o, p):
                return 0
            mo, mp = self._masks[k], masks[k]
            if (mo is None) != (mp is None) or (mo is not None and not np.array_equal(mo, mp)):
                return 0
        return len(old)

    def _extend(self, observed, keep: int) -> Sweep:
        """The sweep of ``observed`` with the first ``keep`` as-of steps of the previous one."""
        old = self._sweep
        per_step = 0.0  # states per stored step in the last reading: sizes the next one
        if old is not None and old.trellis.done.sum():
            per_step = 1.2 * float(old.trellis.fill[0]) / float(old.trellis.done.sum())
        if keep == 0:
            self._sweep = old = None  # its messages go before the new ones are stored
            return _sweep(observed, self.compiled, self.attendance, per_step)
        new = _sweep(observed, self.compiled, self.attendance, 1.0)  # its arrays are the old ones
        _carry(old, new)
        self.reused += keep
        new.a_done = keep
        return new


def _same_release(a: ObservedRelease, b: ObservedRelease) -> bool:
    return (
        a.index == b.index
        and a.n_suppressed == b.n_suppressed
        and np.array_equal(a.respondent, b.respondent)
        and np.array_equal(a.group, b.group)
        and np.array_equal(a.counts, b.counts)
        and np.array_equal(a.cls, b.cls)
    )


def _carry(old: Sweep, new: Sweep) -> None:
    """Move the stored steps, emissions and per-respondent state of ``old`` onto the step
    numbering of ``new`` (a history with more releases: every old step has a new index)."""
    so, sn = old.steps, new.steps
    # old respondent -> new respondent; old step -> new step (keys: respondent, release position)
    r_map = np.searchsorted(sn.ids, so.ids)
    s_map = np.searchsorted(sn.key, r_map[so.resp] * sn.p_count + so.pos)
    ot, nt = old.trellis, new.trellis
    new.emission[s_map] = old.emission
    new.cavity[s_map] = old.cavity
    nt.off[s_map], nt.n[s_map] = ot.off, ot.n
    nt.restart[s_map], nt.ignored[s_map] = ot.restart, ot.ignored
    nt.code, nt.alpha, nt.fill, nt.grown = ot.code, ot.alpha, ot.fill, ot.grown
    nt.done[r_map] = ot.done
    new.live[r_map] = old.live
    new.last_end[r_map] = sn.start[r_map] + (old.last_end - so.start)


def read_whole_windows(
    observed: list[ObservedRelease], tables: MarkovTables, masks, attendance: float | None
) -> AsOf:
    """The gate's reading as it was first built (every as-of snapshot of
    :func:`retrospective_posteriors`, each respondent's whole window at every as-of step, the
    last kept): the oracle of :meth:`dpriv.gate.RetroGate.read` in tests and benchmarks."""
    snapshots = retrospective_posteriors(observed, tables, allowed=masks, attendance=attendance)
    return collections.deque(snapshots, maxlen=1)[0]

"""The exact deductions of the release gate's checks, each started from those of the committed
releases (issue 13, performance).

Every check of :class:`dpriv.gate.RetroGate` (every candidate of every release: regroupings and
withholding passes included) deduces over all committed releases and the candidate. The fixed
point of a longer prefix of the same releases lies inside that of a shorter one
(:mod:`dpriv.adversary.deductions`, "A head start"), so the deductions of the committed releases
(those of the accepted candidate's check) start the next checks: the same masks, bit for bit,
re-checking only what the new release touches. That holds for the same model support only; the
gate's tables are the defender's at each release and may change between releases (mined
knowledge), so the start is used only when every committed tuple keeps its states and moves
(:func:`dpriv.adversary.support.same_moves`), else the check deduces from scratch. A started run
that does not converge, or finds a contradiction, is run again from scratch
(:func:`dpriv.adversary.masks.deduce_started`). A check whose model rules out what the releases
published (an estimated model, e.g. mined knowledge, that never saw a value or transition) has
no certain deductions: :meth:`GateDeductions.masks` then allows every value and warns once, as
:class:`dpriv.adversary.masks.MasksAsOf` does; each later check deduces again (its model may be
a new one), from the last committed release whose check did not contradict.

Needs :mod:`dpriv.adversary.deductions` (imported on first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpriv.adversary.masks import deduce_started, nothing_certain
from dpriv.adversary.observed import ObservedRelease
from dpriv.knowledge.tables import MarkovTables

if TYPE_CHECKING:
    from dpriv.adversary.deductions import ChainSupport, Deductions


@dataclass(frozen=True)
class _Deduced:
    """Deductions over ``observed`` with the support ``support`` (of the tables they used)."""

    observed: list[ObservedRelease]
    support: ChainSupport
    deductions: Deductions


class GateDeductions:
    """``deduced(observed, tables, key)``: :func:`dpriv.adversary.deductions.deduce` over
    ``observed`` (the committed releases, then the candidate ``key``), started from the committed
    releases' deductions when sound (module doc); ``accept(key)`` makes the check of ``key`` the
    start of the next ones.

    Parameters
    ----------
    attendance : float or None
        Passed to ``deduce`` (``policy.retro_attendance``).

    Attributes
    ----------
    incremental : bool
        Class default True; False: every check from scratch (the oracle of tests and
        ``benchmarks/bench_gate.py --from-scratch``). The deductions are the same either way.
    started : int
        Checks started from the committed releases' deductions.
    contradicted : list of int
        Releases whose checks' models ruled out what was published (:meth:`masks`), in order.
    certain : bool
        Whether the last :meth:`masks` had exact deductions (False: every value allowed).
    seconds : float
        Time of every ``deduce`` run (a started run redone from scratch counts twice).
    """

    incremental = True

    def __init__(self, attendance: float | None) -> None:
        self.attendance = attendance
        self.committed: _Deduced | None = None
        self.last: tuple[object, _Deduced] | None = None  # the last check's key and deductions
        self.started = 0
        self.seconds = 0.0
        self._support: tuple[MarkovTables, ChainSupport] | None = None  # of the last tables seen
        self.contradicted: list[int] = []
        self.certain = True

    def __call__(self, observed: list[ObservedRelease], tables: MarkovTables, key: object) -> Deductions:
        """The deductions over ``observed`` (committed releases first, ``key``'s last)."""
        sup = self.support(tables)
        head = self.head(observed, sup)
        self.started += head is not None
        d, seconds = deduce_started(observed, tables, self.attendance, sup, head)
        self.seconds += seconds
        self.last = (key, _Deduced(list(observed), sup, d))
        return d

    def masks(self, observed: list[ObservedRelease], tables: MarkovTables, key: object) -> list[np.ndarray]:
        """The allowed sets (bool (n_i, M) per release of ``observed``) of ``self(observed, tables,
        key)``; when ``tables`` rule out what the releases published (no complete assignment),
        every value allowed (:func:`dpriv.adversary.masks.nothing_certain`: warned the first
        time, naming the release of ``key``), and accepting ``key`` keeps the start it had.

        Raises
        ------
        InputError
            As :func:`dpriv.adversary.deductions.deduce` (not a contradiction: bad releases).
        """
        from dpriv.adversary._assign import NoAssignment

        self.certain = True
        try:
            return self(observed, tables, key).allowed
        except NoAssignment:
            self.last = None  # no deductions to start the next checks from
            self.certain = False
            index = observed[-1].index
            # the next release's model may allow what this one rules out: this check's loss only
            lost = (
                f"no exact deductions in the gate's check of release {index} (a later check tries "
                'again; a gate record without them has "exact_deductions": false)'
            )
            return nothing_certain(observed, tables.n_values, index, said=self.contradicted, lost=lost)

    def support(self, tables: MarkovTables) -> ChainSupport:
        """``chain_support(tables)``, once per tables object (the checks of one release share theirs)."""
        from dpriv.adversary.deductions import chain_support

        if self._support is None or self._support[0] is not tables:
            self._support = (tables, chain_support(tables))
        return self._support[1]

    def head(self, observed: list[ObservedRelease], sup: ChainSupport) -> Deductions | None:
        """The committed releases' deductions when they may start a check over ``observed``: they
        converged, are of a prefix of it (the same release indices) and its tuples have the same
        moves under ``sup`` as under theirs; else None."""
        done = self.committed
        if not self.incremental or done is None or not done.deductions.converged:
            return None
        p = len(done.observed)
        if p > len(observed) or not all(map(_same_release, done.observed, observed[:p])):
            return None
        if not p:
            return done.deductions
        from dpriv.adversary.support import same_moves

        old, new = (
            np.concatenate([np.asarray(o.cls, dtype=np.int64) for o in obs])
            for obs in (done.observed, observed[:p])
        )
        return done.deductions if same_moves(done.support, old, sup, new) else None

    def accept(self, key: object) -> None:
        """``key`` is committed: its check's deductions start the next checks (when ``key`` was
        the last checked; else the start stays that of the releases before)."""
        if self.last is not None and self.last[0] is key:
            self.committed = self.last[1]
        self.last = None


def _same_release(a: ObservedRelease, b: ObservedRelease) -> bool:
    """Whether the adversary observes the same of ``a`` and ``b`` (all but the classes)."""
    same = a.index == b.index and a.n_suppressed == b.n_suppressed
    return same and all(
        np.array_equal(x, y)
        for x, y in ((a.respondent, b.respondent), (a.group, b.group), (a.counts, b.counts))
    )

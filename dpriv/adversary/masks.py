"""Exact-deduction masks as known after each release, for the paper and the retrospective
adversary (issue 11, items 1-3).

An adversary attacking release ``i`` "as of" release ``k`` may use every certain deduction
that releases ``1 .. k`` allow (:func:`dpriv.adversary.deductions.deduce` over that prefix);
the paper adversary attacks release ``k`` as of ``k``. :class:`MasksAsOf` runs the fixed point
once per prefix and caches it. Given the masks of a weaker adversary of the same releases (no
presence channel), it starts each fixed point from theirs of the same prefix; else from its own
of the longest shorter prefix it has (a later release only narrows the masks of earlier ones,
``deduce`` module doc): the same masks, sooner (issue 13).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from dpriv.adversary.observed import ObservedRelease
from dpriv.errors import InputError, PolicyError
from dpriv.knowledge.tables import MarkovTables
from dpriv.user_warning import warn_user

if TYPE_CHECKING:
    from dpriv.adversary.deductions import ChainSupport, Deductions


def deductions_available() -> bool:
    """True when :mod:`dpriv.adversary.deductions` is installed."""
    return importlib.util.find_spec("dpriv.adversary.deductions") is not None


class MasksAsOf:
    """``masks(k)``: the allowed sets (bool (n_i, M)) of the releases at positions ``0 .. k``
    deduced from those releases only; ``masks.release(k)`` is the last of them.

    Parameters
    ----------
    observed : sequence of ObservedRelease
        The releases, in order.
    tables : MarkovTables
        The model whose support the deductions use.
    attendance : float or None
        Passed to ``deduce`` (only 1.0 unlocks the presence channel).
    start : MasksAsOf, optional
        Masks of the same ``observed`` and ``tables`` (the same objects) by an adversary who
        knows no more: the prefixes it has deduced are reused as they are when it has the same
        presence channel (:func:`dpriv.adversary.deductions.presence_known`), else (it has
        none) they start the fixed points here (``deduce(start=...)``). The masks are the same
        without it. Its chain support is reused.
    incremental : bool
        Start each fixed point that ``start`` does not start from this object's own of the
        longest shorter prefix deduced (default); False: from scratch. The masks are the same
        either way.

    Raises
    ------
    PolicyError
        When the deductions module is not installed.
    InputError
        A ``start`` of other releases or tables, or one with the presence channel.
    """

    def __init__(
        self,
        observed: Sequence[ObservedRelease],
        tables: MarkovTables,
        attendance: float | None,
        *,
        start: MasksAsOf | None = None,
        incremental: bool = True,
    ) -> None:
        if not deductions_available():
            raise PolicyError("exact deductions need dpriv.adversary.deductions; run without them")
        from dpriv.adversary.deductions import chain_support, presence_known

        self.observed = list(observed)
        self.tables = tables
        self.attendance = attendance
        self.presence = presence_known(attendance)
        if start is not None and not _same(start, self.observed, tables):
            raise InputError("start must be the masks of the same releases and tables")
        if start is not None and start.presence and not self.presence:
            raise InputError("start must be masks without the presence channel (attendance below 1)")
        self.start = start
        self.incremental = incremental
        self.support = start.support if start is not None else chain_support(tables)
        self._cache: dict[int, list[np.ndarray]] = {}
        self._deduced: dict[int, Deductions] = {}  # of each prefix (a later head start)
        self.seconds = 0.0
        self.contradicted: list[int] = []  # releases as of which the model ruled out the counts

    def __call__(self, k: int) -> list[np.ndarray]:
        if k not in self._cache:
            from dpriv.adversary._assign import NoAssignment

            try:
                d = self._deduce(k)
            except NoAssignment:  # an estimated model (mined, snapshot) that rules out what was published
                self._cache[k] = self._nothing_certain(k)
                return self._cache[k]
            self._cache[k] = d.allowed
            self._deduced[k] = d
        return self._cache[k]

    def _deduce(self, k: int) -> Deductions:
        """The deductions of prefix ``k``: the start's as they are (same presence channel), or
        started from the start's, else from the longest shorter prefix here, or from scratch."""
        head = self._head_start(k)
        if head is not None and head.presence == self.presence:
            return head
        if head is None:  # (the start's prefix first: on the demo's ledger 4.4 s against 6.3 s)
            head = self._prefix_start(k)
        d, seconds = deduce_started(self.observed[: k + 1], self.tables, self.attendance, self.support, head)
        self.seconds += seconds
        return d

    def _head_start(self, k: int) -> Deductions | None:
        """The start's Deductions of prefix ``k`` when it has them (not a contradicted prefix, so a
        contradiction is warned about again) and they converged; None otherwise."""
        d = None if self.start is None else self.start._deduced.get(k)
        return d if d is not None and d.converged else None

    def _prefix_start(self, k: int) -> Deductions | None:
        """The converged Deductions here of the longest prefix shorter than ``k`` (a contradicted
        prefix has none), None without one or when not ``incremental``."""
        done = [j for j, d in self._deduced.items() if j < k and d.converged] if self.incremental else []
        return self._deduced[max(done)] if done else None

    def _nothing_certain(self, k: int) -> list[np.ndarray]:
        """:func:`nothing_certain` for the releases up to position ``k``, said once (naming the
        first such release)."""
        index = self.observed[k].index
        return nothing_certain(self.observed[: k + 1], self.tables.n_values, index, said=self.contradicted)

    def deduced(self, k: int) -> Deductions:
        """The :class:`~dpriv.adversary.deductions.Deductions` of the releases at positions
        ``0 .. k`` (those :meth:`__call__` gives the masks of); where the model rules out what
        they published, raises what ``deduce`` from scratch raises (InputError, no masks)."""
        self(k)
        if k not in self._deduced:  # contradicted: said as deduce itself says it
            deduce_started(self.observed[: k + 1], self.tables, self.attendance, self.support, None)
        return self._deduced[k]

    def release(self, k: int) -> np.ndarray:
        """Mask of the release at position ``k`` as known right after it."""
        return self(k)[k]


#: What an attack loses when its (fixed) model rules out a release (:func:`nothing_certain`).
FROM_HERE_ON = "no exact deductions from this release on"


def nothing_certain(
    observed: Sequence[ObservedRelease],
    n_values: int,
    index: int,
    *,
    said: list[int],
    lost: str = FROM_HERE_ON,
) -> list[np.ndarray]:
    """Every value allowed (bool (n_i, n_values), all True) for each release of ``observed``: the
    model's zeros ruled out what release ``index`` published (a transition first seen in it, as an
    estimated model, mined or a snapshot, may), so none of its deductions is certain. ``said``: the
    caller's releases contradicted so far (:class:`MasksAsOf` per attack,
    :class:`dpriv.gate_deductions.GateDeductions`, whose model may change at the next release, per
    gated run); the first is said in a warning naming release ``index`` and what is lost,
    ``lost``; ``index`` is appended to it (once)."""
    warn = not said
    if index not in said:
        said.append(index)
    if warn:
        warn_user(
            f"the adversary's model rules out what release {index} published (e.g. a "
            f"value or transition its tables never saw): {lost}, "
            "the gains are those of its posteriors alone"
        )
    return [np.ones((len(o.respondent), n_values), dtype=bool) for o in observed]


def deduce_started(
    releases: list[ObservedRelease],
    tables: MarkovTables,
    attendance: float | None,
    support: ChainSupport,
    head: Deductions | None,
) -> tuple[Deductions, float]:
    """``deduce(releases, tables, ...)`` started from ``head`` (deductions of the same releases or
    of a prefix of them, with the same model support; ``deduce(start=...)``), from scratch without
    it, when it does not converge, or when it raises NoAssignment/InputError (raised then as from
    scratch raises it). Returns the deductions, equal to those from scratch, and the seconds of
    both runs.

    Raises
    ------
    InputError
        As :func:`dpriv.adversary.deductions.deduce` from scratch.
    """
    from dpriv.adversary.deductions import deduce

    seconds = 0.0
    if head is not None and head.converged:
        try:
            d = deduce(releases, tables, attendance=attendance, support=support, start=head)
            seconds += d.seconds
            if d.converged:  # else the result from scratch (it may stop at max_rounds elsewhere)
                return d, seconds
        except InputError:  # a contradiction (NoAssignment too): raised as from scratch would raise it
            pass
    d = deduce(releases, tables, attendance=attendance, support=support)
    return d, seconds + d.seconds


def _same(masks: MasksAsOf, observed: list[ObservedRelease], tables: MarkovTables) -> bool:
    """Whether ``masks`` were made for these very releases and tables (the same objects: a head
    start is only sound for the same inputs)."""
    same = len(masks.observed) == len(observed) and all(a is b for a, b in zip(masks.observed, observed))
    return same and masks.tables is tables

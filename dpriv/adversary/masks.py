"""Exact-deduction masks as known after each release, for the paper and the retrospective
adversary (issue 11, items 1-3).

An adversary attacking release ``i`` "as of" release ``k`` may use every certain deduction
that releases ``1 .. k`` allow (:func:`dpriv.adversary.deductions.deduce` over that prefix);
the paper adversary attacks release ``k`` as of ``k``. :class:`MasksAsOf` runs the fixed point
once per prefix and caches it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np

from dpriv.adversary.observed import ObservedRelease
from dpriv.errors import PolicyError
from dpriv.knowledge.tables import MarkovTables
from dpriv.user_warning import warn_user


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

    Raises
    ------
    PolicyError
        When the deductions module is not installed.
    """

    def __init__(
        self, observed: Sequence[ObservedRelease], tables: MarkovTables, attendance: float | None
    ) -> None:
        if not deductions_available():
            raise PolicyError("exact deductions need dpriv.adversary.deductions; run without them")
        from dpriv.adversary.deductions import chain_support

        self.observed = list(observed)
        self.tables = tables
        self.attendance = attendance
        self.support = chain_support(tables)
        self._cache: dict[int, list[np.ndarray]] = {}
        self.seconds = 0.0
        self.contradicted: list[int] = []  # releases as of which the model ruled out the counts

    def __call__(self, k: int) -> list[np.ndarray]:
        if k not in self._cache:
            from dpriv.adversary._assign import NoAssignment
            from dpriv.adversary.deductions import deduce

            try:
                seen = self.observed[: k + 1]
                d = deduce(seen, self.tables, attendance=self.attendance, support=self.support)
            except NoAssignment:  # an estimated model (mined, snapshot) that rules out what was published
                self._cache[k] = self._nothing_certain(k)
                return self._cache[k]
            self.seconds += d.seconds
            self._cache[k] = d.allowed
        return self._cache[k]

    def _nothing_certain(self, k: int) -> list[np.ndarray]:
        """Every value allowed for the releases up to position ``k``: the model's zeros ruled out
        what they published (a transition first seen in them), so none of its deductions is certain;
        said once (a warning naming the first such release)."""
        if not self.contradicted:
            warn_user(
                f"the adversary's model rules out what release {self.observed[k].index} published (a "
                "value or transition its tables never saw): no exact deductions from this release on, "
                "the gains are those of its posteriors alone"
            )
        self.contradicted.append(self.observed[k].index)
        m = self.tables.n_values
        return [np.ones((len(o.respondent), m), dtype=bool) for o in self.observed[: k + 1]]

    def release(self, k: int) -> np.ndarray:
        """Mask of the release at position ``k`` as known right after it."""
        return self(k)[k]

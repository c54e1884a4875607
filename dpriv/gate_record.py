"""What a check of the release gate found (:class:`GateCheck`, made by
:meth:`dpriv.gate.RetroGate.check`) and the ``gate`` entry of a gated release's metrics.json
that records it (:func:`gate_record`; docs/ledger.md names its keys).

Kept apart from :mod:`dpriv.gate` (the checks) so that the result and its record's keys live in
one place; :mod:`dpriv.gate` imports them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


class WorstGain(NamedTuple):
    """The largest gain of a :class:`GateCheck`: the release it is on and the gain (NaN: none finite)."""

    release: int
    gain: float


@dataclass(frozen=True)
class GateCheck:
    """The retrospective adversary's reading of releases ``1 .. as_of`` after ``as_of``.

    Attributes
    ----------
    as_of : int
        The release about to be committed.
    gains : dict of int -> float
        Mean gain (E10) of each release ``<= as_of`` as of ``as_of``, in [-1, 1] (NaN for a
        release that kept no tuple).
    confident_share : float
        Largest share, over those releases, of tuples whose posterior on the true value is
        >= 0.9 (:data:`dpriv.adversary.tail.CONFIDENT`), in [0, 1].
    bound : float or None
        ``policy.retro_max_gain`` (None: no bound on the gain, the check always holds).
    used : dict
        The ``k``, ``t`` and ``j`` the checked release was grouped with.
    regroupings : int
        How many times it was regrouped (0: grouped with the policy's own parameters).
    seconds : float
        Time of the check (deductions, forward-backward, Ω).
    over : ndarray, shape (r,)
        Respondents with a tuple of releases ``1 .. as_of`` whose posterior, as of ``as_of``,
        is at least ``policy.retro_posterior_bound`` on some value (sorted, unique; empty
        without that bound).
    withheld : int
        Members of release ``as_of`` held back by :meth:`dpriv.gate.RetroGate.release` (the bound above).
    posterior_bound : float or None
        ``policy.retro_posterior_bound``.
    groupings : int
        Groupings of release ``as_of`` checked for the bound above (1 without it); ``seconds``
        is then the time of all their checks.
    exact_deductions : bool
        False when the model ruled out what was published: the check read every value allowed.
    """

    as_of: int
    gains: dict[int, float]
    confident_share: float
    bound: float | None
    used: dict
    regroupings: int
    seconds: float
    over: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    withheld: int = 0
    posterior_bound: float | None = None
    groupings: int = 1
    exact_deductions: bool = True

    @property
    def worst(self) -> WorstGain:
        """The largest finite gain and its release (the earliest release on ties); ``as_of`` and
        NaN when no gain is finite."""
        finite = {i: g for i, g in self.gains.items() if np.isfinite(g)}
        if not finite:
            return WorstGain(self.as_of, float("nan"))
        i = max(finite, key=lambda r: (finite[r], -r))
        return WorstGain(i, finite[i])

    @property
    def ok(self) -> bool:
        gain = self.worst.gain
        return self.bound is None or not np.isfinite(gain) or gain <= self.bound

    def as_record(self) -> dict:
        """The ``gate`` entry of the release's metrics.json (:func:`gate_record`)."""
        return gate_record(self)


def gate_record(check: GateCheck) -> dict:
    """The JSON-ready record of ``check`` (floats rounded, NaN as None). ``exact_deductions``
    (False) only for a check whose model ruled out what was published, so that every other
    record keeps its bytes."""
    release, gain = check.worst
    used = check.used
    return {
        "retro_max_gain": check.bound,
        "max_gain": round(gain, 6) if np.isfinite(gain) else None,  # JSON has no NaN
        "worst_release": release,
        "confident_share": round(check.confident_share, 6),
        "k_used": used["k"],
        "t_used": used["t"],
        "j_used": used["j"],
        **({"rbk_closeness_used": used["rbk_closeness"]} if "rbk_closeness" in used else {}),
        "regroupings": check.regroupings,
        "retro_posterior_bound": check.posterior_bound,
        "n_withheld": check.withheld,
        "n_over": int(check.over.size),
        "groupings": check.groupings,
        "seconds": round(check.seconds, 3),
        **({} if check.exact_deductions else {"exact_deductions": False}),
    }

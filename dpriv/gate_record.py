"""The ``gate`` entry of a gated release's metrics.json (docs/ledger.md names its keys).

Kept apart from :mod:`dpriv.gate` (the checks) so that the record's keys live in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dpriv.gate import GateCheck


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

"""Grouping kernels and the independent verifier: pandas / NumPy in and out.

* ``generalize``: the numba greedy of Algorithm 2; ``jsreduce``: its scan and repair over
  Hilbert ranges; ``resync``: the scan's ranges at once, put back in step with the chain;
  ``group_stats``: what the repair knows of each QI-group;
* ``mondrian``: the Mondrian baselines (k, l, t, (B,t));
* ``verify`` (with ``membership``): the independent checks of a released view.

The public surface below is imported on first use (``from dpriv.anonymity import X``).
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_PUBLIC = {
    "CARRIED": "generalize",
    "UNGROUPED": "generalize",
    "GroupStats": "group_stats",
    "Params": "jsreduce",
    "entropies": "jsreduce",
    "first_pass": "jsreduce",
    "greedy_qi_groups": "jsreduce",
    "repair": "jsreduce",
    "scan_range": "jsreduce",
    "range_stats": "jsreduce",
    "repair_leftovers": "jsreduce",
    "params_of": "jsreduce",
    "cap_for": "jsreduce",
    "MODELS": "mondrian_inputs",
    "MondrianRelease": "mondrian",
    "mondrian_groups": "mondrian",
    "mondrian_view": "mondrian",
    "qi_grid_of": "mondrian",
    "check_assigned": "membership",
    "VerificationReport": "verify",
    "combine_reports": "verify",
    "verify_release": "verify",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'dpriv.anonymity' has no attribute {name!r}")
    return getattr(importlib.import_module(f"dpriv.anonymity.{_PUBLIC[name]}"), name)


def __dir__() -> list[str]:
    return __all__

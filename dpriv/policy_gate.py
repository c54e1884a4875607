"""The release gate's keys in a policy (docs/policy.md#release-gate), and the one warning about them.

The gate (:mod:`dpriv.gate`) acts only with ``retro_max_gain`` set; its other keys
(:data:`GATE_KEYS`) set without it do nothing. :func:`warn_idle_gate_keys` says so once for a
policy read from a file or flags; the copies a command makes of it
(:meth:`dpriv.policy.ReleasePolicy.with_overrides` leaving the gate keys alone) stay quiet, so
one command prints it once.
"""

from __future__ import annotations

import warnings
from typing import Any

#: The release gate's keys that only act with ``retro_max_gain`` set (dpriv/gate.py).
GATE_KEYS = ("retro_retries", "retro_attendance", "retro_lever")


def idle_gate_keys(policy: Any) -> list[str]:
    """The :data:`GATE_KEYS` of ``policy`` (a ReleasePolicy) set to other than their default
    while ``retro_max_gain`` is None (the gate is off), in :data:`GATE_KEYS` order."""
    if policy.retro_max_gain is not None:
        return []
    fields = type(policy).model_fields
    return [n for n in GATE_KEYS if getattr(policy, n) != fields[n].default]


def warn_idle_gate_keys(policy: Any) -> None:
    """A UserWarning naming the idle gate keys of ``policy`` (a warning, not an error, so that
    a stored policy still loads); nothing when there are none."""
    idle = idle_gate_keys(policy)
    if idle:
        warnings.warn(
            f"{', '.join(idle)} set but the release gate is off: set retro_max_gain "
            "(e.g. 0.1) to turn it on, or drop them (docs/policy.md#release-gate)",
            UserWarning,
            stacklevel=3,
        )


def touches_gate(overrides: dict[str, Any]) -> bool:
    """Whether ``overrides`` (of ``with_overrides``; None values are ignored) set a gate key
    or ``retro_max_gain``: then the copy is checked (and warned about) anew."""
    return any(overrides.get(k) is not None for k in ("retro_max_gain", *GATE_KEYS))

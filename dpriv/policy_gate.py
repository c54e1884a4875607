"""The release gate's keys in a policy (docs/policy.md#release-gate), and the one warning about them.

The gate (:mod:`dpriv.gate`) acts only with ``retro_max_gain`` or ``retro_posterior_bound``
set; its other keys (:data:`GATE_KEYS`) set without both do nothing.
:func:`warn_idle_gate_keys` says so once for a policy read from a file or flags; the copies a
command makes of it (:meth:`dpriv.policy.ReleasePolicy.with_overrides` leaving the gate keys
alone) stay quiet, so one command prints it once.
"""

from __future__ import annotations

from typing import Any

from dpriv.user_warning import warn_user

#: The release gate's keys that only act with ``retro_max_gain`` or ``retro_posterior_bound``
#: set (dpriv/gate.py).
BOUNDS = ("retro_max_gain", "retro_posterior_bound")
GATE_KEYS = ("retro_retries", "retro_attendance", "retro_lever")


def gate_on(policy: Any) -> bool:
    """Whether the release gate runs for ``policy`` (a ReleasePolicy): one of :data:`BOUNDS` set."""
    return any(getattr(policy, b) is not None for b in BOUNDS)


def idle_gate_keys(policy: Any) -> list[str]:
    """The :data:`GATE_KEYS` of ``policy`` (a ReleasePolicy) set to other than their default
    while both :data:`BOUNDS` are None (the gate is off), in :data:`GATE_KEYS` order."""
    if gate_on(policy):
        return []
    fields = type(policy).model_fields
    return [n for n in GATE_KEYS if getattr(policy, n) != fields[n].default]


def warn_idle_gate_keys(policy: Any) -> None:
    """A UserWarning naming the idle gate keys of ``policy`` (a warning, not an error, so that
    a stored policy still loads); nothing when there are none."""
    idle = idle_gate_keys(policy)
    if idle:
        warn_user(
            f"{', '.join(idle)} set but the release gate is off: set retro_max_gain "
            "(e.g. 0.1) or retro_posterior_bound (e.g. 0.9) to turn it on, or drop them "
            "(docs/policy.md#release-gate)"
        )


def touches_gate(overrides: dict[str, Any]) -> bool:
    """Whether ``overrides`` (of ``with_overrides``; None values are ignored) set a gate key
    or one of :data:`BOUNDS`: then the copy is checked (and warned about) anew."""
    return any(overrides.get(k) is not None for k in (*BOUNDS, *GATE_KEYS))


def anonymize_note(policy: Any) -> str | None:
    """The note of ``dpriv anonymize`` for what a history's release reads and one view does not:
    a gate bound (the gate does not run) and the ``[knowledge]`` tables (neither read nor
    checked: the priors come from the view's own QI classes); None without either."""
    set_ = [b for b in BOUNDS if getattr(policy, b) is not None]
    notes = []
    if set_:
        notes.append(
            f"{' and '.join(set_)} bound a history's releases (dpriv release) and do nothing for one "
            "view: posterior_bound bounds this view's posteriors (docs/policy.md#posterior-bound)"
        )
    if getattr(policy, "knowledge", None):
        notes.append(
            f"the [knowledge] tables ({', '.join(sorted(policy.knowledge))}) are for a history's "
            "releases (dpriv release): one view's priors come from its own QI classes, and the "
            "files are not read"
        )
    return "; ".join(notes) or None


def refuse_unreachable(policy: Any) -> None:
    """PolicyError when a posterior bound cannot be met by any released tuple: a posterior over
    the M values of the sensitive domain has a largest value of at least 1/M (``policy``:
    resolved, its sensitive domain known)."""
    from dpriv.errors import PolicyError

    m = len(policy.sensitive_domain)
    for name in ("posterior_bound", "retro_posterior_bound"):
        bound = getattr(policy, name)
        if bound is not None and bound <= 1.0 / m:
            raise PolicyError(
                f"{name} = {bound:g} cannot be met: with {m} sensitive values every posterior "
                f"has a value of at least 1/{m} = {1.0 / m:.4g}, so every tuple would be "
                f"suppressed; use a bound above {1.0 / m:.4g} (e.g. 0.9) or remove {name}"
            )

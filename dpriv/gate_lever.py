"""What one regrouping of the release gate tightens (``retro_lever``, docs/policy.md#release-gate):
j, t or rbk_closeness halved, k doubled, and the parameters a candidate was grouped with as the
gate's check and record name them (:func:`used`)."""

from __future__ import annotations

from dpriv.policy import ReleasePolicy

#: RBK-closeness's first bound when the gate tightens it on a policy without one (then halved).
FIRST_RBK_CLOSENESS = 0.4
#: What one regrouping does to the lever's parameter (``policy.retro_lever``).
TIGHTEN = {
    "j": lambda v: v / 2,
    "t": lambda v: v / 2,
    "k": lambda v: v * 2,
    "rbk_closeness": lambda v: FIRST_RBK_CLOSENESS if v is None else v / 2,
}


def tightened(policy: ReleasePolicy) -> ReleasePolicy:
    """``policy`` with its ``retro_lever`` tightened once (j, t or rbk_closeness halved, k
    doubled; an unset rbk_closeness becomes :data:`FIRST_RBK_CLOSENESS`)."""
    lever = policy.retro_lever
    return policy.with_overrides(**{lever: TIGHTEN[lever](getattr(policy, lever))})


def used(grouped: ReleasePolicy) -> dict:
    """The ``k``, ``t``, ``j`` of ``grouped`` (the policy a candidate was grouped with), and its
    ``rbk_closeness`` when set."""
    bound = {} if grouped.rbk_closeness is None else {"rbk_closeness": grouped.rbk_closeness}
    return {"k": grouped.k, "t": grouped.t, "j": grouped.j, **bound}

"""A policy as the Python entry points are given it (``release_history``, ``anonymize``,
``attack``): a :class:`~dpriv.policy.ReleasePolicy` or a dict of its fields (:func:`as_policy`),
and whether the method asked for can release under it (:func:`check_method`)."""

from __future__ import annotations

from typing import Any

from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy


def as_policy(policy: ReleasePolicy | dict[str, Any], where: str) -> ReleasePolicy:
    """``policy`` as a :class:`ReleasePolicy`: one as it is, a dict of its flat fields through
    :meth:`ReleasePolicy.from_dict`. PolicyError for anything else, naming ``where`` (the
    function it was given to)."""
    if isinstance(policy, ReleasePolicy):
        return policy
    if isinstance(policy, dict):
        return ReleasePolicy.from_dict(policy)
    raise PolicyError(
        f"{where}: policy must be a ReleasePolicy (ReleasePolicy.from_toml(path) or "
        f"ReleasePolicy.from_dict(fields)) or a dict of its fields, got {type(policy).__name__}"
    )


def check_method(policy: ReleasePolicy, method: str) -> None:
    """PolicyError unless ``policy.release_format`` suits ``method`` (Anatomy groups by the
    members' knowledge, which only JS-reduce's grouping does; the Mondrian baselines cut QI
    boxes for a generalized release) and the release gate's ``retro_lever`` is a parameter
    ``method`` uses (j: JS-reduce only; t: JS-reduce and mondrian-t; k: all but histogram)."""
    if policy.release_format == "anatomy" and method != "jsreduce":
        raise PolicyError(
            f'release_format = "anatomy" is a JS-reduce release; method {method!r} publishes a '
            'generalized view: use --method jsreduce (method="jsreduce" in Python) or release_format = '
            '"generalized"'
        )
    if policy.persistent_groups and method != "jsreduce":  # dpriv.anonymity.persistent
        raise PolicyError(
            f"persistent_groups = true is a JS-reduce grouping; method {method!r} "
            'does not keep groups: use --method jsreduce (method="jsreduce" in Python) or '
            "persistent_groups = false"
        )
    # the gate regroups with its lever: a parameter the method must use
    if method == "histogram" and policy.retro_max_gain is not None:  # one group whatever the parameters
        raise PolicyError(
            "method 'histogram' releases each view as one QI-group, so the release gate "
            "(retro_max_gain) has nothing to regroup with: remove retro_max_gain or use another method"
        )
    uses = {"jsreduce": ("k", "t", "j", "rbk_closeness"), "mondrian-t": ("k", "t")}.get(method, ("k",))
    if policy.retro_max_gain is not None and policy.retro_lever not in uses:
        raise PolicyError(
            f"retro_lever = {policy.retro_lever!r}: method {method!r} does not use "
            f"{policy.retro_lever}, so the release gate could not regroup with it; use "
            f'retro_lever = "k" (or one of {list(uses)})'
        )

"""The words of a refusal whose fix is a policy change, when the ledger already holds releases.

A ledger keeps the policy it was started with (:meth:`dpriv.ledger.Ledger.check_policy`
refuses any other), so "raise retro_max_gain" or "allow more suppression with [privacy]
max_suppression" cannot be followed on the same ledger once a release is committed: the
changed policy needs a new ledger, into which the history is released from its first view.
"""

from __future__ import annotations

#: What a policy change needs once a ledger holds committed releases.
NEW_LEDGER = (
    "a ledger keeps the policy it was started with, so a changed policy needs a new ledger: "
    "release the history with it into --ledger NEW (from the first view)"
)


def policy_change(fix: str, committed: int) -> str:
    """``fix`` (the words suggesting a policy change) followed, when ``committed`` > 0 releases
    are in the ledger, by :data:`NEW_LEDGER` naming how many."""
    if committed <= 0:
        return fix
    held = "release 1 is" if committed == 1 else f"releases 1..{committed} are"
    return f"{fix} ({held} committed: {NEW_LEDGER})"

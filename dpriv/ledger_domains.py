"""The domains a resumed ledger recorded, for the columns a given policy leaves undeclared.

A policy without ``[domains]`` has them inferred from the data of its first run, and the ledger
records them in ``policy.json``. The weekly job that resumes it with the same policy file
(``dpriv release H --ledger L --policy P``, the cron recipe) infers them again from the whole
history: a later week's typo in the sensitive column (``iv`` for ``IV``) or one age outside the
first week's range then made "another policy", refused with the advice to start a new ledger
and no row named. :func:`refuse_outside_recorded` checks the history against the recorded
domains instead (as ``dpriv release H --ledger L`` without ``--policy`` does, through
:meth:`dpriv.ledger.Ledger.policy`), once the committed views are known unedited (an edited
committed row is told as such, :func:`dpriv.ledger_checks.check_views`), so the message names the
value's week and line (``week = 4: sensitive column 'stage' has values ... not in its inferred
domain ...``) and says what the ledger allows. Nothing released changes: the domains of an
accepted history are the recorded ones.
"""

from __future__ import annotations

from pathlib import Path

import dask.dataframe as dd
import pandas as pd

from dpriv.ledger import POLICY
from dpriv.ledger_manifest import MANIFEST
from dpriv.policy import ReleasePolicy
from dpriv.validate import check_rows


def with_ledger_domains(policy: ReleasePolicy, ledger_dir: str | Path) -> ReleasePolicy:
    """``policy`` with the domains (and QI kinds) it does not declare taken from the policy the
    ledger at ``ledger_dir`` recorded with its first release; ``policy`` itself for a new folder,
    a ledger without a recorded policy, or when nothing is taken.

    A column is taken only where the two policies agree on its role: the same sensitive column,
    or a QI of both whose kind the given policy leaves undeclared or declares as recorded, and
    no hierarchy in the given policy (its levels come from the hierarchy file). Anything else
    (another column, kind or hierarchy) is left to be inferred and then refused, by name, as a
    changed policy (:meth:`dpriv.ledger.Ledger.check_policy`). A policy.json that cannot be read
    is left to the ledger's own checks, which refuse it by name; nothing is written.
    """
    root = Path(ledger_dir)
    if not (root / MANIFEST).is_file() or not (root / POLICY).is_file():
        return policy
    from dpriv.ledger import Ledger  # the recorded policy, as the ledger reads it

    try:
        stored = Ledger(root).stored_policy()
    except Exception:  # noqa: BLE001 - a damaged policy.json is refused by the ledger's checks, by name
        return policy
    domains, kinds = stored.get("domains"), stored.get("kinds") or {}
    if not isinstance(domains, dict):
        return policy
    taken: dict[str, list] = {}
    taken_kinds: dict[str, str] = {}
    for name in (*policy.qi, policy.sensitive):
        if name in policy.domains or name in policy.hierarchies or name not in domains:
            continue
        if name == policy.sensitive:
            if stored.get("sensitive") == name:
                taken[name] = domains[name]
            continue
        recorded_kind = kinds.get(name)
        if name not in stored.get("qi", []) or recorded_kind is None:
            continue
        if policy.kinds.get(name, recorded_kind) != recorded_kind:
            continue
        taken[name] = domains[name]
        taken_kinds[name] = recorded_kind
    if not taken:
        return policy
    return policy.with_overrides(domains={**policy.domains, **taken}, kinds={**policy.kinds, **taken_kinds})


def refuse_outside_recorded(
    history: pd.DataFrame | dd.DataFrame,
    declared: ReleasePolicy,
    resolved: ReleasePolicy,
    taken: ReleasePolicy,
) -> None:
    """InputError naming the rows (:func:`dpriv.validate.check_rows`, by week and line) of
    ``history`` whose values lie outside the domains the ledger recorded for the columns
    ``declared`` (the policy as given) leaves to the data (``taken``: :func:`with_ledger_domains`
    of ``declared``), where ``resolved`` (the same policy, its domains inferred from ``history``)
    differs from them. Nothing when nothing differs, for a new ledger, or when no row is outside
    them (the difference is then refused as another policy, :meth:`dpriv.ledger.Ledger.check_policy`).
    The message calls such a domain inferred, not declared: no policy given declares it (the
    ledger inferred it from its first release's data, where that release's policy declared none;
    policy.json does not record which of its domains were declared)."""
    changed = {
        c: d for c, d in taken.domains.items() if c not in declared.domains and resolved.domains.get(c) != d
    }
    if not changed:
        return
    kinds = {c: k for c, k in taken.kinds.items() if c in changed}
    check_rows(
        history,
        resolved.with_overrides(domains={**resolved.domains, **changed}, kinds={**resolved.kinds, **kinds}),
        inferred=frozenset(changed),
    )


def recorded_columns(declared: ReleasePolicy, taken: ReleasePolicy) -> set[str]:
    """The columns whose domain ``declared`` leaves to the data and the ledger recorded
    (``taken``: :func:`with_ledger_domains` of ``declared``): their values are checked against
    that record."""
    return set(taken.domains) - set(declared.domains)

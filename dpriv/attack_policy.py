"""The policy an attack reads a ledger with: the ledger's own (``policy.json``), or a policy given
that reads the releases with the same columns.

The adversary reads the published groups, not the rule that made them: a given policy may
differ from the recorded one in its thresholds (k, t, j...) and its knowledge tables (an
adversary brings its own), never in the columns, QI order, kinds, domains or release format
(:data:`dpriv.ledger_checks.READING_FIELDS`): those would read the published boxes, or the
history, otherwise than they were released. ``dpriv attack`` (with or without ``--policy``) and
:func:`dpriv.attack.attack` go through :func:`attack_policy`.
"""

from __future__ import annotations

from pathlib import Path

from dpriv.attack_files import as_ledger
from dpriv.errors import KnowledgeFileError
from dpriv.ledger import POLICY, Ledger
from dpriv.ledger_checks import check_same_columns
from dpriv.policy import ReleasePolicy
from dpriv.policy_base import base_candidates, recorded_base
from dpriv.policy_given import as_policy


def ledger_policy(ledger: Ledger, history: object) -> ReleasePolicy:
    """The policy ``ledger`` was released with, its relative ``[knowledge]`` and ``[hierarchies]``
    paths resolved from the folder ``policy_base.json`` records, else from the folder of
    ``history`` (when it is a file path), else from the ledger's parent; left relative to the
    working directory when none holds them (a missing file is then named when it is read).

    Raises LedgerError when nothing was released into ``ledger`` yet, or its ``policy.json``
    is damaged."""
    pol = ledger.policy()
    base = recorded_base(ledger.root, pol.knowledge, pol.hierarchies, _near(ledger, history), strict=False)
    return pol.with_overrides(base_dir=base)


#: How a refusal of :func:`dpriv.ledger_checks.check_same_columns` words a policy given in Python
#: (the command line's words, ``--policy FILE``, are that function's defaults).
PYTHON_WORDING = {
    "source": "the policy given to attack()",
    "omit": "pass policy=None",
    "theirs": "the policy given",
}


def _near(ledger: Ledger, history: object) -> list[Path]:
    """The folders after the recorded one: ``history``'s (a file path), the ledger's parent."""
    near = [Path(history).parent] if isinstance(history, str | Path) and "://" not in str(history) else []
    return [*near, ledger.root.parent]


def base_folders(ledger: Ledger | str | Path, history: object) -> list[Path]:
    """Every folder :func:`ledger_policy` looks for the recorded relative paths in, in order
    (:func:`dpriv.policy_base.base_candidates`), for a message naming them."""
    led = as_ledger(ledger, "attack")
    return base_candidates(led.root, _near(led, history))


def attack_policy(
    ledger: Ledger | str | Path,
    policy: ReleasePolicy | dict | None,
    history: object,
    *,
    flag: str | None = None,
) -> ReleasePolicy:
    """The policy to attack ``ledger`` with: its own (:func:`ledger_policy`) when ``policy`` is
    None, else ``policy`` (a ReleasePolicy, or a dict of its fields) once it is checked against
    the recorded one (:func:`dpriv.ledger_checks.check_same_columns`; a ledger without
    ``policy.json`` has none to compare). ``flag``: the command-line flag that gave ``policy``
    (``--policy p.toml``), whose words the refusal then uses; None: :data:`PYTHON_WORDING`.

    Raises InputError when ``ledger`` is neither a Ledger nor a path; LedgerError when it is
    not a ledger, or holds no release while ``policy`` is None; PolicyError for a ``policy``
    that is not a policy, or that reads the releases with other columns (naming each field)."""
    led = as_ledger(ledger, "attack")
    if policy is None:
        return ledger_policy(led, history)
    given = as_policy(policy, "attack")
    if (led.root / POLICY).exists():  # a ledger committed without a policy has none to compare
        wording = PYTHON_WORDING if flag is None else {"source": flag}
        check_same_columns(led.policy(), given, ledger=led.root, **wording)
    return given


def with_python_hint(
    exc: KnowledgeFileError, ledger: Ledger | str | Path, history: object
) -> KnowledgeFileError:
    """``exc`` (a knowledge file of the ledger's recorded policy not found by ``attack(...,
    policy=None)``) with the folders its relative path was looked for in and what to pass: a
    ledger released in Python records no folder for them (``policy_base.json`` is written by
    ``dpriv release --policy FILE``), and the message named neither (session 42 drill).
    ``dpriv attack`` gives attack() the policy it resolved and words its own hint."""
    tried = ", ".join(str(t) for t in base_folders(ledger, history))
    return KnowledgeFileError(
        f"{exc} (the ledger's recorded policy; its relative path looked for in {tried}, then the "
        "current folder): pass the policy, attack(ledger, history, ReleasePolicy.from_toml(FILE), "
        "...), whose knowledge paths are relative to FILE"
    )

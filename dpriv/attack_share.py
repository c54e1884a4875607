"""What two attacks of one ledger compute alike, computed once (issue 13, performance).

``dpriv demo`` attacks its ledger twice: as the paper adversary, then as the retrospective one.
Both read the same releases (:func:`dpriv.attack_input.read_attack`: the views, the members,
the fingerprint checks) and deduce what is certain from each prefix of them
(:class:`dpriv.adversary.masks.MasksAsOf`). An :class:`AttackShare` passed to both
:func:`dpriv.attack.attack` calls (``share=``) keeps the first one's reading and deductions for
the second: the same reading; the deductions of the same presence channel as they are, those
with it started from those without it (``deduce(start=...)``). The frames are the same, bit
for bit, as without a share (tests/test_attack_share.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dpriv.adversary.masks import MasksAsOf
from dpriv.adversary.observed import ObservedRelease
from dpriv.attack_files import as_ledger
from dpriv.attack_input import AttackInput, last_tables, observed_releases, read_attack, with_knowledge
from dpriv.attack_policy import attack_policy
from dpriv.errors import DprivError
from dpriv.inputs import HistoryInput, attack_history
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.sources import AdversaryKnowledge


@dataclass
class AttackShare:
    """The reading and the deductions of the attacks it is passed to (module doc).

    It serves one (ledger, history, policy, knowledge, corpus): an attack with other arguments
    (other objects, another path, or the ledger since committed more) reads afresh and the
    share starts over with it; one of another knowledge (or corpus) only takes the releases
    already read (:func:`dpriv.attack_input.with_knowledge`: ``dpriv experiment paper`` attacks
    each ledger with four knowledge kinds), its tables and deductions computed afresh. The
    history must not be changed in place between the attacks.

    Attributes
    ----------
    reads : int
        How often the releases were read (1 after two attacks of the same ledger, history and
        policy, whatever their knowledge).
    """

    reads: int = 0
    _args: tuple = field(default=(), repr=False)  # the arguments read, kept so that their ids stay theirs
    _committed: list = field(default_factory=list, repr=False)
    _input: AttackInput | None = field(default=None, repr=False)
    _observed: tuple[MarkovTables, list[ObservedRelease]] | None = field(default=None, repr=False)
    _masks: dict[bool, MasksAsOf] = field(default_factory=dict, repr=False)

    def input(
        self,
        ledger: Ledger | str | Path,
        history: HistoryInput,
        policy: ReleasePolicy | dict | None,
        knowledge: str | AdversaryKnowledge,
        corpus: pd.DataFrame | None,
    ) -> AttackInput | None:
        """:func:`read_attack` of the arguments (normalised as :func:`dpriv.attack.attack` says;
        its errors), or what an earlier call of the same arguments read."""
        args = (ledger, history, policy, knowledge, corpus)
        same = bool(self._args) and self._committed == _committed(ledger)
        if same and _same_args(self._args, args):
            return self._input
        if same and self._input is not None and _same_args(self._args, args, knowledge=False):
            inp = with_knowledge(self._input, knowledge, corpus)  # the same releases, not read again
        else:
            history, policy = attack_history(history, attack_policy(ledger, policy, history))  # as released
            inp = read_attack(ledger, history, policy, knowledge, corpus)
            self.reads += 1
            self._committed = _committed(ledger)
        self._args, self._input = args, inp
        self._observed, self._masks = None, {}  # the tables, and so the deductions, are the knowledge's
        return inp

    def observed(self, inp: AttackInput) -> tuple[MarkovTables, list[ObservedRelease]]:
        """The adversary's tables at the last release (:func:`last_tables`) and what it observes
        of each release (:func:`observed_releases`) of ``inp``, the input :meth:`input` returned."""
        if inp is not self._input:
            raise ValueError("AttackShare takes the input its own input() returned")
        if self._observed is None:
            tables = last_tables(inp.reads, inp.history, inp.policy, inp.adv)
            self._observed = (tables, observed_releases(inp.reads, inp.policy, tables.classes))
        return self._observed

    def masks(self, inp: AttackInput, attendance: float | None) -> MasksAsOf:
        """The deduction masks of ``inp`` (the input :meth:`input` returned) known to an
        adversary of that ``attendance``, started from the masks of an earlier attack
        (:class:`MasksAsOf` ``start``) of the same presence channel, else of none."""
        from dpriv.adversary.deductions import presence_known

        tables, observed = self.observed(inp)
        presence = presence_known(attendance)
        start = self._masks.get(presence, self._masks.get(False))
        masks = MasksAsOf(observed, tables, attendance, start=start)
        self._masks[presence] = masks  # (the deductions it takes over stay reachable through it)
        return masks


def _committed(ledger: Ledger | str | Path) -> list[dict[str, Any]] | None:
    """The ledger's committed releases (a release committed since changes the key); None when
    they cannot be read now (then the attack reads afresh, and raises what it raises)."""
    try:
        return as_ledger(ledger, "attack").committed()
    except (DprivError, OSError):
        return None


def _same_args(held: tuple, args: tuple, *, knowledge: bool = True) -> bool:
    """The same ledger (folder), the same history, knowledge and corpus objects (or knowledge
    name), an equal policy; ``knowledge=False``: whatever the knowledge and corpus (the same
    reading of the releases)."""
    (led, hist, pol, know, corpus), (led2, hist2, pol2, know2, corpus2) = held, args
    if not isinstance(led2, Ledger | str | Path):  # refused by the attack itself
        return False
    root = [Path(x.root if isinstance(x, Ledger) else x).resolve() for x in (led, led2)]
    same_know = know is know2 or (isinstance(know, str) and know == know2)
    same_know = (same_know and corpus is corpus2) or not knowledge
    return root[0] == root[1] and hist is hist2 and same_know and pol == pol2

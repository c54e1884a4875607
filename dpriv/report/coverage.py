"""Which releases of a ledger the attack results that ``dpriv report`` shows cover.

``dpriv attack`` writes ``attack/gain_<knowledge>.csv`` (``retro_<knowledge>.csv`` for the
retrospective adversary) for the releases committed when it ran: a release committed since has
no result until the attack runs again. The report says so, next to the results and on the
terminal (:meth:`AttackResults.notes`), and shows such a release as missing. A result naming a
release the ledger does not hold is not this ledger's (an attack of another ledger, or of one
made again since): it is refused (:func:`dpriv.attack_stamp.check_held`), not shown as if its
other figures were of these releases; so is a result computed on other releases under the same
indices (:func:`dpriv.attack_stamp.check_same_releases`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpriv.attack_files import AGAIN, GAIN_FILE, NOT_OURS, RETRO_FILE, results_folder
from dpriv.attack_stamp import check_held, check_same_releases
from dpriv.ledger import ATTACK_DIR, Ledger
from dpriv.report.explain import knowledge_key
from dpriv.report.gains import gain_curves
from dpriv.report.tail import retro_results
from dpriv.rows import spans

#: Where the examples of the report's notes write and read the gains (``attack/gain_dk.csv``), and
#: the name of any knowledge's gain file.
GAIN_DK = f"{ATTACK_DIR}/{GAIN_FILE.format(name='dk')}"
GAIN_ANY = f"{ATTACK_DIR}/{GAIN_FILE.format(name='<knowledge>')}"


def _releases(indices: list[int]) -> str:
    """``"no release"``, ``"release 5"``, ``"releases 1..4"``."""
    if not indices:
        return "no release"
    return f"release{'s' if len(indices) > 1 else ''} {spans(indices)}"


def knowledge_arg(name: str) -> str:
    """The ``--knowledge`` of ``dpriv attack`` that wrote ``gain_<name>.csv``: ``snapshot:dk``
    for ``snapshot+dk``, ``spm:PATH`` for ``spm``; ``KNOWLEDGE`` for a name it does not write."""
    spec = name.replace("+", ":")
    key = knowledge_key(spec)
    return "spm:PATH" if key == "spm" else spec if key else "KNOWLEDGE"


@dataclass(frozen=True)
class AttackResults:
    """The attack results of a ledger of ``held`` committed releases: the gain curves
    (:func:`dpriv.report.gains.gain_curves`; ``passed``: the names passed in, not read from
    ``attack/``) and the retrospective results (:func:`dpriv.report.tail.retro_results`)."""

    held: int
    curves: Mapping[str, pd.DataFrame]
    retros: Mapping[str, pd.DataFrame]
    passed: frozenset[str] = frozenset()

    def covered(self, name: str, *, retro: bool = False) -> list[int]:
        """The releases a result covers: a gain curve's releases; a retrospective result's
        releases as of its last as-of release."""
        frame = self.retros[name] if retro else self.curves[name]
        if retro and len(frame):
            frame = frame[frame["as_of"] == frame["as_of"].max()]
        return sorted({int(r) for r in frame["release"]})

    def missing(self, name: str, *, retro: bool = False) -> list[int]:
        """The ledger's releases the result does not cover."""
        have = set(self.covered(name, retro=retro))
        return [i for i in range(1, self.held + 1) if i not in have]

    def coverage(self, name: str, *, retro: bool = False) -> str:
        """``"releases 1..4 of 5"``."""
        return f"{_releases(self.covered(name, retro=retro))} of {self.held}"

    def notes(self, ledger: str = "LEDGER") -> list[str]:
        """One sentence per result that misses releases of the ledger: which it covers and the
        command that brings it up to date (``ledger``: the ledger as the command names it)."""
        out = []
        for name in self.curves:
            if missing := self.missing(name):
                if name in self.passed:
                    out.append(
                        f"the gains passed for {name!r} cover {self.coverage(name)}: attack the ledger "
                        f"again (dpriv.attack.attack) to include {_releases(missing)}"
                    )
                    continue
                command = f"dpriv attack {ledger} --history HISTORY --knowledge {knowledge_arg(name)}"
                out.append(
                    f"the attack results {ATTACK_DIR}/{GAIN_FILE.format(name=name)} cover "
                    f"{self.coverage(name)}: run `{command}` again to include {_releases(missing)}"
                )
        for name in self.retros:
            if missing := self.missing(name, retro=True):
                command = (
                    f"dpriv attack {ledger} --history HISTORY --knowledge {knowledge_arg(name)} "
                    "--adversary retrospective"
                )
                as_of = self.covered(name, retro=True)
                out.append(
                    f"the retrospective attack results {ATTACK_DIR}/{RETRO_FILE.format(name=name)} cover "
                    f"{self.coverage(name, retro=True)}"
                    + (f" (as of release {max(as_of)})" if as_of else "")
                    + f": run `{command}` again to include {_releases(missing)}"
                )
        return out


def attack_results(
    led: Ledger, gains: Mapping[str, pd.DataFrame] | None = None, attack_dir: str | Path | None = None
) -> AttackResults:
    """The gain curves (``gains`` passed in win over ``attack/gain_<knowledge>.csv``) and the
    retrospective results of ``led``, read from ``attack_dir`` instead of ``attack/`` when given
    (:func:`dpriv.attack_files.results_folder`). InputError for a result that names a release
    ``led`` does not hold (:func:`dpriv.attack_stamp.check_held`) or that cannot be read."""
    curves = gain_curves(led, gains, attack_dir)
    folder = results_folder(led, attack_dir)
    retros = retro_results(folder.path)
    held = len(led.committed())
    for name, frame in retros.items():
        where = f"the results in {folder.label}{RETRO_FILE.format(name=name)}"
        check_held(frame, held, led.root, where, NOT_OURS)
        check_same_releases(frame, led, where, NOT_OURS, unstamped=AGAIN)
    return AttackResults(held, curves, retros, frozenset(str(n) for n in gains or ()))

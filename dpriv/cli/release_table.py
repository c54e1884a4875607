"""``dpriv release``'s table on stdout, a row per release as it commits, and its warnings on a
view released empty (:class:`ReleaseTable`, the ``on_release`` of
:func:`dpriv.release.release_history`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from dpriv.cli.common import say_err
from dpriv.cli.effective import EffectivePolicy, inferred_domains
from dpriv.policy import ReleasePolicy
from dpriv.policy_base import record_base
from dpriv.policy_fix import policy_change, relax_hint
from dpriv.rows import spans

#: The release table's columns: header, width, ``metrics.json`` key; ``max_tv`` (RBK-closeness's
#: largest total variation) only when the policy sets ``rbk_closeness``, ``min_l`` (the smallest
#: number of distinct sensitive values of a QI-group) only under ``--method mondrian-l``.
_COLUMNS = (
    ("release", 7, None),
    ("groups", 7, "n_groups"),
    ("suppression", 11, "suppression_rate"),
    ("min_l", 6, "l_achieved"),
    ("max_emd", 8, "t_achieved"),
    ("max_js", 8, "j_achieved"),
    ("max_tv", 8, "rbk_closeness_achieved"),
    ("semi", 8, "average_semiperimeter"),
    ("seconds", 7, "seconds"),
)
#: The columns shown only when asked for, by what asks for them.
_OPTIONAL = {"max_tv": "rbk", "min_l": "mondrian-l"}
#: The column of each criterion a baseline's table measures without bounding it.
_MEASURED = {"t": "max_emd", "j": "max_js"}


def _release_columns(rbk: bool, method: str = "jsreduce") -> list[tuple[str, int, str | None]]:
    shown = {"rbk"} if rbk else set()
    return [c for c in _COLUMNS if _OPTIONAL.get(c[0]) in shown | {None, method}]


def release_header(rbk: bool = False, method: str = "jsreduce") -> str:
    """The table's header line (``max_tv`` with ``rbk``, ``min_l`` under mondrian-l)."""
    return " ".join(f"{h:>{w}}" for h, w, _ in _release_columns(rbk, method))


def measured_note(method: str) -> str | None:
    """The note under a baseline's table header: which of its columns (max_emd, max_js) are
    measured but not bounded by the method (t and j are JS-reduce's criteria); None for JS-reduce
    and for a method that bounds both."""
    from dpriv.criteria import unpromised

    free = [name for name in unpromised(method) if name in _MEASURED]
    if not free:
        return None
    cols = " and ".join(_MEASURED[name] for name in free)
    names = " and ".join(free)
    return (
        f"note: {cols} {'are' if len(free) > 1 else 'is'} measured, not bounded: method {method} does "
        f"not promise {names} (it promises {', '.join(promised_names(method))}; docs/policy.md)"
    )


def promised_names(method: str) -> tuple[str, ...]:
    """The criteria ``method`` promises (:func:`dpriv.criteria.promised`), (B,t)-privacy for
    mondrian-bt, whose grouping holds it though no metric measures it."""
    from dpriv.criteria import promised

    return (*promised(method), "(B,t)") if method == "mondrian-bt" else promised(method)


def release_table_row(index: int, m: Mapping[str, Any], rbk: bool = False, method: str = "jsreduce") -> str:
    """Release ``index``'s row of the table from its metrics ``m`` (seconds: their sum over steps)."""
    f = lambda v, p=4: "-" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))  # noqa: E731
    secs = sum(m["seconds"].values()) if isinstance(m.get("seconds"), dict) else m.get("seconds")
    cells = {None: f(index), "seconds": f(secs, 2)}
    return " ".join(
        f"{cells[key] if key in cells else f(m.get(key)):>{w}}" for _, w, key in _release_columns(rbk, method)
    )


class ReleaseTable:
    """The ``on_release`` of ``dpriv release``: the header with the first row (nothing on stdout
    before the checks pass, then the domains the ledger inferred), a row per release and a
    warning for a view released empty; ``released``: the releases it printed.

    ``held``: the last release the ledger held before the command (0: none), so that
    :meth:`committed` names the last commit the command saw (an interrupt or a lost worker);
    ``planned``: the releases the command is to make (:meth:`plan`, the ``on_start`` of
    ``release_history``; None before its checks passed)."""

    def __init__(self, ledger: Path, eff: EffectivePolicy, policy: ReleasePolicy, held: int) -> None:
        self.ledger, self.eff, self.policy, self.held = ledger, eff, policy, held
        self.rbk = policy.rbk_closeness is not None
        self.method = eff.method
        self.released: list[int] = []
        self.planned: list[int] | None = None
        self.small: list[int] = []  # released fully suppressed: fewer tuples than k (small_view)

    def plan(self, indices: list[int]) -> None:
        """The ``on_start`` of ``release_history``: the releases this command is to make."""
        self.planned = list(indices)

    def catch_up(self, last: int) -> None:
        """Print the rows of the releases up to ``last`` committed by this command but not printed
        (a cluster lost between a commit and its row), read from their ``metrics.json``."""
        from dpriv.ledger import Ledger

        led = Ledger(self.ledger)
        for i in [i for i in self.planned or [] if self.committed() < i <= last]:
            self(i, led.read_metrics(i))

    def all_committed(self, last: int) -> bool:
        """Whether every release the command was to make is committed once ``last`` is."""
        return self.planned is not None and all(i <= last for i in self.planned)

    def __call__(self, i: int, m: Mapping[str, Any]) -> None:
        pol = self.policy
        if not self.released:  # the header with the first row: nothing on stdout before the checks pass
            from dpriv.ledger import Ledger

            for note in inferred_domains(pol, Ledger(self.ledger).policy(), self.held):
                say_err(note)
            typer.echo(release_header(self.rbk, self.method))
            if note := measured_note(self.method):
                say_err(note)
        self.released.append(i)
        if self.eff.origin.startswith("file"):  # the folder of --policy FILE, for a run without it
            record_base(self.ledger, pol.base_dir)
        typer.echo(release_table_row(i, m, self.rbk, self.method))
        if m.get("small_view") == "suppressed":
            self.small.append(i)
            say_err(
                f"warning: release {i} has {m.get('n_original')} tuple(s), fewer than k = {pol.k}: "
                'released fully suppressed (small_view = "suppress")'
            )
        elif m.get("n_groups") == 0:
            say_err(
                f"warning: release {i} suppressed every tuple (nothing published): "
                + policy_change(relax_hint(pol), i)
            )

    def summary(self) -> str | None:
        """The closing line on the releases this command published nothing of, being smaller than k
        (``small_view = "suppress"``); None when there is none."""
        if not self.small:
            return None
        why = f'fewer tuples than k = {self.policy.k}, released fully suppressed (small_view = "suppress")'
        if self.small == self.released:
            return f"published nothing: every release of this run ({spans(self.small)}) had {why}"
        return f"published nothing of release(s) {spans(self.small)}: {why}"

    def committed(self) -> int:
        """The last commit the command saw (the manifest, when readable, is read first)."""
        return self.released[-1] if self.released else self.held

"""The values ``dpriv anonymize`` recorded beside a released file (``OUT.metrics.json``: its
method, the method's parameters, the anonymity parameters; :mod:`dpriv.cli.verify_files`) and
the policy ``dpriv verify`` holds the file to.

A value asked (a flag, or the ``--policy`` file) is measured as asked: ``--k 8`` of a file made
with k 7 asks whether it is 8-anonymous, a legitimate question, and the answer (ok, or FAIL)
comes with the recorded value printed beside it, ``checked at: k 8 (asked by --k 8; the file
was made with k 7, recorded in OUT.metrics.json)``. A value not asked is the recorded one (a file made
with ``--k 7`` is checked at k 7, not the default 5): flag > policy file > recorded > default.
A method other than the recorded one is refused: it is a different check (other criteria),
not a stricter one. A ledger's release (``verify --ledger``) is held to the ledger's
``policy.json`` alike (:func:`held_to_ledger`): flags and a policy file over it are measured, the
recorded values said beside them, and a value neither gives is the ledger's, not the default."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import typer

if TYPE_CHECKING:
    from pathlib import Path

    from dpriv.cli.effective import EffectivePolicy
    from dpriv.cli.verify_files import Recorded
    from dpriv.policy import ReleasePolicy


class Asked(NamedTuple):
    """A policy value asked (by a flag or the policy file, ``source``) other than the one the
    release recorded: the view is checked at ``asked``; ``recorded`` is printed beside it."""

    name: str
    asked: Any
    recorded: Any
    source: str  # "flag" or "file"


def asked_over(eff: EffectivePolicy, recorded: dict[str, Any]) -> tuple[Asked, ...]:
    """The values of ``eff`` asked (a flag, the policy file) other than ``recorded``'s."""
    return tuple(
        Asked(name, getattr(eff.policy, name), value, eff.sources[name])
        for name, value in recorded.items()
        if eff.sources.get(name, "default") in ("flag", "file") and getattr(eff.policy, name) != value
    )


#: The thresholds verify names in its notes without checking them (they need the members' priors).
NOTED = ("j", "rbk_closeness", "posterior_bound")


def held_to_ledger(eff: EffectivePolicy, recorded: ReleasePolicy, method: str) -> tuple[Asked, ...]:
    """The values asked of a ledger's release (``verify --ledger``: flags over its policy.json,
    or a policy file's) other than those of the ``recorded`` policy it was released under, of
    the fields its ``method`` is held to (:func:`dpriv.cli.verify_files.anonymity_fields` and the
    method's own): measured as asked, as for a file, and said beside the recorded ones. Those
    fields (and :data:`NOTED`) that a policy file leaves out are set in ``eff`` to the recorded
    ones (source "ledger"): a file of columns only checked a t 0.45 release at the default 0.3."""
    from dpriv.cli.verify_files import anonymity_fields
    from dpriv.policy_keys import BASELINE_FIELDS

    fields = (*BASELINE_FIELDS.get(method, ()), *anonymity_fields(method))
    asked = asked_over(eff, {name: getattr(recorded, name) for name in fields})
    unsaid = {name: getattr(recorded, name) for name in (*fields, *NOTED) if name not in eff.sources}
    if unsaid:
        eff.policy = eff.policy.with_overrides(**unsaid)
        eff.sources.update({name: "ledger" for name, value in unsaid.items() if value is not None})
    return asked


class HeldTo(NamedTuple):
    """What a released file is held to: the method recorded beside it (None: none recorded)
    and the values asked other than the recorded ones (empty: none)."""

    method: str | None
    asked: tuple[Asked, ...] = ()


def held_to_record(eff: EffectivePolicy, found: Recorded | None, method: str | None, released: str) -> HeldTo:
    """Set in ``eff`` the values recorded in ``found`` (:func:`dpriv.cli.verify_files.recorded_beside`)
    that neither a flag nor the policy file gives (their source printed as the metrics file) and
    return the recorded method with the values asked otherwise (:class:`Asked`: measured as asked).

    Raises InputError when ``method`` (``--method``) is another than the recorded one (naming
    both), or when a recorded value, asked over or not, is no valid policy value (the file was
    edited: k 0 is no release's)."""
    from dpriv.errors import InputError, PolicyError

    if found is None or found.method is None:
        return HeldTo(None)
    if method is not None and method != found.method:
        raise InputError(
            f"--method {method}: {found.path} records that {released} was made with "
            f"--method {found.method}; leave --method out (the recorded method is used)"
        )
    recorded = {**found.parameters, **found.anonymity}
    asked = asked_over(eff, recorded)
    unsaid = {name: value for name, value in recorded.items() if name not in eff.sources}
    eff.sources.update(dict.fromkeys(unsaid, f"recorded in {found.path.name}"))
    try:
        eff.policy.with_overrides(**recorded)  # the record itself, values asked over included
    except PolicyError as exc:  # e.g. k 0: no release records it
        raise InputError(
            f"{found.path} lies beside {released} but records parameters no release has "
            f"({exc}): it was damaged or edited; restore it as dpriv wrote it, or move it away"
        ) from None
    if unsaid:
        eff.policy = eff.policy.with_overrides(**unsaid)
    return HeldTo(found.method, asked)


def say_recorded(found: Recorded, asked: tuple[Asked, ...], policy_file: Path | None) -> None:
    """The recorded tuple count, method and parameters (stdout), then the values asked other
    than recorded (:func:`say_asked`)."""
    typer.echo(f"  recorded: n_released {found.n_released} ({found.path})")
    if found.method is not None:
        said = ", ".join(f"{k} {v}" for k, v in {**found.parameters, **found.anonymity}.items())
        typer.echo(f"  recorded: method {found.method}" + (f" ({said})" if said else ""))
    say_asked(asked, policy_file, "the file was made with", found.path.name)


def say_asked(asked: tuple[Asked, ...], policy_file: Path | None, made: str, where: str) -> None:
    """One line (stdout) per value asked other than recorded: ``checked at: k 8 (asked by --k 8;
    the file was made with k 7, recorded in OUT.metrics.json)`` (``made``: "the file was made
    with", "the ledger released with"; ``where``: the file that records it)."""
    from dpriv.wording import flag_named

    for a in asked:
        by = flag_named(a.name, a.asked) if a.source == "flag" else f"--policy {policy_file}"
        typer.echo(
            f"  checked at: {a.name} {a.asked} (asked by {by}; {made} {a.name} {a.recorded}, "
            f"recorded in {where})"
        )


def asked_note(asked: tuple[Asked, ...], where: Path) -> str:
    """The note after a FAIL of a view checked at values asked other than those ``where``
    records: the failure is the answer to the question asked, not a sign of damage."""
    said = ", ".join(f"{a.name} {a.asked} (made with {a.recorded})" for a in asked)
    return (
        f"note: checked at {said} as asked, not at the values {where} records: a FAIL says the "
        "view does not meet the values asked; without them it is checked at the recorded ones"
    )

"""What ``dpriv verify`` prints once its checks ran: the report's values, the notes on the
figures it cannot check (they need the members' private priors), the FAIL lines and the
hints of what a failed released file may mean."""

from __future__ import annotations

import json
import shlex
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dpriv.cli.common import say_err
from dpriv.cli.verify_files import ledger_release, sensitive_beside

if TYPE_CHECKING:
    from dpriv.anonymity.verify import VerificationReport
    from dpriv.policy import ReleasePolicy


def print_report(
    report: VerificationReport,
    policy: ReleasePolicy,
    method: str,
    *,
    metrics: Path | None,
    released: str | None,
    anatomy: bool,
    unasked: Collection[str] = (),
) -> None:
    """The report's values (stdout), the notes on what is not checked here (stderr; ``metrics``:
    the release's metrics file, whose recorded value they give; ``unasked``: the policy fields
    at their default, no threshold asked), each problem as a FAIL line and, for a failed
    released file (``released``), what the failure may mean."""
    from dpriv.criteria import promised

    held = promised(method, policy.rbk_closeness)
    for key, val in report.to_dict().items():
        if not isinstance(val, list | dict):
            typer.echo(f"{key:>12}: {val}{_unchecked(key, val, method, held)}")
    for name in ("j", "rbk_closeness", "posterior_bound"):
        if getattr(policy, name) is None or (name == "j" and name not in held):
            continue
        recorded = _recorded_value(metrics, f"{name}_achieved")
        if name in unasked:  # the default j is no threshold of this file: the value is no verdict
            say_err(
                f"note: {name} is not checked here (it needs the members' priors, which only the release "
                f"has) and none was asked ([privacy] {name} of a --policy file)"
                + (f"; {recorded}, measured by the release: information, no threshold" if recorded else "")
            )
            continue
        say_err(
            f"note: {name} = {getattr(policy, name)} is not checked here: it needs the members' priors, "
            "which only the release has (it checked them before writing: metrics.json)"
            + (f"; {recorded}" if recorded else "")
        )
    for p in report.problems:  # each kind already capped at 20 lines and a count of the rest
        typer.echo(f"  FAIL {p}")
    if not report.ok and released:
        _hints(Path(released), anatomy, method, report.problems)


def _unchecked(key: str, value: object, method: str, held: tuple[str, ...]) -> str:
    """Why an achieved value printed as None is not known here: ``" (...)"``, or ``""``. The
    value line alone read as a failure, or a bug (a drill: ``j_achieved: None``)."""
    if value is not None:
        return ""
    if key == "j_achieved":  # the verifier has the released groups, not the members' priors
        return (
            " (not checked here: it needs the members' private priors; see the note)"
            if "j" in held
            else f" (not checked: {method} does not promise j)"
        )
    if key in ("k_achieved", "l_achieved", "t_achieved"):
        return " (no QI-group released)"
    return ""


def _recorded_value(metrics: Path | None, key: str) -> str:
    """``"<metrics> records <key> 0.5301"`` when the release's metrics file holds that number
    (what the release checked before writing), else ``""``."""
    try:
        value = json.loads(metrics.read_text(encoding="utf-8")).get(key) if metrics else None
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return f"{metrics} records {key} {value:.4f}"


def _hints(released: Path, anatomy: bool, method: str, problems: list[str]) -> None:
    """What a failed check of a file may mean: a ledger's release (checked under its recorded
    policy and method with --ledger), an Anatomy QI table, another method."""
    lr = ledger_release(released)
    if lr is not None:
        say_err(
            f"note: {released} is release {lr.index} of the ledger {lr.root}: check it under the "
            f"ledger's recorded policy and method with dpriv verify --ledger {shlex.quote(str(lr.root))} "
            f"--view {lr.index} --original HISTORY"
        )
    table = sensitive_beside(released)
    if not anatomy and table.exists():
        say_err(
            f"note: {table} lies beside it: if this is an Anatomy release, "
            "verify it with --release-format anatomy (or the policy it was released under)"
        )
    if method == "jsreduce" and lr is None and any(" > t = " in p for p in problems):
        say_err("note: t is held as JS-reduce promises it; a release of another method: give --method")

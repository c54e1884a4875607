"""``dpriv release``'s run once its policy is known (:func:`run_release`), shared with ``dpriv
demo``: the policy said, the history placed (in process or on a cluster), released into the
ledger with a table row per commit, a refusal given its command-line fix."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from dpriv.cli.common import say_err, show_policy
from dpriv.cli.effective import EffectivePolicy
from dpriv.cli.failures import during_release
from dpriv.cli.policy_flags import with_categorical, with_hierarchies
from dpriv.cli.read_only import ledger_folder_checked, refuse_if_left
from dpriv.cli.release_table import ReleaseTable
from dpriv.errors import InputError, PolicyError
from dpriv.footer_reads import footers_read_once
from dpriv.policy import ReleasePolicy
from dpriv.policy_base import with_hint
from dpriv.policy_fix import with_domain_hint, with_kind_hint, with_new_ledger
from dpriv.wording import flag_named

if TYPE_CHECKING:
    from dpriv.cluster import Placement


@footers_read_once()  # the history's footers: read once by every check of the command
def run_release(
    history_path: str,
    ledger: Path,
    eff: EffectivePolicy,
    scheduler: str | None,
    npartitions: int | None,
    method: str = "jsreduce",
    progress: bool | None = None,
    categorical: str | None = None,
    hierarchy: list[str] | None = None,
    dates: str | None = None,
    cluster: bool | None = None,
    allow_repeated_view: bool = False,
    allow_new_ids: bool = False,
    existing_ledger: bool = False,
    new_ledger_note: str | None = None,
) -> None:
    """``dpriv release`` (and ``dpriv demo``) once the policy is known: the policy said, the history
    placed (in process or on a cluster) and released into ``ledger`` with a table row per commit;
    a refusal gets its command-line fix (:func:`_with_fix`)."""
    from dpriv.io import read_table

    unwritable = ledger_folder_checked(ledger)  # before any work; a ledger it cannot write: below
    frame = read_table(history_path, id_column=eff.policy.id, what="history")
    pol = _said_policy(frame, eff, method, categorical, dates, hierarchy)
    from dpriv.cluster import ledger_start, release_frame

    # checked before any cluster; a cluster only when asked for or when a view is too large to
    # release in process (a small history is read once, here)
    start = ledger_start(ledger, pol.id) if ledger.is_dir() else None
    held = max(start.committed, default=0) if start else 0
    placement = _placed(frame, pol, history_path, scheduler, cluster, start)
    refuse_if_left(unwritable, placement.frame, pol.time, start.committed if start else frozenset())
    from dpriv import steps
    from dpriv.input_checked import held_until_checked
    from dpriv.release import release_history

    steps.SHOW_PROGRESS = sys.stderr.isatty() if progress is None else progress
    table = ReleaseTable(ledger, eff, pol, held)
    # on a cluster: persisted on the workers, each view a filter of it, never collected; in
    # process, the status line is said once the input passed release_history's checks
    with (
        during_release(ledger, table, scheduler),  # a lost worker or scheduler: exit 3, named
        held_until_checked(say_err) if placement.place == "process" else nullcontext(say_err) as say,
        release_frame(placement, scheduler=scheduler, say=say, named=flag_named) as history,
    ):
        if new_ledger_note:  # in process: held until the input passed its checks
            say(new_ledger_note)
        try:
            release_history(
                history, pol, ledger, npartitions=npartitions, on_release=table, on_start=table.plan,
                method=method, allow_repeated_view=allow_repeated_view, allow_new_ids=allow_new_ids,
                existing_ledger=existing_ledger,
            )  # fmt: skip
        except (PolicyError, InputError) as exc:
            raise _with_fix(exc, eff, held) from None
    if not table.released:
        from dpriv.ledger import Ledger

        typer.echo(f"nothing to release: the ledger already holds releases 1..{Ledger(ledger).last_index()}")
    if note := table.summary():  # small views released empty: said again where the run's outcome is read
        typer.echo(note)
    typer.echo(f"ledger: {ledger} (releases/<i>/view.parquet are public; state/ is sensitive)")


def _said_policy(
    frame: Any,
    eff: EffectivePolicy,
    method: str,
    categorical: str | None,
    dates: str | None,
    hierarchy: list[str] | None,
) -> ReleasePolicy:
    """The policy the release of history ``frame`` uses, said on stderr (every value and its
    source, the method, the history's unused columns and its date hints)."""
    from dpriv.input_checks import date_hints_of
    from dpriv.input_columns import said_unused, unused_note

    pol = show_policy(eff)
    say_err(f"  method: {method}")
    pol = with_hierarchies(with_categorical(pol, categorical, dates), hierarchy)
    unused = unused_note(frame.columns, pol, flag_named)
    if unused:
        say_err(unused)
        said_unused()
    for hint in date_hints_of(frame, pol):  # as anonymize says it (its notes)
        say_err(hint)
    return pol


def _placed(
    frame: Any, pol: ReleasePolicy, source: str, scheduler: str | None, cluster: bool | None, start: Any
) -> Placement:
    """Where the release runs (:func:`dpriv.cluster.release_place`: in this process or on a
    cluster); a history small enough to be read here is checked whole (a gap refused before the
    status line counts the views left)."""
    from dpriv.cluster import release_place
    from dpriv.input_checks import check_history

    placement = release_place(
        frame, pol, scheduler=scheduler, cluster=cluster, start=start, source=source, named=flag_named
    )
    if placement.size is not None and placement.size.small:  # read here, cheap to check whole:
        check_history(placement.frame, pol)  # a gap refused before the status line counts views left
    return placement


def _with_fix(exc: PolicyError | InputError, eff: EffectivePolicy, held: int) -> Exception:
    """A refused release's error with its fix for the command line: a recorded policy's
    knowledge path (the fix is --policy), a policy change (a new ledger once ``held`` > 0
    releases are in it), a week outside the domains (or kinds) the ledger keeps."""
    if isinstance(exc, PolicyError):
        if eff.origin.startswith("ledger") and "knowledge" in str(exc):
            return with_hint(exc)
        return with_new_ledger(exc, held)
    return with_kind_hint(with_domain_hint(exc, held), held)

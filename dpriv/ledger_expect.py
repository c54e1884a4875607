"""What a scheduled run expects of the ledger it resumes (docs/ledger.md#scheduled-runs).

A weekly job names its ledger by a path that may not be there this week: a share not mounted,
``$LEDGER`` unset. Without a check the release starts a new ledger there, releases every week
again from view 1 and leaves the sensitive ``state/`` on whatever disk holds that path. And a
history export that failed upstream leaves last month's file, which holds fewer views than the
ledger: "nothing to release" then reads as success.

:func:`new_ledger_note` says, for every release, that a new ledger is started;
``existing_ledger`` (``dpriv release --existing-ledger``, ``release_history(...,
existing_ledger=True)``) makes a run refuse a ledger that holds no committed release
(:func:`check_existing`) and such a history (:func:`check_stale`; otherwise a warning).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dpriv.errors import InputError, LedgerError
from dpriv.ledger_manifest import MANIFEST, read_manifest
from dpriv.user_warning import warn_user
from dpriv.wording import Named, argument_named


def new_ledger_note(ledger: Path) -> str | None:
    """The note a release prints when it starts a new ledger at ``ledger`` (no ``manifest.json``
    there: a missing or empty folder); None for an existing ledger."""
    if (ledger / MANIFEST).is_file():
        return None
    return f"note: starting a new ledger at {ledger} (no {MANIFEST} there): releases from view 1"


def _held(ledger: Path) -> list[int]:
    """The indices of the ledger's committed releases; [] when there is no manifest."""
    if not (ledger / MANIFEST).is_file():
        return []
    return [int(r["index"]) for r in read_manifest(ledger)["releases"]]


def absence(ledger: Path) -> str | None:
    """Why ``ledger`` is no ledger, in words that follow its path ("does not exist", "is an
    empty folder", ...); None when it holds a ``manifest.json``."""
    if (ledger / MANIFEST).is_file():
        return None
    if not ledger.exists():
        return "does not exist"
    if not ledger.is_dir():
        return "is a file, not a ledger folder"
    return "is an empty folder" if not any(ledger.iterdir()) else f"is not a ledger (no {MANIFEST})"


def check_existing(ledger: Path, named: Named = argument_named) -> None:
    """LedgerError (before any work: nothing written) unless ``ledger`` holds at least one
    committed release: what ``existing_ledger`` (``named`` as the caller gave it) asks for. The
    message names the path, what is there and how the first release is run."""
    if _held(ledger):
        return
    what = absence(ledger) or "is a ledger that holds no committed release"
    flag = named("existing_ledger", True)
    raise LedgerError(
        f"{flag}: the ledger {ledger} {what}: nothing was written. Is its file system mounted, is the "
        f"path (an environment variable) set? A new ledger's first release is run without {flag}"
    )


def stale_history(views: Sequence[int], held: Sequence[int]) -> str | None:
    """The warning for a history whose last view (``views``: its release indices) comes before
    the ledger's last committed release (``held``): an old export where this week's was
    expected. None otherwise (last week's file again is a retry: nothing to say)."""
    if not views or not held or max(views) >= max(held):
        return None
    return (
        f"the history's views stop at {max(views)} but the ledger already holds releases "
        f"1..{max(held)}: is it an old or incomplete export? No new week arrived"
    )


def check_stale(ledger: Path, views: Sequence[int], existing: bool) -> None:
    """:func:`stale_history` of ``views`` (the history's release indices) against the ledger at
    ``ledger``: InputError with ``existing`` (a scheduled run expected a new week), else a
    UserWarning naming the user's line (a ``dpriv`` command prints it as ``warning: ...``)."""
    held = _held(ledger)
    warning = stale_history(views, held)
    if warning and existing:
        raise InputError(
            f"{warning}; nothing was released: give the history that holds view {max(held) + 1} "
            "(dpriv release --existing-ledger, release_history(..., existing_ledger=True), refuses a "
            "history older than the ledger)"
        )
    if warning:
        warn_user(warning)

"""``dpriv release``'s word on a new ledger: a note, or with ``--existing-ledger`` a refusal."""

from __future__ import annotations

from pathlib import Path

from dpriv.cli.read_only import ledger_folder_checked
from dpriv.ledger_expect import check_existing, new_ledger_note
from dpriv.ledger_files import check_place
from dpriv.wording import flag_named


def checked_ledger(ledger: Path, existing: bool) -> str | None:
    """:func:`~dpriv.cli.read_only.ledger_folder_checked`, before any work. With ``existing``
    (``--existing-ledger``) first LedgerError (exit 2, nothing written) unless ``ledger`` holds a
    committed release (:func:`dpriv.ledger_expect.check_existing`): a missing folder is named as
    such, not as a folder dpriv cannot write in. Otherwise the ``note:`` line to say when the
    release starts a new ledger there (a missing or empty folder; None else): said once the
    input passed its checks, as the status line is, so a refused command prints its error alone."""
    if existing and ledger is not None:
        check_place(ledger, "--ledger", create=False)  # a URL: named as without the flag
        check_existing(ledger, flag_named)
    ledger_folder_checked(ledger)  # a ledger it cannot write: refused later, if it has work
    return new_ledger_note(ledger)

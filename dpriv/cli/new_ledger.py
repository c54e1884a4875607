"""``dpriv release``'s word on a new ledger: a note, or with ``--existing-ledger`` a refusal."""

from __future__ import annotations

from pathlib import Path

from dpriv.cli.common import _say
from dpriv.cli.read_only import ledger_folder_checked
from dpriv.ledger_expect import check_existing, new_ledger_note
from dpriv.ledger_files import check_place
from dpriv.wording import flag_named


def checked_ledger(ledger: Path, existing: bool) -> None:
    """:func:`~dpriv.cli.read_only.ledger_folder_checked`, before any work. With ``existing``
    (``--existing-ledger``) first LedgerError (exit 2, nothing written) unless ``ledger`` holds a
    committed release (:func:`dpriv.ledger_expect.check_existing`): a missing folder is named as
    such, not as a folder dpriv cannot write in. Otherwise one ``note:`` line on stderr when the
    release starts a new ledger there (a missing or empty folder)."""
    if existing and ledger is not None:
        check_place(ledger, "--ledger", create=False)  # a URL: named as without the flag
        check_existing(ledger, flag_named)
    ledger_folder_checked(ledger)  # a ledger it cannot write: refused later, if it has work
    if note := new_ledger_note(ledger):
        _say(note)

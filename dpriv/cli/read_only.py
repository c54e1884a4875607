"""``dpriv release`` on a ledger it cannot write (a read-only copy, an archive mount): refused
before any work when the history has a view left to release, but checked like any other run
when every view is committed already, since that run writes nothing: exit 0, "nothing to
release", as on a writable ledger (an operator's drill, s36: it was exit 2, "cannot write")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.cli.outputs import check_ledger_folder, check_writable
from dpriv.errors import InputError
from dpriv.ledger_manifest import MANIFEST


def ledger_folder_checked(ledger: Path | None) -> InputError | None:
    """:func:`dpriv.cli.outputs.check_ledger_folder`, but for a ledger (a folder holding
    ``manifest.json``) this process cannot write in, its refusal is returned, not raised, for
    :func:`refuse_if_left` to raise once the history's views are known."""
    try:
        check_ledger_folder(ledger)
    except InputError as exc:  # only the writing probe raises an InputError
        if ledger is not None and (ledger / MANIFEST).is_file():
            try:  # the probe again, for the advice that fits a ledger holding releases
                check_writable(ledger, "--ledger", existing_ledger_fix(ledger))
            except InputError as refusal:
                return refusal
            return exc
        raise
    return None


def existing_ledger_fix(ledger: Path) -> str:
    """What to do when the existing ``ledger`` cannot be written: make its folder writable, or
    release in a copy of the whole folder. "Choose a folder you can write to" started a second
    ledger, which releases every view again and holds a second copy of the sensitive state/
    (a fresh user's drill, s40); a new ledger's folder keeps that advice."""
    return (
        "make the ledger's folder writable and run the same command again (the ledger keeps its last "
        f"committed release: dpriv status {ledger}), or copy the whole ledger folder somewhere writable "
        f"(cp -a {ledger} COPY) and release with --ledger COPY; not a new --ledger folder: a new ledger "
        "would release every view again"
    )


def refuse_if_left(
    refusal: InputError | None, history: pd.DataFrame, time: str | None, committed: frozenset[int]
) -> None:
    """Raise ``refusal`` (the ledger cannot be written) when ``history`` holds a view (a value of
    its ``time`` column; None: one view, 1) that is not among the ledger's ``committed``
    releases: that run would write. A value that is no release index counts as left."""
    if refusal is None:
        return
    if time is None or time not in history.columns:
        raise refusal
    views = history[time].drop_duplicates()
    values = (views.compute() if is_dask(views) else views).tolist()
    if not all(isinstance(v, int) and v in committed for v in (_whole(v) for v in values)):
        raise refusal


def _whole(value: object) -> object:
    """A numpy integer as a Python int (``frozenset`` of ints holds ``1``, not ``np.int64(1)``);
    anything else as it is."""
    import numbers

    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value

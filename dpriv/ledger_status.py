"""What a ledger holds, read only: for monitoring and a scheduled job's pre-flight
(``dpriv status LEDGER``, docs/ledger.md#status).

Every figure comes from the ledger's own readers: :class:`~dpriv.ledger.Ledger` (the manifest,
its entries checked), :func:`~dpriv.ledger_checks.check_ledger_whole` (each committed release's
files whole and as the manifest recorded them) and :meth:`~dpriv.ledger.Ledger.check_policy_file`.
Nothing is written, created or removed; no id and no sensitive value is read into a message.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from dpriv.errors import LedgerError
from dpriv.ledger import Ledger
from dpriv.ledger_checks import check_ledger_whole
from dpriv.ledger_expect import absence
from dpriv.ledger_files import ATTACK_DIR, LOCK, is_temp
from dpriv.ledger_manifest import MANIFEST, recorded_digest
from dpriv.ledger_written import WRITTEN


@dataclass(frozen=True)
class LedgerStatus:
    """``releases``: the committed indices (1..n); ``committed_at``: when ``manifest.json`` was
    last written (the last commit; None with no release), UTC; ``policy_sha256``: the digest the
    manifest records (None: none yet, or a ledger from before digests); ``writing``: another
    command holds the ledger's lock now; ``leftovers``: paths (relative to the ledger) of a
    release not committed (``releases/<n+1>/``, ``state/<n+1>/``, :data:`WRITTEN`, temp files),
    which the next ``dpriv release`` removes when dpriv wrote them."""

    releases: list[int]
    committed_at: datetime.datetime | None
    policy_sha256: str | None
    writing: bool
    leftovers: list[str]


def _writing(root: Path) -> bool:
    """Whether a writer holds ``.dpriv-lock`` (:func:`dpriv.ledger_files.hold_lock`): probed with a
    shared lock dropped at once, on the file only if it exists (a reader creates nothing)."""
    try:
        fd = os.open(root / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # no lock file (no writer yet), or not a file: no writer holds it
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)


def _leftovers(led: Ledger, last: int) -> list[str]:
    root = led.root
    found = [root / WRITTEN] if (root / WRITTEN).exists() else []
    for folder in (led.release_dir(last + 1), led.state_dir(last + 1)):
        if folder.is_dir():
            found += sorted(folder.rglob("*"))
    found += sorted(
        p for p in root.rglob(".*") if is_temp(p) and p.relative_to(root).parts[0] != ATTACK_DIR
    )  # the attack results' own temp files are a running attack's: not the ledger's
    return sorted({str(p.relative_to(root)) for p in found if not p.is_dir() or is_temp(p)})


def ledger_status(root: str | Path) -> LedgerStatus:
    """The :class:`LedgerStatus` of the ledger at ``root``, once it reads as valid. LedgerError
    when it is no ledger (missing, no ``manifest.json``, a malformed manifest) or is damaged: a
    committed release's file missing, truncated or edited, ``policy.json`` or the last state
    changed (the message names the file and what to do)."""
    if why := absence(Path(root)):  # said as --existing-ledger says it
        raise LedgerError(f"{root} {why}: give the folder of a ledger (the one that holds its {MANIFEST})")
    led = Ledger(root)  # LedgerError: a malformed manifest
    manifest = led.manifest()
    releases = [int(e["index"]) for e in manifest["releases"]]
    digest = recorded_digest(manifest, led.root)
    writing = _writing(led.root)
    leftovers = _leftovers(led, max(releases, default=0))
    led.check_policy_file()
    check_ledger_whole(led, state=True)  # every committed release whole, the last state's parts
    when = None
    if releases:
        mtime = (led.root / MANIFEST).stat().st_mtime
        when = datetime.datetime.fromtimestamp(mtime, datetime.UTC).replace(microsecond=0)
    return LedgerStatus(releases, when, digest, writing, leftovers)

"""Temp files of an output file left by a writer that was killed outright (SIGKILL, a crash, a
power cut), named when the file is written again, never removed (an operator's drill, s36).

Every other ending of a write (an error, Ctrl-C, SIGTERM) removes its temp file
(:func:`dpriv.io.atomic_write`); a killed one leaves ``.<name>.<8 random characters>.dpriv-tmp``
beside ``<name>``, in the user's folder. dpriv removes only files the same command created
(inside a ledger, :func:`dpriv.ledger_files.remove_temp` and ``writing_results`` clean up
under the ledger's or its ``attack/`` folder's lock): here a file of that name might be another
command's, writing the same output now, so it is named for the user to delete.
"""

from __future__ import annotations

import re
from pathlib import Path

from dpriv.io import TEMP_SUFFIX
from dpriv.user_warning import warn_user


def stale_temps(path: Path) -> list[Path]:
    """The temp files of ``path`` (``.<name>.<8 characters>.dpriv-tmp``, the names
    :func:`dpriv.io.atomic_write` gives) in its folder, sorted; none when it cannot be listed."""
    own = re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))
    try:
        return sorted(p for p in path.parent.iterdir() if own.fullmatch(p.name) and p.is_file())
    except OSError:
        return []


def warn_stale_temps(path: Path) -> None:
    """Warn (:func:`dpriv.user_warning.warn_user`; ``dpriv``: a ``warning:`` line) about the
    :func:`stale_temps` of ``path``, just written: its own temp file is renamed by then."""
    if not (found := stale_temps(Path(path))):
        return
    names = ", ".join(map(str, found[:3])) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    it = "them" if len(found) > 1 else "it"
    warn_user(
        f"{names}: left by an earlier write of {path} that was killed (SIGKILL, a crash or a power cut; "
        f"any other ending removes its temp file); dpriv deletes only files the same command created: "
        f"delete {it} yourself, unless another dpriv command is writing {path} at this moment"
    )

"""What the writer of an uncommitted release made in its folders, and nothing else, is removed
(docs/ledger.md, "A release killed mid-write").

A commit writes each file of release ``i`` (``releases/<i>/view.parquet``, ``metrics.json``...,
the ``state/<i>/`` folder) under a temp name (:func:`staged`), records the identity of every
staged file (inode, size, modification time) in :data:`WRITTEN` at the ledger's root, and only
then renames them to their names. A run killed after that leaves files that the record names
with their identity: the next run removes them. A file the user put there, even one named
``view.parquet`` or ``part-00000.parquet``, has another identity (or no record names it): it is
refused, never removed (dpriv never deletes a file it did not create). A run killed before the
record leaves only temp files, removed as such (:func:`dpriv.ledger_files.remove_temp`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from dpriv.errors import LedgerError
from dpriv.io import TEMP_SUFFIX, atomic_write
from dpriv.ledger_files import is_temp
from dpriv.ledger_manifest import MANIFEST

#: The record, at the ledger's root, of the files the commit of release ``index`` renamed into
#: place: ``{"index": i, "files": {"releases/i/view.parquet": [inode, size, mtime_ns], ...}}``.
#: It lives from a commit's renames to its manifest (a kill leaves it for the next run).
WRITTEN = ".dpriv-written.json"
#: Names dpriv writes in ``releases/<i>/`` and ``state/<i>/`` (docs/ledger.md): named in a
#: refusal, since such a file without a record is a user's or an earlier dpriv's leftover.
OWN_FILES = re.compile(r"(view|sensitive|state)\.parquet|metrics\.json|part-\d{5}\.parquet")
#: The 8 characters of a staged file's temp name (:func:`staged`).
_STAGE = "uncommit"


def staged(final: Path) -> Path:
    """The temp name (``.<name>.uncommit.dpriv-tmp``, :func:`dpriv.ledger_files.is_temp`) a file or
    folder of release ``i`` is written under before :func:`place` gives it its name ``final``."""
    return final.with_name(f".{final.name}.{_STAGE}{TEMP_SUFFIX}")


def _identity(path: Path) -> list[int]:
    """Inode, size and modification time (ns) of ``path``: kept by a rename, not by a copy or an
    edit. No device number: a ledger on NFS may be cleaned up from another machine."""
    st = path.stat()
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def place(root: Path, index: int, finals: Iterable[Path]) -> None:
    """Rename the staged files and folders of release ``index`` (:func:`staged`) to ``finals``,
    recording first in :data:`WRITTEN` the identity of every file they are or hold: a kill after
    the record leaves only what it names. An empty folder at a ``final`` of a folder is replaced."""
    finals = list(finals)
    files: dict[str, list[int]] = {}
    for final in finals:
        stage = staged(final)
        for f in sorted(stage.iterdir()) if stage.is_dir() else [stage]:
            named = final / f.name if stage.is_dir() else final
            files[named.relative_to(root).as_posix()] = _identity(f)
    atomic_write(root / WRITTEN, json.dumps({"index": index, "files": files}, indent=1).encode(), mode=0o600)
    for final in finals:
        os.replace(staged(final), final)


def _written(root: Path, index: int) -> dict[str, list[int]]:
    """The files :data:`WRITTEN` names for release ``index``; none when it is missing, is of
    another release, or cannot be read (then nothing is removed that a record would allow)."""
    try:
        record = json.loads((root / WRITTEN).read_text())
    except (OSError, ValueError):
        return {}
    files = record.get("files") if isinstance(record, dict) and record.get("index") == index else None
    return files if isinstance(files, dict) else {}


def _own(path: Path, root: Path, written: dict[str, list[int]]) -> bool:
    """``path`` is a temp file, or a regular file :data:`WRITTEN` names with its identity."""
    if path.is_symlink() or not path.is_file():
        return False
    return is_temp(path) or written.get(path.relative_to(root).as_posix()) == _identity(path)


def refuse_foreign(root: Path, index: int, folders: tuple[Path, ...]) -> None:
    """LedgerError naming what the ``folders`` of release ``index`` of the ledger at ``root``
    (``releases/<index>/``, ``state/<index>/``) hold that the writer of an uncommitted release
    ``index`` did not record writing, and whatever the folders of any later release hold (commits
    are sequential: no writer of dpriv's left a file there): a commit would mix it into a
    release, and one found only at its release's commit came after earlier ones were written."""
    written = _written(root, index)
    found = []
    checked = (*folders, *(p for f in folders for p in _later(f, index)))
    if inner := [d for d in checked if (d / MANIFEST).is_file()]:  # made by a dpriv before the refusal
        names = ", ".join(str(d.relative_to(root)) for d in inner)
        raise LedgerError(
            f"the ledger {root} holds another release ledger ({names}, made inside it by an earlier "
            f"dpriv) where releases {index} and later go; nothing was written and none of its files was "
            f"removed: move {names} out of {root} (a ledger of its own: keep its state/ private), then "
            "run the command again"
        )
    for d in checked:
        if d.is_symlink() or (d.exists() and not d.is_dir()):
            found.append(d)
        elif d.is_dir():
            found += sorted(p for p in d.iterdir() if not _own(p, root, written if d in folders else {}))
    if not found:
        return
    # a file the record names under another identity: the interrupted run's file copied or edited
    unlike = [p for p in found if p.parent in folders and _recorded(p, root, written)]
    problems, todo = [], []
    if others := [p for p in found if p not in unlike]:
        here = [p for p in others if p in folders or p.parent in folders]  # (not of a later release)
        where = f"release {index} goes" if len(here) == len(others) else f"releases {index} and later go"
        problems.append(f"{_names(root, others)}, which dpriv did not write, where {where}")
        todo.append(f"move these out of the ledger folder{_hint(here)}")
    if unlike:
        problems.append(_unlike(root, index, unlike, written))
        dirs = " and ".join(str(d) for d in sorted({p.parent for p in unlike}))
        todo.append(
            f"if you did not put these files there, remove or move away {dirs} by hand (keep a copy "
            f"elsewhere if you need one: release {index} is then made anew)"
        )
    copy = ", and a copy of one is another file" if unlike else ""
    raise LedgerError(
        f"the ledger {root} holds {'; it also holds '.join(problems)}; nothing was written and none of "
        f"these files was removed (dpriv never deletes a file it did not create{copy}): "
        f"{'; '.join(todo)}, then run the command again"
    )


def _names(root: Path, paths: list[Path]) -> str:
    """The first five of ``paths`` relative to ``root``, and how many more."""
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    return ", ".join(str(p.relative_to(root)) for p in paths[:5]) + more


def _recorded(path: Path, root: Path, written: dict[str, list[int]]) -> bool:
    """``path`` is a regular file :data:`WRITTEN` names (with whatever identity)."""
    return not path.is_symlink() and path.is_file() and path.relative_to(root).as_posix() in written


def _unlike(root: Path, index: int, files: list[Path], written: dict[str, list[int]]) -> str:
    """Why ``files``, named by the record of the interrupted release ``index``, are not its files:
    copies (the recorded size and modification time, another inode: ``cp -a``, ``rsync -a``, a
    backup restored; all a kill-then-copy leaves) or changed since (another size or time)."""
    changed = [p for p in files if _identity(p)[1:] != written[p.relative_to(root).as_posix()][1:]]
    if changed:
        why = (
            f"{_names(root, changed)} changed since that run wrote {'them' if len(changed) > 1 else 'it'} "
            "(another size or modification time than recorded: edited, or copied without keeping times)"
        )
    else:
        why = (
            "they are copies, with the recorded sizes and modification times but other inodes, as when "
            "the ledger folder is copied or restored (cp -a, rsync, a backup) after a run was killed"
        )
    return (
        f"files of the uncommitted release {index} ({_names(root, files)}) that are not the ones this "
        f"ledger's interrupted run recorded writing ({WRITTEN}): {why}"
    )


def _later(folder: Path, index: int) -> list[Path]:
    """The folders beside ``folder`` (``releases/<index>/``) of releases after ``index``."""
    if folder.parent.is_symlink() or not folder.parent.is_dir():
        return []
    return sorted(p for p in folder.parent.iterdir() if p.name.isdecimal() and int(p.name) > index)


def _hint(found: list[Path]) -> str:
    """Why a file named like dpriv's own output that no record names is refused: a user's, or a
    leftover of a release interrupted under an earlier dpriv (one the record names is
    :func:`_unlike`)."""
    own = [p for p in found if OWN_FILES.fullmatch(p.name) and p.is_file()]
    if not own:
        return ""
    return (
        f"; {own[0].name} is named like a file dpriv writes, but {WRITTEN} records no interrupted "
        "release writing it: if it is the leftover of a release interrupted under an earlier "
        "dpriv, delete it yourself"
    )


def remove_written(root: Path, index: int, folders: Iterable[Path], *, keep: Path | None = None) -> None:
    """Remove from ``folders`` what the writer of the uncommitted release ``index`` recorded
    writing (:data:`WRITTEN`) and temp files, then each folder if it is then empty (but
    ``keep``), then the record; anything else stays where it is. The staged names of
    :func:`staged` of ``folders`` go too (a commit that failed before :func:`place`)."""
    written = _written(root, index)
    for folder in folders:
        stage = staged(folder)
        if stage.is_dir() and not stage.is_symlink():
            shutil.rmtree(stage)
        if folder.is_symlink() or not folder.is_dir():
            continue
        for p in folder.iterdir():
            if _own(p, root, written):
                p.unlink()
        if folder != keep and not any(folder.iterdir()):
            folder.rmdir()
    forget_written(root)


def forget_written(root: Path, committed: int | None = None) -> None:
    """Remove :data:`WRITTEN`; with ``committed`` (the last committed index) only a record of a
    release committed since (a kill between the manifest and this removal): its files are
    that release's now, and the record would stay for ever when nothing is left to release."""
    path = root / WRITTEN
    if committed is not None:
        try:
            index = json.loads(path.read_text()).get("index")
        except (OSError, ValueError, AttributeError):
            return
        if not isinstance(index, int) or index > committed:
            return
    path.unlink(missing_ok=True)

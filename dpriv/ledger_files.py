"""A release ledger's files (docs/ledger.md): dpriv's temp files (removed as a
killed writer's; what else an interrupted release left: dpriv.ledger_written), the writer's
lock, how a ledger's Parquet file is opened (a damaged one named), and the removal of a new
ledger whose first release failed."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dpriv.errors import LedgerBusy, LedgerError
from dpriv.input_url import path_hint, url_scheme
from dpriv.io import TEMP_SUFFIX, atomic_write
from dpriv.ledger_digests import RELEASED_DIGESTS, changed_since_commit, metrics_matches
from dpriv.ledger_manifest import MANIFEST

if TYPE_CHECKING:
    import pyarrow.parquet as pq

F = TypeVar("F", bound=Callable[..., Any])


def url_problem(root: str | Path, name: str = "the ledger") -> str | None:
    """Why ``root`` cannot be a ledger when it is a URL (``s3://bucket/L``, ``file:///x``): a
    ledger is a local folder (its commits rename files and hold a lock); None for a path.
    ``name`` names it in the message (``--ledger``); ``root`` is echoed as given."""
    scheme = url_scheme(str(root))
    if scheme is None:
        return None
    return (
        f"{name} {root} is a URL ({scheme}:), but a ledger is a folder of this machine's file system "
        f"(on a cluster: a shared file system mounted at the same path on every worker): give its "
        f"path{path_hint(str(root))}"
    )


def enclosing_ledger(path: str | Path) -> Path | None:
    """The release ledger folder ``path`` lies in, resolved (a parent holding ``manifest.json``
    and ``releases/``, ``state/`` or ``policy.json``), or None (``path`` itself is not looked at)."""
    for parent in Path(path).resolve().parents:
        if (parent / MANIFEST).is_file() and any(
            (parent / name).exists() for name in ("releases", "state", "policy.json")
        ):
            return parent
    return None


def nested_problem(root: str | Path, name: str = "the ledger") -> str | None:
    """Why ``root`` cannot be a ledger written to when it lies inside another ledger (``L/releases/9``,
    ``L/state/new``): its sensitive ``state/`` would sit among that ledger's published files, and its
    files where that ledger's next releases go; None otherwise. ``name`` as in :func:`url_problem`."""
    outer = enclosing_ledger(root)
    if outer is None:
        return None
    return (
        f"{name} {root} lies inside the release ledger {outer}, whose files are the record of what "
        "was released: a ledger there would put its sensitive state/ among that ledger's files and "
        f"block its next release; nothing was written: give {outer} itself to release into that "
        "ledger, or a folder outside it for a new ledger"
    )


def check_place(root: str | Path, name: str = "the ledger", create: bool = True) -> None:
    """LedgerError, before any work, when ``root`` cannot be a ledger: a URL (:func:`url_problem`)
    or, when the ledger may be made (``create``), a folder inside another ledger
    (:func:`nested_problem`). ``name`` as in :func:`url_problem`. (Not a path at all: refused by
    the Python entry point first, :mod:`dpriv.path_args`.)"""
    if problem := url_problem(root, name) or (create and nested_problem(root, name)):  # one inside another
        raise LedgerError(problem)


def open_parquet(path: Path) -> pq.ParquetFile:
    """A ledger's Parquet file, its footer read; LedgerError naming the file when it cannot be
    read (truncated, overwritten): the ledger is damaged, not dpriv."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise LedgerError(
            f"{path} cannot be read ({exc}): the ledger is damaged; restore it from a backup"
        ) from None


def remove_if_unused(root: Path, manifest: Path, *, keep_root: bool = False) -> None:
    """Remove ``root`` if it holds only an empty ``manifest``, empty folders and temp files
    (``keep_root``: what it holds, the folder itself stays: the user made it)."""
    if root.is_symlink() or not root.is_dir():
        return
    items = sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True)
    files = [p for p in items if not p.is_dir() or p.is_symlink()]
    if any(p not in (manifest, root / LOCK) and not is_temp(p) for p in files):
        return
    try:
        if (manifest).exists() and json.loads((manifest).read_text()) != {"releases": []}:
            return
    except (OSError, ValueError):
        return
    for p in items:
        p.unlink() if p in files else p.rmdir()
    if not keep_root:
        root.rmdir()


#: A temp file or folder of :func:`dpriv.io.atomic_write` or :func:`dpriv.state_parts.staged_state`:
#: ``.<name>.``, the 8 characters of :func:`tempfile.mkstemp` and :data:`dpriv.io.TEMP_SUFFIX`.
_TEMP = re.compile(r"\..+\.[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))


#: The file a writer of the ledger holds locked (``flock``) from opening to its last commit, so
#: that a second ``dpriv release`` on the same ledger is refused instead of committing the same
#: index twice (or removing the first one's temp files as a killed writer's). The kernel drops
#: the lock when the process ends, however it ends.
LOCK = ".dpriv-lock"


def hold_lock(root: Path) -> int:
    """Lock ``root/.dpriv-lock`` for this process (a regular file, created 0600 if new, never
    through a symbolic link; opened read-only in a ledger this process cannot write, such as a
    read-only copy); the open descriptor, for :func:`drop_lock`. LedgerBusy when
    another process holds it; LedgerError when it cannot be a lock (a folder, a link) or the
    file system has no locks."""
    import errno

    path = root / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES) and path.is_file() and not path.is_symlink():
            # a ledger this process cannot write (a read-only copy, checked with nothing left to
            # release): a lock needs no write access, so a writer elsewhere is still kept out
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        elif exc.errno not in (errno.ELOOP, errno.EISDIR):
            raise
        else:
            raise LedgerError(f"{path} is not dpriv's lock file (a folder or a link): remove it") from None
    try:
        _flock_exclusive(fd)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise LedgerBusy(
                f"another dpriv command is writing the ledger {root} (it holds {path}); nothing was "
                "written: wait for it to finish, then run this one again (never delete the lock "
                "file by hand)"
            ) from None
        raise LedgerError(
            f"cannot lock {path} ({exc.strerror}): the file system has no file locks; keep the "
            "ledger on a local disk or a file system with locks"
        ) from None
    return fd


#: Seconds a writer waits for the lock before it says another command holds it: a reader
#: (``dpriv status``) probes the lock with a shared lock dropped at once, which must not make a
#: release starting in that instant exit 3 (LedgerBusy).
LOCK_PATIENCE = 0.5


def _flock_exclusive(fd: int) -> None:
    """An exclusive ``flock`` on ``fd``, tried again every 10 ms for :data:`LOCK_PATIENCE`
    seconds while another open file holds a lock (then the last EWOULDBLOCK is raised)."""
    import errno
    import fcntl
    import time

    deadline = time.monotonic() + LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def drop_lock(fd: int | None) -> None:
    """Release a lock of :func:`hold_lock` (the file stays: it is the ledger's own)."""
    if fd is not None:
        os.close(fd)


#: Folder of a ledger holding attack results (``gain_<knowledge>.csv``, ``kpr.csv``), read by
#: the report; :func:`dpriv.attack.save_gain` writes there (under :func:`writing_results`).
ATTACK_DIR = "attack"


def remove_temp(root: Path) -> None:
    """Remove what a killed writer left anywhere under ``root`` but ``attack/``: temp files and
    temp state folders (``.<name>.<8 random characters>.dpriv-tmp``), and nothing else. The
    attack results' writers, who take no ledger lock, clean ``attack/`` under its own lock
    (:func:`writing_results`): a temp file there may be a running attack's."""
    for p in sorted(root.rglob(".*"), reverse=True):
        if p.relative_to(root).parts[0] == ATTACK_DIR:
            continue
        if is_temp(p) and p.is_dir() and not p.is_symlink():  # a state's temp folder
            shutil.rmtree(p)
        elif is_temp(p) and p.exists() and p.is_file():
            p.unlink()


def is_temp(path: Path) -> bool:
    """A temp file or folder of dpriv's writers (``.<name>.<8 random characters>.dpriv-tmp``)."""
    return _TEMP.fullmatch(path.name) is not None


@contextlib.contextmanager
def writing_results(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock (``flock`` on the folder itself: no lock file among the results)
    on a ledger's ``attack/`` ``folder`` while the block writes there, first removing the temp
    files (:func:`is_temp`) a killed writer left in it, and nothing else: an attack takes no
    ledger lock, so its temp files were never removed. Under the lock no live writer's temp
    file is there (each writer of the folder holds it); another one waits for it. On a file
    system without locks nothing is removed."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a file system without locks: a temp file there may be a live writer's
            locked = False
        else:
            locked = True
        for p in folder.iterdir() if locked else ():
            if is_temp(p) and p.is_file() and not p.is_symlink():
                p.unlink()
        yield
    finally:
        os.close(fd)  # drops the lock


def discard_new_ledger(fn: F) -> F:
    """Decorate a function whose third argument (or ``ledger_dir=``) is a ledger folder: when
    the folder held no ledger before the call and the call raises before its first commit (a
    release refused for its suppression, an interrupt), what the call made is removed again:
    the folder itself when it did not exist, else what it wrote into the (empty) folder. Only
    ``manifest.json`` with no release, empty folders and temp files (all written by this call)
    are removed; anything else is left as it is."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        root = Path(kwargs["ledger_dir"] if "ledger_dir" in kwargs else args[2])
        created = not (root.exists() or root.is_symlink())
        new = created or (root.is_dir() and not (root / MANIFEST).exists())
        try:
            return fn(*args, **kwargs)
        except BaseException:  # a refusal at the lock included: _discard then finds it held
            if new and root.is_dir() and not root.is_symlink():
                _discard(root, keep_root=not created)
            raise

    return wrapped  # type: ignore[return-value]


def _discard(root: Path, *, keep_root: bool) -> None:
    """:func:`remove_if_unused` under the ledger's lock: nothing is removed while another
    writer holds it (it came meanwhile, and the folder is its ledger now)."""
    if not (root / LOCK).exists() and not (root / MANIFEST).exists():
        return  # refused before the ledger was opened: nothing of dpriv's is there
    try:
        fd = hold_lock(root)
    except LedgerError:
        return
    try:
        remove_if_unused(root, root / MANIFEST, keep_root=keep_root)
    finally:
        drop_lock(fd)


def restore_file(path: Path, content: bytes | None) -> None:
    """``path`` back to ``content`` (None: no such file)."""
    if content is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write(path, content)


def read_json(path: Path, entry: dict[str, Any] | None = None) -> Any:
    """The JSON of a ledger file; LedgerError naming the file when it is missing or damaged
    (a report or an attack on a ledger must not pass one off as a dpriv bug). ``entry``: the
    manifest entry of the release a released file (``releases/<i>/metrics.json``) belongs to;
    LedgerError (:func:`changed_since_commit`) when the figures read no longer have the
    digest it records (:func:`metrics_sha256`: an edited figure would be shown as the
    release's); an entry without that digest (an earlier ledger's) is not compared."""
    try:
        data = path.read_bytes()  # read once: the digest and the JSON are of the same bytes
    except FileNotFoundError:
        raise LedgerError(
            f"ledger file {path} is missing: the ledger is damaged; restore it from a backup"
        ) from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    try:
        record = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _unreadable(path, exc) from None
    recorded = (entry or {}).get(RELEASED_DIGESTS.get(path.name, ""))
    if recorded is not None and path.name == "metrics.json" and not metrics_matches(record, recorded):
        raise changed_since_commit(path, entry)
    return record


def _unreadable(path: Path, exc: Exception) -> LedgerError:
    """The refusal of a ledger file that cannot be read or parsed (``exc`` says why)."""
    return LedgerError(
        f"ledger file {path} cannot be read ({exc}): the ledger is damaged; restore it from a backup"
    )

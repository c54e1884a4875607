"""The record of the files dpriv wrote into a folder, by which dpriv never overwrites a file it
did not create (:func:`dpriv.cli.outputs.check_replaceable`).

Every file a command writes with ``--out`` (and its companions: ``OUT.metrics.json``, an
Anatomy release's ``OUT.sensitive.<ext>``) is recorded in the hidden file ``.dpriv-outputs`` of
its folder: a JSON object ``{"format": "dpriv-outputs/1", "files": {name: {"kind", "size",
"sha256"}}}``, where ``kind`` is the command that wrote it (``anonymize``, ``attack``,
``export``, ``report``; ``generate`` for the files of ``dpriv generate medical``, ``dpriv demo``
and :func:`dpriv.datasets.write_history`: ``history.parquet``, ``policy.toml``,
``knowledge/*.npz``, see :func:`dpriv.datasets.generated.check_generated`). Inside a release
ledger only its ``attack/`` folder keeps a record. A record is a cache of what dpriv wrote:
losing it (a copied folder, two commands writing into one folder at once) only makes
``--force`` refuse, never replace.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from dpriv.ledger_digests import file_sha256
from dpriv.ledger_files import enclosing_ledger

#: The record of the files dpriv wrote into a folder (one dot only: a ledger's clean-up of
#: temp files, ``.<name>.<random>``, leaves it alone).
RECORD = ".dpriv-outputs"
RECORD_FORMAT = "dpriv-outputs/1"


@dataclass(frozen=True)
class Written:
    """One entry of a folder's record: the command that wrote the file, its size and the
    SHA-256 (hex) of its content."""

    kind: str
    size: int
    sha256: str


def _digest(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes; of a folder (a Parquet dataset ``history.parquet/``):
    of its files' relative names and digests, in name order."""
    h = hashlib.sha256()
    if path.is_dir():
        for f in sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink()):
            h.update(f"{f.relative_to(path).as_posix()}\0{_digest(f)}\n".encode())
        return h.hexdigest()
    return file_sha256(path)


def _size(path: Path) -> int:
    """Bytes of a file, or of all files under a folder."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def read_record(folder: Path) -> dict[str, Written] | None:
    """The entries of ``folder/.dpriv-outputs``; ``{}`` when there is none, None when a file of
    that name exists but is not a dpriv record (dpriv then leaves it alone)."""
    path = folder / RECORD
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != RECORD_FORMAT:
            return None
        return {name: Written(**entry) for name, entry in data["files"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def written_by(path: Path) -> str | None:
    """The command that wrote ``path`` as it is now (its record entry matches the file's size
    and SHA-256), else None (no record, another content, a symbolic link, not a file). A folder
    (the Parquet dataset ``dpriv generate medical --partitions`` writes) is compared by the
    names and bytes of all its files."""
    path = Path(path)
    if path.is_symlink() or not (path.is_file() or path.is_dir()):
        return None
    if path.is_dir() and any(p.is_symlink() for p in path.rglob("*")):
        return None
    entry = (read_record(path.absolute().parent) or {}).get(path.name)
    if entry is None or entry.size != _size(path):
        return None
    return entry.kind if entry.sha256 == _digest(path) else None


def changed_since_written(folder: Path) -> list[str]:
    """Names of the files of ``folder`` its record lists whose bytes are no longer the ones
    dpriv wrote (a hand edit of an attack result the report would draw as dpriv's)."""
    entries = read_record(Path(folder).absolute()) or {}
    return sorted(n for n in entries if (Path(folder) / n).is_file() and written_by(Path(folder) / n) is None)


def record_output(path: Path, kind: str) -> None:
    """Record that the command ``kind`` has just written ``path`` (in ``.dpriv-outputs`` of its
    folder, written atomically); a killed write's temp file of it there is warned about. A
    ``.dpriv-outputs`` that is not a dpriv record is left as it is, and inside a release ledger
    only files of its ``attack/`` folder are recorded (the ledger's other files are the record
    of what was released, never replaced)."""
    from dpriv.io import atomic_write
    from dpriv.stale_temps import warn_stale_temps

    path = Path(path)
    warn_stale_temps(path)  # a killed write's temp file beside it: named, never removed
    folder = path.absolute().parent
    entries = read_record(folder)
    ledger = enclosing_ledger(path)
    if entries is None or (ledger is not None and folder.resolve() != (ledger / "attack").resolve()):
        return
    entries[path.name] = Written(kind, _size(path), _digest(path))
    files = {
        name: vars(w)
        for name, w in sorted(entries.items())
        if (folder / name).is_file() or (folder / name).is_dir()
    }
    body = json.dumps({"format": RECORD_FORMAT, "files": files}, indent=1) + "\n"
    atomic_write(folder / RECORD, body.encode("utf-8"), mode=None)

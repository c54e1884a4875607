"""Where the relative file paths of a ledger's recorded policy resolve from.

A policy file's ``[knowledge]`` and ``[hierarchies]`` paths are relative to the policy file
(docs/policy.md). A ledger records the policy (``policy.json``) without that folder, so a
later ``dpriv release --ledger L`` or ``dpriv attack L`` without ``--policy`` needs it back:
the first command that commits into the ledger with ``--policy FILE`` records the folder of
FILE in ``LEDGER/policy_base.json`` (``{"base_dir": "/abs/folder", "base_dir_from_ledger":
"../.."}``, written once, never replaced): absolute, and relative to the ledger's folder, so a
ledger moved or copied together with its policy's folder (another parent, another machine)
still finds the files there; a ledger moved alone keeps the absolute one. Ledgers written
before hold the absolute folder only (still read); older ones have no such file: the paths are
then looked up in the caller's fallback folders (the folder of the history, the ledger's
parent), as before.

Both commands go through :func:`recorded_base`; a path that still cannot be found is refused
with :data:`PASS_POLICY`, the fix ``dpriv attack`` has always printed.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from dpriv.errors import KnowledgeFileError, PolicyError

#: Name of the file recording the folder of the policy file a ledger was started with.
BASE_FILE = "policy_base.json"
#: The fix when a recorded relative path cannot be found.
PASS_POLICY = "pass --policy FILE (knowledge paths are relative to it)"
#: Knowledge entries that are not file paths (``defender = "dk"`` names another entry).
_NOT_PATHS = ("defender",)


def record_base(ledger: Path, base_dir: str | None) -> Path | None:
    """Write ``LEDGER/policy_base.json`` with ``base_dir`` when the ledger has committed its
    policy (``policy.json`` exists), ``base_dir`` is known and no such file exists yet; returns
    the path written, else None (an existing file is never replaced). The folder is recorded
    absolute (``base_dir``) and relative to the ledger's folder (``base_dir_from_ledger``, POSIX
    separators; left out when there is no relative path, another drive on Windows)."""
    path = ledger / BASE_FILE
    if base_dir is None or path.exists() or not (ledger / "policy.json").is_file():
        return None
    base = Path(base_dir).resolve()
    record = {"base_dir": str(base)}
    with contextlib.suppress(ValueError):  # no relative path between two drives
        record["base_dir_from_ledger"] = Path(os.path.relpath(base, ledger.resolve())).as_posix()
    path.write_text(json.dumps(record) + "\n")
    return path


def _recorded_dirs(ledger: Path) -> list[Path]:
    """The folders ``ledger``'s :data:`BASE_FILE` records: the absolute one, then the one relative
    to the ledger as it lies now (a ledger moved with its policy's folder), when it differs."""
    path = ledger / BASE_FILE
    if not path.is_file():
        return []
    try:
        record = json.loads(path.read_text())
        base, relative = record.get("base_dir"), record.get("base_dir_from_ledger")
    except (json.JSONDecodeError, AttributeError):
        return []
    found = [Path(base)] if isinstance(base, str) else []
    if isinstance(relative, str):
        moved = Path(os.path.normpath(ledger.resolve() / relative))
        found += [moved] if moved not in found else []
    return found


def relative_files(knowledge: dict[str, str], hierarchies: dict[str, str]) -> dict[str, str]:
    """The relative file paths of a recorded policy, ``"[knowledge] dk"`` -> ``"knowledge/dk.npz"``
    (``defender`` and ``ie``-like names that are not paths are left out)."""
    files = {f"[knowledge] {k}": v for k, v in knowledge.items() if k not in _NOT_PATHS}
    files |= {f"[hierarchies] {q}": v for q, v in hierarchies.items()}
    return {k: v for k, v in files.items() if not Path(v).is_absolute()}


def recorded_base(
    ledger: Path,
    knowledge: dict[str, str],
    hierarchies: dict[str, str],
    fallback: list[Path],
    *,
    strict: bool = True,
) -> str | None:
    """The folder the relative paths of ``ledger``'s recorded policy resolve from.

    Tries the recorded folder (:data:`BASE_FILE`), then ``fallback`` in order; the first in
    which every relative path exists wins (absolute str). None when there is no relative path,
    or (``strict=False``) when no folder holds them all. With ``strict`` raises PolicyError
    naming the first missing path, the folders tried and :data:`PASS_POLICY`.
    """
    rel = relative_files(knowledge, hierarchies)
    if not rel:
        return None
    candidates = base_candidates(ledger, fallback)
    for base in candidates:
        if all((base / p).exists() for p in rel.values()):
            return str(base.resolve())
    if not strict:
        return None
    lost = [(n, p) for n, p in rel.items() if not any((b / p).exists() for b in candidates)]
    missing = (lost or list(rel.items()))[0]
    tried = ", ".join(str(b) for b in candidates) or "no folder"
    raise PolicyError(
        f"{missing[0]} = {missing[1]!r} of the policy recorded in {ledger / 'policy.json'} was not "
        f"found relative to {tried}: {PASS_POLICY}"
    )


def base_candidates(ledger: Path, fallback: list[Path]) -> list[Path]:
    """The folders a recorded policy's relative paths are looked for in, in order: those
    ``ledger``'s :data:`BASE_FILE` records (when it does: :func:`_recorded_dirs`), then ``fallback``."""
    return _recorded_dirs(ledger) + list(fallback)


def with_hint(exc: PolicyError, tried: list[Path] | None = None) -> PolicyError:
    """``exc`` with :data:`PASS_POLICY` appended when a knowledge file the recorded policy names
    was not found (:class:`~dpriv.errors.KnowledgeFileError`), after the folders ``tried`` for
    its relative path (:func:`base_candidates`; a fresh user's drill, s40: the message named no
    folder); any other error as it is."""
    if not isinstance(exc, KnowledgeFileError) or PASS_POLICY in str(exc):
        return exc
    looked = f" (looked for in {', '.join(str(t) for t in tried)}, then the current folder)" if tried else ""
    return KnowledgeFileError(f"{exc}{looked}; {PASS_POLICY}")


def pinned_files(policy, source: str) -> dict[str, str]:
    """The files behind the digests a ledger pins (``policy`` a ReleasePolicy), by digest
    field, for a message that names them: the defender's knowledge table (``knowledge_sha256``;
    none for IE knowledge) and the hierarchies (``hierarchy_sha256``)."""
    files = {}
    if source != "ie":
        path = policy.knowledge_path(source)
        files["knowledge_sha256"] = f"the knowledge file {path} ([knowledge] {source})"
    if policy.hierarchies:
        paths = ", ".join(str(policy.hierarchy_path(q)) for q in sorted(policy.hierarchies))
        files["hierarchy_sha256"] = f"the hierarchy files {paths}"
    return files

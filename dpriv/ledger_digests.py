"""The digests a release ledger's manifest records of each release's released files
(docs/ledger.md, "manifest.json"): a file's SHA-256, and for metrics.json the digest of its
figures without the timings, so that two runs of the same history give the same manifest; and
the refusal of a released file changed after its commit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dpriv.errors import LedgerError

#: The released files of a release whose SHA-256 its manifest entry records (name -> entry key).
#: metrics.json's is the digest of its figures without the timings
#: (:func:`metrics_sha256`): two runs of the same history give the same manifest.
RELEASED_DIGESTS = {
    "view.parquet": "view_sha256",
    "sensitive.parquet": "sensitive_sha256",
    "metrics.json": "metrics_sha256",
}


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes, read 1 MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def metrics_sha256(data: bytes) -> str:
    """SHA-256 (hex) of a metrics.json's figures: the JSON object without its timings, which
    differ from run to run (``seconds``: the steps' at the top and the release gate's in
    ``gate``), written with sorted keys and no blanks. Raises ValueError
    (json.JSONDecodeError, UnicodeDecodeError) when ``data`` is no JSON."""
    return _figures_sha256(json.loads(data.decode()), gate_seconds=False)


def metrics_matches(record: Any, recorded: str) -> bool:
    """Whether a metrics.json's parsed JSON ``record`` has the digest ``recorded``:
    :func:`metrics_sha256`'s, or the one a ledger written before session 40 recorded (the gate's
    ``seconds`` hashed with the figures)."""
    return any(_figures_sha256(record, gate_seconds=legacy) == recorded for legacy in (False, True))


def _figures_sha256(record: Any, *, gate_seconds: bool) -> str:
    """SHA-256 (hex) of the canonical JSON of ``record`` without its top-level ``seconds``, and
    without ``gate.seconds`` unless ``gate_seconds``."""
    if isinstance(record, dict):
        record = {k: v for k, v in record.items() if k != "seconds"}
        if not gate_seconds and isinstance(record.get("gate"), dict):
            record["gate"] = {k: v for k, v in record["gate"].items() if k != "seconds"}
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _digest(path: Path) -> str:
    """The digest a manifest records for the released file ``path`` (:data:`RELEASED_DIGESTS`)."""
    return metrics_sha256(path.read_bytes()) if path.name == "metrics.json" else file_sha256(path)


def released_digests(rdir: Path) -> dict[str, str]:
    """The manifest fields ``view_sha256``, ``metrics_sha256`` (and ``sensitive_sha256`` for an
    Anatomy release) of the files of a release folder, as just written."""
    found = {key: rdir / name for name, key in RELEASED_DIGESTS.items()}
    return {key: _digest(path) for key, path in found.items() if path.is_file()}


def check_released_files(rdir: Path, entry: dict[str, Any]) -> None:
    """LedgerError when a released file of the release ``entry`` describes is missing or is not
    the one it committed (its SHA-256 differs from the one the manifest records; a ledger from
    before the digests records none, and its files are not compared)."""
    for name, key in RELEASED_DIGESTS.items():
        recorded = entry.get(key)
        if recorded is not None and not (rdir / name).is_file():
            raise LedgerError(
                f"{rdir / name} is missing (release {entry['index']} is listed in manifest.json): "
                "the ledger is damaged; restore it from a backup"
            )
        if recorded is not None and _same(rdir / name, recorded) is False:
            raise changed_since_commit(rdir / name, entry)


def _same(path: Path, recorded: str) -> bool | None:
    """Whether ``path`` has the digest ``recorded``; None for a metrics.json that is no JSON
    (its reader names that)."""
    try:
        if path.name == "metrics.json":
            return metrics_matches(json.loads(path.read_bytes().decode()), recorded)
        return _digest(path) == recorded
    except ValueError:
        return None


def changed_since_commit(path: Path, entry: dict[str, Any]) -> LedgerError:
    """The refusal of a released file (``path``: ``releases/<i>/<name>``) whose SHA-256 is not
    the one the manifest ``entry`` of its release records (:data:`RELEASED_DIGESTS`)."""
    return LedgerError(
        f"{path} is not the file release {entry['index']} committed (its SHA-256 is not the "
        f"{RELEASED_DIGESTS[path.name]} manifest.json records): it, or that digest in manifest.json, "
        "was changed after the release; the ledger is damaged: restore it from a backup (dpriv "
        "cannot tell which of the two holds what was published)"
    )

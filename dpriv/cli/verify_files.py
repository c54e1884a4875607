"""What lies beside a released file that ``dpriv verify`` is given on its own: the companions
``dpriv anonymize`` writes (``OUT.metrics.json``, an Anatomy release's ``OUT.sensitive.<ext>``)
or, for a file inside a ledger (``L/releases/<i>/view.parquet``), the release's own
``metrics.json`` and ``sensitive.parquet``. A release's recorded tuple count catches a row
dropped from the file, which a check against the original alone cannot tell from a suppressed
tuple (docs/released-format.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dpriv.ledger import SENSITIVE
from dpriv.ledger_manifest import MANIFEST

#: The metrics file of a ledger's release, beside its view.parquet.
LEDGER_METRICS = "metrics.json"


@dataclass(frozen=True)
class LedgerRelease:
    """``view.parquet`` of release ``index`` of the ledger at ``root``."""

    root: Path
    index: int


def ledger_release(released: Path) -> LedgerRelease | None:
    """The ledger release a file is, when its path is ``L/releases/<i>/view.parquet`` of a
    ledger ``L`` (a manifest.json there); else None."""
    folder = released.parent
    if released.name != "view.parquet" or folder.parent.name != "releases" or not folder.name.isdigit():
        return None
    root = folder.parent.parent
    return LedgerRelease(root, int(folder.name)) if (root / MANIFEST).is_file() else None


def sensitive_beside(released: Path) -> Path:
    """Where an Anatomy release's sensitive table lies: ``sensitive.parquet`` beside a ledger's
    view, ``OUT.sensitive.<ext>`` beside what ``dpriv anonymize`` wrote."""
    if ledger_release(released) is not None:
        return released.parent / SENSITIVE
    return released.with_name(f"{released.stem}.sensitive{released.suffix}")


@dataclass(frozen=True)
class Recorded:
    """The tuple count a release recorded (``n_released``) and the file that says so."""

    n_released: int
    path: Path


def recorded_beside(released: Path) -> Recorded | None | str:
    """``n_released`` of the metrics file beside a released file (``OUT.metrics.json``, or a
    ledger release's ``metrics.json``); None when there is none; a note (str) when the file is
    there but holds no count (then the count is not checked, and the user is told why)."""
    path = (
        released.parent / LEDGER_METRICS
        if ledger_release(released) is not None
        else released.with_name(released.name + ".metrics.json")
    )
    if not path.is_file():
        return None
    try:
        count = json.loads(path.read_text(encoding="utf-8")).get("n_released")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        count = None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return f"{path} holds no tuple count (n_released): the released rows are not counted against it"
    return Recorded(count, path)

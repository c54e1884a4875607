"""Reprs of results that hold private data (respondent ids, exact QIs, true sensitive values,
priors): a notebook shows the repr of its last line, so a result's repr names only sizes and
safe summaries, never a value of the private parts (which stay readable as attributes)."""

from __future__ import annotations

from typing import Any

#: What a repr says in place of a private part.
NOT_SHOWN = "private, not shown"


def shape(frame: Any) -> str:
    """``1,000 rows x 8 columns`` (a Dask frame's rows are not counted: ``? rows``)."""
    rows = "?" if hasattr(frame, "npartitions") else f"{len(frame):,}"
    return f"{rows} rows x {len(frame.columns)} columns"


def safe_repr(name: str, public: list[str], private: list[str]) -> str:
    """``Name(public parts; a, b: private, not shown)``."""
    hidden = f"{', '.join(private)}: {NOT_SHOWN}" if private else ""
    return f"{name}({'; '.join([*public, hidden] if hidden else public)})"


def ledger_repr(ledger: Any) -> str:
    """``Ledger('work/ledger', 3 committed releases)``: its root and the manifest's count, never
    a file of its private ``state/`` (a damaged manifest is said, not raised)."""
    from dpriv.errors import DprivError

    try:
        n = len(ledger.committed())
        releases = f"{n} committed release{'' if n == 1 else 's'}"
    except (DprivError, OSError) as exc:
        releases = f"manifest unreadable: {type(exc).__name__}"
    return f"Ledger({str(ledger.root)!r}, {releases})"

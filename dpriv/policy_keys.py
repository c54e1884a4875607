"""Unknown keys of a policy, named with their table and the closest known key.

``kk = 3`` under ``[privacy]`` is refused as "unknown key 'kk' in [privacy]; did you mean 'k'?"
(:func:`difflib.get_close_matches` over the policy's fields) instead of pydantic's "Extra
inputs are not permitted". The scalar tables ``[columns]``, ``[privacy]`` and ``[release]``
share one set of keys (docs/policy.md), so a key of any of them is known in all three.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dpriv.errors import PolicyError

#: Tables of the policy TOML whose keys are fields of :class:`dpriv.policy.ReleasePolicy`.
SCALAR_TABLES = ("columns", "privacy", "release")


def unknown_key(key: str, fields: Iterable[str], table: str | None = None) -> str:
    """``"unknown key 'kk' in [privacy]; did you mean 'k'?"`` (the hint only when a field is
    close, the table only when known)."""
    names = sorted(f for f in fields if f != "base_dir")
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.5)
    where = f" in [{table}]" if table else ""
    hint = f"; did you mean {close[0]!r}?" if close else "; the keys are listed in docs/policy.md"
    return f"unknown key {key!r}{where}{hint}"


def check_keys(path: Path, doc: dict[str, Any], fields: Iterable[str]) -> None:
    """PolicyError naming every unknown key of the scalar tables of policy file ``path``."""
    fields = set(fields)
    bad = [
        unknown_key(key, fields, table)
        for table in SCALAR_TABLES
        if isinstance(doc.get(table), dict)
        for key in doc[table]
        if key not in fields or key == "base_dir"
    ]
    if bad:
        raise PolicyError(f"policy file {path}: " + "; ".join(bad))

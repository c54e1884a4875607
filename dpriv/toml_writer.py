"""A tiny TOML writer for the files dpriv writes (policy.toml of ``dpriv generate``).

The standard library reads TOML (``tomllib``) but does not write it; a policy needs only
strings, numbers, booleans, paths, lists and nested tables.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"TOML keys must be str, got {type(key).__name__}")
    return key if _BARE_KEY.match(key) else _toml_str(key)


def _toml_str(s: str) -> str:
    out = []
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Path):
        return _toml_str(v.as_posix())
    raise TypeError(f"cannot write a {type(v).__name__} as a TOML value")


def toml_dumps(doc: dict[str, Any]) -> str:
    """Serialise ``doc`` to TOML (the subset a policy file needs).

    Supported: str, bool, int, float (incl. nan/inf), ``pathlib.Path`` (as a str), lists of
    those (nested lists allowed), and nested dicts as ``[table]`` / ``[a.b]`` sections.
    Scalars of a table are written before its sub-tables. Raises TypeError otherwise
    (e.g. None, which TOML cannot express). ``tomllib.loads(toml_dumps(d)) == d`` for
    supported input (with tuples read back as lists).
    """
    lines: list[str] = []

    def emit(table: dict[str, Any], prefix: tuple[str, ...]) -> None:
        scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
        subs = [(k, v) for k, v in table.items() if isinstance(v, dict)]
        if prefix and (scalars or not subs):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_toml_key(p) for p in prefix) + "]")
        for k, v in scalars:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        for k, v in subs:
            emit(v, (*prefix, k))

    emit(doc, ())
    return "\n".join(lines) + "\n"

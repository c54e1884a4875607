"""The policy TOML file (docs/policy.md) read as the flat fields of :class:`~dpriv.policy.ReleasePolicy`.

The tables ``[columns]``, ``[privacy]`` and ``[release]`` hold the scalar fields (one set of keys,
each key in one of them only); ``[domains]``, ``[kinds]``, ``[knowledge]`` and ``[hierarchies]``
are fields of their own. A file that is missing, unreadable, not UTF-8 TOML, or holds an unknown
table or key (named with the closest known one, :func:`dpriv.policy_keys.unknown_key`) is refused
with a PolicyError naming the file (:func:`policy_fields`); the model's refusal of the fields is
worded with the file and the overrides given with it (:func:`in_file`).
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from dpriv.errors import PolicyError
from dpriv.policy_keys import unknown_key

#: Tables of the policy TOML whose keys are fields of :class:`dpriv.policy.ReleasePolicy`.
SCALAR_TABLES = ("columns", "privacy", "release")


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
    # a policy key in [knowledge] would be read as a knowledge file's path
    bad += [
        f"{key!r} is a policy key, not a knowledge source: put it in [privacy] or [release]"
        for key in (doc.get("knowledge") or {})
        if key in fields and key not in ("base_dir", "knowledge")
    ]
    # a key above the first [table] header (TOML puts it at the top level, not in a table)
    bad += [
        f"{key!r} stands before any [table] header: "
        + ("put it under [columns], [privacy] or [release]" if key in fields else "not a policy key")
        for key, body in doc.items()
        if not isinstance(body, dict)
    ]
    # a key may sit in any scalar table, but once: k = 5 in [privacy] and k = 7 in [release]
    seen: dict[str, list[str]] = {}
    for table in SCALAR_TABLES:
        body = doc.get(table)
        for key in body if isinstance(body, dict) else ():
            seen.setdefault(key, []).append(f"[{table}]")
    bad += [f"{key!r} is set in {' and '.join(at)}: keep one" for key, at in seen.items() if len(at) > 1]
    if bad:
        raise PolicyError(f"policy file {path}: " + "; ".join(bad))


def missing_policy(path: Path) -> str:
    """A policy file that does not exist, and what to do: a relative path (a cron job's, run
    from the home folder) is read from the current folder, which is named."""
    where = "" if path.is_absolute() else f" (a relative path is read from the current folder, {Path.cwd()})"
    return (
        f"policy file {path} does not exist{where}: give the path of your TOML policy file (docs/policy.md "
        "describes it; dpriv generate medical --out DIR writes an example, DIR/policy.toml)"
    )


def not_text(path, exc: UnicodeDecodeError) -> str:
    """Why a policy file is not read: text in another encoding than UTF-8 (the byte and its
    line named: a Latin-1 comment), or no text at all (a Parquet file, a spreadsheet)."""
    raw = exc.object if isinstance(exc.object, bytes) else b""
    if b"\x00" in raw[:4096] or raw.startswith(b"PAR1"):
        return (
            f"policy file {path} is not text (a binary file: Parquet, a spreadsheet...): --policy "
            "(ReleasePolicy.from_toml) takes the TOML policy file (docs/policy.md), e.g. the policy.toml "
            "that dpriv generate medical writes"
        )
    line = raw[: exc.start].count(b"\n") + 1
    return (
        f"policy file {path} is not UTF-8 (byte 0x{raw[exc.start]:02x} on line {line}): save it as "
        "UTF-8 (e.g. iconv -f latin1 -t utf-8)"
    )


def read_policy_doc(path: Path) -> dict[str, Any]:
    """The TOML of policy file ``path`` (a BOM, as Windows editors write it, skipped); PolicyError
    naming the file when it is missing, unreadable, not TOML or not UTF-8 text."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise PolicyError(missing_policy(path)) from None
    except (IsADirectoryError, PermissionError) as exc:
        raise PolicyError(f"policy file {path} cannot be read ({exc.strerror}): give the file") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"policy file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # a Parquet file or another binary, or Latin-1 text
        raise PolicyError(not_text(path, exc)) from None


#: The tables a policy file may hold.
TABLES = ("columns", "privacy", "domains", "kinds", "release", "knowledge", "hierarchies")


def unknown_table(table: str) -> str:
    """``"unknown table [domain] (did you mean [domains]?); expected [...]"``: a table name one
    letter or a capital away from a known one (``[kind]``, ``[Privacy]``) is named with it, as an
    unknown key is (:func:`dpriv.policy_keys.unknown_key`)."""
    close = difflib.get_close_matches(table.lower(), TABLES, n=1, cutoff=0.6)
    hint = f" (did you mean [{close[0]}]?)" if close else ""
    return f"unknown table [{table}]{hint}; expected {sorted(TABLES)}"


def policy_fields(path: Path, overrides: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """The fields of policy file ``path`` as one flat dict (``base_dir``: the file's folder, for
    the relative paths of ``[knowledge]`` and ``[hierarchies]``), ``overrides`` (None: not given)
    in place of the file's values. Flags naming the columns (``qi``, ``sensitive``) narrow the
    file's ``[domains]``, ``[kinds]`` and ``[hierarchies]`` to those columns. PolicyError naming
    the file (:func:`read_policy_doc`, :func:`check_keys`, an unknown table); the values are
    validated by the model, not here."""
    doc = read_policy_doc(path)
    check_keys(path, doc, fields)
    flat: dict[str, Any] = {"base_dir": str(path.resolve().parent)}
    for table, body in doc.items():
        if table not in TABLES or not isinstance(body, dict):
            raise PolicyError(f"policy file {path}: {unknown_table(table)}")
        if table in ("domains", "kinds", "knowledge", "hierarchies"):
            flat[table] = body
        else:
            flat.update(body)
    flat.update({k: v for k, v in overrides.items() if v is not None})
    if any(overrides.get(k) is not None for k in ("qi", "sensitive")):  # flags narrow the columns:
        kept, tables = {*flat.get("qi", []), flat.get("sensitive")}, ("domains", "kinds", "hierarchies")
        flat |= {t: {c: v for c, v in flat[t].items() if c in kept} for t in tables if t in flat}
    return flat


def in_file(
    exc: PolicyError, path: Path, overrides: Mapping[str, Any], named: Callable[[dict], str]
) -> PolicyError:
    """``exc`` (the model's ``invalid policy: ...``) naming the file and the overrides given with
    it, in the words of ``named``: ``invalid policy (policy file p.toml with overrides tt=0.5): ...``."""
    given = {k: v for k, v in overrides.items() if v is not None}
    where = f"policy file {path}" + (f" with {named(given)}" if given else "")
    return PolicyError(str(exc).replace("invalid policy:", f"invalid policy ({where}):", 1))

"""What a ledger's ``manifest.json`` records and how it is checked (docs/ledger.md).

The manifest lists the committed releases in order (``index`` from 1, the input view's
digest ``input_sha``, the state's bucket count ``state_buckets``) and the digest of the
ledger's ``policy.json`` (``policy_sha256``), recorded with the first commit and again by every
release committed under it. A manifest whose entries are malformed, or whose digest was removed
or changed after releases were committed under it, is damaged: every command that reads the
ledger refuses it (LedgerError, exit 2) before reading or cleaning anything by it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpriv.errors import InputError, LedgerError
from dpriv.policy import NEWER

MANIFEST = "manifest.json"

#: Policy values a running ledger may take up (never drop): ``small_view = "suppress"``
#: releases a view smaller than k fully suppressed where the recorded "refuse" stopped the
#: history (the advice of that refusal); no committed release depended on it.
TAKE_UP = {"small_view": "suppress"}


def policy_digest(policy: Mapping[str, Any]) -> str:
    """sha256 (hex) of a ledger's policy.json content without the :data:`TAKE_UP` fields (a
    running ledger may take those up): what ``manifest.json`` records as ``policy_sha256``."""
    pinned = {k: v for k, v in policy.items() if k not in TAKE_UP}
    return hashlib.sha256(json.dumps(pinned, sort_keys=True).encode()).hexdigest()


def recorded_digest(manifest: dict[str, Any], root: Path) -> str | None:
    """The policy digest ``manifest.json`` records (None: a ledger from before digests);
    LedgerError when its releases were committed under another digest, or under one the
    manifest no longer holds (a hand edit)."""
    recorded = manifest.get("policy_sha256")
    committed_under = {e["policy_sha256"] for e in manifest["releases"] if "policy_sha256" in e}
    if committed_under and committed_under != {recorded}:
        raise LedgerError(
            f"{root / MANIFEST}: its policy_sha256 ({recorded or 'missing'}) is not the digest its "
            "releases were committed under: the ledger was edited by hand and is damaged; restore "
            "manifest.json and policy.json from a backup"
        )
    return recorded


def read_manifest(root: Path) -> dict[str, Any]:
    """``root/manifest.json`` as a dict, its release entries checked (:func:`entries_problem`)
    before anything reads or cleans by them. LedgerError when it cannot be read, is not a dpriv
    ledger's manifest (no list of releases), or holds a malformed entry."""
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise LedgerError(f"cannot read {root / MANIFEST}: {exc}") from None
    entries = manifest.get("releases") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "index" in e for e in entries):
        raise LedgerError(
            f"{root / MANIFEST} is not a dpriv ledger's manifest (no list of releases); "
            f"{root} is not a ledger: choose an empty or new folder for --ledger"
        )
    if problem := entries_problem(entries):
        raise LedgerError(
            f"{root / MANIFEST}: {problem}; the ledger is damaged: restore it from a backup "
            "(nothing was written or removed)"
        )
    return manifest


def release_index(index: object) -> int:
    """``index`` as an int (a NumPy integer is one); InputError for anything else, such as the
    text ``"1"`` or ``True``: releases are numbered 1, 2, ... and a folder name is not one."""
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise InputError(
            f"a release index is an int (1, 2, ...), not {type(index).__name__} {index!r}: pass int(index)"
        )
    return int(index)


def entries_problem(entries: list[dict[str, Any]]) -> str | None:
    """What is wrong with the committed releases' entries of a manifest, else None: releases
    are committed one after the other from 1; the input view's digest ``input_sha`` (a string;
    a ledger written by hand may lack it: its views are then not compared), ``state_buckets`` (a
    count), ``policy_sha256``, ``view_sha256``, ``sensitive_sha256`` and ``metrics_sha256``
    (strings) are optional (earlier ledgers lack all but the first)."""
    for pos, entry in enumerate(entries, start=1):
        index = entry.get("index")
        if isinstance(index, bool) or index != pos:
            return f"release entry {pos} has index {index!r} (releases are committed in order from 1)"
        if not isinstance(entry.get("input_sha", ""), str):
            return f"release {pos} has an input_sha that is not a digest"
        buckets = entry.get("state_buckets", 1)
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
            return f"release {pos} has state_buckets {buckets!r}, not a positive whole number"
        for key in ("policy_sha256", "view_sha256", "sensitive_sha256", "metrics_sha256"):
            if not isinstance(entry.get(key, ""), str):
                return f"release {pos} has a {key} that is not a digest"
    return None


def change_hint(
    diff: list[str], stored: dict[str, Any] | None = None, given: dict[str, Any] | None = None
) -> str:
    """What to do when the policy fields ``diff`` of ``given`` differ from the ledger's
    (``stored``), after the refusal's "; ": start a new ledger, and why domains a policy does not
    declare differ (inferred from the first run's data: a weekly job whose first week fixed
    them); only what to write when the kinds alone differ by a QI whose kind the ledger recorded
    (inferred with its domain) and the given policy declares a domain for but no kind."""
    kind = _kind_hint(stored or {}, given or {}) if "kinds" in diff else ""
    if kind and diff == ["kinds"]:
        return kind  # nothing else changed: no new ledger needed
    hint = "a ledger keeps one policy: start a new ledger for a new policy" + (f"; {kind}" if kind else "")
    if "domains" not in diff:
        return hint
    return hint + (
        "; domains a policy does not declare are inferred from the first run's data, so a later "
        "week with values outside them differs: declare [domains] covering every week's values in "
        "the policy file and start a new ledger with it"
    )


def _kind_hint(stored: dict[str, Any], given: dict[str, Any]) -> str:
    """What to write for each QI whose kind ``stored`` records and ``given`` leaves out while
    declaring its domain (``[domains] age = [45, 74]`` and no ``[kinds]``): the recorded kind
    came with the domain inferred from the first week, and a declared domain takes no kind from
    the ledger, so the kinds differ though the user changed none."""
    recorded, declared = stored.get("kinds") or {}, given.get("kinds") or {}
    domains, old = given.get("domains") or {}, stored.get("domains") or {}
    missing = [c for c in recorded if c not in declared and c in domains]
    if not missing:
        return ""
    write = ", ".join(f'{c} = "{recorded[c]}"' for c in missing)
    kept = "; ".join(f"{c}: {_domain(old.get(c), recorded[c])}" for c in missing)
    return (
        f"the ledger recorded the kind of {', '.join(repr(c) for c in missing)} with the domain it "
        f"inferred from its first release, and the policy declares [domains] for it without a kind: add "
        f"[kinds] {write} to the policy file (a domain must then be the recorded one, {kept}), or leave "
        "it out of [domains] to use the ledger's"
    )


def field_change(stored: dict[str, Any], given: dict[str, Any], key: str) -> str:
    """How policy field ``key`` differs, for a message: ``"k: 5 recorded, 7 given"``; for
    ``domains``, each column whose domain differs (a date QI's as dates, not day numbers)."""
    if key != "domains" or not all(isinstance(v.get(key), dict) for v in (stored, given)):
        return f"{key}: {short_value(stored, key)} recorded, {short_value(given, key)} given"
    old, new = stored[key], given[key]
    kinds = {**stored.get("kinds", {}), **given.get("kinds", {})}
    changed = sorted(c for c in set(old) | set(new) if old.get(c) != new.get(c))
    shown = [(c, _domain(old.get(c), kinds.get(c)), _domain(new.get(c), kinds.get(c))) for c in changed[:4]]
    return "; ".join(f"domain of {c!r}: {a} recorded, {b} given" for c, a, b in shown)


def _domain(domain: list | None, kind: str | None) -> str:
    if domain is None:
        return "none (inferred from the data)"
    if kind == "date" and all(isinstance(d, int) for d in domain):
        domain = [str(_dt.date(1970, 1, 1) + _dt.timedelta(days=d)) for d in domain]
    text = json.dumps(domain)
    return text if len(text) <= 60 else text[:57] + "..."


def short_value(values: dict[str, Any], key: str) -> str:
    """A policy field's value for a message, at most 60 characters: absent, a field added after
    ledgers were recorded is at its default (``fingerprint`` leaves it out), any other "not set"."""
    if key not in values:
        return f"{json.dumps(NEWER[key])} (the default)" if key in NEWER else "not set"
    text = json.dumps(values[key])
    return text if len(text) <= 60 else text[:57] + "..."


def policy_diff(stored: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """The fields of two policy fingerprints that differ (sorted), the files' paths left out
    (:func:`without_paths`)."""
    a, b = without_paths(stored), without_paths(given)
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def without_paths(fingerprint: dict[str, Any]) -> dict[str, Any]:
    """A policy fingerprint as pinning compares it: the paths of the ``[knowledge]`` sources and
    of the ``[hierarchies]`` are written as relative to the policy file, so the same files read
    through a policy file elsewhere have other paths; what a release reads from them is pinned
    by their SHA-256 (``knowledge_sha256``, ``hierarchy_sha256``). The names of the sources and
    of the QIs with a hierarchy, and ``defender``, are still compared."""
    out = dict(fingerprint)
    if isinstance(out.get("knowledge"), dict):
        out["knowledge"] = {k: (v if k == "defender" else "<file>") for k, v in out["knowledge"].items()}
    if isinstance(out.get("hierarchies"), dict):
        out["hierarchies"] = {q: "<file>" for q in out["hierarchies"]}
    return out

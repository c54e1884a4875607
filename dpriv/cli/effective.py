"""The effective policy of a command: where each value came from, printed before it starts.

A value comes from a **flag** (given on the command line), the **file** (``--policy F``), the
**ledger** (its recorded ``policy.json``, for ``release``/``verify`` on an existing ledger) or
the **default** of :class:`dpriv.policy.ReleasePolicy`. Domains and kinds missing from all of
them are inferred from the data later and printed then ("inferred ... domain of ...").
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpriv.cli.repeats import comma_names
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy, domain_note
from dpriv.policy_base import recorded_base
from dpriv.policy_keys import BASELINE_FIELDS, SHARED_ONLY, flags_named
from dpriv.policy_values import order_hint

#: Tables of the policy TOML whose body is one field (not flattened into fields).
_WHOLE_TABLES = ("domains", "kinds", "knowledge", "hierarchies")
#: Shown grouped as in the policy file; fields not listed here are shown under "other".
_GROUPS = {
    "columns": ("id", "time", "qi", "sensitive"),
    "privacy": (
        "k",
        "t",
        "j",
        "max_suppression",
        "small_view",
        "emd_ground",
        "log_base",
        "l",
        "bt_b",
        "bt_t",
        "retro_max_gain",
        "retro_retries",
        "retro_attendance",
        "retro_lever",
        "retro_posterior_bound",
        "exit_values",
        "posterior_bound",
        "rbk_closeness",
    ),
    "release": (
        "seed",
        "npartitions",
        "hilbert_bits",
        "group_cap",
        "defer_wait",
        "attach_reach",
        "prior_key",
        "grouping",
        "topdown_level",
        "topdown_pc",
        "topdown_cut",
        "persistent_groups",
        "mondrian_cut",
        "release_format",
    ),
    "data": ("kinds", "domains", "knowledge", "hierarchies"),
}


#: The flags that name one column, what that column is and an example: given empty (an unset
#: shell variable: ``--sensitive "$S"``) each named none, and the column '' was then reported missing.
_ONE_COLUMN = {
    "id": ("the respondent id column", "respondent_id"),
    "sensitive": ("the sensitive column", "exam_result"),
    "time": ("the release-index column of a history", "view"),
}


def split_qi(flags: dict[str, Any]) -> None:
    """Turn a ``--qi A,B`` string of ``flags`` into a list of names, in place; PolicyError when
    the flag was given but names no column (``--qi ""``, ``--qi ,``), or when ``--id``,
    ``--sensitive`` or ``--time`` is given empty (or blank): the one check of every command's
    column flags (``anonymize``, ``release``, ``verify`` read their policy through here)."""
    for name, (what, example) in _ONE_COLUMN.items():
        given = flags.get(name)
        if isinstance(given, str) and not given.strip():
            raise PolicyError(
                f"--{name} {given!r} is empty (an unset shell variable?): give the name of {what} "
                f"(e.g. --{name} {example}), or leave --{name} out to use the policy file's [columns] {name}"
            )
    text = flags.get("qi")
    if not isinstance(text, str):
        return
    flags["qi"] = comma_names(text)
    if not flags["qi"]:
        raise PolicyError(
            f"--qi {text!r} names no column: give the quasi-identifier columns, comma-separated "
            "(e.g. --qi age,gender,weight)"
        )


#: Fields that one baseline method alone enforces (docs/policy.md): printed as "[...; <method>
#: only]" under any other method, so that l=3 is not read as l-diversity of a JS-reduce release.
_METHOD_ONLY = {name: method for method, names in BASELINE_FIELDS.items() for name in names}


@dataclass
class EffectivePolicy:
    """A policy and, per field, where its value came from ("flag", "file", "ledger", "default")."""

    policy: ReleasePolicy
    sources: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # the file or ledger the non-flag values came from
    method: str = "jsreduce"  # the release method: a field only other methods use is marked so

    def lines(self) -> list[str]:
        """One line per group of fields: ``name=value [source]``; long values shortened; a
        field only a baseline enforces, under another method: ``l=3 [default; mondrian-l only]``;
        one only some methods apply (:data:`dpriv.policy_keys.SHARED_ONLY`), under another:
        ``j=0.8 [flag; jsreduce only, unused by mondrian-t]``, ``mondrian_cut=relaxed [file;
        mondrian-l/t/bt only, unused by jsreduce]``."""
        dump = self.policy.model_dump()
        out = [f"effective policy ({self.origin or 'flags and defaults'}):"]
        for group, names in _GROUPS.items():
            items = []
            for name in names:
                value = dump[name]
                if name in _WHOLE_TABLES and not value:
                    continue
                source = self.sources.get(name, "default")
                users = _METHOD_ONLY.get(name, self.method)
                if self.method != users:
                    source += f"; {users} only"
                elif name in SHARED_ONLY and self.method not in SHARED_ONLY[name].methods:
                    source += f"; {SHARED_ONLY[name].named} only, unused by {self.method}"
                items.append(f"{name}={_show(value)} [{source}]")
            if group == "data" and not items:
                items.append("domains inferred from the data")
            out.append(f"  {group}: " + " ".join(items))
        return out


def _show(value: Any) -> str:
    if isinstance(value, list):
        text = ",".join(map(str, value))
        return text if len(text) <= 60 else f"{text[:50]}... ({len(value)} values)"
    if isinstance(value, dict):
        inner = "; ".join(f"{k}: {_show(v)}" for k, v in value.items())
        return "{" + (inner if len(inner) <= 120 else inner[:110] + "...") + "}"
    return "-" if value is None else str(value)


def _file_fields(path: Path) -> set[str]:
    """The fields a policy TOML sets (its tables flattened as :meth:`ReleasePolicy.from_toml`)."""
    try:
        doc = tomllib.loads(path.read_text())
    except (FileNotFoundError, tomllib.TOMLDecodeError):
        return set()  # from_toml has already refused it with the reason
    names: set[str] = set()
    for table, body in doc.items():
        if isinstance(body, dict):
            names |= {table} if table in _WHOLE_TABLES else set(body)
    return names


def ledger_policy(ledger: Path) -> tuple[dict[str, Any], str] | None:
    """The recorded policy of an existing ledger as a dict (with its ``method``), else None."""
    from dpriv.ledger import Ledger

    if not (ledger / "policy.json").is_file():
        return None
    stored = Ledger(ledger).stored_policy()  # refused when edited by hand
    stored.pop("knowledge_sha256", None)
    stored.pop("hierarchy_sha256", None)
    return stored, str(stored.pop("method", "jsreduce"))


def effective_policy(
    policy_file: Path | None,
    *,
    ledger: Path | None = None,
    knowledge_dirs: list[Path] | None = None,
    **flags: Any,
) -> tuple[EffectivePolicy, str | None]:
    """Policy from flags over the file, else over an existing ledger's recorded policy, else
    over the defaults; returns it with the sources and the ledger's recorded method (or None).

    ``--qi`` may be a comma-separated string. Knowledge paths of a recorded policy are relative
    to the policy file it came from: they are looked up in the folder the ledger recorded
    (:mod:`dpriv.policy_base`), then in ``knowledge_dirs`` (e.g. the folder
    of the history and the ledger's parent). Raises PolicyError without a file, a ledger or
    ``--qi``/``--sensitive``.
    """
    split_qi(flags)
    given = {k: v for k, v in flags.items() if v is not None}
    sources = dict.fromkeys(given, "flag")
    # the ledger's method counts with a policy file too (a Mondrian ledger is verified, and
    # resumed, as Mondrian)
    recorded = ledger_policy(ledger) if ledger is not None else None
    if policy_file is not None:
        pol = ReleasePolicy.read_toml(policy_file, given, flags_named)
        sources = {**dict.fromkeys(_file_fields(policy_file), "file"), **sources}
        return EffectivePolicy(pol, sources, f"file {policy_file}"), recorded[1] if recorded else None
    if recorded is not None:
        data, method = recorded
        folders = list(knowledge_dirs or []) + [ledger.parent]
        knowledge, hierarchies = data.get("knowledge", {}), data.get("hierarchies", {})
        base = recorded_base(ledger, knowledge, hierarchies, folders, strict=False)
        pol = _with_flags({**data, "base_dir": base}, given, f"the policy of {ledger / 'policy.json'}")
        sources = {**dict.fromkeys(data, "ledger"), **sources}
        return EffectivePolicy(pol, sources, f"ledger {ledger / 'policy.json'}"), method
    missing = [f"--{k}" for k in ("qi", "sensitive") if not given.get(k)]
    if missing:
        where = " (or an existing --ledger)" if ledger is not None else ""
        if ledger is not None and ledger.is_dir() and any(ledger.iterdir()):
            where = (
                f" (--ledger {ledger} holds no committed release, so no policy: a first release "
                "was interrupted)"
            )
        raise PolicyError(f"no policy file: give --policy FILE{where} or at least {' and '.join(missing)}")
    return EffectivePolicy(_with_flags({}, given, "flags"), sources), None


def _with_flags(data: dict[str, Any], given: dict[str, Any], where: str) -> ReleasePolicy:
    """The policy of ``data`` with the flags ``given`` over it; a PolicyError names the flags
    (as :meth:`ReleasePolicy.from_toml` names its file): ``invalid policy (flags --t): t: ...``."""
    try:
        return ReleasePolicy.from_dict({**data, **given})
    except PolicyError as exc:
        named = f"{where} with {flags_named(given)}" if data else f"flags {flags_named(given)}"
        raise PolicyError(str(exc).replace("invalid policy:", f"invalid policy ({named}):", 1)) from None


def inferred_domains(pol: ReleasePolicy, recorded: ReleasePolicy, held: int = 0) -> list[str]:
    """One line per domain the ledger recorded that ``pol`` did not declare (as anonymize
    says them): a weekly job sees what its later weeks must stay within. ``held``: the releases
    the ledger held before this run; when it held some, the line says the domain is the ledger's,
    not inferred from this week's file (a value outside it is refused by row)."""
    kept = " (recorded by the ledger at its first release: every later week's values must lie within it)"
    return [
        domain_note(name, recorded.kinds.get(name) if name != pol.sensitive else None, recorded.domains[name])
        + (kept if held else "")
        + order_hint(recorded, name, recorded.domains[name])
        for name in (*pol.qi, pol.sensitive)
        if name not in pol.domains and name in recorded.domains
    ]

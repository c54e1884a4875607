"""The policy a ``dpriv`` command runs with: the policy file and the flags that override or
add to it (``--categorical``, ``--date``, ``--hierarchy``), read into one validated
:class:`~dpriv.policy.ReleasePolicy`. A bad file, flag or value is a PolicyError (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpriv.cli.repeats import comma_names
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy


def with_hierarchies(pol: ReleasePolicy, items: list[str] | None) -> ReleasePolicy:
    """``pol`` with ``--hierarchy COL=PATH`` items added to its ``[hierarchies]`` (flags win per
    column; PATH made absolute, it is relative to the working folder, ``~`` expanded as in any
    path). PolicyError names a malformed item or a COL that is not a QI; the file itself is read
    and checked here (InputError from :func:`dpriv.hierarchy.read_hierarchy`)."""
    if not items:
        return pol
    given: dict[str, str] = {}
    for item in items:
        col, sep, path = item.partition("=")
        if not sep or not col.strip() or not path.strip():
            raise PolicyError(f"--hierarchy {item!r}: write COL=PATH, e.g. --hierarchy education=edu.csv")
        col, path = col.strip(), str(Path(path.strip()).expanduser().absolute())
        if col not in pol.qi:
            raise PolicyError(f"--hierarchy names {col!r}, which is not a QI ({pol.qi}): add it to --qi")
        if given.get(col, path) != path:
            raise PolicyError(
                f"--hierarchy names {col!r} twice, as {given[col]} and {path}: give one hierarchy per column"
            )
        given[col] = path
    pol = pol.with_overrides(hierarchies={**pol.hierarchies, **given})
    for col in given:
        pol.hierarchy(col)
    return pol


def load_policy(policy: Path | None, *, categorical: str | None = None, **flags: Any) -> ReleasePolicy:
    """Policy from the TOML file and/or flags (flags win); ``categorical`` (``--categorical
    A,B``) adds ``[kinds]`` entries to the file's."""
    from dpriv.cli.effective import flags_named, split_qi

    split_qi(flags)
    if policy is not None:
        pol = ReleasePolicy.read_toml(policy, flags, flags_named)
    else:
        missing = [f"--{k}" for k in ("qi", "sensitive") if not flags.get(k)]
        if missing:
            raise PolicyError(f"no policy file: give --policy FILE or at least {' and '.join(missing)}")
        pol = ReleasePolicy.from_dict({k: v for k, v in flags.items() if v is not None})
    return with_categorical(pol, categorical)


def ledger_policy_file(policy: Path | None, ledger: Path, history: str) -> ReleasePolicy:
    """The policy a command reads ``ledger``'s releases with (``dpriv attack``): without
    ``--policy`` the one the ledger recorded (:func:`dpriv.attack_policy.ledger_policy`), else the
    file ``policy`` as :func:`load_policy` reads it, once checked to read the releases with the
    ledger's columns. PolicyError (exit 2) names a file that cannot be read, or ``--policy FILE``
    and each field it reads otherwise; LedgerError for a ledger without a release."""
    from dpriv.attack_policy import attack_policy

    given = load_policy(policy) if policy is not None else None
    return attack_policy(ledger, given, history, flag=f"--policy {policy}")


def with_categorical(pol: ReleasePolicy, categorical: str | None, dates: str | None = None) -> ReleasePolicy:
    """``pol`` with the QIs named by ``--categorical A,B`` (``--date C``) added to its ``[kinds]``
    as categorical (date); PolicyError names any that is not a QI."""
    kinds = dict(pol.kinds)
    for flag, kind, given in (("--categorical", "categorical", categorical), ("--date", "date", dates)):
        names = comma_names(given)
        unknown = [c for c in names if c not in pol.qi]
        if unknown:
            raise PolicyError(f"{flag} names {unknown}, which are not QIs ({pol.qi}): add them to --qi")
        kinds.update(dict.fromkeys(names, kind))
    return pol.with_overrides(kinds=kinds) if kinds != pol.kinds else pol


def load_effective(policy: Path | None, **kwargs: Any) -> tuple[Any, str | None]:
    """:func:`dpriv.cli.effective.effective_policy`: the policy with the source of each value
    (an :class:`~dpriv.cli.effective.EffectivePolicy`) and a ledger's recorded method."""
    from dpriv.cli.effective import effective_policy

    return effective_policy(policy, **kwargs)

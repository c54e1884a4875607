"""Checks of a released view's format (docs/released-format.md), for the independent verifier:
its columns (no respondent id, no private column, nothing missing or extra), the numeric
bounds, the value sets and hierarchy nodes of the categorical QIs, one generalized value per
QI-group; and the capped lists of what is wrong that every verifier message uses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP, released_columns, split_value_sets
from dpriv.rows import rows_named
from dpriv.wording import counted

MAX_LISTED = 20  # groups named per kind of problem; the rest are counted


def listed(prefix: str, items: list[str]) -> list[str]:
    """Cap a list of per-group problems at MAX_LISTED lines, counting the rest."""
    if len(items) > MAX_LISTED:
        return [prefix + x for x in items[:MAX_LISTED]] + [f"{prefix}... and {len(items) - MAX_LISTED} more"]
    return [prefix + x for x in items]


def named(labels) -> str:
    labels = list(labels)
    head = ", ".join(repr(as_python(x)) for x in labels[:MAX_LISTED])
    return head + (f" and {len(labels) - MAX_LISTED} more" if len(labels) > MAX_LISTED else "")


def column_problems(
    cols: list, expected: list[str], policy: ReleasePolicy, fmt: str = "released format", what: str = ""
) -> list[str]:
    """Problems of a published table's columns against the ``expected`` ones of the format
    ``fmt``: the respondent id or a private ``_...`` column released, an extra or a missing
    column. ``what`` (e.g. "the sensitive table: ") prefixes each message."""
    problems = []
    if policy.id in cols:
        problems.append(f"{what}column {policy.id!r}: the respondent id must never be released")
    private = [c for c in cols if str(c).startswith("_")]
    if private:
        problems.append(f"{what}columns {private}: private columns (starting with '_') must not be released")
    extra = [c for c in cols if c not in expected and c != policy.id and c not in private]
    if extra:
        whole = [c for c in extra if c in policy.qi]  # a QI released as one column: value sets or nodes
        hint = f" ({_one_column_hint(whole[0], _exact(cols, policy))})" if whole else ""
        problems.append(f"{what}columns {extra} are not part of the {fmt} {expected}{hint}")
    missing = [c for c in expected if c not in cols]
    if missing:
        problems.append(f"{what}columns {missing} of the {fmt} are missing")
    return problems


def format_problems(released: pd.DataFrame, policy: ReleasePolicy) -> tuple[list[str], list[str]]:
    """Problems of the released columns and values; also the usable generalized QI columns."""
    problems: list[str] = []
    expected = released_columns(policy)
    cols = list(released.columns)
    problems += column_problems(cols, expected, policy)
    usable: list[str] = []
    has_group = GROUP in cols
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            lo, hi = f"{q}_min", f"{q}_max"
            if lo not in cols or hi not in cols:
                continue
            bad = [
                c
                for c in (lo, hi)
                if not (
                    pd.api.types.is_numeric_dtype(released[c]) and not pd.api.types.is_bool_dtype(released[c])
                )
            ]
            if bad:
                problems.append(f"columns {bad}: interval bounds of numeric QI {q!r} must be numeric")
                continue
            nan = (released[lo].isna() | released[hi].isna()).to_numpy()
            if nan.any():  # named by their place in the released file, never by a value
                problems.append(
                    f"QI {q!r}: {counted(int(nan.sum()), 'row has', 'rows have')} a missing interval bound "
                    f"({rows_named(released, nan, whole=False)})"
                )
            inverted = (released[lo] > released[hi]).to_numpy()
            if inverted.any():
                where = released.loc[inverted, GROUP].unique() if has_group else []
                problems.append(
                    f"QI {q!r}: {counted(int(inverted.sum()), 'row has', 'rows have')} {lo} > {hi}"
                    + (f" (QI-groups {named(where)})" if has_group else "")
                )
            usable += [lo, hi]
        else:
            if q not in cols:
                continue
            if q not in policy.domains:
                raise PolicyError(f"categorical QI {q!r} has no domain; resolve the policy first")
            h = policy.hierarchy(q)
            if h is not None:
                cells = pd.unique(released[q].astype(str).to_numpy())
                wrong = sorted(c for c in cells if c not in h.node_index)
                if wrong:
                    problems.append(
                        f"QI {q!r}: values {wrong[:5]} are not nodes of its hierarchy {h.path} "
                        f"(e.g. {list(h.names[:6])})"
                    )
                usable.append(q)
                continue
            levels = [str(v) for v in policy.domains[q]]  # the domain's order, for the message
            names = set(levels)
            sets = pd.Series(pd.unique(released[q].to_numpy()), dtype=object)
            text = sets.astype(str)
            shaped = sets.notna() & text.str.startswith("{") & text.str.endswith("}") & (text.str.len() > 2)
            items = split_value_sets(text[shaped]).explode()
            wrong = set(text[~shaped]) | set(text[np.unique(items.index[~items.isin(names)])])
            if wrong:
                problems.append(
                    f"QI {q!r}: values {sorted(wrong)[:5]} are not value sets '{{a,b}}' of its levels "
                    f"{levels[:8]} ({_hierarchy_hint(q)})"
                )
            usable.append(q)
    if has_group and len(released):
        if released[GROUP].isna().any():
            problems.append(f"column {GROUP!r} has missing labels")
        elif usable:
            for c, bad in _not_constant(released, usable):
                if len(bad):
                    problems.append(
                        f"QI-groups {named(bad)}: column {c!r} is not the same on all "
                        "rows of the group (one interval / value set per group)"
                    )
    return problems, usable


def _not_constant(released: pd.DataFrame, columns: list[str]) -> list[tuple[str, np.ndarray | pd.Index]]:
    """Per column of ``columns``, the QI-groups (sorted labels) whose rows hold more than one
    value of it (a missing value counts as a value). Integer labels in order (a release's parts
    come sorted by label): adjacent rows compared, no groupby."""
    g = released[GROUP].to_numpy()
    if not (g.dtype.kind in "iu" and bool(np.all(g[1:] >= g[:-1]))):
        spread = released.groupby(GROUP, sort=True)[columns].nunique(dropna=False)
        return [(c, spread.index[spread[c].to_numpy() > 1]) for c in columns]
    same = g[1:] == g[:-1]
    out = []
    for c in columns:
        v = released[c]
        plain = isinstance(v.dtype, np.dtype) and v.dtype.kind in "iuf"
        v = v.to_numpy() if plain else pd.factorize(v)[0]  # missing: one code, -1
        differ = v[1:] != v[:-1]
        if v.dtype.kind == "f":  # NaN and NaN are one value
            differ &= ~(np.isnan(v[1:]) & np.isnan(v[:-1]))
        out.append((c, np.unique(g[1:][same & differ])))
    return out


def _exact(cols: list, policy: ReleasePolicy) -> bool:
    """Every QI under its own name and no interval column: the QI table of an Anatomy release."""
    return all(q in cols for q in policy.qi) and not any(f"{q}_min" in cols for q in policy.qi)


def _one_column_hint(q: str, exact: bool = False) -> str:
    """What to do when QI ``q``, numeric for the check, was released as one column (``exact``:
    as every QI, as an Anatomy QI table has them)."""
    if exact:
        return "every QI exact: an Anatomy QI table? verify it with --release-format anatomy"
    return (
        f"value sets or hierarchy nodes? declare it: --categorical {q} or [kinds], "
        f"--hierarchy {q}=PATH or [hierarchies]"
    )


def _hierarchy_hint(q: str) -> str:
    """What to do when QI ``q`` looks released with a hierarchy the check was not given."""
    return f"hierarchy nodes? give it: --hierarchy {q}=PATH or [hierarchies]"

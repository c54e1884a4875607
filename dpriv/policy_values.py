"""How a policy's values are read and shown: a date QI's domain given as dates (whole days since
1970-01-01), NumPy scalars as Python values; the kinds and domains a policy does not declare,
inferred from the data, in the order of their levels, and the line that tells each
(:meth:`dpriv.policy.ReleasePolicy.resolve`); exit values missing from a sensitive domain
to be inferred, refused before it is (:func:`check_inferred_exit_values`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dpriv.errors import PolicyError
from dpriv.policy_domains import is_number
from dpriv.policy_keys import PolicyFields


def domain_note(name: str, kind: str | None, domain: list) -> str:
    """The line that tells an inferred domain (``kind`` None: the sensitive attribute's)."""
    shown = _dates(domain) if kind == "date" else _short(domain)
    return f"inferred {kind or 'sensitive'} domain of {name!r}: {shown}"


def _dates(days: list) -> str:
    """A date QI's [min, max] in days as ISO dates (``[2020-01-01, 2020-12-31]``)."""
    dates = [str((pd.Timestamp("1970-01-01") + pd.Timedelta(days=int(d))).date()) for d in days]
    return f"[{', '.join(dates)}]"


def as_days(v: Any) -> Any:
    """A date (date, datetime, ISO text) as days from 1970-01-01; anything else as it is."""
    import datetime as dt

    if isinstance(v, dt.date | str):
        try:
            stamp = pd.Timestamp(v)
        except (TypeError, ValueError):
            return v
        stamp = stamp.tz_localize(None) if stamp.tzinfo is not None else stamp
        return int((stamp.normalize() - pd.Timestamp("1970-01-01")) // pd.Timedelta(days=1))
    return v


def dated_domains(data: Any) -> Any:
    """The fields ``data`` given to :class:`~dpriv.policy.ReleasePolicy` (a dict, before
    validation; anything else unchanged) with each date QI's domain given as dates (TOML
    ``2020-01-01`` or ISO text) as whole days since 1970-01-01 (:func:`as_days`)."""
    if not isinstance(data, dict):
        return data
    kinds, domains = data.get("kinds") or {}, data.get("domains") or {}
    if not (isinstance(kinds, Mapping) and isinstance(domains, Mapping)):
        return data  # domains = "x" (not a table): refused by the model's type check, by name
    dated = {
        q: [as_days(v) for v in dom]
        for q, dom in domains.items()
        if kinds.get(q) == "date" and isinstance(dom, list | tuple)
    }
    return {**data, "domains": {**domains, **dated}} if dated else data


def as_python(v: Any) -> Any:
    """A NumPy scalar as the Python value it holds (JSON, messages); anything else as it is."""
    return v.item() if isinstance(v, np.generic) else v


def sort_key(v: Any) -> tuple:
    return (0, v, "") if is_number(as_python(v)) else (1, 0, str(v))


def _short(values: list[Any]) -> str:
    return str(values) if len(values) <= 8 else f"{values[:4]} ... {values[-2:]} ({len(values)} values)"


class Inferred(NamedTuple):
    """:func:`inferred_domains`' result: the policy's ``kinds`` (column -> kind) and ``domains``
    (column -> [min, max] or the sorted levels), each completed from the data, and one ``notes``
    line per domain inferred."""

    kinds: dict[str, Any]
    domains: dict[str, list]
    notes: list[str]


def inferred_domains(policy: PolicyFields, view: pd.DataFrame) -> Inferred:
    """The kinds and domains of ``policy`` (a :class:`dpriv.policy.ReleasePolicy`) with those it
    does not declare inferred from ``view`` (pandas), and one note per inferred domain
    (:class:`Inferred`; :meth:`dpriv.policy.ReleasePolicy.resolve`)."""
    kinds, domains, notes = dict(policy.kinds), dict(policy.domains), []
    for name in (*policy.qi, policy.sensitive):
        if name in domains or name not in view.columns:
            continue
        col = view[name].dropna()
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        kind = kinds.get(name, "numeric" if numeric else "categorical")
        if name != policy.sensitive and kind in ("numeric", "date"):
            if not numeric or col.empty:
                continue  # validation reports it with the column name
            domains[name] = [as_python(col.min()), as_python(col.max())]
            kinds.setdefault(name, "numeric")
        else:
            domains[name] = [as_python(v) for v in sorted(col.unique(), key=sort_key)]
            if name != policy.sensitive:
                kinds[name] = "categorical"
        notes.append(
            domain_note(name, kinds.get(name), domains[name]) + order_hint(policy, name, domains[name])
        )
    return Inferred(kinds, domains, notes)


def order_hint(policy: PolicyFields, name: str, domain: list) -> str:
    """What the note of an inferred sensitive domain of text in sorted order adds under
    ``emd_ground = "ordered"``: its order is the alphabet's, which t-closeness then measures
    distances by (``""`` otherwise: numbers, or an ordered Categorical's own order)."""
    if name != policy.sensitive or policy.emd_ground != "ordered" or all(is_number(v) for v in domain):
        return ""
    if domain != sorted(domain, key=sort_key):
        return ""
    return (
        ' (in alphabetical order, the order emd_ground = "ordered" measures distances by: to use '
        f"the values' own order, declare it, [domains] {name} = [...] in the policy, or give the "
        "column as an ordered pandas Categorical)"
    )


def check_inferred_exit_values(data: pd.DataFrame, policy: PolicyFields, ordered: bool = False) -> None:
    """PolicyError when the sensitive domain is to be inferred from ``data`` and some of
    ``policy.exit_values`` do not occur there: the message says the domain was inferred from
    this input and that declaring ``[domains] <sensitive>`` fixes it, listing the domain as it
    was inferred: sorted, or with ``ordered`` in the order of ``data`` (the values of an ordered
    Categorical in the order of its categories, :func:`dpriv.inputs.category_domains`). Kept
    with the inference it checks ahead of: :mod:`dpriv.inputs` and :mod:`dpriv.input_checks`
    both call it."""
    s = policy.sensitive
    if not policy.exit_values or s in policy.domains or s not in data.columns:
        return
    seen = [str(v) for v in data[s].dropna().unique()]
    seen = list(dict.fromkeys(seen)) if ordered else sorted(set(seen))
    unknown = [v for v in policy.exit_values if str(v) not in seen]
    if unknown:
        full = seen + [str(v) for v in unknown]
        raise PolicyError(
            f"exit_values {unknown} are not values of the sensitive column {s!r}: no domain of "
            f"{s!r} is declared, so it was inferred from this input ({seen[:8]}"
            f"{'...' if len(seen) > 8 else ''}), where they do not occur; declare the full domain "
            f"in the policy, [domains] {s} = {full[:8]}{'...' if len(full) > 8 else ''}, or drop "
            "them from exit_values"
        )

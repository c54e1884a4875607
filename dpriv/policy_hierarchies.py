"""A policy's hierarchies (``[hierarchies]``, :mod:`dpriv.hierarchy`) put to use: the levels of
each such QI set to its hierarchy's leaves, checked against the data (:func:`hierarchy_domains`),
and the digests of their files a ledger records with its policy (:func:`hierarchy_digests`).

Apart from :mod:`dpriv.hierarchy` (a file read and validated, which the policy itself reads)
because these take the whole policy."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dask.dataframe as dd
import pandas as pd

from dpriv.errors import PolicyError
from dpriv.hierarchy import missing_leaves, typed_leaves
from dpriv.policy import ReleasePolicy


def hierarchy_domains(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy
) -> tuple[ReleasePolicy, list[str]]:
    """``policy`` with the levels of every QI that has a hierarchy set to the hierarchy's leaves
    in tree order (:mod:`dpriv.hierarchy`), typed like the data; and one note per QI whose
    levels were not declared before.

    Raises InputError for an invalid hierarchy file or a value of the data (any view) that the
    hierarchy does not list, and when a declared ``[domains]`` entry differs from the leaves.
    """
    if not policy.hierarchies:
        return policy, []
    domains, notes = dict(policy.domains), []
    for q in policy.hierarchies:
        h = policy.hierarchy(q)
        if q not in view.columns:
            continue
        present = view[q].drop_duplicates()
        present = present.compute() if hasattr(present, "compute") else present
        error = missing_leaves(h, present.tolist(), q)
        if error is not None:
            raise error
        leaves = typed_leaves(h, present)
        if q in domains and [str(v) for v in domains[q]] != [str(v) for v in leaves]:
            raise PolicyError(
                f"[domains] {q} = {domains[q][:8]} differs from the leaves of its hierarchy "
                f"{h.path} (in tree order: {leaves[:8]}): drop the [domains] entry, the hierarchy "
                "gives the levels"
            )
        if q not in domains:
            notes.append(f"levels of {q!r} from its hierarchy {h.path}: {len(leaves)} leaves in tree order")
        domains[q] = leaves
    return policy.with_overrides(domains=domains), notes


def hierarchy_digests(policy: ReleasePolicy) -> dict[str, dict[str, str]]:
    """``{"hierarchy_sha256": {QI: SHA-256 of its file}}`` for a ledger's ``policy.json`` (a
    ledger keeps its hierarchies as it keeps its knowledge file); ``{}`` without hierarchies."""
    if not policy.hierarchies:
        return {}
    paths = {q: policy.hierarchy_path(q) for q in sorted(policy.hierarchies)}
    digests = {q: hashlib.sha256(Path(p).read_bytes()).hexdigest() for q, p in paths.items()}
    return {"hierarchy_sha256": digests}

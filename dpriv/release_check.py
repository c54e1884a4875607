"""Verification of a release on Dask, part by part (the ``verify`` step of the release loop).

The release's membership is hash-partitioned by QI-group, so every part holds whole groups:
each part's released rows are rebuilt from its membership and checked by the independent
verifier (:func:`dpriv.anonymity.verify.verify_release`, or
:func:`dpriv.anonymity.verify_anatomy.verify_anatomy` for an Anatomy release); the client
combines the per-part reports and checks that the rows written are the rows verified (an
order-free digest). Only reports, counts and digests reach the client.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.anatomy import COUNT, apply_anatomy, sensitive_table
from dpriv.anonymity.verify import VerificationReport, combine_reports, verify_release
from dpriv.anonymity.verify_anatomy import verify_anatomy
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, public, qig_rows, qig_table, rows_digest
from dpriv.row_order import stably_sorted
from dpriv.validate import codes
from dpriv.view_summary import ViewSummary


@dataclass
class PartCheck:
    """:func:`check_qi_groups` of one part: its report (without the per-group table, which
    stays on the worker), its released sensitive counts (int64, (M,)) and the order-free
    digest of its released rows (:func:`rows_digest`)."""

    report: VerificationReport
    s_counts: np.ndarray
    digest: int


def check_qi_groups(
    assigned: pd.DataFrame,
    table: pd.DataFrame | None,
    policy: ReleasePolicy,
    method: str,
    view_counts: np.ndarray,
) -> PartCheck:
    """Independent verification of a part of a release that holds whole QI-groups: their
    released rows (CreateQIG of ``assigned`` by ``table``) against their private membership.
    The rows are put in a canonical order first (label, id), so that a group's sums (its mean
    prior for j) have the same last bits however the groups were cut into parts. ``table``
    None: the part's own CreateQIG table (:func:`qig_table` of its whole groups; a release
    made on Dask keeps no global table)."""
    assigned = canonical_rows(assigned, policy)
    table = qig_table(assigned, policy) if table is None else table
    released = qig_rows(assigned, table, policy, sensitive_as_is=True)  # S: no Python strings
    report = verify_release(released, policy, view_counts=view_counts, assigned=assigned, method=method)
    counts = np.bincount(
        codes(released[policy.sensitive], policy.sensitive_domain).clip(0),
        minlength=len(policy.sensitive_domain),
    )
    return PartCheck(replace(report, groups=report.groups.iloc[:0]), counts, rows_digest(released))


def check_anatomy_groups(
    assigned: pd.DataFrame, policy: ReleasePolicy, method: str, view_counts: np.ndarray
) -> PartCheck:
    """:func:`check_qi_groups` for an Anatomy release: the part's QI rows and sensitive
    table, built from ``assigned`` (whole QI-groups), verified by
    :func:`dpriv.anonymity.verify_anatomy.verify_anatomy`; the digest covers the QI rows and
    the sensitive table's rows (each tagged, so a table cannot stand in for the other)."""
    assigned = canonical_rows(assigned, policy)
    qi_rows, table = public(apply_anatomy(assigned, policy)), sensitive_table(assigned, policy)
    report = verify_anatomy(qi_rows, table, policy, view_counts=view_counts, assigned=assigned, method=method)
    counts = np.bincount(
        codes(table[policy.sensitive], policy.sensitive_domain).clip(0),
        weights=table[COUNT].to_numpy(),
        minlength=len(policy.sensitive_domain),
    ).astype(np.int64)
    digest = (rows_digest(qi_rows) + anatomy_table_digest(table)) % 2**64
    return PartCheck(replace(report, groups=report.groups.iloc[:0]), counts, digest)


def canonical_rows(assigned: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """``assigned`` sorted by (QI-group label, respondent id): an order that does not depend
    on the partitioning (nor on the path, in process or Dask)."""
    return stably_sorted(assigned, [LABEL, policy.id])


def anatomy_table_digest(table: pd.DataFrame) -> int:
    """Order-free digest of a sensitive table's rows, distinct from any QI rows' digest."""
    return rows_digest(table.assign(sensitive_table_row=1))


def verify_parts(
    released: pd.DataFrame | dd.DataFrame,
    by_group: pd.DataFrame | dd.DataFrame,
    table: pd.DataFrame | None,
    policy: ReleasePolicy,
    method: str,
    summary: ViewSummary,
    sensitive: pd.DataFrame | None = None,
) -> VerificationReport:
    """Verify a release part by part (``by_group``: its membership hash-partitioned by
    QI-group on Dask; a pandas frame is one part, checked in process) and check that
    ``released`` (and an Anatomy release's ``sensitive`` table)
    holds exactly the verified rows (digest).
    Returns the combined report (:func:`dpriv.anonymity.verify.combine_reports`)."""
    lazy = is_dask(by_group)
    run = dask.delayed if lazy else (lambda fn: fn)  # in process: the kernels themselves, one part
    parts_in = by_group.to_delayed() if lazy else [by_group]
    if sensitive is not None:
        checks = [run(check_anatomy_groups)(part, policy, method, summary.s_counts) for part in parts_in]
    else:
        table_node = dask.delayed(table) if lazy and table is not None else table
        checks = [
            run(check_qi_groups)(part, table_node, policy, method, summary.s_counts) for part in parts_in
        ]
    released_parts = released.to_delayed() if is_dask(released) else [released]
    written = [run(rows_digest)(part) for part in released_parts]
    parts, written = dask.compute(checks, written) if lazy else (checks, written)
    report = combine_reports(
        [p.report for p in parts], sum(p.s_counts for p in parts), summary.s_counts, policy.sensitive_domain
    )
    written = sum(written) + (anatomy_table_digest(sensitive) if sensitive is not None else 0)
    if sum(p.digest for p in parts) % 2**64 != written % 2**64:
        problem = "the released rows are not the verified rows (digest differs)"
        report = replace(report, ok=False, problems=[*report.problems, problem])
    return report

"""``dpriv verify``'s check of a released file against the original view it was made from.

A released file carries no membership (no ids), so besides the groups' own checks
(:func:`dpriv.anonymity.verify.verify_release`, :func:`dpriv.anonymity.verify_anatomy.verify_anatomy`)
the original is held against the release: the tuple count (:func:`count_problems`) and, for
the generalized format, some assignment of the original's tuples to the boxes
(:func:`dpriv.anonymity.coverage.coverage_problems`); for an Anatomy release, of the QI rows
to the original's tuples (:func:`dpriv.anonymity.coverage_anatomy.anatomy_coverage_problems`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from dpriv.anonymity.coverage import coverage_problems
from dpriv.anonymity.coverage_anatomy import anatomy_coverage_problems
from dpriv.anonymity.verify import VerificationReport, verify_release
from dpriv.anonymity.verify_anatomy import verify_anatomy
from dpriv.dates import released_days
from dpriv.errors import InputError
from dpriv.input_checks import resolve_policy
from dpriv.inputs import nfc_text, prepared
from dpriv.policy import ReleasePolicy
from dpriv.release_members import member_problems
from dpriv.validate import check_unique_ids, codes
from dpriv.wording import Named, argument_named, counted


def verify_view(
    released: pd.DataFrame,
    original: pd.DataFrame,
    policy: ReleasePolicy,
    *,
    view: int | None = None,
    sensitive: pd.DataFrame | None = None,
    recorded: int | None = None,
    recorded_in: str = "its metrics.json",
    method: str = "jsreduce",
    named: Named = argument_named,
    members: pd.DataFrame | None = None,
) -> VerificationReport:
    """Verify a released view against the original view it was made from (``dpriv verify``).

    ``original`` may be a history (the policy's time column): ``view`` then picks the view
    (required when it holds several). The policy's domains are resolved from that view; t is
    checked against its sensitive distribution. An Anatomy release gives its QI table as
    ``released`` and its ``sensitive`` table (:func:`verify_anatomy`). Besides the groups'
    checks, the release must hold the view's tuples but at most ``max_suppression`` of them
    (a truncated file is not a valid release), and exactly ``recorded`` tuples when the release
    recorded that many (``n_released`` of the metrics file ``recorded_in``): :func:`count_problems`.
    The groups are held to what ``method`` promises (:data:`dpriv.criteria.GUARANTEES`: a Mondrian
    l-diversity release is checked for k and l, not t). Raises InputError / PolicyError, naming
    the arguments as ``named`` words them (``dpriv verify`` passes its flags: ``--original``).

    ``members``: the private membership of release ``view`` of a ledger, the respondent id and
    ``_label`` (int64, its QI-group) of each kept tuple
    (:func:`dpriv.release_members.release_members`). With it,
    each box is held to its own members (:func:`dpriv.anonymity.membership.box_problems`:
    tight, not only admitting some assignment of the original's tuples); a problem names the
    release, the QI-groups and the QI, no value.
    """
    original, policy = prepared(original, policy)
    released = released_days(released, policy)
    # released text in NFC as the original's (a CSV saved in NFD by an editor is the same release)
    text = [c for c in [*policy.qi, policy.sensitive] if c in released.columns]
    released = released.assign(**{c: nfc_text(released[c]) for c in text})
    if sensitive is not None and policy.sensitive in sensitive.columns:
        sensitive = sensitive.assign(**{policy.sensitive: nfc_text(sensitive[policy.sensitive])})
    if policy.id in original.columns:  # a respondent counted twice would skew every check
        check_unique_ids(original, policy, named("original"))
    if policy.time and policy.time in original.columns:
        times = sorted(original[policy.time].unique().tolist())
        if not times:  # a header only: no view to pick
            raise InputError(
                f"{named('original')} has a header but no rows: give the view the release was made from"
            )
        if view is None and len(times) > 1:
            raise InputError(
                f"{named('original')} holds {len(times)} views ({policy.time} = {times[0]}..{times[-1]}); "
                f"t is checked against the view a release was made from: pass {named('view', '<index>')}"
            )
        if view is not None:
            original = original[original[policy.time] == view]
            if original.empty:
                raise InputError(
                    f"{named('original')} has no rows with {policy.time} = {view}; it holds {times[:10]}"
                )
    policy, _ = resolve_policy(original, policy)
    c = codes(original[policy.sensitive], policy.sensitive_domain)
    counts = np.bincount(c[c >= 0], minlength=len(policy.sensitive_domain))
    if sensitive is not None:
        report = verify_anatomy(released, sensitive, policy, view_counts=counts)
    else:
        report = verify_release(released, policy, view_counts=counts, method=method)
    # the file's rows, not those the checks could read (a value outside D[S] is not a lost row)
    extra = count_problems(len(original), len(released), policy, recorded, recorded_in)
    if sensitive is None:  # the boxes must admit the original's tuples (no membership here)
        extra += coverage_problems(released, original, policy)
    else:  # the QI rows must be the original's tuples, with the values each group counts
        extra += anatomy_coverage_problems(released, sensitive, original, policy)
    if sensitive is None and members is not None:  # with the membership: its own members' boxes
        extra += member_problems(released, original, members, policy, view)
    return replace(report, ok=False, problems=report.problems + extra) if extra else report


def count_problems(
    n_view: int,
    n_released: int,
    policy: ReleasePolicy,
    recorded: int | None,
    recorded_in: str = "its metrics.json",
) -> list[str]:
    """Problems of a release's tuple count: ``n_released`` of the ``n_view`` tuples of its
    original view; more suppressed than ``policy.max_suppression`` allows (a view below k
    released empty under ``small_view`` "suppress"/"merge" excepted); a count other than the
    ``recorded`` one (``n_released`` of the metrics file ``recorded_in``); more than the view
    holds. The groups' checks cannot see a whole group cut from a file."""
    problems = []
    if recorded is not None and n_released != recorded:
        problems.append(
            f"the release holds {counted(n_released, 'tuple')} where it recorded {recorded} "
            f"(n_released of {recorded_in}): the released file was changed after the release"
        )
    if n_released > n_view:
        problems.append(
            f"the release holds {counted(n_released, 'tuple')}, more than the {n_view} of the view: a "
            "released row was duplicated or added, or the original is not the view it was made from"
        )
    missing = n_view - n_released
    small = n_released == 0 and n_view < policy.k and policy.small_view != "refuse"
    if n_view and missing / n_view > policy.max_suppression + 1e-12 and not small:
        problems.append(
            f"{missing} of the view's {counted(n_view, 'tuple')} ({missing / n_view:.1%}) are missing from "
            f"the release, above max_suppression {policy.max_suppression:g}: the file was truncated "
            "or was not made from this view"
        )
    return problems

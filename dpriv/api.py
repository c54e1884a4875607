"""Single-view anonymization: validate -> priors -> Generalize -> verify -> metrics.

This is what ``dpriv anonymize`` runs. The release loop (``dpriv.release``) runs the same
steps per view with revised knowledge (RBK) instead of these one-shot priors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv.anonymity.verify import verify_release
from dpriv.anonymize import LABEL, generalize_view
from dpriv.errors import PolicyError, VerificationError
from dpriv.knowledge.tables import ClassMap
from dpriv.metrics.microdata import release_kpr
from dpriv.metrics.utility import utility_metrics
from dpriv.policy import ReleasePolicy
from dpriv.validate import ViewSummary, check_raw, codes, validate_view

PRIORS = ("class", "uniform")


@dataclass
class Anonymized:
    """A verified released view (pandas), its private assignment and its metrics."""

    released: pd.DataFrame
    assigned: pd.DataFrame
    metrics: dict
    policy: ReleasePolicy
    notes: list[str] = field(default_factory=list)


def resolve_policy(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy
) -> tuple[ReleasePolicy, list[str]]:
    """Fill the domains the policy does not declare from the data (computes those columns).

    Raw checks come first (:func:`dpriv.validate.check_raw`): a missing column, an empty
    view, generalized values such as ``[45-52]`` or ``*``, numbers stored as text.
    """
    check_raw(view, policy)
    if policy.is_resolved():
        return policy, []
    cols = [c for c in (*policy.qi, policy.sensitive) if c not in policy.domains and c in view.columns]
    sample = view[cols].compute() if isinstance(view, dd.DataFrame) else view[cols]
    return policy.resolve(sample)


def class_map(policy: ReleasePolicy, bins: int = 3) -> ClassMap:
    """QI classes of the empirical prior: numeric QIs in ``bins`` equal-width bins of their
    policy domain (the paper's thirds, §2.5), categorical QIs by level."""
    cuts = []
    for q in policy.qi:
        dom = policy.domains[q]
        if policy.kind(q) == "numeric":
            lo, hi = dom
            cuts.append(tuple(lo + (hi - lo) * np.arange(1, bins) / bins))
        else:
            cuts.append(tuple(dom))
    return ClassMap(tuple(policy.qi), tuple(cuts), tuple(policy.kind(q) == "numeric" for q in policy.qi))


def _class_counts(part: pd.DataFrame, cmap: ClassMap, policy: ReleasePolicy) -> np.ndarray:
    m = len(policy.sensitive_domain)
    idx = cmap.classify(part) * m + codes(part[policy.sensitive], policy.sensitive_domain)
    return np.bincount(idx, minlength=cmap.n_classes * m).reshape(cmap.n_classes, m)


def _with_priors(
    part: pd.DataFrame, table: np.ndarray, cmap: ClassMap | None, policy: ReleasePolicy
) -> pd.DataFrame:
    rows = (
        table[cmap.classify(part)]
        if cmap is not None
        else np.broadcast_to(table[0], (len(part), table.shape[1]))
    )
    return part.assign(**{c: rows[:, i] for i, c in enumerate(policy.prior_columns)})


def attach_priors(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, prior: str = "class", bins: int = 3
) -> pd.DataFrame | dd.DataFrame:
    """Add the ``p__<value>`` prior columns (float64, rows sum to 1).

    ``"class"``: the empirical distribution of S in the respondent's QI class (see
    :func:`class_map`); ``"uniform"``: 1/M everywhere (JS is then 0, j never binds).
    """
    m = len(policy.sensitive_domain)
    if prior == "uniform":
        table, cmap = np.full((1, m), 1.0 / m), None
    elif prior == "class":
        cmap = class_map(policy, bins)
        if isinstance(view, dd.DataFrame):
            counts = sum(
                dask.compute(*[dask.delayed(_class_counts)(p, cmap, policy) for p in view.to_delayed()])
            )
        else:
            counts = _class_counts(view, cmap, policy)
        table = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    else:
        raise PolicyError(f"prior must be one of {PRIORS}, got {prior!r}")
    if isinstance(view, dd.DataFrame):
        meta = _with_priors(view._meta, table, cmap, policy)
        return view.map_partitions(_with_priors, table, cmap, policy, meta=meta)
    return _with_priors(view, table, cmap, policy)


def anonymize(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    *,
    prior: str = "class",
    npartitions: int | None = None,
) -> Anonymized:
    """Release one view under (k, t, j) with one-shot priors (no history).

    Raises InputError / PolicyError for bad input, PolicyError when the suppression exceeds
    ``policy.max_suppression``, VerificationError when the independent check fails.
    """
    start = time.perf_counter()
    policy, notes = resolve_policy(view, policy)
    summary = validate_view(view, policy)
    with_priors = attach_priors(view, policy, prior)
    result = generalize_view(with_priors, policy, summary, npartitions=npartitions or policy.npartitions)
    released, assigned = result.released, result.assigned
    if isinstance(released, dd.DataFrame):
        released, assigned = dask.compute(released, assigned)
    original = view[policy.qi].compute() if isinstance(view, dd.DataFrame) else view
    metrics = checked_metrics(released, assigned, original, policy, summary, result.n_suppressed)
    metrics["seconds"] = round(time.perf_counter() - start, 3)
    assigned = assigned.drop(columns=[c for c in assigned.columns if c.startswith("_") and c != LABEL])
    return Anonymized(public(released).reset_index(drop=True), assigned, metrics, policy, notes)


def public(frame: pd.DataFrame | dd.DataFrame) -> pd.DataFrame | dd.DataFrame:
    """``frame`` without its private ``_`` columns (e.g. the ``_order`` shuffle key)."""
    private = [c for c in frame.columns if str(c).startswith("_")]
    return frame.drop(columns=private) if private else frame


def require(report: dict, policy: ReleasePolicy, n_original: int, n_suppressed: int, where: str) -> None:
    """Refuse a release: VerificationError when ``report`` (a :meth:`VerificationReport.to_dict`)
    is not ok, PolicyError when the suppression exceeds ``policy.max_suppression``."""
    if not report["ok"]:
        raise VerificationError(
            f"{where} failed verification, nothing written:\n  " + "\n  ".join(report["problems"][:10])
        )
    suppression = n_suppressed / n_original
    if suppression > policy.max_suppression:
        raise PolicyError(
            f"{where}: suppression {suppression:.2%} exceeds max_suppression "
            f"{policy.max_suppression:.2%}: relax k, t or j, or allow more suppression"
        )


def release_metrics(
    released: pd.DataFrame | dd.DataFrame,
    original: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    n_original: int,
    n_suppressed: int,
) -> dict:
    """Utility (E11, E24-E26), KPR of the release (E21) and sizes; pandas or Dask frames."""
    return {
        **utility_metrics(released, **utility_domains(policy), n_original=n_original, k=policy.k),
        "kpr": release_kpr(released, original, policy),
        "n_original": n_original,
        "n_suppressed": n_suppressed,
    }


def checked_metrics(
    released: pd.DataFrame,
    assigned: pd.DataFrame,
    original: pd.DataFrame,
    policy: ReleasePolicy,
    summary: ViewSummary,
    n_suppressed: int,
    *,
    promised: ReleasePolicy | None = None,
    where: str = "the release",
) -> dict:
    """Verify a release independently and measure it; nothing is written here.

    ``promised`` is the policy whose constraints the method guarantees (default ``policy``).
    Raises VerificationError when the check fails and PolicyError when the suppression
    exceeds ``policy.max_suppression``. Returns the metrics of ``metrics.json``: achieved
    k/l/t/j, utility (E11, E24-E26), KPR of the release (E21), sizes.
    """
    report = verify_release(
        public(released), promised or policy, view_counts=summary.s_counts, assigned=assigned
    ).to_dict()
    require(report, policy, summary.n_rows, n_suppressed, where)
    return {**report, **release_metrics(released, original, policy, summary.n_rows, n_suppressed)}


def utility_domains(policy: ReleasePolicy) -> dict:
    return {
        "numeric_domains": {q: tuple(policy.domains[q]) for q in policy.numeric_qi},
        "categorical_domains": {q: list(policy.domains[q]) for q in policy.categorical_qi},
    }

"""One view anonymized on its own (``dpriv anonymize``): one-shot priors, no history, no ledger.

The same Generalize, verification and metrics as a release of the loop
(:mod:`dpriv.release`), which re-exports :func:`anonymize` where it was first documented.
"""

from __future__ import annotations

import time
from dataclasses import replace

import dask
import dask.dataframe as dd
import pandas as pd

from dpriv._dispatch import is_dask, shuffle_method, to_pandas
from dpriv.anonymized import Anonymized
from dpriv.baselines import baseline_view, check_method_name
from dpriv.criteria import refuse_ignored
from dpriv.dates import released_dates
from dpriv.generalize import Generalized, generalize_view
from dpriv.input_checks import check_npartitions, resolve_policy
from dpriv.input_columns import policy_columns, unused_columns, unused_note, warn_unused
from dpriv.inputs import as_frame, check_sensitive_values, prepared
from dpriv.metrics.release import checked_metrics
from dpriv.part_types import as_data_types
from dpriv.pending_interrupt import as_interrupt
from dpriv.policy import ReleasePolicy
from dpriv.policy_gate import anonymize_note
from dpriv.policy_given import as_policy, check_method
from dpriv.released import LABEL, public, secret_policy
from dpriv.state import attach_priors
from dpriv.text_numbers import refuse_mixed_numbers
from dpriv.validate import validate_view
from dpriv.view_summary import ViewSummary


@as_interrupt  # Ctrl-C inside a numba kernel: a KeyboardInterrupt, not a SystemError
@shuffle_method()
def anonymize(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy | dict,
    *,
    prior: str = "class",
    npartitions: int | None = None,
    method: str = "jsreduce",
) -> Anonymized:
    """Release one view under (k, t, j) with one-shot priors (no history); ``policy`` is a
    :class:`ReleasePolicy` or a dict of its fields. ``method``: as in
    :func:`dpriv.release.release_history`, "jsreduce" (Generalize) or a baseline of
    :mod:`dpriv.baselines` ("mondrian-l", "mondrian-t", "mondrian-bt", "histogram"), which
    groups the view in memory (a Dask view is collected) and is verified against what it
    promises (:data:`dpriv.criteria.GUARANTEES`); j_achieved is then measured, not bounded.

    Raises InputError / PolicyError for bad input, PolicyError for an unknown method or a
    policy field the method would ignore (``rbk_closeness``, ``posterior_bound``: JS-reduce
    only; anatomy, persistent groups) and when the suppression exceeds
    ``policy.max_suppression``, VerificationError when the independent check fails.
    """
    start = time.perf_counter()
    policy = as_policy(policy, "anonymize")
    check_method_name(method)
    check_method(policy, method)
    refuse_ignored(policy, method)  # before any data is read, as release_history refuses them
    check_npartitions(npartitions)
    view = as_frame(view, "anonymize", "view", policy.id, policy)
    view, policy = prepared(view, policy, notes=(notes := []))
    # a Parquet folder's meta is its first file's: the checks must see what every file holds (told
    # by the footers; a CSV's blocks are typed alike by Dask's sample)
    view = as_data_types(view, policy_columns(policy), read_rows=False)
    policy, inferred = resolve_policy(view, policy)
    refuse_mixed_numbers(view, policy)  # 45 in one file, "45" in another: float64 bounds otherwise
    notes += inferred + [n for n in (unused_note(view.columns, policy), anonymize_note(policy)) if n]
    warn_unused(view.columns, policy)  # in its notes too (dpriv anonymize prints them)
    summary = validate_view(view, policy)
    check_sensitive_values(summary.s_counts, policy)
    with_priors = attach_priors(view, policy, prior, n_rows=summary.n_rows, notes=notes)
    # never released, and on Dask some types cannot even be sampled (decimal128(1, 1)); after the
    # priors: a knowledge's class map may read a column the policy does not name
    unused = set(unused_columns(view.columns, policy))
    with_priors = with_priors[[c for c in with_priors.columns if str(c) not in unused]]
    if method == "jsreduce":
        result = generalize_view(with_priors, policy, summary, npartitions=npartitions or policy.npartitions)
    else:
        result = _baseline(with_priors, policy, summary, method)
    released, assigned = result.released, result.assigned
    if is_dask(released):
        released, assigned = dask.compute(released, assigned)
    original = view[policy.qi].compute() if is_dask(view) else view
    metrics = checked_metrics(
        released, assigned, original, policy, summary, result.n_suppressed, sensitive=result.sensitive,
        method=method,
    )  # fmt: skip
    seconds = round(time.perf_counter() - start, 3)
    metrics = replace(metrics, seconds=seconds, posterior_guard=result.posterior_guard)
    assigned = assigned.drop(columns=[c for c in assigned.columns if c.startswith("_") and c != LABEL])
    released = released_dates(public(released).reset_index(drop=True), policy)
    return Anonymized(released, assigned, metrics, policy, notes, result.sensitive, method)


def _baseline(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, summary: ViewSummary, method: str
) -> Generalized:
    """``view`` (priors attached) grouped by the Mondrian baseline ``method`` on the client, as
    a release of :func:`dpriv.release.release_history` groups it (the same seed mixing, so the
    same view and policy give the same groups), in :func:`generalize_view`'s result."""
    rows = to_pandas(view).reset_index(drop=True)  # the baselines are in-memory algorithms
    out = baseline_view(rows, secret_policy(policy, summary), method)
    return Generalized(out.assigned, out.released, out.n_suppressed, None)

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

from dpriv._dispatch import is_dask, shuffle_method
from dpriv.anonymized import Anonymized
from dpriv.dates import released_dates
from dpriv.generalize import generalize_view
from dpriv.input_checks import check_npartitions, resolve_policy
from dpriv.input_columns import policy_columns, unused_columns, unused_note, warn_unused
from dpriv.inputs import as_frame, check_sensitive_values, prepared
from dpriv.metrics.release import checked_metrics
from dpriv.part_types import as_data_types
from dpriv.pending_interrupt import as_interrupt
from dpriv.policy import ReleasePolicy
from dpriv.policy_gate import anonymize_note
from dpriv.policy_keys import as_policy
from dpriv.released import LABEL, public
from dpriv.state import attach_priors
from dpriv.text_numbers import refuse_mixed_numbers
from dpriv.validate import validate_view


@as_interrupt  # Ctrl-C inside a numba kernel: a KeyboardInterrupt, not a SystemError
@shuffle_method()
def anonymize(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy | dict,
    *,
    prior: str = "class",
    npartitions: int | None = None,
) -> Anonymized:
    """Release one view under (k, t, j) with one-shot priors (no history); ``policy`` is a
    :class:`ReleasePolicy` or a dict of its fields.

    Raises InputError / PolicyError for bad input, PolicyError when the suppression exceeds
    ``policy.max_suppression``, VerificationError when the independent check fails.
    """
    start = time.perf_counter()
    policy = as_policy(policy, "anonymize")
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
    result = generalize_view(with_priors, policy, summary, npartitions=npartitions or policy.npartitions)
    released, assigned = result.released, result.assigned
    if is_dask(released):
        released, assigned = dask.compute(released, assigned)
    original = view[policy.qi].compute() if is_dask(view) else view
    metrics = checked_metrics(
        released, assigned, original, policy, summary, result.n_suppressed, sensitive=result.sensitive
    )
    seconds = round(time.perf_counter() - start, 3)
    metrics = replace(metrics, seconds=seconds, posterior_guard=result.posterior_guard)
    assigned = assigned.drop(columns=[c for c in assigned.columns if c.startswith("_") and c != LABEL])
    released = released_dates(public(released).reset_index(drop=True), policy)
    return Anonymized(released, assigned, metrics, policy, notes, result.sensitive)

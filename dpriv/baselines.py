"""The baselines of the paper's experiment: each view generalized on its own with strict (or,
with ``policy.mondrian_cut = "relaxed"``, relaxed) Mondrian (docs/algorithms.md §4.4) under
distinct l-diversity, t-closeness or (B,t)-privacy.

(B,t)-privacy (E16): every tuple's Ω-posterior (E14) within its group, with the kernel
priors of bandwidth B (E12, E13) on the QIs normalised by their policy domains, stays
within plain JS (E15 with no smoothing) ``bt_t`` of its prior.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from dpriv.anonymity.mondrian import MondrianRelease, mondrian_view
from dpriv.divergence import js_rows
from dpriv.errors import PolicyError
from dpriv.exit_guard import guard_exits
from dpriv.hilbert import unit_coords
from dpriv.knowledge.posterior import omega_posterior
from dpriv.knowledge.prior import kernel_prior
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, ORDER, SCODE, create_qig, in_release_order
from dpriv.validate import codes

METHODS = ("jsreduce", "mondrian-l", "mondrian-t", "mondrian-bt", "histogram")


def bt_allowable(view: pd.DataFrame, policy: ReleasePolicy) -> Callable[[np.ndarray], bool]:
    """``allowable(rows)``: do the tuples at these row positions form a (B,t)-private group?"""
    s = codes(view[policy.sensitive], policy.sensitive_domain)
    priors = kernel_prior(unit_coords(view, policy), s, len(policy.sensitive_domain), policy.bt_b)

    def allowable(rows: np.ndarray) -> bool:
        post = omega_posterior(np.zeros(len(rows), dtype=np.int64), s[rows], priors[rows])
        return bool((js_rows(priors[rows], post, policy.log_base) <= policy.bt_t).all())

    return allowable


def check_method_name(method: str) -> None:
    """PolicyError, listing :data:`METHODS`, for a release method that is none of them."""
    if method not in METHODS:
        raise PolicyError(f"unknown method {method!r}; choose one of {list(METHODS)}")


def baseline_view(view: pd.DataFrame, policy: ReleasePolicy, method: str) -> MondrianRelease:
    """Release ``view`` with the Mondrian baseline ``method`` (one of :data:`METHODS`); with
    ``policy.exit_values`` the exit guard (:mod:`dpriv.exit_guard`) then merges its one-kind
    groups (a merged group keeps the method's criteria, and (B,t)-privacy for mondrian-bt)."""
    strict = policy.mondrian_cut == "strict"
    allowable = None
    if len(view) < policy.k and policy.small_view == "suppress":  # no group of k can be formed
        return _suppressed(view, policy)
    if method == "mondrian-l":
        out = mondrian_view(view, policy, model="l", l=policy.l, strict=strict)
    elif method == "mondrian-t":
        out = mondrian_view(view, policy, model="t", strict=strict)
    elif method == "mondrian-bt":
        allowable = bt_allowable(view.reset_index(drop=True), policy)
        out = mondrian_view(view, policy, model="bt", allowable=allowable, strict=strict)
    elif method == "histogram":  # no cut can keep k on both sides of a view of k tuples
        out = mondrian_view(view, policy.with_overrides(k=max(policy.k, len(view))), model="k")
    else:
        check_method_name(method)
    if not policy.exit_values:
        return out
    s = out.assigned[SCODE].to_numpy(np.int64)
    counts = np.bincount(s, minlength=len(policy.sensitive_domain)).astype(np.int64)
    guard = guard_exits(out.assigned, policy, counts, method, allowable=allowable)
    if guard.n_merged == 0 and guard.n_suppressed == 0:
        return out
    released = create_qig(guard.assigned, policy)
    released = in_release_order(released).drop(columns=ORDER)
    n_groups = int(guard.assigned[LABEL].nunique())
    return MondrianRelease(released, guard.assigned, n_groups, guard.n_suppressed)


def _suppressed(view: pd.DataFrame, policy: ReleasePolicy) -> MondrianRelease:
    """A view of fewer than k tuples under ``small_view = "suppress"``: every tuple left out
    (no row released, none assigned), as JS-reduce releases it."""
    none = view.iloc[:0].reset_index(drop=True)
    assigned = none.assign(**{SCODE: np.zeros(0, np.int64), LABEL: np.zeros(0, np.int64)})
    released = in_release_order(create_qig(assigned, policy)).drop(columns=ORDER)
    return MondrianRelease(released, assigned, 0, len(view))

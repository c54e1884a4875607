"""One-shot BK^sv priors attached to a single view (docs/algorithms.md §2.5): the empirical
distribution of S in the respondent's QI class (numeric QIs in thirds of their domain,
categorical QIs by level; on fewer QIs when the class table would be sparse), or uniform.
Used by :func:`dpriv.release.anonymize`; a history revises instead (:mod:`dpriv.state`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, map_frame, meta_of
from dpriv.errors import PolicyError
from dpriv.knowledge.prior import class_counts, prior_from_counts
from dpriv.knowledge.tables import ClassMap
from dpriv.policy import ReleasePolicy
from dpriv.user_warning import warn_user
from dpriv.validate import codes

PRIORS = ("class", "uniform")

#: The class prior is *sparse* when its table would have fewer than
#: ``MIN_ROWS_PER_CLASS`` rows of the view per class on average: most classes are then
#: empty or hold one or two tuples, whose own S values become their prior (12 QIs in thirds
#: suppressed 100 % of a view, 8 QIs 61 %, 40 QIs overflowed int64 class indices). A sparse
#: table is never built: the prior falls back to classes on the longest prefix of the QIs
#: (policy order) with at most ``max(n_rows // MIN_ROWS_PER_CLASS, DENSE_CLASSES)`` classes,
#: down to no QI (the distribution of S over the view). Tables of at most
#: ``DENSE_CLASSES`` classes are always allowed (a few KB; the paper's 18 classes).
MIN_ROWS_PER_CLASS = 10
DENSE_CLASSES = 64


@dataclass(frozen=True)
class PriorClasses:
    """Knowledge classes of the one-shot class prior (see :data:`DENSE_CLASSES`).

    Attributes
    ----------
    classmap : ClassMap
        The classes used (on ``classmap.qi``, a prefix of the policy's QIs).
    n_classes_full : int
        Classes on all the policy's QIs (a Python int: may exceed int64).
    n_rows : int
        Rows of the view the prior is estimated on.
    fallback : str or None
        The warning naming the fallback, ``None`` when all the QIs are used.
    """

    classmap: ClassMap
    n_classes_full: int
    n_rows: int
    fallback: str | None


def _equal_width_cuts(lo: float, hi: float, bins: int) -> tuple[float, ...]:
    """The ``bins - 1`` inner cuts of ``[lo, hi]`` in equal widths, in float64 (the same numbers
    for any domain below 2**53, no overflow beyond int64). ``width * i`` overflows for a width
    near the float64 limit: such a domain is cut as ``width * (i / bins)`` instead."""
    width, steps = hi - lo, np.arange(1, bins)
    if np.isfinite(width * (bins - 1)):
        return tuple(lo + width * steps / bins)
    return tuple(lo + width * (steps / bins))


def class_map(policy: ReleasePolicy, bins: int = 3, qi: list[str] | None = None) -> ClassMap:
    """QI classes of the empirical prior: numeric QIs in ``bins`` equal-width bins of their
    policy domain (the paper's thirds, §2.5), categorical QIs by level; on ``qi`` (a subset
    of the policy's QIs, default all)."""
    names = list(policy.qi) if qi is None else list(qi)
    cuts = []
    for q in names:
        dom = policy.domains[q]
        if policy.kind(q) == "numeric":
            cuts.append(_equal_width_cuts(float(dom[0]), float(dom[1]), bins))
        else:
            cuts.append(tuple(dom))
    return ClassMap(tuple(names), tuple(cuts), tuple(policy.kind(q) == "numeric" for q in names))


def prior_classes(policy: ReleasePolicy, n_rows: int, bins: int = 3) -> PriorClasses:
    """The classes of the one-shot class prior for a view of ``n_rows`` rows: all the QIs,
    or the longest prefix of them with at most ``max(n_rows // MIN_ROWS_PER_CLASS,
    DENSE_CLASSES)`` classes when
    the full table is sparse (:data:`DENSE_CLASSES`). Class counts are exact Python ints."""
    sizes = [bins if policy.kind(q) == "numeric" else len(policy.domains[q]) for q in policy.qi]
    full = math.prod(sizes)
    limit = max(int(n_rows) // MIN_ROWS_PER_CLASS, DENSE_CLASSES)
    if full <= limit:
        return PriorClasses(class_map(policy, bins), full, int(n_rows), None)
    used, prod = 0, 1
    while used < len(sizes) and prod * sizes[used] <= limit:
        prod *= sizes[used]
        used += 1
    kept = list(policy.qi[:used])
    target = f"the first {used} QI(s) {kept} ({prod} classes)" if used else "no QI (S over the whole view)"
    note = (
        f"prior: {len(sizes)} QIs make {full:.3g} knowledge classes for {n_rows} rows (sparse: "
        f"fewer than {MIN_ROWS_PER_CLASS} rows per class); falling back to classes on {target}"
    )
    return PriorClasses(class_map(policy, bins, kept), full, int(n_rows), note)


def _class_counts(part: pd.DataFrame, cmap: ClassMap, policy: ReleasePolicy) -> np.ndarray:
    s = codes(part[policy.sensitive], policy.sensitive_domain)
    return class_counts(part, cmap, s, len(policy.sensitive_domain))


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
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    prior: str = "class",
    bins: int = 3,
    *,
    n_rows: int | None = None,
    notes: list[str] | None = None,
) -> pd.DataFrame | dd.DataFrame:
    """Add the ``p__<value>`` prior columns (float64, rows sum to 1).

    ``"class"``: the empirical distribution of S in the respondent's QI class (see
    :func:`prior_classes`: on fewer QIs when the full class table would be sparse; the
    fallback is appended to ``notes``, or warned (UserWarning) when ``notes`` is None);
    ``"uniform"``: 1/M everywhere (JS is then 0, j never binds). ``n_rows`` is the view's
    row count when known (else counted).
    """
    m = len(policy.sensitive_domain)
    if prior == "uniform":
        table, cmap = np.full((1, m), 1.0 / m), None
    elif prior == "class":
        if n_rows is None:
            n_rows = int(view.shape[0].compute()) if is_dask(view) else len(view)
        classes = prior_classes(policy, n_rows, bins)
        if classes.fallback is not None:
            if notes is None:
                warn_user(classes.fallback)
            else:
                notes.append(classes.fallback)
        cmap = classes.classmap
        if is_dask(view):
            counts = sum(
                dask.compute(*[dask.delayed(_class_counts)(p, cmap, policy) for p in view.to_delayed()])
            )
        else:
            counts = _class_counts(view, cmap, policy)
        table = prior_from_counts(counts)  # BK^sv per class (knowledge/prior.py, §2.5)
    else:
        raise PolicyError(f"prior must be one of {PRIORS}, got {prior!r}")
    meta = _with_priors(meta_of(view), table, cmap, policy) if is_dask(view) else None
    return map_frame(_with_priors, view, table, cmap, policy, meta=meta)

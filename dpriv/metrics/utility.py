"""Utility (information-loss) metrics of a released view, docs/algorithms.md §2.4 (E11), §6.

A released view (docs/released-format.md) has one row per kept tuple: ``qi_group`` (an
opaque group label), ``<qi>_min`` / ``<qi>_max`` for each numeric QI, ``<qi>`` holding the
group's value set as a string like ``{Female,Male}`` for each categorical QI, and the
sensitive column. All metrics are computed from a per-group table (one row per QI-group,
built with one ``groupby``), never with a loop over groups:

* NCP per group (Xu et al. 2006) = semiperimeter (E11) with unit weights: numeric
  ``(max - min) / (dom_max - dom_min)``; categorical ``(|set| - 1) / (|D| - 1)``; a
  categorical QI with a hierarchy, ARX's loss of the released node ``(leaves under it - 1) /
  (leaves of the hierarchy - 1)``; a zero-width domain (``dom_max == dom_min`` or
  ``|D| == 1``) contributes 0;
* average semiperimeter (E11), unweighted over groups;
* GCP (E24), suppressed tuples counted with ``NCP = m``; and the variant ignoring them;
* discernibility DM (E25); normalised average class size C_avg (E26);
* suppression rate, number of groups, smallest and largest group.

A ratio whose denominator is 0 (e.g. no group, ``n_original == 0``, ``k`` not given) is
``None``, never 0.

Every metric is a function of a few additive sums over the groups (:class:`GroupSums`), the
float ones exact (:mod:`dpriv.metrics.exact_sums`) and each ratio rounded once: a release on
Dask sums the groups of each part where the part lives (the parts hold whole QI-groups) and
gets the same bits as one sum over the whole table in process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpriv._dispatch import to_pandas
from dpriv.errors import InputError
from dpriv.metrics.exact_sums import ExactSum, add_exact, exact_sum, ratio, to_fraction
from dpriv.metrics.groups import group_table
from dpriv.released import GROUP, parse_value_set

__all__ = [
    "GroupSums",
    "average_class_size",
    "average_semiperimeter",
    "discernibility",
    "gcp",
    "group_table",
    "parse_value_set",
    "suppression_rate",
    "utility_metrics",
]


@dataclass(frozen=True)
class GroupSums:
    """Additive sums over QI-groups, from which every utility metric follows.

    ``n_groups``, ``n_released`` (sum of sizes), ``sum_sq_sizes`` (int); ``min_size`` /
    ``max_size`` (None without groups); ``ncp`` and ``size_ncp``: the exact sums of the
    groups' NCP and of ``|G| * NCP`` (:data:`~dpriv.metrics.exact_sums.ExactSum`);
    ``association``: the exact sum over groups of ``sum_s c_gs^2 / n_g`` (None when not
    measured; :func:`dpriv.metrics.anatomy.association_loss_table`). Merging the sums of
    disjoint sets of groups (:meth:`merge`) gives the sums of their union, in any order.
    """

    n_groups: int = 0
    n_released: int = 0
    sum_sq_sizes: int = 0
    min_size: int | None = None
    max_size: int | None = None
    ncp: ExactSum = (0, 0)
    size_ncp: ExactSum = (0, 0)
    association: ExactSum | None = None

    @classmethod
    def of(cls, groups: pd.DataFrame) -> GroupSums:
        """The sums of a :func:`group_table` (``size`` and ``ncp`` columns)."""
        sizes = groups["size"].to_numpy(dtype=np.int64)
        ncp = groups["ncp"].to_numpy(dtype=np.float64)
        some = len(sizes) > 0
        return cls(
            n_groups=len(sizes),
            n_released=int(sizes.sum()),
            sum_sq_sizes=int((sizes.astype(object) ** 2).sum()),
            min_size=int(sizes.min()) if some else None,
            max_size=int(sizes.max()) if some else None,
            ncp=exact_sum(ncp),
            size_ncp=exact_sum(sizes * ncp),
        )

    def merge(self, other: GroupSums) -> GroupSums:
        """The sums of both sets of groups (disjoint)."""
        sizes = [v for v in (self.min_size, self.max_size, other.min_size, other.max_size) if v is not None]
        both = (self.association, other.association)
        return GroupSums(
            n_groups=self.n_groups + other.n_groups,
            n_released=self.n_released + other.n_released,
            sum_sq_sizes=self.sum_sq_sizes + other.sum_sq_sizes,
            min_size=min(sizes) if sizes else None,
            max_size=max(sizes) if sizes else None,
            ncp=add_exact(self.ncp, other.ncp),
            size_ncp=add_exact(self.size_ncp, other.size_ncp),
            association=None if None in both else add_exact(*both),
        )

    def with_association(self, per_group: np.ndarray) -> GroupSums:
        """These sums with ``association``: the exact sum of ``per_group`` (float64, one
        ``sum_s c_gs^2 / n_g`` per group)."""
        return replace(self, association=exact_sum(per_group))

    def average_semiperimeter(self) -> float | None:
        """The mean NCP over the groups (E11), rounded once; None without groups."""
        return ratio(self.ncp, self.n_groups) if self.n_groups else None

    def association_loss(self) -> float | None:
        """``1 - sum_g sum_s c_gs^2 / n_g / N`` (in [0, 1 - 1/M]); None without tuples or
        without ``association``."""
        if self.association is None or self.n_released == 0:
            return None
        return ratio(self.n_released - to_fraction(self.association), self.n_released)

    def utility(self, n_original: int, m: int, k: int | None) -> dict[str, Any]:
        """:func:`utility_metrics`' figures (without ``min_distinct_sensitive``); InputError
        for an ``n_original`` that is not an integer >= ``n_released``."""
        if isinstance(n_original, bool) or not isinstance(n_original, int | np.integer):
            raise InputError(f"n_original must be an integer, got {n_original!r}")
        if n_original < 0:
            raise InputError(f"n_original must be >= 0, got {n_original}")
        n_original = int(n_original)
        if self.n_released > n_original:
            raise InputError(
                f"released view has {self.n_released} rows but n_original is {n_original}; pass the "
                "number of tuples of the original view (kept + suppressed)"
            )
        n_supp = n_original - self.n_released
        return {
            "n_original": n_original,
            "n_released": self.n_released,
            "n_suppressed": n_supp,
            "n_groups": self.n_groups,
            "m": m,
            "suppression_rate": suppression_rate(self.n_released, n_original),
            "min_group_size": self.min_size,
            "largest_group": self.max_size,
            "average_semiperimeter": self.average_semiperimeter(),
            "gcp": _gcp(self.size_ncp, self.n_released, n_original, m, include_suppressed=True),
            "gcp_kept": _gcp(self.size_ncp, self.n_released, n_original, m, include_suppressed=False),
            "discernibility": self.sum_sq_sizes + n_supp * n_original,
            "c_avg": _c_avg(self.n_released, self.n_groups, k),
        }


def average_semiperimeter(groups: pd.DataFrame) -> float | None:
    """Average semiperimeter over QI-groups, unweighted (E11); None without groups."""
    return GroupSums.of(groups).average_semiperimeter()


def _gcp(size_ncp: ExactSum, kept: int, n_original: int, m: int, *, include_suppressed: bool) -> float | None:
    num = to_fraction(size_ncp) + ((n_original - kept) * m if include_suppressed else 0)
    den = m * (n_original if include_suppressed else kept)
    return ratio(num, den) if den > 0 else None


def gcp(groups: pd.DataFrame, n_original: int, m: int, *, include_suppressed: bool = True) -> float | None:
    """Global certainty penalty (E24), in [0, 1].

    ``sum_G |G| NCP(G) / (m N)``. With ``include_suppressed`` the ``N_supp = N - sum |G|``
    suppressed tuples add ``NCP = m`` each and the denominator is ``m N``; without, they
    are ignored and the denominator is ``m * sum |G|``. None when the denominator is 0.
    """
    sums = GroupSums.of(groups)
    return _gcp(sums.size_ncp, sums.n_released, int(n_original), m, include_suppressed=include_suppressed)


def discernibility(sizes: np.ndarray | pd.Series, n_original: int) -> int:
    """Discernibility metric (E25): ``sum_G |G|**2 + N_supp * N`` (int)."""
    s = np.asarray(sizes, dtype=np.int64)
    n_supp = int(n_original) - int(s.sum())
    return int((s.astype(object) ** 2).sum()) + n_supp * int(n_original)


def average_class_size(sizes: np.ndarray | pd.Series, k: int | None) -> float | None:
    """Normalised average class size (E26): ``((N - N_supp) / |G|) / k``.

    ``N - N_supp`` is the number of released tuples ``sum |G|``. None without groups or
    without a positive ``k``.
    """
    s = np.asarray(sizes, dtype=np.int64)
    return _c_avg(int(s.sum()), len(s), k)


def _c_avg(n_released: int, n_groups: int, k: float | None) -> float | None:
    return ratio(n_released, Fraction(k) * n_groups) if n_groups and k is not None and k > 0 else None


def suppression_rate(n_released: int, n_original: int) -> float | None:
    """``N_supp / N`` with ``N_supp = N - n_released``; None when ``N == 0``."""
    if n_original == 0:
        return None
    return (n_original - n_released) / n_original


def utility_metrics(
    released: Any,
    *,
    numeric_domains: Mapping[str, tuple[float, float]],
    categorical_domains: Mapping[str, Sequence[str]],
    n_original: int,
    k: int | None = None,
    sensitive: str | None = None,
    group_column: str = GROUP,
    hierarchies: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """All utility metrics of a released view (§2.4 E11, §6 E24-E26).

    Parameters
    ----------
    released : pandas.DataFrame or dask.dataframe.DataFrame, shape (n_released, ...)
        Released view in the format of docs/released-format.md (may be empty).
    numeric_domains : mapping QI name -> (min, max)
        Domain range of each numeric QI (the E11 normaliser).
    categorical_domains : mapping QI name -> sequence of str
        Domain of each categorical QI.
    n_original : int
        ``N``, number of tuples of the original view ``V_i`` (kept + suppressed),
        ``>= n_released``.
    k : int, optional
        k of the policy, for C_avg (E26); None gives ``c_avg = None``.
    sensitive : str, optional
        Name of the sensitive column; when given, ``min_distinct_sensitive`` (achieved
        distinct l) is reported.
    group_column : str, default "qi_group"
    hierarchies : mapping QI name -> Hierarchy, optional (see :func:`group_table`)

    Returns
    -------
    dict
        ``n_original`` (N), ``n_released``, ``n_suppressed``, ``n_groups``, ``m`` (number
        of QIs), ``suppression_rate`` (N_supp / N), ``min_group_size`` (achieved k),
        ``largest_group``, ``average_semiperimeter`` (E11), ``gcp`` (E24, suppressed
        tuples with NCP = m), ``gcp_kept`` (E24 over kept tuples only),
        ``discernibility`` (E25, int), ``c_avg`` (E26), ``min_distinct_sensitive`` (if
        ``sensitive``). Undefined ratios (zero denominator) and extremes over no group are
        None.

    Raises
    ------
    InputError
        See :func:`group_table`; also ``n_original < n_released``, a negative
        ``n_original`` or a missing sensitive column.
    """
    if sensitive is not None and sensitive not in released.columns:
        raise InputError(f"released view lacks the sensitive column {sensitive!r}")
    groups = group_table(
        released, numeric_domains, categorical_domains, group_column=group_column, hierarchies=hierarchies
    )
    m = len(numeric_domains) + len(categorical_domains)
    out = GroupSums.of(groups).utility(n_original, m, k)
    if sensitive is not None:
        nun = released.groupby(group_column, sort=False)[sensitive].nunique()
        nun = to_pandas(nun)
        out["min_distinct_sensitive"] = int(nun.min()) if len(nun) else None
    return out

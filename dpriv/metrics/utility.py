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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, to_pandas
from dpriv.errors import InputError
from dpriv.released import GROUP, parse_value_set

__all__ = [
    "average_class_size",
    "average_semiperimeter",
    "discernibility",
    "gcp",
    "group_table",
    "parse_value_set",
    "suppression_rate",
    "utility_metrics",
]


def _check_domains(
    numeric_domains: Mapping[str, tuple[float, float]],
    categorical_domains: Mapping[str, Sequence[str]],
) -> None:
    both = set(numeric_domains) & set(categorical_domains)
    if both:
        raise InputError(f"QI(s) {sorted(both)} declared both numeric and categorical; keep one")
    for qi, dom in numeric_domains.items():
        try:
            lo, hi = (float(v) for v in dom)
        except (TypeError, ValueError):
            raise InputError(f"numeric domain of {qi!r} must be a pair (min, max), got {dom!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
            raise InputError(f"numeric domain of {qi!r} must be finite with min <= max, got {dom!r}")
    for qi, dom in categorical_domains.items():
        if isinstance(dom, str) or len(dom) == 0:
            raise InputError(f"categorical domain of {qi!r} must be a non-empty list of values, got {dom!r}")


def group_table(
    released: Any,
    numeric_domains: Mapping[str, tuple[float, float]],
    categorical_domains: Mapping[str, Sequence[str]],
    *,
    group_column: str = GROUP,
    hierarchies: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One row per QI-group: its size and its NCP per QI and in total (E11 / §6).

    Parameters
    ----------
    released : pandas.DataFrame or dask.dataframe.DataFrame, shape (n_released, ...)
        Released view in the format of docs/released-format.md. Dask: the groupby runs on the cluster and
        only the per-group table (one row per group) is computed.
    numeric_domains : mapping QI name -> (min, max)
        Domain range of each numeric QI (finite, ``min <= max``).
    categorical_domains : mapping QI name -> sequence of str
        Domain of each categorical QI (non-empty).
    group_column : str, default "qi_group"
    hierarchies : mapping QI name -> :class:`dpriv.hierarchy.Hierarchy`, optional
        Categorical QIs released as hierarchy nodes: their NCP is the node's ARX loss.

    Returns
    -------
    pandas.DataFrame, shape (n_groups, 2 + m)
        Index: the group labels. Columns: ``size`` (int64, >= 1), ``ncp__<qi>`` (float64
        in [0, 1]) for every QI (numeric first, in mapping order), and ``ncp`` (float64 in
        [0, m], the unit-weight sum = semiperimeter of the group).

    Raises
    ------
    InputError
        A missing column, a group whose generalized values differ between its rows, an
        interval outside its domain or with ``min > max``, a value set with a value that
        is not in the domain, an invalid domain.
    """
    _check_domains(numeric_domains, categorical_domains)
    needed = [group_column]
    for qi in numeric_domains:
        needed += [f"{qi}_min", f"{qi}_max"]
    needed += list(categorical_domains)
    missing = [c for c in needed if c not in released.columns]
    if missing:
        raise InputError(
            f"released view lacks column(s) {missing} (has {list(map(str, released.columns))});"
            " a released view needs qi_group, <qi>_min/<qi>_max per numeric QI and <qi> per"
            " categorical QI"
        )
    agg: dict[str, tuple[str, str]] = {"size": (group_column, "size")}
    for qi in numeric_domains:
        for side in ("min", "max"):
            col = f"{qi}_{side}"
            agg[f"{col}__lo"] = (col, "min")
            agg[f"{col}__hi"] = (col, "max")
    for qi in categorical_domains:
        agg[f"{qi}__lo"] = (qi, "min")
        agg[f"{qi}__hi"] = (qi, "max")
    frame = released[needed]
    if is_dask(frame):
        for qi in categorical_domains:
            frame = frame.assign(**{qi: frame[qi].astype("str")})
        g = frame.groupby(group_column, sort=False).agg(**agg).compute()
    else:
        frame = frame.assign(**{qi: frame[qi].astype("str") for qi in categorical_domains})
        g = frame.groupby(group_column, sort=False).agg(**agg)
    out = pd.DataFrame({"size": g["size"].to_numpy(dtype=np.int64)}, index=g.index)
    ncp_cols = []
    for qi, dom in numeric_domains.items():
        lo_d, hi_d = (float(v) for v in dom)
        for side in ("min", "max"):
            col = f"{qi}_{side}"
            a = g[f"{col}__lo"].to_numpy(dtype=np.float64, na_value=np.nan)
            b = g[f"{col}__hi"].to_numpy(dtype=np.float64, na_value=np.nan)
            bad = ~(a == b)
            if bad.any():
                raise InputError(
                    f"released view: column {col!r} is not constant in QI-group "
                    f"{g.index[bad][0]!r} (or is missing); every row of a group must carry the "
                    "group's interval"
                )
        gmin = g[f"{qi}_min__lo"].to_numpy(dtype=np.float64)
        gmax = g[f"{qi}_max__lo"].to_numpy(dtype=np.float64)
        bad = (gmin > gmax) | (gmin < lo_d) | (gmax > hi_d)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"released view: interval [{gmin[i]}, {gmax[i]}] of {qi!r} in QI-group "
                f"{g.index[i]!r} is empty or outside the declared domain [{lo_d}, {hi_d}];"
                " fix the domain or the view"
            )
        width = hi_d - lo_d
        ncp = (gmax - gmin) / width if width > 0 else np.zeros(len(g))
        out[f"ncp__{qi}"] = ncp
        ncp_cols.append(f"ncp__{qi}")
    for qi, dom in categorical_domains.items():
        a = g[f"{qi}__lo"].astype(object)
        b = g[f"{qi}__hi"].astype(object)
        bad = (a != b).to_numpy() | a.isna().to_numpy()
        if bad.any():
            raise InputError(
                f"released view: column {qi!r} is not constant in QI-group "
                f"{g.index[bad][0]!r} (or is missing); every row of a group must carry the "
                "group's value set"
            )
        h = (hierarchies or {}).get(qi)
        if h is not None:
            codes, uniques = pd.factorize(a)
            unknown = [str(u) for u in uniques if str(u) not in h.node_index]
            if unknown:
                raise InputError(
                    f"released view: {unknown[:5]} of {qi!r} are not nodes of its hierarchy "
                    f"{h.path}; fix the hierarchy or the view"
                )
            loss = np.asarray([h.loss(str(u)) for u in uniques], dtype=np.float64)
            out[f"ncp__{qi}"] = loss[codes] if len(g) else np.zeros(0)
            ncp_cols.append(f"ncp__{qi}")
            continue
        domain = {str(v) for v in dom}
        # parse each distinct cell once (there are far fewer distinct sets than groups)
        codes, uniques = pd.factorize(a)
        sizes = np.empty(len(uniques), dtype=np.float64)
        for j, text in enumerate(uniques):
            values = parse_value_set(text)
            unknown = [v for v in values if v not in domain]
            if unknown:
                raise InputError(
                    f"released view: value(s) {unknown} of {qi!r} (cell {text!r}) are not in "
                    f"its declared domain {sorted(domain)}; fix the domain or the view"
                )
            sizes[j] = len(values)
        d = len(domain)
        set_size = sizes[codes] if len(g) else np.zeros(0)
        out[f"ncp__{qi}"] = (set_size - 1.0) / (d - 1) if d > 1 else np.zeros(len(g))
        ncp_cols.append(f"ncp__{qi}")
    out["ncp"] = out[ncp_cols].sum(axis=1) if ncp_cols else 0.0
    return out


def average_semiperimeter(groups: pd.DataFrame) -> float | None:
    """Average semiperimeter over QI-groups, unweighted (E11); None without groups."""
    if len(groups) == 0:
        return None
    return float(groups["ncp"].mean())


def gcp(groups: pd.DataFrame, n_original: int, m: int, *, include_suppressed: bool = True) -> float | None:
    """Global certainty penalty (E24), in [0, 1].

    ``sum_G |G| NCP(G) / (m N)``. With ``include_suppressed`` the ``N_supp = N - sum |G|``
    suppressed tuples add ``NCP = m`` each and the denominator is ``m N``; without, they
    are ignored and the denominator is ``m * sum |G|``. None when the denominator is 0.
    """
    sizes = groups["size"].to_numpy(dtype=np.float64)
    kept = float(sizes.sum())
    num = float((sizes * groups["ncp"].to_numpy(dtype=np.float64)).sum())
    if include_suppressed:
        n_supp = n_original - kept
        num += n_supp * m
        den = m * float(n_original)
    else:
        den = m * kept
    return num / den if den > 0 else None


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
    if len(s) == 0 or k is None or k <= 0:
        return None
    return float(s.sum()) / len(s) / k


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
    if isinstance(n_original, bool) or not isinstance(n_original, int | np.integer):
        raise InputError(f"n_original must be an integer, got {n_original!r}")
    if n_original < 0:
        raise InputError(f"n_original must be >= 0, got {n_original}")
    if sensitive is not None and sensitive not in released.columns:
        raise InputError(f"released view lacks the sensitive column {sensitive!r}")
    groups = group_table(
        released, numeric_domains, categorical_domains, group_column=group_column, hierarchies=hierarchies
    )
    m = len(numeric_domains) + len(categorical_domains)
    sizes = groups["size"].to_numpy(dtype=np.int64)
    n_released = int(sizes.sum())
    if n_released > n_original:
        raise InputError(
            f"released view has {n_released} rows but n_original is {n_original}; pass the "
            "number of tuples of the original view (kept + suppressed)"
        )
    n_groups = len(sizes)
    out: dict[str, Any] = {
        "n_original": int(n_original),
        "n_released": n_released,
        "n_suppressed": int(n_original) - n_released,
        "n_groups": n_groups,
        "m": m,
        "suppression_rate": suppression_rate(n_released, int(n_original)),
        "min_group_size": int(sizes.min()) if n_groups else None,
        "largest_group": int(sizes.max()) if n_groups else None,
        "average_semiperimeter": average_semiperimeter(groups),
        "gcp": gcp(groups, int(n_original), m, include_suppressed=True),
        "gcp_kept": gcp(groups, int(n_original), m, include_suppressed=False),
        "discernibility": discernibility(sizes, int(n_original)),
        "c_avg": average_class_size(sizes, k),
    }
    if sensitive is not None:
        nun = released.groupby(group_column, sort=False)[sensitive].nunique()
        nun = to_pandas(nun)
        out["min_distinct_sensitive"] = int(nun.min()) if len(nun) else None
    return out

"""The per-group table of a released view: one row per QI-group with its size and its NCP
per QI and in total (docs/algorithms.md §2.4 E11, §6), built with one ``groupby``, never a
loop over groups. :mod:`dpriv.metrics.utility` turns it into the utility metrics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.errors import InputError
from dpriv.released import GROUP, parse_value_set


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

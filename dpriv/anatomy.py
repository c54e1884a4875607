"""The Anatomy released format (bucketization; Xiao & Tao, VLDB 2006; issue 12, direction 3).

With ``release_format = "anatomy"`` a release is two tables instead of one generalized view
(docs/released-format.md, "Anatomy"):

* the **QI table** (``releases/<i>/view.parquet``): one row per kept tuple, ``qi_group`` (the
  same opaque int64 label as a generalized view) and every QI under its own name with its
  EXACT value; no respondent id, no key, rows in a seeded order unrelated to the input's;
* the **sensitive table** (``releases/<i>/sensitive.parquet``): one row per (QI-group,
  sensitive value) that occurs, ``qi_group``, the sensitive column, ``count`` (int64 >= 1),
  sorted by label, then by the value's position in D[S].

The QI-groups are the same equivalence classes as in a generalized release (k, t and j of
(E9) hold in each); only the QIs are published exactly and the link between a QI row and a
sensitive value inside a group is not. Functions here build, expand and parse the two tables;
pandas in, pandas out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv._dispatch import map_frame, to_pandas
from dpriv._random import keyed, stable_hash
from dpriv.domain_codes import codes
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP, LABEL, ORDER, SCODE

#: Column of the sensitive table holding how many tuples of the group have the value.
COUNT = "count"
#: File of the sensitive table inside ``releases/<i>/`` of a ledger (dpriv.ledger.SENSITIVE).
SENSITIVE_FILE = "sensitive.parquet"


def qi_columns(policy: ReleasePolicy) -> list[str]:
    """Columns of the QI table: ``qi_group`` then the QIs in policy order."""
    return [GROUP, *policy.qi]


def sensitive_columns(policy: ReleasePolicy) -> list[str]:
    """Columns of the sensitive table: ``qi_group``, the sensitive column, ``count``."""
    return [GROUP, policy.sensitive, COUNT]


def apply_anatomy(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """QI-table rows of grouped rows ``part`` (``_label`` >= 0): label, exact QIs (their
    input dtypes) and the private ``_order`` shuffle key (seeded hash of the id, as
    :func:`dpriv.released.apply_qig` draws it). Shape (len(part), 2 + n_qi)."""
    out = pd.DataFrame({GROUP: part[LABEL].to_numpy(dtype=np.int64)})
    for q in policy.qi:  # the NumPy array as is (pandas 3 would infer "str" from object strings)
        x = part[q].to_numpy()
        out[q] = pd.Series(x, dtype=x.dtype, index=out.index)
    out[ORDER] = keyed(stable_hash(part[policy.id]), policy.seed, "order")
    return out


def sensitive_table(rows: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """The sensitive table of grouped rows (pandas or Dask; ``_label`` >= 0 and ``_s`` codes,
    or the sensitive column): counts per (label, value), label-sorted, then domain order.
    A Dask input is aggregated on the workers; only the table (<= groups x M rows) is
    gathered."""
    if SCODE not in rows.columns:
        rows = map_frame(_with_codes, rows, policy, meta={**dict(rows.dtypes), SCODE: "int64"})
    sizes = to_pandas(rows[[LABEL, SCODE]].groupby([LABEL, SCODE]).size())
    sizes = sizes.sort_index()
    labels = sizes.index.get_level_values(0).to_numpy(dtype=np.int64)
    scode = sizes.index.get_level_values(1).to_numpy(dtype=np.int64)
    domain = np.asarray(policy.sensitive_domain, dtype=object)
    values = _typed(domain[scode], policy.sensitive_domain)
    return pd.DataFrame(
        {GROUP: labels, policy.sensitive: values, COUNT: sizes.to_numpy(dtype=np.int64)}
    ).reset_index(drop=True)


def _with_codes(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    return part.assign(**{SCODE: codes(part[policy.sensitive], policy.sensitive_domain)})


def _typed(values: np.ndarray, domain: list) -> np.ndarray:
    """Domain values in the domain's natural NumPy dtype (numbers stay numbers, else object)."""
    natural = np.asarray(domain)
    return values.astype(natural.dtype) if natural.dtype.kind in "iuf" else values


def expand_sensitive(table: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """One row (``qi_group``, sensitive value) per counted tuple of a sensitive table, label
    by label: the shape of a generalized view's (``qi_group``, S) columns, so the group
    statistics, the verifier and the attacks read both formats alike."""
    counts = table[COUNT].to_numpy(dtype=np.int64)
    if (counts < 0).any():
        counts = np.maximum(counts, 0)  # the verifier reports negative counts
    idx = np.repeat(np.arange(len(table)), counts)
    return pd.DataFrame(
        {GROUP: table[GROUP].to_numpy()[idx], policy.sensitive: table[policy.sensitive].to_numpy()[idx]}
    )

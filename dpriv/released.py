"""The released-view format (DESIGN.md "Interfaces": Released view).

Column names, the private columns of a release's membership, the value-set encoding of a
categorical QI (one writer, one parser), the opaque QI-group labels, CreateQIG's table of
generalized values per group (Algorithm 2, line 12) and its application to grouped rows.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._random import keyed, row_hashes, stable_hash
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.validate import ViewSummary, codes

#: Public column of the opaque QI-group label.
GROUP = "qi_group"
#: Private columns of a release's membership: the int64 QI-group label (-1: not kept) and
#: the sensitive value's code in the policy domain.
LABEL, SCODE = "_label", "_s"
#: Private seeded shuffle key of the released rows (dropped before publishing).
ORDER = "_order"


def secret_policy(policy: ReleasePolicy, summary: ViewSummary) -> ReleasePolicy:
    """``policy`` with its seed mixed with the view's private content digest: the seed of
    the tie-break keys, QI-group labels and released row order. Those must not be a function
    of the ids and the (public, stored) seed alone, or anyone knowing the ids could line
    them up with the released rows; the same view, policy and seed still give the same bytes."""
    mixed = keyed(np.array([summary.content], dtype=np.uint64), policy.seed, "label")[0]
    return policy.with_overrides(seed=int(mixed >> np.uint64(4)))


def group_labels(ties: np.ndarray, group: np.ndarray, seed: int) -> np.ndarray:
    """int64 label per tuple of ``group`` (>= 0): a seeded hash of the group's smallest
    tie-break key, so partition-free and not in Hilbert order; -1 elsewhere."""
    label = np.full(len(group), -1, dtype=np.int64)
    kept = group >= 0
    if kept.any():
        first = pd.Series(ties[kept]).groupby(group[kept]).transform("min").to_numpy(np.uint64)
        label[kept] = (keyed(first, seed, "label") >> np.uint64(1)).astype(np.int64)
    return label


def qig_table(rows: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """CreateQIG's generalized QI values per label (Algorithm 2, line 12): for a numeric
    QI ``<qi>_min``/``<qi>_max`` (the group's true min and max), for a categorical QI the
    value set ``{a,b}`` in domain order. Pandas, indexed by label (one row per group)."""
    num = policy.numeric_qi
    parts = []
    if num:
        # float64 first: a numeric QI may come as a (non-ordered) pandas category
        agg = rows[[LABEL, *num]].astype(dict.fromkeys(num, "float64")).groupby(LABEL).agg(["min", "max"])
        agg = agg.compute() if isinstance(agg, dd.DataFrame) else agg
        agg.columns = [f"{q}_{f}" for q, f in agg.columns]
        parts.append(agg.astype("float64"))
    for q in policy.categorical_qi:
        pairs = rows[[LABEL, q]].drop_duplicates()
        pairs = pairs.compute() if isinstance(pairs, dd.DataFrame) else pairs
        parts.append(_value_sets(pairs, q, policy.domains[q]).rename(q).to_frame())
    if not parts:
        return pd.DataFrame(index=pd.Index([], dtype="int64", name=LABEL))
    # positional assembly on sorted labels: every part aggregates the same groups (pandas 2's
    # Int64 engine misreports uniqueness of these large hashed labels, so no index alignment)
    parts = [p.sort_index() for p in parts]
    labels = parts[0].index.to_numpy(dtype=np.int64)
    if any(not np.array_equal(p.index.to_numpy(dtype=np.int64), labels) for p in parts[1:]):
        raise RuntimeError("QIG parts disagree on the QI-groups; please report this bug")
    cols = {c: p[c].to_numpy() for p in parts for c in p.columns}
    table = pd.DataFrame(cols, index=pd.Index(labels, name=LABEL))
    return table[released_columns(policy)[1:-1]]


def released_columns(policy: ReleasePolicy) -> list[str]:
    cols = [GROUP]
    for q in policy.qi:
        cols += [f"{q}_min", f"{q}_max"] if policy.kind(q) == "numeric" else [q]
    return [*cols, policy.sensitive]


def apply_qig(part: pd.DataFrame, table: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Released rows of ``part`` (grouped rows) with the private ``_order`` shuffle key."""
    keys = table.index.to_numpy(dtype=np.int64)  # sorted by qig_table
    gen = table.iloc[np.searchsorted(keys, part[LABEL].to_numpy(dtype=np.int64))]
    out = pd.DataFrame({GROUP: part[LABEL].to_numpy()})
    for c in gen.columns:
        out[c] = gen[c].to_numpy()
    out[policy.sensitive] = part[policy.sensitive].to_numpy()
    out["_order"] = keyed(stable_hash(part[policy.id]), policy.seed, "order")
    return out


def create_qig(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """CreateQIG for grouped rows (``_label``) that hold whole groups (pandas)."""
    return apply_qig(part, qig_table(part, policy), policy)


def _value_sets(pairs: pd.DataFrame, q: str, domain: list) -> pd.Series:
    pairs = pd.DataFrame({LABEL: pairs[LABEL].to_numpy(), "c": codes(pairs[q], domain)}).drop_duplicates()
    pairs = pairs.sort_values([LABEL, "c"], kind="stable")
    names = np.asarray([str(v) for v in domain], dtype=object)[pairs["c"].to_numpy()]
    return pd.Series(names).groupby(pairs[LABEL].to_numpy()).agg(",".join).map("{{{}}}".format)


def released_meta(policy: ReleasePolicy, sensitive_dtype) -> pd.DataFrame:
    cols: dict = {GROUP: pd.Series(dtype="int64")}
    for c in released_columns(policy)[1:-1]:
        cols[c] = pd.Series(dtype=object if c in policy.categorical_qi else "float64")
    cols[policy.sensitive] = pd.Series(dtype=sensitive_dtype)
    cols["_order"] = pd.Series(dtype="uint64")
    return pd.DataFrame(cols)


def public(frame: pd.DataFrame | dd.DataFrame) -> pd.DataFrame | dd.DataFrame:
    """``frame`` without its private ``_`` columns (e.g. the ``_order`` shuffle key)."""
    private = [c for c in frame.columns if str(c).startswith("_")]
    return frame.drop(columns=private) if private else frame


def rows_digest(part: pd.DataFrame) -> int:
    """Order-free digest of the public rows of ``part``: the sum modulo 2**64 of their row
    hashes, with integers as int64, other numbers as float64 and the rest as Python
    objects (so a string dtype a shuffle may change does not matter)."""
    cols = []
    for c in sorted(c for c in part.columns if not str(c).startswith("_")):
        x = part[c]
        if pd.api.types.is_integer_dtype(x.dtype):
            cols.append(x.to_numpy(dtype=np.int64))
        else:
            cols.append(x.to_numpy(dtype=np.float64 if pd.api.types.is_float_dtype(x.dtype) else object))
    return int(row_hashes(cols).sum(dtype=np.uint64))


def parse_value_set(text: str) -> tuple[str, ...]:
    """Values of a released categorical cell: ``"{Female,Male}" -> ("Female", "Male")``.

    A cell without braces (``"Female"``) is the singleton set. Surrounding blanks of each
    value are stripped; repeated values count once (first occurrence order kept).

    Raises
    ------
    InputError
        Empty set ``"{}"`` or an empty value (``"{a,,b}"``).
    """
    s = str(text).strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1]
    parts = [p.strip() for p in s.split(",")]
    if not parts or any(p == "" for p in parts):
        raise InputError(
            f"released value set {text!r} is empty or has an empty value; a categorical QI "
            "cell must look like {a,b} with values of the declared domain"
        )
    return tuple(dict.fromkeys(parts))

"""The released-view format (docs/released-format.md).

Column names, the private columns of a release's membership, the value-set encoding of a
categorical QI (one writer, one parser), the opaque QI-group labels, CreateQIG's table of
generalized values per group (Algorithm 2, line 12) and its application to grouped rows.
"""

from __future__ import annotations

from typing import Protocol

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import to_pandas
from dpriv._random import keyed, row_hashes, stable_hash
from dpriv.domain_codes import codes
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.row_order import stably_sorted

#: Public column of the opaque QI-group label.
GROUP = "qi_group"
#: Private columns of a release's membership: the int64 QI-group label (-1: not kept) and
#: the sensitive value's code in the policy domain.
LABEL, SCODE = "_label", "_s"
#: Private seeded shuffle key of the released rows (dropped before publishing).
ORDER = "_order"

#: Characters of a categorical value that the value-set string escapes with a backslash.
SPECIAL = "\\,{}"


# --------------------------------------------------------------------------------------
# value sets: "{a,b}" (docs/released-format.md)
# --------------------------------------------------------------------------------------
def escape_value(value: str) -> str:
    """A categorical value as it stands in a value set: each of ``\\ , { }`` preceded by a
    backslash (``"a,b"`` -> ``"a\\,b"``); any other value unchanged."""
    if not any(ch in value for ch in SPECIAL):
        return value
    return "".join("\\" + ch if ch in SPECIAL else ch for ch in value)


def value_set_items(text: str) -> list[str]:
    """The values of one value-set string, unescaped: ``"{a\\,b,c}" -> ["a,b", "c"]``.
    A cell without braces is a singleton; no other check (see :func:`parse_value_set`)."""
    body = text[:-1]
    if text.startswith("{") and text.endswith("}") and (len(body) - len(body.rstrip("\\"))) % 2 == 0:
        text = text[1:-1]  # braces, unless the last one is escaped
    if "\\" not in text:
        return text.split(",")
    items, cur, esc = [], [], False
    for ch in text:
        if esc:
            cur.append(ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == ",":
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    return items


def category_items(cells: pd.Series, q: str, policy: ReleasePolicy) -> pd.Series:
    """The values (text) each released cell of categorical QI ``q`` stands for, a list per
    cell: the leaves under the node with a hierarchy, else the value set's items."""
    h = policy.hierarchy(q)
    if h is None:
        return split_value_sets(cells)
    text = cells.astype(str)
    names = pd.unique(text.to_numpy())
    under = {n: list(h.leaves_under(n)) if n in h.node_index else [n] for n in names}
    return pd.Series([under[n] for n in text], index=cells.index, dtype=object)


def split_value_sets(cells: pd.Series) -> pd.Series:
    """:func:`value_set_items` of every cell (a list per cell, on ``cells``' index)."""
    text = cells.astype(str)
    if not text.str.contains("\\", regex=False).any():  # the usual case: vectorised
        braced = text.str.startswith("{") & text.str.endswith("}")
        return text.where(~braced, text.str.slice(1, -1)).str.split(",")
    return text.map(value_set_items)


class _Digested(Protocol):
    content: int  # a digest of the whole view (``dpriv.view_summary.ViewSummary.content``)


def secret_policy(policy: ReleasePolicy, summary: _Digested) -> ReleasePolicy:
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
        # each group's smallest key, hashed once per group (not once per tuple)
        codes, uniques = pd.factorize(np.asarray(group)[kept])
        first = np.full(len(uniques), np.iinfo(np.uint64).max, dtype=np.uint64)
        np.minimum.at(first, codes, np.asarray(ties, dtype=np.uint64)[kept])
        label[kept] = (keyed(first, seed, "label") >> np.uint64(1)).astype(np.int64)[codes]
    return label


def qig_table(rows: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """CreateQIG's generalized QI values per label (Algorithm 2, line 12): for a numeric
    QI ``<qi>_min``/``<qi>_max`` (the group's true min and max), for a categorical QI the
    value set ``{a,b}`` in domain order. Pandas, indexed by label (one row per group)."""
    num = policy.numeric_qi
    parts = []
    if num:
        # integers stay exact (int64: 2**62 + 1 is not a float64); anything else (floats, a
        # numeric QI as a non-ordered pandas category) is aggregated as float64
        dtypes = {q: bound_dtype(rows[q].dtype) for q in num}
        agg = _integer_bounds(rows, num)
        if agg is None:
            agg = rows[[LABEL, *num]].astype(dtypes).groupby(LABEL).agg(["min", "max"])
            agg = to_pandas(agg)
            agg.columns = [f"{q}_{f}" for q, f in agg.columns]
        parts.append(agg.astype({f"{q}_{f}": dtypes[q] for q in num for f in ("min", "max")}))
    for q in policy.categorical_qi:
        pairs = rows[[LABEL, q]].drop_duplicates()
        pairs = to_pandas(pairs)
        h = policy.hierarchy(q)
        dom = policy.domains[q]
        cells = _value_sets(pairs, q, dom) if h is None else _nodes(pairs, q, dom, h)
        parts.append(cells.rename(q).to_frame())
    if not parts:
        return pd.DataFrame(index=pd.Index([], dtype="int64", name=LABEL))
    # positional assembly on sorted labels: every part aggregates the same groups (pandas 2's
    # Int64 engine misreports uniqueness of these large hashed labels, so no index alignment)
    parts = [p.sort_index() for p in parts]
    labels = parts[0].index.to_numpy(dtype=np.int64)
    if any(not np.array_equal(p.index.to_numpy(dtype=np.int64), labels) for p in parts[1:]):
        raise RuntimeError("QIG parts disagree on the QI-groups; please report this bug")
    # each column keeps its NumPy dtype: pandas 3 would infer "str" from the object value
    # sets, pandas 2 and the Dask meta (released_meta) say object; one dtype on every path
    index = pd.Index(labels, name=LABEL)
    columns = {}
    for p in parts:
        for c in p.columns:
            values = p[c].to_numpy()
            columns[c] = pd.Series(values, dtype=values.dtype, index=index)
    table = pd.DataFrame(columns, index=index)
    return table[released_columns(policy)[1:-1]]


def _integer_bounds(rows: pd.DataFrame | dd.DataFrame, num: list[str]) -> pd.DataFrame | None:
    """:func:`qig_table`'s ``<qi>_min``/``<qi>_max`` columns (indexed by sorted label) as the
    min and max of each label's run of rows, when ``rows`` is pandas with int64 labels and every
    QI of ``num`` of a NumPy integer dtype (no missing value, min/max exact in any order); the
    rows are sorted by label first unless they come so (a release's parts do). None otherwise
    (the caller's groupby, which skips missing values)."""
    if not isinstance(rows, pd.DataFrame) or not len(rows) or rows[LABEL].dtype != np.int64:
        return None
    if not all(isinstance(rows[q].dtype, np.dtype) and rows[q].dtype.kind in "iu" for q in num):
        return None
    label = rows[LABEL].to_numpy()
    order = None if bool(np.all(label[1:] >= label[:-1])) else np.argsort(label, kind="stable")
    label = label if order is None else label[order]
    starts = np.flatnonzero(np.r_[True, label[1:] != label[:-1]])
    bounds = {}
    for q in num:
        x = rows[q].to_numpy().astype(bound_dtype(rows[q].dtype), copy=False)
        x = x if order is None else x[order]
        bounds[f"{q}_min"] = np.minimum.reduceat(x, starts)
        bounds[f"{q}_max"] = np.maximum.reduceat(x, starts)
    return pd.DataFrame(bounds, index=pd.Index(label[starts], name=LABEL))


def released_columns(policy: ReleasePolicy) -> list[str]:
    cols = [GROUP]
    for q in policy.qi:
        cols += [f"{q}_min", f"{q}_max"] if policy.kind(q) == "numeric" else [q]
    return [*cols, policy.sensitive]


def apply_qig(part: pd.DataFrame, table: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Released rows of ``part`` (grouped rows) with the private ``_order`` shuffle key."""
    out = qig_rows(part, table, policy)
    out[ORDER] = keyed(stable_hash(part[policy.id]), policy.seed, "order")
    return out


def qig_rows(
    part: pd.DataFrame, table: pd.DataFrame, policy: ReleasePolicy, *, sensitive_as_is: bool = False
) -> pd.DataFrame:
    """The public released rows of ``part`` (grouped rows, ``_label``) by the CreateQIG
    ``table`` (:func:`qig_table`): ``apply_qig`` without its private ``_order`` key (the
    verifier needs no shuffle key), columns in :func:`released_columns` order, on a fresh
    RangeIndex. ``sensitive_as_is``: the sensitive column keeps the dtype of ``part``'s (an
    Arrow string column stays Arrow, not one Python string per row: the verifier reads its
    codes and digest, which are the same either way), else it is a NumPy array as released."""
    keys = table.index.to_numpy(dtype=np.int64)  # sorted by qig_table
    at = np.searchsorted(keys, part[LABEL].to_numpy(dtype=np.int64))
    index = pd.RangeIndex(len(part))
    # the NumPy dtype as is (pandas 3 would infer "str" from object strings; the meta says object)
    columns = {GROUP: pd.Series(part[LABEL].to_numpy(), index=index)}
    taken = {c: table[c].to_numpy()[at] for c in table.columns}  # new arrays: held without a copy
    sensitive = part[policy.sensitive]
    if not sensitive_as_is:
        taken[policy.sensitive] = sensitive.to_numpy()
    columns.update({c: pd.Series(v, dtype=v.dtype, index=index, copy=False) for c, v in taken.items()})
    if sensitive_as_is:
        columns[policy.sensitive] = pd.Series(sensitive.array, index=index, copy=False)
    return pd.DataFrame(columns, index=index, copy=False)


def create_qig(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """CreateQIG for grouped rows (``_label``) that hold whole groups (pandas)."""
    return apply_qig(part, qig_table(part, policy), policy)


def _value_sets(pairs: pd.DataFrame, q: str, domain: list) -> pd.Series:
    pairs = pd.DataFrame({LABEL: pairs[LABEL].to_numpy(), "c": codes(pairs[q], domain)}).drop_duplicates()
    pairs = pairs.sort_values([LABEL, "c"], kind="stable")
    names = np.asarray([escape_value(str(v)) for v in domain], dtype=object)[pairs["c"].to_numpy()]
    return pd.Series(names).groupby(pairs[LABEL].to_numpy()).agg(",".join).map("{{{}}}".format)


def _nodes(pairs: pd.DataFrame, q: str, domain: list, h) -> pd.Series:
    """Lowest common hierarchy node of each label's values (the domain is ``h``'s leaves in
    tree order, so a value's code is its leaf position): the node over the first and last."""
    c = pd.Series(codes(pairs[q], domain)).groupby(pairs[LABEL].to_numpy()).agg(["min", "max"])
    ids = h.lowest_common(c["min"].to_numpy(), c["max"].to_numpy())
    return pd.Series(np.asarray(h.names, dtype=object)[ids], index=c.index)


def bound_dtype(dtype) -> np.dtype:
    """dtype of the released ``<qi>_min``/``<qi>_max`` of a numeric QI of ``dtype``: int64
    for integers (uint64 for uint64), float64 otherwise (floats, categories)."""
    if pd.api.types.is_integer_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype):
        return np.dtype("uint64") if str(dtype).lower() == "uint64" else np.dtype("int64")
    return np.dtype("float64")


def released_meta(policy: ReleasePolicy, sensitive_dtype, qi_dtypes: dict | None = None) -> pd.DataFrame:
    """Empty released view; ``qi_dtypes`` (QI -> dtype of the input) gives the bounds' dtypes."""
    cols: dict = {GROUP: pd.Series(dtype="int64")}
    for c in released_columns(policy)[1:-1]:
        if c in policy.categorical_qi:
            cols[c] = pd.Series(dtype=object)
        else:
            q = c.rsplit("_", 1)[0]
            cols[c] = pd.Series(dtype=bound_dtype((qi_dtypes or {}).get(q, "float64")))
    cols[policy.sensitive] = pd.Series(dtype=sensitive_dtype)
    cols[ORDER] = pd.Series(dtype="uint64")
    return pd.DataFrame(cols)


def in_release_order(rows: pd.DataFrame) -> pd.DataFrame:
    """Released rows in the order they are written (docs/released-format.md, "Row order"): by
    QI-group label (a seeded hash, so the groups come in no meaningful order), then by the
    private seeded key ``_order`` of each respondent inside a group. Neither key says anything
    about the input order or the Hilbert order, and both are the same for any partitioning.
    On Dask each part of :func:`dpriv.qig_ranges.released_ranges` (anatomy:
    :func:`dpriv.whole_groups.in_label_ranges`) is sorted so; its parts are in label order."""
    return stably_sorted(rows, [GROUP, ORDER]).reset_index(drop=True)


def label_divisions(n: int) -> tuple:
    """Divisions of ``n`` equal ranges of the labels ``[0, 2**63 - 1]`` (they are uniform on it)."""
    inner = sorted({int(x) for x in np.linspace(0, 2**63 - 1, n + 1, dtype=np.float64)[1:-1]})
    return (0, *[min(x, 2**63 - 2) for x in inner], 2**63 - 1)


def is_text_dtype(dtype) -> bool:
    """Whether ``dtype`` is one of pandas' string dtypes (``str`` of pandas 3, ``string``,
    ``string[pyarrow]``, an Arrow ``string``/``large_string``), not ``object``."""
    if isinstance(dtype, pd.StringDtype):
        return True
    arrow = getattr(dtype, "pyarrow_dtype", None)
    return arrow is not None and str(arrow) in ("string", "large_string", "string_view")


def text_as_object(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each text column of a pandas string dtype (:func:`is_text_dtype`) as
    ``object`` holding Python ``str``: the dtype of the released view's text columns in every
    frame dpriv returns (docs/released-format.md "Columns"), on pandas 2 and 3 alike. Other
    columns, and a frame without such columns, are returned as they are."""
    text = [c for c in frame.columns if is_text_dtype(frame[c].dtype)]
    if not text:
        return frame
    # to_numpy(object) keeps Python str; astype(object) of pandas 3's str would too, but a missing
    # value becomes None here, as in the object columns of a release
    return frame.assign(
        **{
            c: pd.Series(frame[c].to_numpy(dtype=object, na_value=None), index=frame.index, dtype=object)
            for c in text
        }
    )


def read_released(path) -> pd.DataFrame:
    """A released view's Parquet file (a ledger's ``releases/<i>/view.parquet``, or the
    ``--out`` of ``dpriv anonymize``) as the release returned it: text columns ``object``
    (:func:`text_as_object`; ``pd.read_parquet`` alone gives pandas 3's ``str``), ``qi_group``
    int64, the bounds as written. Raises what ``pd.read_parquet`` raises for a missing or
    damaged file."""
    return text_as_object(pd.read_parquet(path))


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
            cols.append(x.to_numpy(dtype=np.float64) if pd.api.types.is_float_dtype(x.dtype) else x)
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
    parts = [p.strip() for p in value_set_items(str(text).strip())]
    if not parts or any(p == "" for p in parts):
        raise InputError(
            f"released value set {text!r} is empty or has an empty value; a categorical QI "
            "cell must look like {a,b} with values of the declared domain"
        )
    return tuple(dict.fromkeys(parts))

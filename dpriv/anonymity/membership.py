"""Checks of a released view against its private membership (the verifier's second half).

Given the ``_label`` of every kept tuple with its QIs, sensitive value and priors, the
released groups must have the same sizes and sensitive counts, hold every kept tuple inside
their interval / value set with tight bounds, and the members' priors give the JS of (E8).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpriv.anonymity.format_check import listed, named
from dpriv.criteria import js_per_group, tv_per_group
from dpriv.group_table import label_segments
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP, LABEL, SCODE, split_value_sets
from dpriv.validate import codes
from dpriv.wording import counted


def exact_numbers(values: pd.Series) -> np.ndarray:
    """The numbers of ``values`` in their exact type: int64/uint64 for integers (a category
    of integers included), float64 otherwise (NaN when missing or not a number)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(values.dtype.categories.dtype)
    if pd.api.types.is_integer_dtype(values.dtype):
        return values.to_numpy()
    x = pd.to_numeric(values, errors="coerce")
    return x.to_numpy() if pd.api.types.is_integer_dtype(x.dtype) else x.to_numpy(float, na_value=np.nan)


def comparable(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` as arrays whose comparisons are exact: as they are when both are of
    one kind (int64 with int64, float with float), else Python objects (NumPy would compare
    int64 with float64 in float64: 2**62 + 1 == 2.0**62)."""
    if a.dtype == b.dtype or (a.dtype.kind == "f" and b.dtype.kind == "f"):
        return a, b
    return a.astype(object), b.astype(object)


def check_assigned(
    released: pd.DataFrame,
    assigned: pd.DataFrame,
    policy: ReleasePolicy,
    stats: pd.DataFrame,
    usable: list[str],
) -> tuple[list[str], pd.DataFrame | None]:
    """Membership checks against the private frame; returns problems and, per group of
    ``stats`` (in its order), ``js`` (E8) and ``rbk_tv`` (RBK-closeness distance; NaN when the
    policy does not set ``rbk_closeness``) of the members' priors."""
    problems: list[str] = []
    need = [LABEL, *policy.qi, *policy.prior_columns]
    absent = [c for c in need if c not in assigned.columns]
    if absent:
        return [f"assigned: columns {absent} are missing (need {LABEL}, the QIs and the priors)"], None
    labels = assigned[LABEL]
    rel_labels = released[GROUP]
    if labels.dtype != rel_labels.dtype:  # e.g. int labels vs labels read back as text
        labels, rel_labels = labels.astype(str), rel_labels.astype(str)
        stats_labels = stats[GROUP].astype(str)
    else:
        stats_labels = stats[GROUP]

    # sizes and sensitive counts per group must match the released ones
    s_priv = (
        codes(assigned[policy.sensitive], policy.sensitive_domain)
        if policy.sensitive in assigned.columns
        else assigned[SCODE].to_numpy()
    )
    s_pub = codes(released[policy.sensitive], policy.sensitive_domain)
    if not same_pairs(labels.to_numpy(), s_priv, rel_labels.to_numpy(), s_pub):
        problems += group_count_problems(labels.to_numpy(), s_priv, rel_labels.to_numpy(), s_pub)

    # every kept tuple inside its group's interval / value set, bounds tight
    problems += box_problems(released.assign(**{GROUP: rel_labels}), labels, assigned, policy, usable)

    # JS (E8) of each group's priors, equal weights
    priors = assigned[policy.prior_columns].to_numpy(dtype=np.float64)
    rows_ok = (
        np.isfinite(priors).all(axis=1)
        & (priors >= 0).all(axis=1)
        & (np.abs(priors.sum(axis=1) - 1.0) <= 1e-6)
    )
    if not rows_ok.all():
        problems.append(
            f"assigned: {int((~rows_ok).sum())} prior rows ({policy.prior_columns[:3]}...) "
            "are not distributions (non-negative, summing to 1)"
        )
    js_by_label = js_per_group(priors, labels, policy.log_base)
    at = stats_labels.to_numpy()
    both = {"js": js_by_label.reindex(at).to_numpy(), "rbk_tv": np.full(len(at), np.nan)}
    if policy.rbk_closeness is not None:  # only a policy with the bound promises it
        tv_by_label = tv_per_group(priors, np.where(s_priv >= 0, s_priv, 0), labels)
        both["rbk_tv"] = tv_by_label.reindex(at).to_numpy()
    return problems, pd.DataFrame(both)


def same_pairs(g_priv: np.ndarray, s_priv: np.ndarray, g_pub: np.ndarray, s_pub: np.ndarray) -> bool:
    """Whether the private and the released rows are the same (group, sensitive code) pairs in
    the same order (labels and codes (n,) each): then every group has the same size and the
    same sensitive counts on both sides, with no grouping. The verification of a release
    rebuilds its released rows from the membership row by row, so this holds unless a row was
    lost, added or changed; any other order is counted by :func:`group_count_problems`."""
    return (
        len(g_priv) == len(g_pub)
        and g_priv.dtype == g_pub.dtype
        and bool(np.array_equal(g_priv, g_pub))
        and bool(np.array_equal(s_priv, s_pub))
    )


def group_count_problems(
    g_priv: np.ndarray, s_priv: np.ndarray, g_pub: np.ndarray, s_pub: np.ndarray
) -> list[str]:
    """Problems of the groups whose released size or sensitive counts differ from their
    members' (labels and sensitive codes of the private and of the released rows)."""
    problems: list[str] = []
    priv = pd.DataFrame({"g": g_priv, "s": s_priv})
    pub = pd.DataFrame({"g": g_pub, "s": s_pub})
    size_priv = priv.groupby("g").size()
    size_pub = pub.groupby("g").size()
    sizes = pd.concat({"pub": size_pub, "priv": size_priv}, axis=1).fillna(0).astype(np.int64)
    bad = sizes.index[sizes["pub"] != sizes["priv"]]
    if len(bad):
        problems += listed(
            "",
            [
                f"QI-group {as_python(g)!r}: {counted(int(sizes.at[g, 'pub']), 'released tuple')} but "
                f"{counted(int(sizes.at[g, 'priv']), 'kept tuple')} assigned to it"
                for g in bad
            ],
        )
    cnt = pd.concat({"pub": pub.value_counts(), "priv": priv.value_counts()}, axis=1).fillna(0)
    moved = cnt.index[cnt["pub"] != cnt["priv"]].get_level_values("g").unique()
    moved = [g for g in moved if g not in set(bad.tolist())]
    if moved:
        problems.append(
            f"QI-groups {named(moved)}: the released sensitive values differ from "
            "those of the tuples assigned to the group"
        )
    return problems


def box_problems(
    released: pd.DataFrame,
    labels: pd.Series,
    assigned: pd.DataFrame,
    policy: ReleasePolicy,
    usable: list[str],
) -> list[str]:
    """Problems of the released boxes against their members: a member outside its group's
    interval, value set or hierarchy node, or a box that is not tight (its bounds not the
    members' min/max, its value set not their values, its node not their lowest common one).
    ``labels``: the QI-group of each row of ``assigned`` (its QIs as the release read them);
    ``usable``: the released columns whose format is sound (:func:`format_problems`). Each
    problem names the QI and the QI-groups, never a value; the QIs in the policy's order."""
    problems: list[str] = []
    first = _first_rows(released).set_index(GROUP)
    cut = ~labels.isin(first.index).to_numpy()
    if cut.any():  # a QI-group cut from the file: its members have no box to lie in (not "outside" it)
        problems.append(_cut_problem(labels.to_numpy()[cut]))
        labels, assigned = labels[~cut], assigned[~cut]
    numeric = [q for q in policy.qi if policy.kind(q) == "numeric" and f"{q}_min" in usable]
    members = _members(first, labels, assigned, numeric)
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            if q in numeric:
                problems += _interval_problems(q, members)
        elif q in usable:
            problems += _category_problems(q, policy, members)
    return problems


class _Members(NamedTuple):
    """The kept members of the groups that have a released row, with those rows and the
    members' spans looked up / grouped once for all numeric QIs."""

    labels: pd.Series  # each member's QI-group (on ``assigned``'s index)
    assigned: pd.DataFrame  # the members' QIs
    first: pd.DataFrame  # the first released row of each QI-group, indexed by its label
    at_rows: Callable[[str], pd.Series]  # a released column at each member's group
    xs: dict[str, np.ndarray]  # each checked numeric QI's values (:func:`exact_numbers`)
    spans: pd.DataFrame  # per group, the members' min/max of each checked numeric QI (:func:`_spans`)
    at_span: Callable[[str], pd.Series]  # a released column at each group of ``spans``


def _members(first: pd.DataFrame, labels: pd.Series, assigned: pd.DataFrame, numeric: list[str]) -> _Members:
    """The look-ups every QI's check uses (``numeric``: the numeric QIs whose bounds are checked)."""
    xs = {q: exact_numbers(assigned[q]) for q in numeric}
    spans = _spans(labels, xs)
    return _Members(
        labels,
        assigned,
        first,
        _looked_up(first, labels.to_numpy()),
        xs,
        spans,
        _looked_up(first, spans.index),
    )


def _cut_problem(cut_labels: np.ndarray) -> str:
    """The problem of the members (their labels, one per member) whose QI-group has no row."""
    return (
        f"QI-groups {named(pd.unique(cut_labels))} hold "
        f"{counted(len(cut_labels), 'kept tuple')} of the view but have no row in the release: the file "
        "was truncated or is not this release"
    )


def _interval_problems(q: str, m: _Members) -> list[str]:
    """Numeric QI ``q``: a member outside its group's [q_min, q_max], else (only then: a bound
    passed by a member is not tight either) a group whose bounds are not its members' min/max."""
    lo, hi = f"{q}_min", f"{q}_max"
    xl, lo_v = comparable(m.xs[q], exact_numbers(m.at_rows(lo)))
    xh, hi_v = comparable(m.xs[q], exact_numbers(m.at_rows(hi)))
    out = ~np.asarray((xl >= lo_v) & (xh <= hi_v), dtype=bool)  # NaN is outside
    if out.any():
        return [
            f"QI {q!r}: {counted(int(out.sum()), 'kept tuple lies', 'kept tuples lie')} outside "
            f"the interval [{lo}, {hi}] of their QI-group (groups "
            f"{named(pd.unique(m.labels.to_numpy()[out]))})"
        ]
    smin, rmin = comparable(m.spans[(q, "min")].to_numpy(), exact_numbers(m.at_span(lo)))
    smax, rmax = comparable(m.spans[(q, "max")].to_numpy(), exact_numbers(m.at_span(hi)))
    loose = m.spans.index[np.asarray(smin != rmin, bool) | np.asarray(smax != rmax, bool)]
    if len(loose):
        return [f"QI {q!r}: the interval of QI-groups {named(loose)} is not the true min/max of their tuples"]
    return []


def _category_problems(q: str, policy: ReleasePolicy, m: _Members) -> list[str]:
    """Categorical QI ``q``: held to its hierarchy's nodes when it has one, else to value sets."""
    h = policy.hierarchy(q)
    leaf = codes(m.assigned[q], policy.domains[q])
    if h is not None:
        return _node_problems(q, h, leaf, m.labels.to_numpy(), m.first[q])
    return _value_set_problems(q, policy.domains[q], leaf, m.labels, m.first[q])


def _value_set_problems(q: str, dom: list, c: np.ndarray, labels: pd.Series, shown: pd.Series) -> list[str]:
    """A member's value outside its group's released value set, else (only then) a value set
    listing a value none of the group's members has (``c``: the members' codes in ``dom``, -1
    unknown; ``shown``: the released value set per group label)."""
    names = np.asarray([str(v) for v in dom] + ["\x00unknown"], dtype=object)[c]
    have = pd.DataFrame({"g": labels.to_numpy(), "v": names}).drop_duplicates()
    sets = split_value_sets(shown).explode()
    pairs_shown = pd.DataFrame({"g": sets.index.to_numpy(), "v": sets.to_numpy()}).drop_duplicates()
    both = have.merge(pairs_shown, on=["g", "v"], how="outer", indicator=True)
    both = both[both["g"].isin(set(labels))]
    out = both.loc[both["_merge"] == "left_only", "g"].unique()
    if len(out):
        return [
            f"QI {q!r}: kept tuples of QI-groups {named(out)} have values outside their group's value set"
        ]
    unused = both.loc[both["_merge"] == "right_only", "g"].unique()
    if len(unused):
        return [
            f"QI {q!r}: the value sets of QI-groups {named(unused)} list values no tuple of the group has"
        ]
    return []


def _looked_up(first: pd.DataFrame, labels) -> Callable[[str], pd.Series]:
    """A column of ``first`` (one row per group label, a unique index) at ``labels``, as
    ``first[column].reindex(labels)`` gives it, the labels looked up once for every column."""
    at = first.index.get_indexer(labels) if first.index.is_unique else None
    if at is None or not bool((at >= 0).all()):  # a label without a row: NaN there, as reindex does
        return lambda column: first[column].reindex(labels)  # (a duplicated label: refused)
    return lambda column: first[column].iloc[at]


def _spans(labels: pd.Series, values: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per group label (sorted index), the min and max of each column of ``values`` (columns
    ``(name, "min")``, ``(name, "max")``): one pass for every numeric QI. Integer labels and
    integer values: the min/max of each label's run of rows (:func:`label_segments`, no sort
    when the rows come sorted by label, as a release's parts do); otherwise one groupby, which
    skips a missing value (NaN) as the bounds' writer does."""
    names = list(values)
    g = labels.to_numpy()
    if names and len(g) and g.dtype.kind in "iu" and all(values[q].dtype.kind in "iu" for q in names):
        order, starts, uniq = label_segments(g)
        spans = {}
        for q in names:
            x = values[q] if order is None else values[q][order]
            spans[(q, "min")] = np.minimum.reduceat(x, starts[:-1])
            spans[(q, "max")] = np.maximum.reduceat(x, starts[:-1])
        return pd.DataFrame(spans, index=pd.Index(uniq, name="g"))
    frame = pd.DataFrame({"g": g, **{f"v{i}": values[q] for i, q in enumerate(names)}})
    if not names:
        return pd.DataFrame(index=frame.groupby("g").size().index)
    agg = frame.groupby("g").agg(["min", "max"])
    agg.columns = pd.MultiIndex.from_tuples([(names[int(c[1:])], f) for c, f in agg.columns])
    return agg


def _first_rows(released: pd.DataFrame) -> pd.DataFrame:
    """``released.drop_duplicates(GROUP)``: the first row of each QI-group, without hashing the
    labels when they are integers in order (a release's parts come sorted by label)."""
    g = released[GROUP].to_numpy()
    if g.dtype.kind in "iu" and bool(np.all(g[1:] >= g[:-1])):
        return released[np.r_[True, g[1:] != g[:-1]] if len(g) else np.zeros(0, dtype=bool)]
    return released.drop_duplicates(GROUP)


def _node_problems(q: str, h, leaf: np.ndarray, labels: np.ndarray, shown: pd.Series) -> list[str]:
    """Every member's value under its group's released hierarchy node, and that node the
    lowest common one of the members (``leaf``: positions in tree order, -1 unknown;
    ``shown``: the released node per group label)."""
    node = shown.astype(str).map(h.node_index).reindex(labels)
    if node.isna().any():  # format_problems names the bad cells
        return []
    node = node.to_numpy(dtype=np.int64)
    inside = (leaf >= h.lo[node]) & (leaf < h.hi[node])
    if not inside.all():
        return [
            f"QI {q!r}: kept tuples of QI-groups {named(pd.unique(labels[~inside]))} have values "
            f"outside their group's hierarchy node (not among the leaves under it in {h.path})"
        ]
    span = pd.DataFrame({"g": labels, "x": leaf}).groupby("g")["x"].agg(["min", "max"])
    lowest = h.lowest_common(span["min"].to_numpy(), span["max"].to_numpy())
    released = shown.astype(str).map(h.node_index).reindex(span.index).to_numpy(dtype=np.int64)
    loose = span.index[lowest != released]
    if len(loose):
        return [
            f"QI {q!r}: the hierarchy node of QI-groups {named(loose)} is not the lowest common "
            "node of their tuples' values"
        ]
    return []

"""One view through Generalize on Dask partitions (DESIGN.md "Data flow", lines 2-7).

keys (map_partitions) -> set_index on the Hilbert key (partitions = contiguous Hilbert
ranges, divisions from quantiles) -> greedy QI-groups per range (map_partitions) ->
stitch the leftovers of all ranges in Hilbert order (client, small) -> CreateQIG ->
seeded shuffle of the rows. A pandas view runs the same kernels in-process over the
same Hilbert ranges, so both paths give the same release for the same divisions.
"""

from __future__ import annotations

from dataclasses import dataclass

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv import hilbert
from dpriv._random import keyed, stable_hash
from dpriv.anonymity.divergence import GROUNDS
from dpriv.anonymity.generalize import CARRIED, GroupStats, Params, entropies, first_pass, repair
from dpriv.policy import ReleasePolicy
from dpriv.steps import Steps
from dpriv.validate import ViewSummary, codes

HKEY, TIE, SCODE, LABEL = "_hkey", "_tie", "_s", "_label"
GROUP = "qi_group"


@dataclass
class Generalized:
    """Result of :func:`generalize_view`.

    ``assigned``: private frame of the kept tuples (id, QIs, ``_s`` sensitive code,
    ``_label`` int64 QI-group label, prior columns); ``released``: the public view V*
    (DESIGN.md "Released view"); ``n_suppressed``: tuples left out; ``divisions``: the
    Hilbert ranges used (pass them back to reproduce the release on another path);
    ``table``: the CreateQIG table (:func:`qig_table`, pandas, one row per QI-group).
    Both frames are pandas for a pandas input and Dask for a Dask input.
    """

    assigned: pd.DataFrame | dd.DataFrame
    released: pd.DataFrame | dd.DataFrame
    n_suppressed: int
    divisions: tuple | None
    table: pd.DataFrame | None = None


def hilbert_keys(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """uint64 Hilbert key of every row: its QIs on the grid of the policy domains (stable
    across releases) and, with ``policy.prior_key`` and prior columns present, the expected
    rank of S under its prior, ``sum_s P(s) rank(s) / (M - 1)`` in [0, 1]."""
    bits = policy.bits()
    cols = []
    if policy.prior_key and all(c in part.columns for c in policy.prior_columns):
        prior = part[policy.prior_columns].to_numpy(dtype=float)
        rank = prior @ np.linspace(0.0, 1.0, prior.shape[1]) if prior.shape[1] > 1 else np.zeros(len(part))
        cols.append(hilbert.grid_coords(np.clip(rank, 0.0, 1.0), 0.0, 1.0, bits))
    for q in policy.qi:
        dom = policy.domains[q]
        if policy.kind(q) == "numeric":
            cols.append(hilbert.grid_coords(part[q].to_numpy(dtype=float), dom[0], dom[1], bits))
        else:
            cols.append(hilbert.grid_codes(codes(part[q], dom), len(dom), bits))
    coords = np.column_stack(cols) if cols else np.zeros((len(part), 0), dtype=np.uint64)
    return hilbert.hilbert_index(coords.astype(np.uint64), bits)


def unit_coords(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """QIs scaled to [0, 1] by their policy domains (categorical: rank), float64 (n, m)."""
    cols = []
    for q in policy.qi:
        dom = policy.domains[q]
        if policy.kind(q) == "numeric":
            x, lo, hi = part[q].to_numpy(dtype=float), dom[0], dom[1]
        else:
            x, lo, hi = codes(part[q], dom).astype(float), 0, len(dom) - 1
        cols.append((x - lo) / (hi - lo) if hi > lo else np.zeros(len(part)))
    return np.column_stack(cols) if cols else np.zeros((len(part), 0))


def add_keys(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """``part`` plus ``_hkey`` (uint64), ``_tie`` (uint64, seeded) and ``_s`` (int64 code)."""
    return part.assign(
        **{
            HKEY: hilbert_keys(part, policy),
            TIE: keyed(stable_hash(part[policy.id]), policy.seed, "tie"),
            SCODE: codes(part[policy.sensitive], policy.sensitive_domain),
        }
    )


def secret_policy(policy: ReleasePolicy, summary: ViewSummary) -> ReleasePolicy:
    """``policy`` with its seed mixed with the view's private content digest: the seed of
    the tie-break keys, QI-group labels and released row order. Those must not be a function
    of the ids and the (public, stored) seed alone, or anyone knowing the ids could line
    them up with the released rows; the same view, policy and seed still give the same bytes."""
    mixed = keyed(np.array([summary.content], dtype=np.uint64), policy.seed, "label")[0]
    return policy.with_overrides(seed=int(mixed >> np.uint64(4)))


def params_of(policy: ReleasePolicy) -> Params:
    return Params(
        k=policy.k,
        t=policy.t,
        j=policy.j,
        ground=GROUNDS[policy.emd_ground],
        log_base=policy.log_base,
        cap=cap_for(policy),
        wait=max(policy.defer_wait, 0),
        reach=policy.attach_reach,
    )


def cap_for(policy: ReleasePolicy) -> int:
    """Open-group cap of the greedy scan; policy.group_cap, else max(8k, 64) [proposed]."""
    return policy.group_cap or max(8 * policy.k, 64)


def group_labels(ties: np.ndarray, group: np.ndarray, seed: int) -> np.ndarray:
    """int64 label per tuple of ``group`` (>= 0): a seeded hash of the group's smallest
    tie-break key, so partition-free and not in Hilbert order; -1 elsewhere."""
    label = np.full(len(group), -1, dtype=np.int64)
    kept = group >= 0
    if kept.any():
        first = pd.Series(ties[kept]).groupby(group[kept]).transform("min").to_numpy(np.uint64)
        label[kept] = (keyed(first, seed, "label") >> np.uint64(1)).astype(np.int64)
    return label


def scan_range(
    part: pd.DataFrame, carry: pd.DataFrame | None, policy: ReleasePolicy, view_counts: np.ndarray, last: bool
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """First pass over one Hilbert range, after the open tail ``carry`` of the previous one.

    Returns (this range's rows with ``_label``: a group label, or -1 for a leftover; the
    open tail to carry into the next range, empty when ``last``).
    """
    if HKEY not in part.columns:
        part = part.rename_axis(HKEY).reset_index()
    if carry is not None and len(carry):
        part = pd.concat([carry, part], ignore_index=True)
    part = part.sort_values([HKEY, TIE], kind="stable").reset_index(drop=True)
    group = first_pass(
        part[SCODE].to_numpy(),
        part[policy.prior_columns].to_numpy(dtype=np.float64),
        view_counts,
        params_of(policy),
        carry_tail=not last,
    )
    carried = group == CARRIED
    part = part.assign(**{LABEL: group_labels(part[TIE].to_numpy(np.uint64), group, policy.seed)})
    return part[~carried].reset_index(drop=True), part[carried].drop(columns=LABEL).reset_index(drop=True)


def chained_scan(ranges: dd.DataFrame, view_meta: pd.DataFrame, policy: ReleasePolicy,
                 view_counts: np.ndarray) -> dd.DataFrame:
    """:func:`scan_range` over the Hilbert ranges of ``ranges`` (indexed by the key, in key
    order), each link handing its open tail to the next: a chain of delayed tasks."""
    meta = scan_range(add_keys(view_meta, policy).set_index(HKEY), None, policy, view_counts, True)[0]
    links, carry = [], None
    parts = ranges.to_delayed()
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        link = dask.delayed(scan_range, nout=2, pure=True)(part, carry, policy, view_counts, last)
        links.append(link[0])
        carry = link[1]
    return dd.from_delayed(links, meta=meta, verify_meta=False)


def range_stats(rows: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Per QI-group of ``rows`` (label >= 0): first (key, tie), then the arrays of
    :class:`GroupStats` flattened into columns; one row per group."""
    rows = rows[rows[LABEL] >= 0].sort_values([HKEY, TIE], kind="stable")
    labels, group = np.unique(rows[LABEL].to_numpy(), return_inverse=True)
    priors = rows[policy.prior_columns].to_numpy(dtype=np.float64)
    st = GroupStats.of(
        group,
        rows[SCODE].to_numpy(),
        priors,
        entropies(priors, policy.log_base),
        unit_coords(rows, policy),
        np.arange(len(rows)),
        len(labels),
        len(policy.sensitive_domain),
    )
    first = rows.iloc[st.pos] if len(rows) else rows
    return pd.concat(
        [pd.DataFrame({LABEL: labels, HKEY: first[HKEY].to_numpy(), TIE: first[TIE].to_numpy()}), _flat(st)],
        axis=1,
    )


_STAT_BLOCKS = ("counts", "sizes", "sum_p", "sum_h", "lo", "hi")


def _flat(st: GroupStats) -> pd.DataFrame:
    cols = {}
    for name in _STAT_BLOCKS:
        arr = getattr(st, name)
        if arr.ndim == 1:
            cols[name] = arr
        else:
            cols.update({f"{name}{i}": arr[:, i] for i in range(arr.shape[1])})
    return pd.DataFrame(cols)


def _unflat(frame: pd.DataFrame, pos: np.ndarray) -> GroupStats:
    blocks = []
    for name in _STAT_BLOCKS:
        cols = [c for c in frame.columns if c == name or (c.startswith(name) and c[len(name) :].isdigit())]
        arr = frame[cols].to_numpy()
        blocks.append(np.array(arr[:, 0] if cols == [name] else arr, order="C"))  # writable
    blocks[0] = blocks[0].astype(np.int64)
    blocks[1] = blocks[1].astype(np.int64)
    return GroupStats(*blocks, pos.astype(np.int64))


def repair_leftovers(
    stats_frame: pd.DataFrame, leftovers: pd.DataFrame, policy: ReleasePolicy, view_counts: np.ndarray
) -> pd.DataFrame:
    """The repair over all ranges at once (client side): leftovers with their final
    ``_label`` (-1 = suppressed). Positions come from the global (key, tie) order."""
    keys = pd.concat([stats_frame[[HKEY, TIE]], leftovers[[HKEY, TIE]]], ignore_index=True)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.lexsort((keys[TIE].to_numpy(np.uint64), keys[HKEY].to_numpy(np.uint64)))] = np.arange(len(keys))
    g_pos, x_pos = rank[: len(stats_frame)], rank[len(stats_frame) :]
    order = np.argsort(x_pos, kind="stable")
    left = leftovers.iloc[order].reset_index(drop=True)
    stats = _unflat(stats_frame, g_pos) if len(stats_frame) else None
    m = len(policy.sensitive_domain)
    if stats is None:
        n_qi = len(policy.qi)
        stats = GroupStats(
            np.zeros((0, m), np.int64),
            np.zeros(0, np.int64),
            np.zeros((0, m)),
            np.zeros(0),
            np.zeros((0, n_qi)),
            np.zeros((0, n_qi)),
            np.zeros(0, np.int64),
        )
    n_old = stats.n_groups
    assign, _ = repair(
        stats,
        left[SCODE].to_numpy(),
        left[policy.prior_columns].to_numpy(dtype=np.float64),
        unit_coords(left, policy),
        x_pos[order],
        view_counts,
        params_of(policy),
    )
    old_labels = stats_frame[LABEL].to_numpy()
    label = np.where(
        (assign >= 0) & (assign < n_old),
        old_labels[np.clip(assign, 0, max(n_old - 1, 0))] if n_old else -1,
        -1,
    )
    new = np.where(assign >= n_old, assign, -1)
    fresh = group_labels(left[TIE].to_numpy(np.uint64), new, policy.seed)
    label = np.where(new >= 0, fresh, label)
    return left.assign(**{LABEL: label})


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


def _split(frame: pd.DataFrame, divisions: tuple) -> list[pd.DataFrame]:
    """Hilbert ranges of a key-sorted pandas frame, as set_index(divisions=...) would cut them."""
    inner = np.asarray(divisions[1:-1], dtype=np.uint64)
    cuts = np.searchsorted(frame[HKEY].to_numpy(), inner, side="left")
    return [frame.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])]


def pandas_divisions(keys: np.ndarray, npartitions: int) -> tuple:
    """Divisions of ``npartitions`` Hilbert ranges from exact key quantiles (pandas path)."""
    q = np.quantile(np.sort(keys), np.linspace(0, 1, npartitions + 1), method="lower")
    return tuple(int(v) for v in np.unique(q.astype(np.uint64)))


def balanced_divisions(histogram: pd.Series, npartitions: int) -> tuple:
    """Divisions of at most ``npartitions`` Hilbert ranges of nearly equal size from the
    exact key histogram (key -> count); dask's approximate quantiles left 3-4.5x imbalance."""
    hist = histogram.sort_index()
    keys, cum = hist.index.to_numpy(np.uint64), np.cumsum(hist.to_numpy())
    targets = cum[-1] * np.arange(1, npartitions) / npartitions
    inner = keys[np.minimum(np.searchsorted(cum, targets, side="right"), len(keys) - 1)]
    cuts = [int(k) for k in np.unique(inner) if keys[0] < k]
    return (int(keys[0]), *cuts, int(keys[-1]))


def _even_divisions(n: int) -> tuple:
    """Divisions of ``n`` equal ranges of uint64 (the shuffle key is uniform on it)."""
    inner = sorted({int(x) for x in np.linspace(0, 2**64 - 1, n + 1, dtype=np.float64)[1:-1]})
    return (0, *[min(x, 2**64 - 2) for x in inner], 2**64 - 1)


def generalize_view(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    summary: ViewSummary,
    *,
    npartitions: int | None = None,
    divisions: tuple | None = None,
    steps: Steps | None = None,
) -> Generalized:
    """Generalize one validated view with priors in its ``p__<value>`` columns.

    Parameters
    ----------
    view : pandas or Dask DataFrame with the policy's id, QIs, sensitive column and
        ``policy.prior_columns`` (float64, rows sum to 1).
    summary : from :func:`dpriv.validate.validate_view` (size and sensitive counts).
    npartitions, divisions : Hilbert ranges; default the input's number of partitions (1
        for pandas). The scan is chained over the ranges and the repair is global, so the
        release does not depend on them; the same input + policy gives the same bytes.
    steps : records the seconds of each step (Dask: keys, shuffle, grouping, repair, qig;
        each persisted on the workers, see :mod:`dpriv.steps`).

    The released rows come in the order of the private seeded ``_order`` column (uint64),
    which they keep: drop it before publishing (the ledger and ``dpriv.api`` do).
    """
    steps = steps or Steps()
    policy = secret_policy(policy, summary)
    counts = summary.s_counts
    if isinstance(view, dd.DataFrame):
        (keyed_view,) = steps.run(
            "keys", view.map_partitions(add_keys, policy, meta=_keyed_meta(view._meta, policy))
        )
        if not divisions:
            histogram = keyed_view[HKEY].value_counts().compute()  # one small pass: distinct keys
            divisions = balanced_divisions(histogram, npartitions or view.npartitions)
        (ranges,) = steps.run("shuffle", keyed_view.set_index(HKEY, sort=True, divisions=divisions))
        del keyed_view
        (grouped,) = steps.run("grouping", chained_scan(ranges, view._meta, policy, counts))
        stats_meta = range_stats(grouped._meta, policy)
        stats, leftovers = dask.compute(
            grouped.map_partitions(range_stats, policy, meta=stats_meta), grouped[grouped[LABEL] < 0]
        )
        divisions = ranges.divisions
        del ranges
    else:
        frame = add_keys(view, policy).sort_values([HKEY, TIE], kind="stable")
        divisions = divisions or pandas_divisions(frame[HKEY].to_numpy(), npartitions or 1)
        parts, carry = [], None
        for i, part in enumerate(ranges_ := _split(frame, divisions)):
            done, carry = scan_range(part, carry, policy, counts, i == len(ranges_) - 1)
            parts.append(done)
        grouped = pd.concat(parts, ignore_index=True)
        stats, leftovers = range_stats(grouped, policy), grouped[grouped[LABEL] < 0]
    placed = repair_leftovers(stats, leftovers, policy, counts)
    n_suppressed = int((placed[LABEL] < 0).sum())
    placed = placed[placed[LABEL] >= 0]
    steps.lap("repair")
    if isinstance(view, dd.DataFrame):
        kept = grouped[grouped[LABEL] >= 0]
        assigned = dd.concat(
            [kept, dd.from_pandas(placed.astype(kept._meta.dtypes.to_dict()), npartitions=1)]
        )
        table = qig_table(assigned, policy)
        rmeta = released_meta(policy, view._meta[policy.sensitive].dtype)
        # one graph node for the table, not a copy per task
        released = assigned.map_partitions(apply_qig, dask.delayed(table), policy, meta=rmeta)
        # the shuffle key is uniform on uint64: fixed divisions, no quantile pass (a lazy
        # quantile pass would run inside the scheduler's graph materialisation and hang)
        released = released.set_index("_order", divisions=_even_divisions(released.npartitions))
        released, assigned = steps.run("qig", released.reset_index()[list(rmeta.columns)], assigned)
    else:
        assigned = pd.concat([grouped[grouped[LABEL] >= 0], placed], ignore_index=True)
        table = qig_table(assigned, policy)
        released = apply_qig(assigned, table, policy)
        released = released.sort_values("_order", kind="stable").reset_index(drop=True)
        steps.lap("qig")
    known = divisions is not None and None not in divisions
    divisions = tuple(int(d) for d in divisions) if known else None
    return Generalized(assigned, released, n_suppressed, divisions, table)


def _keyed_meta(meta: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    return meta.assign(
        **{
            HKEY: pd.Series(dtype="uint64"),
            TIE: pd.Series(dtype="uint64"),
            SCODE: pd.Series(dtype="int64"),
        }
    )

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
from dpriv.anonymity.generalize import CARRIED, greedy_qi_groups
from dpriv.policy import ReleasePolicy
from dpriv.validate import ViewSummary, codes

HKEY, TIE, SCODE, LABEL = "_hkey", "_tie", "_s", "_label"
GROUP = "qi_group"


@dataclass
class Generalized:
    """Result of :func:`generalize_view`.

    ``assigned``: private frame of the kept tuples (id, QIs, ``_s`` sensitive code,
    ``_label`` int64 QI-group label, prior columns); ``released``: the public view V*
    (DESIGN.md "Released view"); ``n_suppressed``: tuples left out; ``divisions``: the
    Hilbert ranges used (pass them back to reproduce the release on another path).
    Both frames are pandas for a pandas input and Dask for a Dask input.
    """

    assigned: pd.DataFrame | dd.DataFrame
    released: pd.DataFrame | dd.DataFrame
    n_suppressed: int
    divisions: tuple | None


def hilbert_keys(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """uint64 Hilbert key of every row from the policy domains (stable across releases)."""
    bits = policy.bits()
    cols = []
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


def group_range(
    part: pd.DataFrame,
    policy: ReleasePolicy,
    view_counts: np.ndarray,
    carry: pd.DataFrame | None = None,
    last: bool = True,
) -> pd.DataFrame:
    """Greedy QI-groups over one Hilbert range; adds ``_label`` (int64, -1 = leftover).

    ``carry`` (the open tail of the previous range) is scanned first; unless ``last``, this
    range's own open tail is labelled -2 for the next range (see :func:`chain_step`).
    Labels are a seeded hash of the group's smallest tie-break key: partition-free and
    not in Hilbert order.
    """
    if HKEY not in part.columns:
        part = part.rename_axis(HKEY).reset_index()
    if carry is not None and len(carry):
        part = pd.concat([carry, part], ignore_index=True)
    part = part.sort_values([HKEY, TIE], kind="stable")
    group = greedy_qi_groups(
        part[SCODE].to_numpy(),
        part[policy.prior_columns].to_numpy(dtype=np.float64),
        view_counts,
        coords=unit_coords(part, policy),
        k=policy.k,
        t=policy.t,
        j=policy.j,
        ground=GROUNDS[policy.emd_ground],
        log_base=policy.log_base,
        cap=cap_for(policy),
        wait=wait_for(policy),
        reach=policy.attach_reach,
        carry_tail=not last,
    )
    label = group.copy()
    kept = group >= 0
    if kept.any():
        first_tie = pd.Series(part[TIE].to_numpy()[kept]).groupby(group[kept]).transform("min")
        label[kept] = (keyed(first_tie.to_numpy(np.uint64), policy.seed, "label") >> np.uint64(1)).astype(
            np.int64
        )
    return part.assign(**{LABEL: label})


def chain_step(part, carry, policy, view_counts, last):
    """One link of the chained scan: (grouped rows of this range, its open tail)."""
    out = group_range(part, policy, view_counts, carry, last)
    carried = out[LABEL] == CARRIED
    return out[~carried].reset_index(drop=True), out[carried].drop(columns=LABEL).reset_index(drop=True)


def cap_for(policy: ReleasePolicy) -> int:
    """Open-group cap of the greedy scan; policy.group_cap, else max(8k, 64) [proposed]."""
    return policy.group_cap or max(8 * policy.k, 64)


def wait_for(policy: ReleasePolicy) -> int:
    """Deferral window of the greedy scan (0 = off, the default: on Adult it cost suppression)."""
    return max(policy.defer_wait, 0)


def create_qig(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """CreateQIG (Algorithm 2, line 12) for the grouped rows of ``part``.

    Returns the released rows: ``qi_group``, ``<qi>_min``/``<qi>_max`` (true min/max of the
    group) per numeric QI, ``<qi>`` value set string ``{a,b}`` (domain order) per
    categorical QI, the sensitive column, and the private ``_order`` shuffle key.
    """
    by = part[LABEL]
    out = {GROUP: by.to_numpy()}
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            g = part.groupby(LABEL, sort=False)[q]
            out[f"{q}_min"] = g.transform("min").to_numpy()
            out[f"{q}_max"] = g.transform("max").to_numpy()
        else:
            out[q] = by.map(_value_sets(part, q, policy.domains[q])).to_numpy(dtype=object)
    out[policy.sensitive] = part[policy.sensitive].to_numpy()
    out["_order"] = keyed(stable_hash(part[policy.id]), policy.seed, "order")
    return pd.DataFrame(out)


def _value_sets(part: pd.DataFrame, q: str, domain: list) -> pd.Series:
    pairs = pd.DataFrame({LABEL: part[LABEL].to_numpy(), "c": codes(part[q], domain)}).drop_duplicates()
    pairs = pairs.sort_values([LABEL, "c"], kind="stable")
    names = np.asarray([str(v) for v in domain], dtype=object)[pairs["c"].to_numpy()]
    return pd.Series(names).groupby(pairs[LABEL].to_numpy()).agg(",".join).map("{{{}}}".format)


def released_meta(policy: ReleasePolicy, sensitive_dtype) -> pd.DataFrame:
    cols: dict = {GROUP: pd.Series(dtype="int64")}
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            cols[f"{q}_min"] = pd.Series(dtype="float64")
            cols[f"{q}_max"] = pd.Series(dtype="float64")
        else:
            cols[q] = pd.Series(dtype=object)
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


def generalize_view(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    summary: ViewSummary,
    *,
    npartitions: int | None = None,
    divisions: tuple | None = None,
) -> Generalized:
    """Generalize one validated view with priors in its ``p__<value>`` columns.

    Parameters
    ----------
    view : pandas or Dask DataFrame with the policy's id, QIs, sensitive column and
        ``policy.prior_columns`` (float64, rows sum to 1).
    summary : from :func:`dpriv.validate.validate_view` (size and sensitive counts).
    npartitions, divisions : Hilbert ranges; default the input's number of partitions (1
        for pandas). Same input + policy + divisions -> same output on both paths.
    """
    counts = summary.s_counts
    if isinstance(view, dd.DataFrame):
        keyed_view = view.map_partitions(add_keys, policy, meta=_keyed_meta(view._meta, policy))
        kw = {"divisions": divisions} if divisions else {"npartitions": npartitions or view.npartitions}
        ranges = keyed_view.set_index(HKEY, sort=True, **kw)
        meta = group_range(add_keys(view._meta, policy).set_index(HKEY), policy, counts)
        links, carry = [], None
        parts = ranges.to_delayed()
        for i, part in enumerate(parts):
            link = dask.delayed(chain_step, nout=2, pure=True)(
                part, carry, policy, counts, i == len(parts) - 1
            )
            links.append(link[0])
            carry = link[1]
        grouped = dd.from_delayed(links, meta=meta, verify_meta=False).persist()
        leftovers = grouped[grouped[LABEL] < 0].compute()
        divisions = ranges.divisions
    else:
        frame = add_keys(view, policy).sort_values([HKEY, TIE], kind="stable")
        divisions = divisions or pandas_divisions(frame[HKEY].to_numpy(), npartitions or 1)
        parts, carry = [], None
        ranges_ = _split(frame, divisions)
        for i, part in enumerate(ranges_):
            done, carry = chain_step(part, carry, policy, counts, i == len(ranges_) - 1)
            parts.append(done)
        grouped = pd.concat(parts, ignore_index=True)
        leftovers = grouped[grouped[LABEL] < 0]
    stitched = group_range(leftovers, policy, counts)
    n_suppressed = int((stitched[LABEL] < 0).sum())
    stitched = stitched[stitched[LABEL] >= 0]
    if isinstance(view, dd.DataFrame):
        kept = grouped[grouped[LABEL] >= 0]
        rmeta = released_meta(policy, view._meta[policy.sensitive].dtype)
        released = dd.concat(
            [
                kept.map_partitions(create_qig, policy, meta=rmeta),
                dd.from_pandas(create_qig(stitched, policy), npartitions=1),
            ]
        )
        assigned = dd.concat(
            [kept, dd.from_pandas(stitched.astype(kept._meta.dtypes.to_dict()), npartitions=1)]
        )
        # the shuffle key is uniform on uint64: fixed divisions, no quantile pass (a lazy
        # quantile pass would run inside the scheduler's graph materialisation and hang)
        even = tuple(int(x) for x in np.linspace(0, 2**64 - 1, released.npartitions + 1, dtype=np.float64))
        even = (0, *sorted({min(int(x), 2**64 - 1) for x in even[1:-1]}), 2**64 - 1)
        released = released.set_index("_order", divisions=even).reset_index(drop=True)
    else:
        kept = grouped[grouped[LABEL] >= 0]
        released = pd.concat([create_qig(kept, policy), create_qig(stitched, policy)], ignore_index=True)
        assigned = pd.concat([kept, stitched], ignore_index=True)
        released = released.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)
    known = divisions is not None and None not in divisions
    return Generalized(assigned, released, n_suppressed, tuple(int(d) for d in divisions) if known else None)


def _keyed_meta(meta: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    return meta.assign(
        **{
            HKEY: pd.Series(dtype="uint64"),
            TIE: pd.Series(dtype="uint64"),
            SCODE: pd.Series(dtype="int64"),
        }
    )

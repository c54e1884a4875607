"""The release loop (Algorithm 1) over a ledger: one view after another, resumable.

For view ``i``, on Dask (DESIGN.md "Data flow"; every step a named, timed, persisted step
of :class:`dpriv.steps.Steps`):

* ``rbk``: the view joined with the respondent state on the id (hash join), RBK^sv per
  partition (E7; first-timers get BK^sv) -- :func:`with_revised_priors`;
* ``keys``/``shuffle``/``grouping``/``repair``/``qig``: Generalize under (k, t, j) on Hilbert
  ranges (:func:`dpriv.anonymize.generalize_view`);
* ``regroup``/``verify``: the release and its membership hash-partitioned by QI-group and
  verified part by part by the independent verifier (a failing release is never written);
* ``pk``: PK^sv per QI-group (Ω-estimate, E14) and the new state (outer join on the id);
* ``metrics`` and, in the ledger, ``write``: streamed partition by partition; manifest last.

The respondent state is a Dask DataFrame keyed (hash-partitioned) by id holding, per
respondent, the last ``W`` posteriors (W = the order of BK^seq), their count and the release
and QI-group of the last one. A respondent who skips releases keeps her own state and is
revised when she reappears (§1.4 "Timing"); a suppressed respondent gets no posterior for
that release (Algorithm 1, note b). Only small things reach the client: per-part reports,
the repair's leftovers and group statistics, metrics.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._random import row_hashes
from dpriv.anonymity.verify import combine_reports, verify_release
from dpriv.anonymize import LABEL, SCODE, apply_qig, generalize_view, qig_table, secret_policy
from dpriv.api import public, release_metrics, require, resolve_policy
from dpriv.baselines import METHODS, baseline_view, verification_policy
from dpriv.errors import InputError, PolicyError
from dpriv.knowledge.posterior import omega_posterior
from dpriv.knowledge.revision import revise
from dpriv.knowledge.sequential import mine_sequences, single_class_map
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.steps import Steps
from dpriv.validate import ViewSummary, codes, missing_columns, validate_view


@dataclass
class DefenderKnowledge:
    """The defender's model of the adversary: BK^sv and BK^seq tables, or IE mining."""

    source: str
    tables: MarkovTables | None = None  # None for "ie": mined from the views released so far
    digest: str | None = None  # sha256 of the table file: a ledger keeps its knowledge

    @property
    def order(self) -> int:
        return self.tables.order if self.tables is not None else 3

    def at(self, history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, before: int) -> MarkovTables:
        """Tables to revise with before release ``before`` (IE: mined from views < before;
        the id, time and sensitive columns of those views are collected on the client)."""
        if self.tables is not None:
            return self.tables
        past = history.loc[history[policy.time] < before, [policy.id, policy.time, policy.sensitive]]
        if isinstance(past, dd.DataFrame):
            past = past.compute()
        frame = pd.DataFrame(
            {
                "respondent": past[policy.id].to_numpy(),
                "time": past[policy.time].to_numpy(),
                "s": codes(past[policy.sensitive], policy.sensitive_domain),
            }
        )
        values = [str(v) for v in policy.sensitive_domain]
        if frame.empty:  # nothing mined yet: uniform BK^sv and no sequential knowledge
            m = len(values)
            tabs = [np.full((1, 1, m), 1.0 / m)] + [np.zeros((1, m**L, m)) for L in range(1, self.order + 1)]
            return MarkovTables(tuple(values), single_class_map(), tabs)
        return mine_sequences(
            frame, values, order=self.order, id_col="respondent", time_col="time", s_col="s"
        )


def defender_knowledge(policy: ReleasePolicy) -> DefenderKnowledge:
    """From ``[knowledge]``: ``defender`` names an entry (a .npz table file) or ``"ie"``."""
    source = policy.knowledge.get("defender", "dk" if "dk" in policy.knowledge else "ie")
    if source == "ie":
        return DefenderKnowledge("ie")
    path = policy.knowledge_path(source)
    if path is None or not path.is_file():
        raise PolicyError(f"[knowledge] {source!r} must name an existing .npz table file, got {path}")
    tables = MarkovTables.load(path)
    if list(tables.values) != [str(v) for v in policy.sensitive_domain]:
        raise PolicyError(
            f"knowledge {path} is over {list(tables.values)[:5]}..., not the sensitive "
            f"domain {policy.sensitive_domain[:5]}..."
        )
    return DefenderKnowledge(source, tables, hashlib.sha256(path.read_bytes()).hexdigest())


STATE = ("n_post", "last_release", "last_group")


def _pk_columns(window: int, policy: ReleasePolicy) -> list[list[str]]:
    return [[f"pk{w}__{v}" for v in policy.sensitive_domain] for w in range(window)]


def _post_columns(policy: ReleasePolicy) -> list[str]:
    return [f"post__{v}" for v in policy.sensitive_domain]


def empty_state(policy: ReleasePolicy, window: int, id_dtype="int64") -> pd.DataFrame:
    """The respondent state before the first release: id (``id_dtype``, the history's),
    ``n_post`` (posteriors so far), ``last_release``, ``last_group`` (int64) and the last
    ``window`` posteriors ``pk<w>__<value>`` (float64, oldest first, NaN before the
    first), no rows."""
    cols = {policy.id: pd.Series(dtype=id_dtype), **{c: pd.Series(dtype="int64") for c in STATE}}
    for names in _pk_columns(window, policy):
        cols.update({c: pd.Series(dtype="float64") for c in names})
    return pd.DataFrame(cols)


def with_revised_priors(
    part: pd.DataFrame, tables: MarkovTables, policy: ReleasePolicy, window: int
) -> pd.DataFrame:
    """View rows left-joined with their state rows -> the view rows with RBK^sv in the
    ``p__<value>`` columns (E7; BK^sv for first-timers, whose state columns are NaN).
    Row-wise, so it runs per Dask partition."""
    pk = sum(_pk_columns(window, policy), [])
    m = len(policy.sensitive_domain)
    lengths = part["n_post"].fillna(0).to_numpy(dtype=np.int64)
    hist = np.nan_to_num(part[pk].to_numpy(dtype=float).reshape(len(part), window, m), nan=1.0 / m)
    cls = tables.classes.classify(part)
    rbk = revise(hist, lengths, cls, tables, tables.tables[0][cls, 0])
    out = part.drop(columns=[*STATE, *pk, *[c for c in policy.prior_columns if c in part.columns]])
    return out.assign(**{c: rbk[:, i] for i, c in enumerate(policy.prior_columns)})


def revised_priors(
    view: pd.DataFrame, state: pd.DataFrame, tables: MarkovTables, policy: ReleasePolicy, window: int
) -> np.ndarray:
    """RBK^sv (n, M) of the respondents of ``view``, in its row order (pandas)."""
    joined = view.drop(columns=[c for c in view.columns if c in state.columns and c != policy.id])
    joined = joined.merge(state, on=policy.id, how="left")
    return with_revised_priors(joined, tables, policy, window)[policy.prior_columns].to_numpy()


def posterior_table(
    ids: np.ndarray, labels: np.ndarray, posteriors: np.ndarray, policy: ReleasePolicy
) -> pd.DataFrame:
    """Respondent id, ``_label`` (int64) and posterior ``post__<value>`` (float64) columns."""
    # nullable: an outer join with the state must not turn the 63-bit labels into float64
    out = pd.DataFrame({policy.id: ids, LABEL: pd.array(np.asarray(labels, dtype=np.int64), dtype="Int64")})
    return out.assign(**{c: posteriors[:, i] for i, c in enumerate(_post_columns(policy))})


def group_posteriors(assigned: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """PK^sv (Ω-estimate, E14) of the tuples of ``assigned``, which holds whole QI-groups."""
    # a canonical row order: the group sums, hence the last bits, do not depend on the shuffle
    assigned = assigned.sort_values([LABEL, policy.id], kind="stable")
    post = omega_posterior(
        assigned[LABEL].to_numpy(),
        assigned[SCODE].to_numpy(),
        assigned[policy.prior_columns].to_numpy(dtype=float),
    )
    return posterior_table(assigned[policy.id].to_numpy(), assigned[LABEL].to_numpy(), post, policy)


def advance_state(merged: pd.DataFrame, policy: ReleasePolicy, window: int, index: int) -> pd.DataFrame:
    """State rows outer-joined with the posteriors of release ``index`` -> the new state:
    a respondent with a posterior shifts her window and appends it; the others (away, or
    suppressed) keep their row (§1.4 "Timing"). Sorted by id; runs per Dask partition."""
    has = merged[LABEL].notna().to_numpy()
    cols = _pk_columns(window, policy)

    def ints(col: str) -> np.ndarray:  # nullable Int64 in (see nullable_state), int64 out
        return merged[col].fillna(0).to_numpy(dtype=np.int64)

    out = pd.DataFrame({policy.id: merged[policy.id].to_numpy()})
    out["n_post"] = ints("n_post") + has
    out["last_release"] = np.where(has, index, ints("last_release"))
    out["last_group"] = np.where(has, ints(LABEL), ints("last_group"))
    for w in range(window):
        nxt = cols[w + 1] if w + 1 < window else _post_columns(policy)
        for old, new in zip(cols[w], nxt):
            out[old] = np.where(has, merged[new].to_numpy(dtype=float), merged[old].to_numpy(dtype=float))
    return out.sort_values(policy.id, kind="stable").reset_index(drop=True)


def update_state(
    state: pd.DataFrame,
    assigned: pd.DataFrame,
    posteriors: np.ndarray,
    policy: ReleasePolicy,
    window: int,
    index: int,
) -> pd.DataFrame:
    """Shift each kept respondent's window and append her posterior at release ``index``."""
    post = posterior_table(assigned[policy.id].to_numpy(), assigned[LABEL].to_numpy(), posteriors, policy)
    return advance_state(nullable_state(state).merge(post, on=policy.id, how="outer"), policy, window, index)


def nullable_state(state: pd.DataFrame | dd.DataFrame) -> pd.DataFrame | dd.DataFrame:
    """The state with nullable Int64 counters and labels, ready for an outer join."""
    return state.astype(dict.fromkeys(STATE, "Int64"))


def check_qi_groups(
    assigned: pd.DataFrame, table: pd.DataFrame, policy: ReleasePolicy, promised: ReleasePolicy,
    view_counts: np.ndarray,
) -> dict:
    """Independent verification of a part of a release that holds whole QI-groups: their
    released rows (CreateQIG of ``assigned`` by ``table``) against their private membership.
    The report, the part's sensitive counts and the order-free digest of its released rows."""
    released = public(apply_qig(assigned, table, policy))
    report = verify_release(released, promised, view_counts=view_counts, assigned=assigned)
    counts = np.bincount(
        codes(released[promised.sensitive], promised.sensitive_domain).clip(0),
        minlength=len(promised.sensitive_domain),
    )
    return {**report.to_dict(), "s_counts": counts, "digest": rows_digest(released)}


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


def verify_parts(
    released: dd.DataFrame,
    by_group: dd.DataFrame,
    table: pd.DataFrame,
    policy: ReleasePolicy,
    promised: ReleasePolicy,
    summary: ViewSummary,
) -> dict:
    """Verify a release part by part (``by_group``: its membership hash-partitioned by
    QI-group) and check that ``released`` holds exactly the verified rows (digest).
    Returns the combined report (:func:`dpriv.anonymity.verify.combine_reports`)."""
    table_node = dask.delayed(table)
    checks = [
        dask.delayed(check_qi_groups)(part, table_node, policy, promised, summary.s_counts)
        for part in by_group.to_delayed()
    ]
    written = [dask.delayed(rows_digest)(part) for part in released.to_delayed()]
    reports, written = dask.compute(checks, written)
    report = combine_reports(
        reports, sum(r.pop("s_counts") for r in reports), summary.s_counts, policy.sensitive_domain
    )
    if sum(r.pop("digest") for r in reports) % 2**64 != sum(written) % 2**64:
        report["ok"] = False
        report["problems"].append("the released rows are not the verified rows (digest differs)")
    return report


def check_history(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy) -> list[int]:
    """The release indices 1..n of a history; refuses gaps and a missing time column."""
    if not policy.time:
        raise PolicyError('a history needs a time column: set [columns] time (e.g. "view")')
    missing_columns(history.columns, policy)
    if policy.time not in history.columns:
        raise InputError(f"missing time column {policy.time!r}; the input has {list(history.columns)}")
    t = history[policy.time]
    bad_type = not pd.api.types.is_integer_dtype(t.dtype)
    if isinstance(t, dd.Series):
        has_nan, idx = dask.compute(t.isna().any(), t.drop_duplicates())
    else:
        has_nan, idx = t.isna().any(), t.drop_duplicates()
    if has_nan or bad_type:
        raise InputError(
            f"time column {policy.time!r} must hold release indices 1, 2, ... (integers, no NaN)"
        )
    idx = sorted(int(i) for i in idx)
    if idx != list(range(1, len(idx) + 1)):
        raise InputError(
            f"time column {policy.time!r} must hold consecutive release indices 1..n; "
            f"found {idx[:10]}: renumber the views"
        )
    return idx


def _view(history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, i: int) -> pd.DataFrame | dd.DataFrame:
    view = history[history[policy.time] == i]
    return view if isinstance(view, dd.DataFrame) else view.reset_index(drop=True)


def release_history(
    history: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    ledger_dir: str | Path,
    *,
    npartitions: int | None = None,
    until: int | None = None,
    on_release: Callable[[int, dict], None] | None = None,
    method: str = "jsreduce",
) -> Ledger:
    """Release every view of ``history`` not yet committed in the ledger, in order.

    Parameters
    ----------
    history : pandas or Dask DataFrame with the policy's id, time (1-based release index),
        QIs and sensitive column; at most one tuple per respondent per view. A Dask history
        (e.g. ``dd.read_parquet``) is never collected on the client: each view is a filter
        of it (pushed down to the Parquet reader), the respondent state is a Dask DataFrame
        keyed by id, and the release is verified, measured and written partition by partition.
    policy : the release policy; a ledger refuses a policy other than its first one.
    npartitions : Hilbert ranges per view (Dask partitions); default policy.npartitions or 2.
    until : release at most up to this index.
    on_release : called with (index, metrics) after each commit (progress output).
    method : "jsreduce" (Algorithm 1) or a Mondrian baseline of :mod:`dpriv.baselines`
        ("mondrian-l", "mondrian-t", "mondrian-bt"; these run on the client); the
        defender's PK/RBK cycle and the ledger are the same for all, so ``dpriv attack``
        works on every method.

    Raises
    ------
    InputError, PolicyError, LedgerError, VerificationError; the ledger stays at its last
    committed release in every case.
    """
    if method not in METHODS:
        raise PolicyError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    indices = check_history(history, policy)
    policy, _ = resolve_policy(history, policy)
    indices = indices[: until or None]
    summaries = {}
    for i in indices:  # every view before the first commit: bad input writes nothing
        try:
            summaries[i] = validate_view(_view(history, policy, i), policy)
        except (InputError, PolicyError) as exc:
            raise type(exc)(f"{policy.time} = {i}: {exc}") from None
    ledger = Ledger(ledger_dir, create=True)
    knowledge = defender_knowledge(policy)
    ledger.check_policy({**policy.fingerprint(), "method": method, "knowledge_sha256": knowledge.digest})
    window = knowledge.order
    committed = {r["index"]: r for r in ledger.committed()}
    id_dtype = (history._meta if isinstance(history, dd.DataFrame) else history)[policy.id].dtype
    state = ledger.read_state_dask(max(committed)) if committed else empty_state(policy, window, id_dtype)
    nparts = npartitions or policy.npartitions or 2
    for i in indices:
        view = _view(history, policy, i)
        digest = summaries[i].input_sha
        if i in committed:
            if committed[i]["input_sha"] != digest:
                raise InputError(
                    f"view {i} differs from the one committed in the ledger; a committed "
                    "release cannot change: start a new ledger or restore the input"
                )
            continue
        if not isinstance(view, dd.DataFrame):
            view = dd.from_pandas(view, npartitions=nparts, sort=False)
        metrics, released, state = release_view(
            view, summaries[i], policy, state, knowledge.at(history, policy, i), window, i, nparts, method
        )
        ledger.commit(i, released, metrics, state, {"input_sha": digest})
        if on_release:
            on_release(i, metrics)
    return ledger


def _join_state(part: pd.DataFrame, state: pd.DataFrame, column: str) -> pd.DataFrame:
    return part.merge(state, on=column, how="left")


def _sorted_by(part: pd.DataFrame, column: str) -> pd.DataFrame:
    return part.sort_values(column, kind="stable")


def release_view(
    view: dd.DataFrame,
    summary: ViewSummary,
    policy: ReleasePolicy,
    state: pd.DataFrame | dd.DataFrame,
    tables: MarkovTables,
    window: int,
    index: int,
    npartitions: int,
    method: str = "jsreduce",
) -> tuple[dict, dd.DataFrame, dd.DataFrame]:
    """One step of Algorithm 1 (lines 6-10) on Dask; nothing is written here.

    RBK per partition of the view joined with the state on the id -> Generalize -> the
    release and its membership regrouped by QI-group (hash shuffle), verified part by part
    (a failing release raises) -> Ω posteriors per part -> the new state (outer join on
    the id, per partition). Returns the metrics (with ``seconds`` per step), the released
    view (persisted, rows in ``_order`` order, the private ``_order`` column still on) and
    the new state (persisted). Only per-part reports and metrics reach the client.
    """
    steps = Steps()
    # hash join into a fixed number of partitions, rows sorted by id: each respondent's RBK
    # is computed in the same batch whether the state came from memory or the ledger
    if isinstance(state, pd.DataFrame) and state.empty:  # a first release: BK^sv, row by row
        joined = view.map_partitions(_join_state, state, policy.id)
    else:
        joined = view.merge(state, on=policy.id, how="left", npartitions=npartitions, broadcast=False)
        joined = joined.shuffle(policy.id, npartitions=npartitions).map_partitions(_sorted_by, policy.id)
    meta = with_revised_priors(joined._meta, tables, policy, window)
    (frame,) = steps.run("rbk", joined.map_partitions(with_revised_priors, tables, policy, window, meta=meta))
    if method == "jsreduce":
        result = generalize_view(frame, policy, summary, npartitions=npartitions, steps=steps)
        released, assigned, table = result.released, result.assigned, result.table
    else:  # the Mondrian baselines are in-memory (client) algorithms
        result = baseline_view(frame.compute().reset_index(drop=True), secret_policy(policy, summary), method)
        table = qig_table(result.assigned, policy)
        released = dd.from_pandas(result.released, npartitions=1, sort=False)
        assigned = dd.from_pandas(result.assigned, npartitions=1, sort=False)
        steps.lap("grouping")
    del frame
    (asg_g,) = steps.run("regroup", assigned.shuffle(LABEL, npartitions=max(released.npartitions, 1)))
    del assigned
    report = verify_parts(released, asg_g, table, policy, verification_policy(policy, method), summary)
    require(report, policy, summary.n_rows, result.n_suppressed, f"release {index}")
    steps.lap("verify")
    posts = asg_g.map_partitions(group_posteriors, policy, meta=group_posteriors(asg_g._meta, policy))
    # a hash join into a fixed number of partitions: the state's bytes do not depend on
    # whether the previous state came from memory or from the ledger (resume)
    if not isinstance(state, dd.DataFrame):
        state = dd.from_pandas(state, npartitions=1, sort=False)
    merged = nullable_state(state).merge(posts, on=policy.id, how="outer", npartitions=npartitions)
    meta = empty_state(policy, window, state._meta[policy.id].dtype)
    new_state = merged.map_partitions(advance_state, policy, window, index, meta=meta)
    (new_state,) = steps.run("pk", new_state)
    checked = {
        **report,
        **release_metrics(released, view, policy, summary.n_rows, result.n_suppressed),
    }
    steps.lap("metrics")
    metrics = {"release": index, **checked, "seconds": steps.seconds}
    return metrics, released, new_state

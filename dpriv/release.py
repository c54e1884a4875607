"""The release loop (Algorithm 1) over a ledger: one view after another, resumable.

For view ``i``: RBK^sv of its respondents from their last posteriors and BK^seq (E7;
first-timers get BK^sv) -> Generalize under (k, t, j) on Dask ranges -> independent
verification (a failing release is never written) -> PK^sv per QI-group (Ω-estimate,
E14) -> commit view, metrics and respondent state, manifest last.

The respondent state holds, per respondent, the last ``W`` posteriors (W = the order of
BK^seq), their count and the release of the last one. A respondent who skips releases
keeps her own state and is revised when she reappears (§1.4 "Timing"); a suppressed
respondent gets no posterior for that release (Algorithm 1, note b).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv.anonymize import LABEL, SCODE, generalize_view
from dpriv.api import checked_metrics, resolve_policy
from dpriv.baselines import METHODS, baseline_view, verification_policy
from dpriv.errors import InputError, PolicyError
from dpriv.knowledge.posterior import omega_posterior
from dpriv.knowledge.revision import revise
from dpriv.knowledge.sequential import mine_sequences, single_class_map
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.validate import ViewSummary, codes, missing_columns, validate_view


@dataclass
class DefenderKnowledge:
    """The defender's model of the adversary: BK^sv and BK^seq tables, or IE mining."""

    source: str
    tables: MarkovTables | None = None  # None for "ie": mined from the views released so far

    @property
    def order(self) -> int:
        return self.tables.order if self.tables is not None else 3

    def at(self, history: pd.DataFrame, policy: ReleasePolicy, before: int) -> MarkovTables:
        """Tables to revise with before release ``before`` (IE: mined from views < before)."""
        if self.tables is not None:
            return self.tables
        past = history[history[policy.time] < before]
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
    return DefenderKnowledge(source, tables)


def view_hash(view: pd.DataFrame, policy: ReleasePolicy) -> str:
    """Order-free fingerprint of a view's policy columns (a re-run must bring the same input)."""
    cols = [policy.id, *policy.qi, policy.sensitive]
    canon = view[cols].sort_values(policy.id, kind="stable").reset_index(drop=True)
    return format(int(pd.util.hash_pandas_object(canon.astype(str), index=False).sum()), "016x")


def _pk_columns(window: int, policy: ReleasePolicy) -> list[list[str]]:
    return [[f"pk{w}__{v}" for v in policy.sensitive_domain] for w in range(window)]


def empty_state(policy: ReleasePolicy, window: int) -> pd.DataFrame:
    cols = {
        policy.id: pd.Series(dtype="int64"),
        "n_post": pd.Series(dtype="int64"),
        "last_release": pd.Series(dtype="int64"),
        "last_group": pd.Series(dtype="int64"),
    }
    for names in _pk_columns(window, policy):
        cols.update({c: pd.Series(dtype="float64") for c in names})
    return pd.DataFrame(cols)


def revised_priors(
    view: pd.DataFrame, state: pd.DataFrame, tables: MarkovTables, policy: ReleasePolicy, window: int
) -> np.ndarray:
    """RBK^sv (n, M) of the respondents of ``view`` (E7; BK^sv for first-timers)."""
    joined = view[[policy.id]].merge(state, on=policy.id, how="left")
    lengths = joined["n_post"].fillna(0).to_numpy(dtype=np.int64)
    m = len(policy.sensitive_domain)
    hist = np.stack([joined[c].to_numpy(dtype=float) for c in sum(_pk_columns(window, policy), [])], 1)
    hist = np.nan_to_num(hist.reshape(len(view), window, m), nan=1.0 / m)
    cls = tables.classes.classify(view)
    fallback = tables.tables[0][cls, 0]
    return revise(hist, lengths, cls, tables, fallback)


def update_state(
    state: pd.DataFrame,
    assigned: pd.DataFrame,
    posteriors: np.ndarray,
    policy: ReleasePolicy,
    window: int,
    index: int,
) -> pd.DataFrame:
    """Shift each kept respondent's window and append her posterior at release ``index``."""
    ids = assigned[policy.id].to_numpy()
    old = state.set_index(policy.id).reindex(ids)
    cols = _pk_columns(window, policy)
    new = pd.DataFrame(
        {
            policy.id: ids,
            "n_post": old["n_post"].fillna(0).to_numpy(dtype=np.int64) + 1,
            "last_release": index,
            "last_group": assigned[LABEL].to_numpy(dtype=np.int64),
        }
    )
    for w in range(window - 1):
        new[cols[w]] = old[cols[w + 1]].to_numpy()
    new[cols[-1]] = posteriors
    kept_old = state[~state[policy.id].isin(ids)]
    out = pd.concat([kept_old, new], ignore_index=True) if len(kept_old) else new
    return out.sort_values(policy.id, kind="stable").reset_index(drop=True)


def check_history(history: pd.DataFrame, policy: ReleasePolicy) -> list[int]:
    """The release indices 1..n of a history; refuses gaps and a missing time column."""
    if not policy.time:
        raise PolicyError('a history needs a time column: set [columns] time (e.g. "view")')
    missing_columns(history.columns, policy)
    if policy.time not in history.columns:
        raise InputError(f"missing time column {policy.time!r}; the input has {list(history.columns)}")
    t = history[policy.time]
    if t.isna().any() or not pd.api.types.is_integer_dtype(t):
        raise InputError(
            f"time column {policy.time!r} must hold release indices 1, 2, ... (integers, no NaN)"
        )
    idx = sorted(t.unique().tolist())
    if idx != list(range(1, len(idx) + 1)):
        raise InputError(
            f"time column {policy.time!r} must hold consecutive release indices 1..n; "
            f"found {idx[:10]}: renumber the views"
        )
    return idx


def release_history(
    history: pd.DataFrame,
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
    history : pandas DataFrame with the policy's id, time (1-based release index), QIs and
        sensitive column; at most one tuple per respondent per view.
    policy : the release policy; a ledger refuses a policy other than its first one.
    npartitions : Hilbert ranges per view (Dask partitions); default policy.npartitions or 2.
    until : release at most up to this index.
    on_release : called with (index, metrics) after each commit (progress output).
    method : "jsreduce" (Algorithm 1) or a Mondrian baseline of :mod:`dpriv.baselines`
        ("mondrian-l", "mondrian-t", "mondrian-bt"); the defender's PK/RBK cycle and the
        ledger are the same for all, so ``dpriv attack`` works on every method.

    Raises
    ------
    InputError, PolicyError, LedgerError, VerificationError; the ledger stays at its last
    committed release in every case.
    """
    if method not in METHODS:
        raise PolicyError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    indices = check_history(history, policy)
    policy, _ = resolve_policy(history, policy)
    views = {i: history[history[policy.time] == i].reset_index(drop=True) for i in indices[: until or None]}
    summaries = {}
    for i, view in views.items():  # every view before the first commit: bad input writes nothing
        try:
            summaries[i] = validate_view(view, policy)
        except (InputError, PolicyError) as exc:
            raise type(exc)(f"{policy.time} = {i}: {exc}") from None
    ledger = Ledger(ledger_dir, create=True)
    ledger.check_policy({**policy.fingerprint(), "method": method})
    knowledge = defender_knowledge(policy)
    window = knowledge.order
    committed = {r["index"]: r for r in ledger.committed()}
    state = ledger.read_state(max(committed)) if committed else empty_state(policy, window)
    nparts = npartitions or policy.npartitions or 2
    for i, view in views.items():
        digest = view_hash(view, policy)
        if i in committed:
            if committed[i]["input_sha"] != digest:
                raise InputError(
                    f"view {i} differs from the one committed in the ledger; a committed "
                    "release cannot change: start a new ledger or restore the input"
                )
            continue
        metrics, state_i = release_view(
            view, summaries[i], policy, state, knowledge.at(history, policy, i), window, i, nparts, method
        )
        ledger.commit(i, metrics.pop("_released"), metrics, state_i, {"input_sha": digest})
        state = state_i
        if on_release:
            on_release(i, metrics)
    return ledger


def release_view(
    view: pd.DataFrame,
    summary: ViewSummary,
    policy: ReleasePolicy,
    state: pd.DataFrame,
    tables: MarkovTables,
    window: int,
    index: int,
    npartitions: int,
    method: str = "jsreduce",
) -> tuple[dict, pd.DataFrame]:
    """One step of Algorithm 1 (lines 6-10); returns the metrics (with the released view
    under ``"_released"``) and the new respondent state. Nothing is written here."""
    timings, tick = {}, time.perf_counter()

    def lap(name: str) -> None:
        nonlocal tick
        now = time.perf_counter()
        timings[name] = round(now - tick, 4)
        tick = now

    rbk = revised_priors(view, state, tables, policy, window)
    frame = view.assign(**{c: rbk[:, i] for i, c in enumerate(policy.prior_columns)})
    lap("revision")
    if method == "jsreduce":
        result = generalize_view(dd.from_pandas(frame, npartitions=npartitions, sort=False), policy, summary)
        released, assigned = dask.compute(result.released, result.assigned)
    else:
        result = baseline_view(frame, policy, method)
        released, assigned = result.released, result.assigned
    lap("generalize")
    checked = checked_metrics(
        released,
        assigned,
        view,
        policy,
        summary,
        result.n_suppressed,
        promised=verification_policy(policy, method),
        where=f"release {index}",
    )
    lap("verify")
    posteriors = omega_posterior(
        assigned[LABEL].to_numpy(),
        assigned[SCODE].to_numpy(),
        assigned[policy.prior_columns].to_numpy(dtype=float),
    )
    new_state = update_state(state, assigned, posteriors, policy, window, index)
    lap("posterior")
    metrics = {"release": index, **checked, "seconds": timings, "_released": released.reset_index(drop=True)}
    return metrics, new_state

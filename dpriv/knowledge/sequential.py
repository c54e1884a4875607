"""Sequential background knowledge BK^seq (ALGORITHMS.md §1.2, §2.3).

Every source is exposed through :class:`SequentialKnowledge` and can be turned into the
shared :class:`~dpriv.knowledge.tables.MarkovTables` format, on which the revision (E7)
always works:

* :class:`TableKnowledge` -- fixed tables: DK-BK^seq from domain knowledge (a saved
  ``.npz``), its n-step truncation, or SPM-BK^seq mined from an external corpus;
* :func:`mine_sequences` -- Algorithm 3 (IE/SPM frequency counting) on a whole history;
* :class:`IEMiner` -- Algorithm 3 incrementally, one original view at a time (IE-BK^seq).

Mined tables (Algorithm 3, [derived]): ``cnt[c, λ, s]`` counts, per knowledge class ``c``
of the tuple, how often value ``s`` followed the context ``λ`` = the respondent's last
``L`` observed values (``L = 0..order``; ``L = 0`` is the empty context, i.e. every tuple).
Row ``[c, λ]`` of ``tables[L]`` is ``(cnt + α) / (Σ cnt + α M)`` when ``Σ cnt >= μ``,
otherwise the row of the context without its oldest value (back-off), down to the empty
context (the marginal of S in the class). If even the empty context is below ``μ`` (a
class without data) the row is all zero, so :func:`~dpriv.knowledge.revision.revise`
falls back to BK^sv, as Algorithm 3's ``return BK_sv(r)``.

Terminal values (e.g. *deceased*): a context that contains a terminal value cannot be
followed by anything, so its row is set to zero (forbidden, FINDINGS.md pitfall 1) instead
of backing off. ``terminal`` is a list of value codes, ``None`` (no terminal handling) or
``"auto"``: values observed at least ``max(μ, 1)`` times and never followed by a value
(caveat: in a short history a rare value seen only in the last view also qualifies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap, MarkovTables, SequentialKnowledge, single_class_map

TerminalSpec = Sequence[int] | str | None


@dataclass(frozen=True)
class MiningParams:
    """The parameters of Algorithm 3, shared by :func:`mine_sequences` and :class:`IEMiner`.

    ``order`` (int, largest context length n), ``mu`` (minimum support), ``alpha`` (additive
    smoothing), ``terminal`` (list of int codes, ``"auto"`` or None), the column names
    ``id_col``, ``time_col`` (None: :class:`IEMiner` trusts the call order), ``s_col`` and
    ``class_col`` (None: one class), and ``classes`` (:class:`ClassMap`; None: one class).
    """

    order: int = 3
    mu: float = 1
    alpha: float = 0.0
    terminal: TerminalSpec = None
    id_col: str = "respondent_id"
    time_col: str | None = "view"
    s_col: str = "s"
    class_col: str | None = None
    classes: ClassMap | None = None

    @classmethod
    def of(cls, params: MiningParams | None, fields: dict) -> MiningParams:
        """``params``, or a new one from keyword ``fields`` (not both)."""
        if params is not None and fields:
            raise InputError(f"give MiningParams or keyword parameters, not both (got {sorted(fields)})")
        return params if params is not None else cls(**fields)

    def class_map(self) -> ClassMap:
        return self.classes if self.classes is not None else single_class_map()


# --------------------------------------------------------------------------- helpers


def _check_params(values: Sequence[str], order: int, mu: float, alpha: float) -> int:
    m = len(values)
    if m < 1:
        raise InputError("the sensitive domain `values` must hold at least one value")
    if int(order) != order or order < 0:
        raise InputError(f"order must be an integer >= 0, got {order!r}")
    if mu < 0 or not np.isfinite(mu):
        raise InputError(f"minimum support mu must be a finite number >= 0, got {mu!r}")
    if alpha < 0 or not np.isfinite(alpha):
        raise InputError(f"smoothing alpha must be a finite number >= 0, got {alpha!r}")
    if m ** (order + 1) > 50_000_000:
        raise InputError(
            f"an order-{order} table over {m} values has {m ** (order + 1)} entries per class; "
            "lower the order"
        )
    return m


def _codes(series: pd.Series, m: int, what: str) -> np.ndarray:
    if series.isna().any():
        raise InputError(f"column {what!r} has missing values; drop or impute them first")
    arr = series.to_numpy()
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InputError(
                f"column {what!r} must hold integer codes (dtype {arr.dtype}); encode the "
                "values in the policy's domain order first"
            )
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= m):
        raise InputError(f"column {what!r} has codes outside 0..{m - 1}: [{arr.min()}, {arr.max()}]")
    return arr


def _count(counts: list[np.ndarray], cls: np.ndarray, ctx: np.ndarray, s: np.ndarray, m: int) -> None:
    """Add one observation per row: value ``s`` after each suffix of ``ctx`` (n, order),
    oldest first, -1 = no value, into ``counts[L]`` (n_classes, M**L, M) int64."""
    n_classes = counts[0].shape[0]
    order = ctx.shape[1]
    avail = (ctx >= 0)[:, ::-1].cumprod(axis=1).sum(axis=1) if order else np.zeros(len(s), int)
    for L in range(len(counts)):
        rows = avail >= L
        if not rows.any():
            continue
        code = np.zeros(int(rows.sum()), dtype=np.int64)
        for v in ctx[rows][:, order - L :].T if L else ():
            code = code * m + v
        flat = (cls[rows] * m**L + code) * m + s[rows]
        counts[L] += np.bincount(flat, minlength=n_classes * m**L * m).reshape(counts[L].shape)


def _resolve_terminal(terminal: TerminalSpec, counts: list[np.ndarray], mu: float) -> np.ndarray:
    m = counts[0].shape[2]
    if terminal is None:
        return np.zeros(m, dtype=bool)
    if isinstance(terminal, str):
        if terminal != "auto":
            raise InputError(f"terminal must be a list of codes, None or 'auto', got {terminal!r}")
        if len(counts) < 2:
            return np.zeros(m, dtype=bool)
        seen = counts[0].sum(axis=(0, 1))  # occurrences of each value
        followed = counts[1].sum(axis=(0, 2))  # (M,) times each value was followed
        return (seen >= max(mu, 1)) & (followed == 0)
    codes = np.asarray(list(terminal), dtype=np.int64)
    if codes.size and (codes.min() < 0 or codes.max() >= m):
        raise InputError(f"terminal codes must lie in 0..{m - 1}, got {codes.tolist()}")
    mask = np.zeros(m, dtype=bool)
    mask[codes] = True
    return mask


def tables_from_counts(
    counts: Sequence[np.ndarray],
    values: Sequence[str],
    classes: ClassMap,
    mu: float = 1,
    alpha: float = 0.0,
    terminal: TerminalSpec = None,
) -> MarkovTables:
    """Back-off tables from context counts (Algorithm 3's Query for every context).

    Parameters
    ----------
    counts : sequence of ndarray
        ``counts[L]`` of shape (n_classes, M**L, M), non-negative, L = 0..order.
    values : sequence of str
        The sensitive domain, in policy order (length M).
    classes : ClassMap
        Class map of the counts' first axis.
    mu, alpha, terminal
        Minimum support, additive smoothing and terminal values (module doc).

    Returns
    -------
    MarkovTables
        Rows are distributions, or all zero (forbidden / no data).
    """
    m = len(values)
    tables: list[np.ndarray] = []
    for L, cnt in enumerate(counts):
        cnt = np.asarray(cnt, dtype=np.float64)
        tot = cnt.sum(axis=2, keepdims=True)
        ok = (tot >= mu) & (tot + alpha * m > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            own = (cnt + alpha) / (tot + alpha * m)
        if L == 0:
            tab = np.where(ok, own, 0.0)
        else:
            suffix = np.arange(m**L) % m ** (L - 1)  # drop the oldest value
            tab = np.where(ok, own, tables[L - 1][:, suffix, :])
        tables.append(tab)
    term = _resolve_terminal(terminal, list(counts), mu)
    if term.any():
        for L in range(1, len(tables)):
            digits = (np.arange(m**L)[:, None] // m ** np.arange(L)[None, :]) % m
            forbidden = term[digits].any(axis=1)
            tables[L][:, forbidden, :] = 0.0
    return MarkovTables(tuple(values), classes, tables)


def _frame_columns(frame: pd.DataFrame, cols: dict[str, str | None]) -> None:
    missing = [c for c in cols.values() if c is not None and c not in frame.columns]
    if missing:
        raise InputError(f"columns {missing} not found; available: {list(frame.columns)}")


def _class_codes(frame, class_col, classes: ClassMap) -> np.ndarray:
    if class_col is None:
        if classes.n_classes != 1:
            raise InputError(
                f"the class map has {classes.n_classes} classes: give class_col (int class "
                "codes, e.g. from ClassMap.classify) for per-class mining"
            )
        return np.zeros(len(frame), dtype=np.int64)
    return _codes(frame[class_col], classes.n_classes, class_col)


# --------------------------------------------------------------------------- batch mining


def mine_sequences(
    sequences: pd.DataFrame,
    values: Sequence[str],
    params: MiningParams | None = None,
    **fields,
) -> MarkovTables:
    """Algorithm 3 (IE/SPM-BK^seq) on a whole history, by vectorised frequency counting.

    Parameters
    ----------
    sequences : pandas.DataFrame
        One row per observation: ``id_col`` (respondent), ``time_col`` (release index,
        sortable, unique per respondent), ``s_col`` (int sensitive code ``0..M-1``) and,
        for per-class mining, ``class_col`` (int class code ``0..n_classes-1``). A
        respondent's context is her previous observations in time order, gaps ignored.
    values : sequence of str
        The sensitive domain in policy order (M values).
    params : MiningParams, optional
        All of the following at once; or give them as keyword ``fields``:
    order : int, default 3
        Largest context length n (tables of orders 0..n).
    mu : float, default 1
        Minimum support: a context seen fewer times backs off to a shorter one.
    alpha : float, default 0
        Additive smoothing: ``(cnt + α) / (Σ cnt + α M)``.
    terminal : list of int, "auto" or None, default None
        Terminal values; contexts containing one get zero (forbidden) rows.
    classes : ClassMap, optional
        Class map of ``class_col``; default :func:`single_class_map` (one class).

    Returns
    -------
    MarkovTables
        ``tables[L]`` (n_classes, M**L, M) float64 with back-off filled in.

    Raises
    ------
    InputError
        Missing columns, missing values, codes out of range, duplicate (id, time) rows,
        or bad parameters (``time_col`` None).
    """
    p = MiningParams.of(params, fields)
    order, id_col, time_col, s_col, class_col = p.order, p.id_col, p.time_col, p.s_col, p.class_col
    m = _check_params(values, order, p.mu, p.alpha)
    classes = p.class_map()
    if time_col is None:
        raise InputError("mine_sequences needs a time_col to order each respondent's observations")
    _frame_columns(sequences, {"id": id_col, "time": time_col, "s": s_col, "cls": class_col})
    counts = [np.zeros((classes.n_classes, m**L, m), dtype=np.int64) for L in range(order + 1)]
    if len(sequences):
        df = sequences[[c for c in (id_col, time_col, s_col, class_col) if c is not None]]
        dup = df.duplicated([id_col, time_col])
        if dup.any():
            row = df[dup].iloc[0]
            raise InputError(
                f"respondent {row[id_col]!r} has two observations at {time_col}={row[time_col]!r};"
                " keep at most one tuple per respondent per view"
            )
        df = df.sort_values([id_col, time_col], kind="stable")
        s = _codes(df[s_col], m, s_col)
        cls = _class_codes(df, class_col, classes)
        # context: previous `order` values of the same respondent, oldest first, -1 = none
        pos = np.arange(len(df))
        first = df.groupby(id_col, sort=False).cumcount().to_numpy()  # rank in the sequence
        ctx = np.full((len(df), order), -1, dtype=np.int64)
        for back in range(1, order + 1):
            has = first >= back
            ctx[has, order - back] = s[pos[has] - back]
        _count(counts, cls, ctx, s, m)
    return tables_from_counts(counts, values, classes, p.mu, p.alpha, p.terminal)


# --------------------------------------------------------------------------- incremental


class IEMiner(SequentialKnowledge):
    """Algorithm 3, incremental: the defender's IE-BK^seq, updated with each original view.

    State: the context counts (``counts[L]``, int64 (n_classes, M**L, M)) and, per
    respondent, the last ``order`` observed values (a DataFrame indexed by respondent id,
    columns ``lag_<order>..lag_1``, oldest first, -1 = none).

    Parameters: :class:`MiningParams` (or its fields as keywords); ``update`` must be called once per
    view, in time order.
    """

    def __init__(self, values: Sequence[str], params: MiningParams | None = None, **fields) -> None:
        p = MiningParams.of(params, fields)
        self.m = _check_params(values, p.order, p.mu, p.alpha)
        self.values = tuple(values)
        self.order_ = int(p.order)
        self.mu, self.alpha, self.terminal = p.mu, p.alpha, p.terminal
        self.id_col, self.time_col, self.s_col, self.class_col = p.id_col, p.time_col, p.s_col, p.class_col
        self.classes = p.class_map()
        self.counts = [
            np.zeros((self.classes.n_classes, self.m**L, self.m), dtype=np.int64)
            for L in range(self.order_ + 1)
        ]
        self.state = pd.DataFrame({f"lag_{b}": pd.Series(dtype=np.int64) for b in range(self.order_, 0, -1)})
        self.last_time = None
        self.n_views = 0
        self._cache: MarkovTables | None = None

    @property
    def order(self) -> int:
        return self.order_

    def update(self, view_df: pd.DataFrame) -> IEMiner:
        """Count one original view V_i (Algorithm 3, ``Update``) and return ``self``.

        Raises
        ------
        InputError
            Missing columns, duplicate respondents in the view, bad codes, or a view whose
            time is not after the previous one.
        """
        _frame_columns(
            view_df, {"id": self.id_col, "time": self.time_col, "s": self.s_col, "cls": self.class_col}
        )
        ids = view_df[self.id_col]
        if ids.duplicated().any():
            raise InputError(
                f"respondent {ids[ids.duplicated()].iloc[0]!r} appears twice in one view; keep "
                "at most one tuple per respondent per view"
            )
        if self.time_col is not None and len(view_df):
            times = view_df[self.time_col].unique()
            if len(times) != 1:
                raise InputError(
                    f"a view must hold one {self.time_col!r} value, got {len(times)}: "
                    "call update once per view"
                )
            t = times[0]
            if self.last_time is not None and not t > self.last_time:
                raise InputError(
                    f"views must be given in time order: {self.time_col}={t!r} after {self.last_time!r}"
                )
        s = _codes(view_df[self.s_col], self.m, self.s_col)
        cls = _class_codes(view_df, self.class_col, self.classes)
        prev = self.state.reindex(ids.to_numpy())
        ctx = (
            prev.fillna(-1).to_numpy(dtype=np.int64) if self.order_ else np.zeros((len(s), 0), dtype=np.int64)
        )
        _count(self.counts, cls, ctx, s, self.m)
        # new state rows: shift left, append s
        if self.order_:
            new = np.concatenate([ctx[:, 1:], s[:, None]], axis=1)
            upd = pd.DataFrame(new, index=pd.Index(ids.to_numpy()), columns=self.state.columns)
            keep = self.state.loc[~self.state.index.isin(upd.index)]
            self.state = pd.concat([keep, upd]) if len(keep) else upd
        if self.time_col is not None and len(view_df):
            self.last_time = t
        self.n_views += 1
        self._cache = None
        return self

    def tables(self) -> MarkovTables:
        """Current MarkovTables with back-off filled in (cached until the next update)."""
        if self._cache is None:
            self._cache = tables_from_counts(
                self.counts, self.values, self.classes, self.mu, self.alpha, self.terminal
            )
        return self._cache

    def as_tables(self) -> MarkovTables:
        return self.tables()

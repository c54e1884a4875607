"""Synthetic longitudinal medical history: the paper's experimental setting.

:func:`medical_history` generates a history of weekly views (ALGORITHMS.md §2.5,
FINDINGS.md "Set-up") together with the *exact* knowledge of its generator, in the shared
format of :mod:`dpriv.knowledge.tables`:

* QIs ``age`` 45–74, ``gender`` 1–2, ``weight`` 60–89 (int64, fixed per respondent);
* sensitive ``exam_result`` with the 19 values of :data:`VALUES` (four diseases with
  5/4/3/5 stages, then ``deceased`` and ``discharged``, which are terminal);
* 18 knowledge classes (age thirds x weight thirds x gender, :data:`CLASS_MAP`), each with
  its own disease prior and initial-stage prior (BK^sv = ``tables[0]``);
* an order-3 stage chain per class and disease (BK^seq = ``tables[3]``, with the dedicated
  order-1 / order-2 tables used for a respondent's 2nd and 3rd result, FINDINGS.md
  pitfall 2), so that "full DK" is exactly the generator;
* n-step DK (ALGORITHMS.md §1.2, n = 1, 2, 3) derived from the exact model with
  :meth:`MarkovTables.truncate`.

:func:`write_history` writes the history, the knowledge files and a ready-to-use
``policy.toml`` (DESIGN.md "Policy file"); :func:`toml_dumps` is the tiny TOML writer it uses.

For one view at cluster scale (issue "Scale out"), :func:`medical_view_dask` builds the
view a first release of the same generator sees as a Dask DataFrame, partition by
partition (10^7 rows and more), and :func:`write_medical_view` writes it as a Parquet
dataset with the same knowledge files and policy.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap, MarkovTables

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = [
    "AGE_RANGE",
    "CLASS_MAP",
    "DISEASES",
    "GENDER_RANGE",
    "TERMINAL",
    "VALUES",
    "VIEW_BLOCK_ROWS",
    "WEIGHT_RANGE",
    "MedicalHistory",
    "medical_history",
    "medical_knowledge",
    "medical_view_dask",
    "policy_dict",
    "toml_dumps",
    "write_history",
    "write_medical_view",
]

# --------------------------------------------------------------------------------------
# The fixed part of the setting
# --------------------------------------------------------------------------------------

#: (disease name, number of stages), in the order of the sensitive domain.
DISEASES: tuple[tuple[str, int], ...] = (("liver", 5), ("hiv", 4), ("alzheimer", 3), ("sepsis", 5))
#: Terminal values: they end a respondent's history (she appears in no later view).
TERMINAL: tuple[str, ...] = ("deceased", "discharged")
#: D[S], M = 19 values: ``liver_1..liver_5, hiv_1..hiv_4, alzheimer_1..alzheimer_3,
#: sepsis_1..sepsis_5, deceased, discharged``.
VALUES: tuple[str, ...] = (
    *(f"{name}_{s + 1}" for name, k in DISEASES for s in range(k)),
    *TERMINAL,
)
AGE_RANGE: tuple[int, int] = (45, 74)
GENDER_RANGE: tuple[int, int] = (1, 2)
WEIGHT_RANGE: tuple[int, int] = (60, 89)

#: The 18 knowledge classes (ALGORITHMS.md §2.5): age thirds x weight thirds x gender.
#: All three QIs are numeric cuts: age (55, 65), weight (70, 80), gender (2,) (1 -> bin 0,
#: 2 -> bin 1); gender is numeric because the history stores it as int64 and the policy's
#: domain ``[1, 2]`` makes it a numeric QI. Class index = (age_bin * 3 + weight_bin) * 2 +
#: gender_bin, in 0..17.
CLASS_MAP = ClassMap(
    qi=("age", "weight", "gender"), bins=((55, 65), (70, 80), (2,)), numeric=(True, True, True)
)

_M = len(VALUES)
_N_STAGE_VALUES = _M - len(TERMINAL)  # 17
_DEAD, _DISCHARGED = _M - 2, _M - 1
_OFFSETS = np.cumsum([0] + [k for _, k in DISEASES])[:-1]  # first value index per disease
_DISEASE_OF = np.concatenate([np.full(k, d) for d, (_, k) in enumerate(DISEASES)])  # (17,)
_STAGE_OF = np.concatenate([np.arange(k) for _, k in DISEASES])  # (17,)
_ORDER = 3
_DEFAULT_WEIGHT_VIEW_SIZE = 20_000  # 4x the default view size

# Progression parameters (ALGORITHMS.md §2.5 "from the medical literature" is not
# available; these are [proposed] values, tuned so that the default run has ~16,000
# distinct respondents as in the paper). Per disease: base death hazard at stage 1 and its
# growth factor at the last stage; base discharge hazard at stage 1 and its growth factor.
_DEATH_BASE = np.array([0.021, 0.017, 0.026, 0.038])
_DEATH_GROWTH = np.array([5.0, 4.0, 3.0, 5.0])
_DISCH_BASE = np.array([0.04, 0.035, 0.03, 0.043])
_DISCH_GROWTH = np.array([1.6, 1.5, 1.4, 1.8])
_AGE_HAZARD = np.array([0.75, 1.0, 1.3])  # death-hazard multiplier per age third


# --------------------------------------------------------------------------------------
# Result container
# --------------------------------------------------------------------------------------


@dataclass(eq=False)
class MedicalHistory:
    """A generated history and the exact knowledge of its generator.

    Attributes
    ----------
    history : pandas.DataFrame
        One row per exam: ``respondent_id`` (int64), ``view`` (int64, 1-based release
        index), ``age``, ``gender``, ``weight`` (int64, fixed per respondent) and
        ``exam_result`` (str, one of :attr:`values`). Sorted by ``view``, rows shuffled
        (seeded) inside each view; at most one row per respondent per view; every view has
        exactly ``view_size`` rows.
    knowledge : MarkovTables
        Exact order-3 DK (full DK-BK^seq, ALGORITHMS.md §1.2): ``tables[0]`` (18, 1, 19) is
        BK^sv (distribution of a respondent's first result per class), ``tables[1]``
        (18, 19, 19) and ``tables[2]`` (18, 361, 19) give her 2nd and 3rd result,
        ``tables[3]`` (18, 6859, 19) every later one (FINDINGS.md pitfall 2). Zero rows:
        forbidden contexts (values of two diseases, anything after a terminal value, a stage
        jump of more than one between consecutive exams).
    values : tuple of str
        D[S] in domain order (:data:`VALUES`).
    classmap : ClassMap
        QI values -> knowledge class (:data:`CLASS_MAP`).
    config : dict
        The generator arguments (seed, n_views, view_size, attendance, det,
        weight_view_size), used by :meth:`n_step`.
    """

    history: pd.DataFrame
    knowledge: MarkovTables
    values: tuple[str, ...]
    classmap: ClassMap
    config: dict = field(default_factory=dict)
    _weights: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_respondents(self) -> int:
        """Number of distinct respondents in :attr:`history`."""
        return int(self.history["respondent_id"].nunique())

    def context_weights(self) -> np.ndarray:
        """How often each order-3 context occurs: float64 (18, 19**3).

        Counted in a separate, longer run of the same generator (same model, seed stream
        independent of :attr:`history`): ``max(n_views, 24)`` views of
        ``weight_view_size`` tuples (default 20,000, i.e. 4x the default size), one count per
        exam whose respondent already has 3 or more earlier results (the exams the order-3
        table predicts). Computed on first use and cached.
        """
        if self._weights is None:
            cfg = self.config
            _, self._weights = _simulate(
                self.knowledge,
                n_views=max(int(cfg["n_views"]), 24),
                view_size=int(cfg["weight_view_size"]),
                attendance=float(cfg["attendance"]),
                seed_seq=_streams(int(cfg["seed"]))[2],
                count_contexts=True,
            )
        return self._weights

    def n_step(self, n: int) -> MarkovTables:
        """n-step DK-BK^seq (ALGORITHMS.md §1.2 "n-steps DK"), n = 1, 2 or 3.

        The order-n table is the exact order-3 table averaged over the older ``3 - n``
        values of the context, weighted by :meth:`context_weights` (how often each full
        context occurs in a long simulated history of the same generator), via
        :meth:`MarkovTables.truncate`. Tables of order < n (BK^sv and the short-history
        tables) are the exact ones. An n-context never seen in the weighting run keeps the
        generator's own order-n (short-history) row. ``n = 3`` returns the exact model.

        Returns
        -------
        MarkovTables
            ``order == n``; ``tables[L]`` of shape (18, 19**L, 19), float64, rows summing
            to 1 (allowed contexts) or 0 (forbidden ones).
        """
        if n not in (1, 2, 3):
            raise InputError(f"n-step knowledge is defined for n = 1, 2, 3; got {n!r}")
        if n == _ORDER:
            return self.knowledge
        return self.knowledge.truncate(n, self.context_weights())


# --------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------


def _streams(seed: int) -> list[np.random.SeedSequence]:
    """Independent seed streams: model parameters, the history, the weighting run."""
    return np.random.SeedSequence(seed).spawn(3)


def _build_model(rng: np.random.Generator, det: float) -> MarkovTables:
    """Draw the per-class parameters and build the exact order-0..3 tables.

    Parameters drawn per class ``c`` (18) and disease ``d`` (4):

    * disease prior P(d | c): 0.9 * Dirichlet(0.8) + 0.1 * uniform;
    * initial-stage prior P(stage | c, d): 0.9 * Dirichlet(decreasing 2.5 -> 0.6) + 0.1 *
      uniform (early stages more likely at admission);
    * base move rates (up, down, stay) ~ Dirichlet(2, 1.5, 3);
    * momentum ``b1`` ~ U(0.3, 0.9) on the last move and ``b2`` ~ U(1.0, 1.8) on the move
      before (up weight x exp(b1 sign(last move) + b2 sign(previous move)), down weight x
      the inverse);
    * "stable three times" (last three results equal): stay weight x exp(g), g ~ U(0.8, 1.6),
      and discharge hazard x 1.5;
    * hazards: death ``_DEATH_BASE[d] * _DEATH_GROWTH[d] ** (stage / (K - 1))`` times an age
      factor and a class factor U(0.8, 1.25); discharge likewise with ``_DISCH_*``.

    The move distribution (up/down/stay; impossible moves at the first/last stage removed)
    is sharpened toward its most likely move, ``(1 - det) p + det * onehot(argmax)`` (ties
    share), then scaled by ``1 - death - discharge``. Short contexts (a respondent's 2nd and
    3rd result) use the same rule with the missing moves counted as 0 and no stability
    effect; these are the dedicated order-1 / order-2 tables.
    """
    n_cls, n_dis = CLASS_MAP.n_classes, len(DISEASES)
    sizes = np.array([k for _, k in DISEASES])

    disease_prior = 0.9 * rng.dirichlet(np.full(n_dis, 0.8), size=n_cls) + 0.1 / n_dis
    stage_prior = []
    for k in sizes:
        alpha = np.linspace(2.5, 0.6, k)
        stage_prior.append(0.9 * rng.dirichlet(alpha, size=n_cls) + 0.1 / k)  # (C, K)
    base = rng.dirichlet([2.0, 1.5, 3.0], size=(n_cls, n_dis))  # (C, D, 3) up, down, stay
    b1 = rng.uniform(0.3, 0.9, size=(n_cls, n_dis))
    b2 = rng.uniform(1.0, 1.8, size=(n_cls, n_dis))
    gam = rng.uniform(0.8, 1.6, size=(n_cls, n_dis))
    death_f = rng.uniform(0.8, 1.25, size=(n_cls, n_dis))
    disch_f = rng.uniform(0.8, 1.25, size=(n_cls, n_dis))
    age_third = np.arange(n_cls) // 6  # class = (age * 3 + weight) * 2 + gender
    death_f = death_f * _AGE_HAZARD[age_third][:, None]

    t0 = np.zeros((n_cls, 1, _M))
    for d, k in enumerate(sizes):
        off = _OFFSETS[d]
        t0[:, 0, off : off + k] = disease_prior[:, d : d + 1] * stage_prior[d]

    tables = [t0] + [np.zeros((n_cls, _M**L, _M)) for L in range(1, _ORDER + 1)]
    for d, k in enumerate(sizes):
        off = int(_OFFSETS[d])
        frac = np.arange(k) / max(k - 1, 1)
        death = death_f[:, d : d + 1] * _DEATH_BASE[d] * _DEATH_GROWTH[d] ** frac  # (C, K)
        disch = disch_f[:, d : d + 1] * _DISCH_BASE[d] * _DISCH_GROWTH[d] ** frac
        for L in range(1, _ORDER + 1):
            for ctx in _feasible_contexts(k, L):
                m1 = np.sign(ctx[-1] - ctx[-2]) if L >= 2 else 0
                m2 = np.sign(ctx[-2] - ctx[-3]) if L >= 3 else 0
                stable = L >= 3 and ctx[0] == ctx[1] == ctx[2]
                s = ctx[-1]
                mom = b1[:, d] * m1 + b2[:, d] * m2
                w = base[:, d, :] * np.stack([np.exp(mom), np.exp(-mom), np.ones(n_cls)], axis=1)
                if stable:
                    w[:, 2] *= np.exp(gam[:, d])
                if s == k - 1:
                    w[:, 0] = 0.0
                if s == 0:
                    w[:, 1] = 0.0
                p = w / w.sum(axis=1, keepdims=True)
                top = p >= p.max(axis=1, keepdims=True) - 1e-12
                p = (1.0 - det) * p + det * top / top.sum(axis=1, keepdims=True)
                h_dis = disch[:, s] * (1.5 if stable else 1.0)
                alive = 1.0 - death[:, s] - h_dis
                row = np.zeros((n_cls, _M))
                if s < k - 1:
                    row[:, off + s + 1] = alive * p[:, 0]
                if s > 0:
                    row[:, off + s - 1] = alive * p[:, 1]
                row[:, off + s] = alive * p[:, 2]
                row[:, _DEAD] = death[:, s]
                row[:, _DISCHARGED] = h_dis
                code = sum((off + v) * _M ** (L - 1 - i) for i, v in enumerate(ctx))
                tables[L][:, code, :] = row / row.sum(axis=1, keepdims=True)
    return MarkovTables(VALUES, CLASS_MAP, tables)


def _feasible_contexts(k: int, length: int) -> list[tuple[int, ...]]:
    """Stage sequences of one disease with K = k stages whose steps are -1, 0 or +1."""
    seqs: list[tuple[int, ...]] = [(s,) for s in range(k)]
    for _ in range(length - 1):
        seqs = [q + (q[-1] + step,) for q in seqs for step in (-1, 0, 1) if 0 <= q[-1] + step < k]
    return seqs


def _classify(age: np.ndarray, weight: np.ndarray, gender: np.ndarray) -> np.ndarray:
    """Class index (int64) of QI arrays; same result as ``CLASS_MAP.classify``."""
    a = np.searchsorted(np.asarray(CLASS_MAP.bins[0]), age, side="right")
    w = np.searchsorted(np.asarray(CLASS_MAP.bins[1]), weight, side="right")
    g = np.searchsorted(np.asarray(CLASS_MAP.bins[2]), gender, side="right")
    return ((a * 3 + w) * 2 + g).astype(np.int64)


# --------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------


def _simulate(
    knowledge: MarkovTables,
    *,
    n_views: int,
    view_size: int,
    attendance: float,
    seed_seq: np.random.SeedSequence,
    count_contexts: bool = False,
) -> tuple[pd.DataFrame | None, np.ndarray | None]:
    """Run the generator; vectorised over the respondents of a view.

    Per view: each active respondent (admitted, no terminal result yet) is examined with
    probability ``attendance`` (capped at ``view_size`` by a seeded subsample); new
    respondents (uniform QIs) fill the view to ``view_size``; every examined respondent
    draws her next result from ``knowledge.predict`` (order-0 table for a first exam, the
    order-L table after L < 3 results, the order-3 table afterwards) by inverse-CDF on the
    cumulative row sums. A terminal result deactivates her.

    Returns ``(history, None)`` or, with ``count_contexts``, ``(None, weights)`` where
    ``weights`` (18, 19**3) float64 counts the order-3 contexts of exams predicted by
    ``tables[3]``.
    """
    rng = np.random.default_rng(seed_seq)
    cap = n_views * view_size
    cls = np.empty(cap, dtype=np.int64)
    qi = np.empty((cap, 3), dtype=np.int64)  # age, gender, weight
    ctx = np.full((cap, _ORDER), -1, dtype=np.int64)
    alive = np.zeros(cap, dtype=bool)
    n_seen = 0
    n_cls = knowledge.classes.n_classes
    weights = np.zeros(n_cls * _M**_ORDER) if count_contexts else None
    pow3 = _M ** np.arange(_ORDER - 1, -1, -1, dtype=np.int64)
    out_ids, out_res = [], []

    for _view in range(n_views):
        active = np.flatnonzero(alive)
        if attendance < 1.0:
            active = active[rng.random(active.size) < attendance]
        if active.size > view_size:
            active = active[np.sort(rng.permutation(active.size)[:view_size])]
        n_new = view_size - active.size
        new = np.arange(n_seen, n_seen + n_new)
        n_seen += n_new
        qi[new, 0] = rng.integers(AGE_RANGE[0], AGE_RANGE[1] + 1, n_new)
        qi[new, 1] = rng.integers(GENDER_RANGE[0], GENDER_RANGE[1] + 1, n_new)
        qi[new, 2] = rng.integers(WEIGHT_RANGE[0], WEIGHT_RANGE[1] + 1, n_new)
        cls[new] = _classify(qi[new, 0], qi[new, 2], qi[new, 1])
        alive[new] = True

        ids = np.concatenate([active, new])
        c = ctx[ids]
        probs = knowledge.predict(cls[ids], c)
        cum = np.cumsum(probs, axis=1)
        thr = rng.random(ids.size) * cum[:, -1]
        res = (cum <= thr[:, None]).sum(axis=1)  # skips zero-probability values
        if count_contexts:
            full = c[:, 0] >= 0
            keys = cls[ids[full]] * _M**_ORDER + c[full] @ pow3
            weights += np.bincount(keys, minlength=weights.size)
        ctx[ids] = np.column_stack([c[:, 1:], res])
        alive[ids[res >= _N_STAGE_VALUES]] = False
        if not count_contexts:
            perm = rng.permutation(ids.size)
            out_ids.append(ids[perm])
            out_res.append(res[perm])

    if count_contexts:
        return None, weights.reshape(n_cls, _M**_ORDER)
    ids = np.concatenate(out_ids)
    res = np.concatenate(out_res)
    values = np.array(VALUES, dtype=object)
    history = pd.DataFrame(
        {
            "respondent_id": ids.astype(np.int64) + 1,
            "view": np.repeat(np.arange(1, n_views + 1, dtype=np.int64), view_size),
            "age": qi[ids, 0],
            "gender": qi[ids, 1],
            "weight": qi[ids, 2],
            "exam_result": pd.Series(values[res], dtype="str"),
        }
    )
    return history, None


def medical_history(
    n_views: int = 24,
    view_size: int = 5000,
    *,
    attendance: float = 1.0,
    det: float = 0.9,
    seed: int = 0,
    weight_view_size: int = _DEFAULT_WEIGHT_VIEW_SIZE,
) -> MedicalHistory:
    """Generate the paper's synthetic medical history with its exact knowledge.

    ALGORITHMS.md §2.5 and FINDINGS.md "Set-up": ``n_views`` weekly views of exactly
    ``view_size`` exams; QIs age 45–74, gender 1–2, weight 60–89 (uniform, fixed per
    respondent); one disease per respondent for life, moving between the stages of that
    disease only, until a terminal ``deceased`` / ``discharged`` result (which appears in
    that view and ends her history). The order-3 progression model, the short-history
    tables and BK^sv are described in :class:`MedicalHistory` and ``_build_model``; the
    generator draws every result from exactly those tables (``MarkovTables.predict``), so
    full DK is exact (FINDINGS.md pitfall 2).

    Parameters
    ----------
    n_views : int >= 1
        Number of views (releases).
    view_size : int >= 1
        Tuples per view; new respondents fill every view to exactly this size.
    attendance : float in (0, 1]
        Probability ``q`` that an active respondent is examined in a given week; the chain
        steps once per exam, so ``q < 1`` leaves gaps in a respondent's views but does not
        change the tables. ``q = 1``: weekly exams until a terminal result.
    det : float in [0, 1]
        Sharpening toward the most likely stage move (0: the base rates; 1: deterministic
        moves; deaths and discharges keep their hazards).
    seed : int >= 0
        Seeds the model parameters, the history and the weighting run of :meth:`n_step`
        (three independent ``SeedSequence`` streams). Same arguments -> same frame and
        tables.
    weight_view_size : int >= 1
        View size of the weighting run used by :meth:`MedicalHistory.n_step`.

    Returns
    -------
    MedicalHistory

    Notes
    -----
    With the defaults (seed 0) the history has 16,434 distinct respondents (seeds 0-7:
    15,200-16,500; the paper had 16,160; ``attendance=0.5`` gives about 20,000) and is
    generated in about 0.1 s; the weighting run of :meth:`MedicalHistory.n_step` takes
    about 0.2 s more. The older move weighs more than the last one in the momentum
    (``b2 > b1``) so that 1-, 2- and 3-step knowledge really differ.
    """
    if int(n_views) != n_views or n_views < 1:
        raise InputError(f"n_views must be an integer >= 1, got {n_views!r}")
    if int(view_size) != view_size or view_size < 1:
        raise InputError(f"view_size must be an integer >= 1, got {view_size!r}")
    if int(weight_view_size) != weight_view_size or weight_view_size < 1:
        raise InputError(f"weight_view_size must be an integer >= 1, got {weight_view_size!r}")
    if not 0.0 < attendance <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    if not 0.0 <= det <= 1.0:
        raise InputError(f"det must be in [0, 1], got {det!r}")
    if int(seed) != seed or seed < 0:
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    model_ss, hist_ss, _ = _streams(int(seed))
    knowledge = _build_model(np.random.default_rng(model_ss), float(det))
    history, _ = _simulate(
        knowledge,
        n_views=int(n_views),
        view_size=int(view_size),
        attendance=float(attendance),
        seed_seq=hist_ss,
    )
    config = {
        "seed": int(seed),
        "n_views": int(n_views),
        "view_size": int(view_size),
        "attendance": float(attendance),
        "det": float(det),
        "weight_view_size": int(weight_view_size),
    }
    return MedicalHistory(history, knowledge, VALUES, CLASS_MAP, config)


# --------------------------------------------------------------------------------------
# One large view, partition by partition (issue "Scale out")
# --------------------------------------------------------------------------------------

#: Rows per generation block of :func:`medical_view_dask`: block ``b`` holds rows
#: ``[b * VIEW_BLOCK_ROWS, (b + 1) * VIEW_BLOCK_ROWS)`` and draws from its own seed stream,
#: so the data do not depend on how the blocks are grouped into partitions.
VIEW_BLOCK_ROWS = 2**16
_VIEW_STREAM = 3  # spawn key of the block streams; _streams uses 0, 1, 2
_ROWS_PER_PARTITION = 2**20  # default partition size of medical_view_dask (16 blocks)


def medical_knowledge(seed: int = 0, *, det: float = 0.9) -> MarkovTables:
    """The exact knowledge of the generator for ``seed`` (without simulating a history).

    Same tables as ``medical_history(..., seed=seed, det=det).knowledge`` for any
    ``n_views``, ``view_size`` and ``attendance`` (the model has its own seed stream):
    ``tables[0]`` (18, 1, 19) float64 is BK^sv, ``tables[L]`` (18, 19**L, 19) the
    order-L tables (see :class:`MedicalHistory`). Takes about 0.05 s.
    """
    if int(seed) != seed or seed < 0:
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    if not 0.0 <= det <= 1.0:
        raise InputError(f"det must be in [0, 1], got {det!r}")
    return _build_model(np.random.default_rng(_streams(int(seed))[0]), float(det))


def _view_blocks(
    first: int, stop: int, *, n_rows: int, seed: int, view: int, cum: np.ndarray
) -> pd.DataFrame:
    """Blocks ``first .. stop - 1`` of the view: one partition of :func:`medical_view_dask`.

    ``cum``: (18, 19) cumulative BK^sv rows. Each block draws age, gender, weight (uniform)
    and then the result (inverse CDF, as in ``_simulate``) from its own seed stream.
    """
    lo, hi = min(first * VIEW_BLOCK_ROWS, n_rows), min(stop * VIEW_BLOCK_ROWS, n_rows)
    cols: list[list[np.ndarray]] = [[np.zeros(0, np.int64)] for _ in range(4)]
    for b in range(first, stop):
        n = min((b + 1) * VIEW_BLOCK_ROWS, n_rows) - b * VIEW_BLOCK_ROWS
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_VIEW_STREAM, view, b)))
        # always a whole block's draws, cut to n: row i depends on i, not on n_rows
        size = VIEW_BLOCK_ROWS
        age = rng.integers(AGE_RANGE[0], AGE_RANGE[1] + 1, size)[:n]
        gender = rng.integers(GENDER_RANGE[0], GENDER_RANGE[1] + 1, size)[:n]
        weight = rng.integers(WEIGHT_RANGE[0], WEIGHT_RANGE[1] + 1, size)[:n]
        u = rng.random(size)[:n]
        c = cum[_classify(age, weight, gender)]  # (n, 19)
        res = (c <= (u * c[:, -1])[:, None]).sum(axis=1)  # inverse CDF; skips zero-probability values
        for i, a in enumerate((age, gender, weight, res)):
            cols[i].append(a)
    age, gender, weight, res = (np.concatenate(col).astype(np.int64) for col in cols)
    index = pd.RangeIndex(lo, hi)
    return pd.DataFrame(
        {
            "respondent_id": np.arange(lo + 1, hi + 1, dtype=np.int64),
            "view": np.full(hi - lo, view, dtype=np.int64),
            "age": age,
            "gender": gender,
            "weight": weight,
            "exam_result": pd.Series(np.array(VALUES, dtype=object)[res], dtype="str", index=index),
        },
        index=index,
    )


def medical_view_dask(
    n_rows: int,
    *,
    npartitions: int | None = None,
    seed: int = 0,
    view: int = 1,
    det: float = 0.9,
) -> dd.DataFrame:
    """One view of the paper setting as a Dask DataFrame, built partition by partition.

    The view a first release of :func:`medical_history` would see at any size: ``n_rows``
    first-time respondents with uniform QIs, each with one result drawn from BK^sv, the
    order-0 table of ``medical_knowledge(seed, det=det)`` (the same model as
    ``medical_history(..., seed=seed, det=det)``), for the QI class of the tuple. BK^sv
    gives ``deceased`` / ``discharged`` probability 0, so only the 17 stage values occur.
    Nothing is built on the client but the model (about 0.05 s) and the task graph: every
    partition is generated by its own task, so e.g. ``to_parquet`` of 10^7 rows needs
    little client memory.

    Rows come in blocks of :data:`VIEW_BLOCK_ROWS` (65,536); block ``b`` draws from
    ``np.random.SeedSequence(seed, spawn_key=(3, view, b))`` (a whole block's draws even
    for a shorter last block). Row ``i`` therefore depends only on ``(i, seed, view,
    det)``: not on ``npartitions`` (a partition holds whole consecutive blocks, as even as
    the blocks allow), and a view of ``n`` rows is the first ``n`` rows of any longer one.

    Parameters
    ----------
    n_rows : int >= 1
        Tuples in the view.
    npartitions : int >= 1, optional
        Dask partitions; at most the number of blocks, ``ceil(n_rows / 65536)`` (larger
        values are lowered to it). Default: about 2**20 rows per partition.
    seed : int >= 0
        Seeds the model (as in :func:`medical_history`) and the blocks.
    view : int >= 1
        Value of the ``view`` column; also part of the block seeds.
    det : float in [0, 1]
        Model parameter, as in :func:`medical_history` (BK^sv does not depend on it, the
        order >= 1 tables do).

    Returns
    -------
    dask.dataframe.DataFrame
        ``n_rows`` rows; columns ``respondent_id`` (int64, 1..n_rows, row ``i`` has id
        ``i + 1``: partition ``p`` holds a contiguous, increasing id range), ``view``
        (int64, = ``view``), ``age`` (int64 in 45..74), ``gender`` (int64 in 1..2),
        ``weight`` (int64 in 60..89), ``exam_result`` (str, one of :data:`VALUES`; a
        pyarrow string column under Dask's default string conversion). Index: the 0-based
        row number (int64, known divisions at partition boundaries).
    """
    import dask.dataframe as dd  # at run time only: importing dpriv.datasets stays light

    if int(n_rows) != n_rows or n_rows < 1:
        raise InputError(f"n_rows must be an integer >= 1, got {n_rows!r}")
    if int(view) != view or view < 1:
        raise InputError(f"view must be an integer >= 1, got {view!r}")
    n_rows, view = int(n_rows), int(view)
    n_blocks = -(-n_rows // VIEW_BLOCK_ROWS)
    if npartitions is None:
        npartitions = -(-n_rows // _ROWS_PER_PARTITION)
    if int(npartitions) != npartitions or npartitions < 1:
        raise InputError(f"npartitions must be an integer >= 1, got {npartitions!r}")
    nparts = min(int(npartitions), n_blocks)
    knowledge = medical_knowledge(seed, det=det)
    cum = np.cumsum(knowledge.tables[0][:, 0, :], axis=1)  # (18, 19)
    edges = [p * n_blocks // nparts for p in range(nparts + 1)]  # block ranges
    starts = [min(e * VIEW_BLOCK_ROWS, n_rows) for e in edges]
    kwargs = {"n_rows": n_rows, "seed": int(seed), "view": view, "cum": cum}
    meta = _view_blocks(0, 0, **kwargs)
    return dd.from_map(
        _view_blocks,
        edges[:-1],
        edges[1:],
        meta=meta,
        divisions=(*starts[:-1], n_rows - 1),
        label="medical-view",
        enforce_metadata=False,
        **kwargs,
    )


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"TOML keys must be str, got {type(key).__name__}")
    return key if _BARE_KEY.match(key) else _toml_str(key)


def _toml_str(s: str) -> str:
    out = []
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Path):
        return _toml_str(v.as_posix())
    raise TypeError(f"cannot write a {type(v).__name__} as a TOML value")


def toml_dumps(doc: dict[str, Any]) -> str:
    """Serialise ``doc`` to TOML (the subset a policy file needs).

    Supported: str, bool, int, float (incl. nan/inf), ``pathlib.Path`` (as a str), lists of
    those (nested lists allowed), and nested dicts as ``[table]`` / ``[a.b]`` sections.
    Scalars of a table are written before its sub-tables. Raises TypeError otherwise
    (e.g. None, which TOML cannot express). ``tomllib.loads(toml_dumps(d)) == d`` for
    supported input (with tuples read back as lists).
    """
    lines: list[str] = []

    def emit(table: dict[str, Any], prefix: tuple[str, ...]) -> None:
        scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
        subs = [(k, v) for k, v in table.items() if isinstance(v, dict)]
        if prefix and (scalars or not subs):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_toml_key(p) for p in prefix) + "]")
        for k, v in scalars:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        for k, v in subs:
            emit(v, (*prefix, k))

    emit(doc, ())
    return "\n".join(lines) + "\n"


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def policy_dict(mh: MedicalHistory) -> dict[str, Any]:
    """The ready-to-use policy of a generated history (DESIGN.md "Policy file")."""
    return {
        "columns": {
            "id": "respondent_id",
            "time": "view",
            "qi": ["age", "gender", "weight"],
            "sensitive": "exam_result",
        },
        "domains": {
            "age": list(AGE_RANGE),
            "weight": list(WEIGHT_RANGE),
            "gender": list(GENDER_RANGE),
            "exam_result": list(mh.values),
        },
        "privacy": {"k": 5, "t": 0.3, "j": 0.1},
        "knowledge": {
            "dk": "knowledge/dk.npz",
            "dk-1": "knowledge/dk-1.npz",
            "dk-2": "knowledge/dk-2.npz",
            "dk-3": "knowledge/dk-3.npz",
        },
    }


def write_history(
    out_dir: str | Path, mh: MedicalHistory, policy_extra: dict[str, Any] | None = None
) -> Path:
    """Write a generated history, its knowledge and a policy into ``out_dir``.

    Files (created or overwritten)::

        out_dir/history.parquet          mh.history
        out_dir/knowledge/dk.npz         exact order-3 DK (full DK-BK^seq)
        out_dir/knowledge/dk-{1,2,3}.npz n-step DK (MedicalHistory.n_step; dk-3 = dk)
        out_dir/policy.toml              DESIGN.md policy; paths relative to the policy

    BK^sv is the order-0 table inside every ``.npz`` (``MarkovTables.load(...).tables[0]``,
    with the class map in its metadata); there is no separate BK^sv file. ``[knowledge]``
    has ``dk`` (the exact model) and ``dk-1``/``dk-2``/``dk-3``. ``policy_extra`` is
    deep-merged into the policy (e.g. ``{"privacy": {"k": 10}}``).

    Returns
    -------
    Path
        The path of ``policy.toml``.
    """
    out = Path(out_dir)
    (out / "knowledge").mkdir(parents=True, exist_ok=True)
    mh.history.to_parquet(out / "history.parquet", index=False)
    return _write_knowledge_and_policy(out, mh, policy_extra)


def _write_knowledge_and_policy(out: Path, mh: MedicalHistory, policy_extra: dict[str, Any] | None) -> Path:
    """``knowledge/dk.npz``, ``knowledge/dk-{1,2,3}.npz`` and ``policy.toml`` of ``mh``
    (uses ``mh.knowledge``, ``mh.config``, ``mh.values``; not ``mh.history``)."""
    (out / "knowledge").mkdir(parents=True, exist_ok=True)
    mh.knowledge.save(out / "knowledge" / "dk.npz")
    for n in (1, 2, 3):
        mh.n_step(n).save(out / "knowledge" / f"dk-{n}.npz")
    policy = policy_dict(mh)
    if policy_extra:
        policy = _deep_merge(policy, policy_extra)
    path = out / "policy.toml"
    path.write_text(toml_dumps(policy), encoding="utf-8")
    return path


def write_medical_view(
    out_dir: str | Path,
    n_rows: int,
    *,
    npartitions: int | None = None,
    seed: int = 0,
    attendance: float = 1.0,
    det: float = 0.9,
    weight_view_size: int = _DEFAULT_WEIGHT_VIEW_SIZE,
    policy_extra: dict[str, Any] | None = None,
) -> Path:
    """Write a one-view history of ``n_rows`` tuples, built in Dask, with its knowledge.

    The large-scale counterpart of ``write_history(out_dir, medical_history(1, n_rows,
    ...))``: ``out_dir/history.parquet`` is a Parquet *dataset* (a folder, one
    ``part.<i>.parquet`` file per partition, written by the workers with
    ``dask.dataframe.DataFrame.to_parquet``) holding :func:`medical_view_dask` ``(n_rows,
    npartitions=npartitions, seed=seed, view=1, det=det)`` without its index; the knowledge
    files and ``policy.toml`` are those :func:`write_history` writes for a one-view
    :func:`medical_history` with the same ``seed``, ``attendance``, ``det`` and
    ``weight_view_size`` (same model; the n-step tables come from the same weighting run).
    Runs on the current Dask scheduler (a distributed Client if one is active). An existing
    ``history.parquet`` (file or folder) is replaced.

    Returns
    -------
    Path
        The path of ``policy.toml``.
    """
    if int(weight_view_size) != weight_view_size or weight_view_size < 1:
        raise InputError(f"weight_view_size must be an integer >= 1, got {weight_view_size!r}")
    if not 0.0 < attendance <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    frame = medical_view_dask(n_rows, npartitions=npartitions, seed=seed, view=1, det=det)
    config = {
        "seed": int(seed),
        "n_views": 1,
        "view_size": int(n_rows),
        "attendance": float(attendance),
        "det": float(det),
        "weight_view_size": int(weight_view_size),
    }
    knowledge = medical_knowledge(seed, det=det)
    # the history lives in the Dask frame; the container only carries the model and config
    mh = MedicalHistory(frame._meta, knowledge, VALUES, CLASS_MAP, config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "history.parquet"
    if target.is_file() or target.is_symlink():
        target.unlink()
    frame.to_parquet(target, write_index=False, overwrite=True)
    return _write_knowledge_and_policy(out, mh, policy_extra)

"""The synthetic medical model (docs/algorithms.md §2.5): diseases and stages, the Markov
tables of the sensitive sequence (DK-BK^seq), the QI classes and the simulation of a
history of weekly views.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpriv.datasets.arguments import check_whole
from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap, MarkovTables

if TYPE_CHECKING:
    pass


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


#: The 18 knowledge classes (docs/algorithms.md §2.5): age thirds x weight thirds x gender.
#: All three QIs are numeric cuts: age (55, 65), weight (70, 80), gender (2,) (1 -> bin 0,
#: 2 -> bin 1); gender is numeric because the history stores it as int64 and the policy's
#: domain ``[1, 2]`` makes it a numeric QI. Class index = (age_bin * 3 + weight_bin) * 2 +
#: gender_bin, in 0..17.
CLASS_MAP = ClassMap(
    qi=("age", "weight", "gender"), bins=((55, 65), (70, 80), (2,)), numeric=(True, True, True)
)


_M = len(VALUES)
_N_STAGE_VALUES = _M - len(TERMINAL)  # 17
_OFFSETS = np.cumsum([0] + [k for _, k in DISEASES])[:-1]  # first value index per disease
_DISEASE_OF = np.concatenate([np.full(k, d) for d, (_, k) in enumerate(DISEASES)])  # (17,)
_STAGE_OF = np.concatenate([np.arange(k) for _, k in DISEASES])  # (17,)
ORDER = 3
_DEAD, _DISCHARGED = _M - 2, _M - 1
DEFAULT_WEIGHT_VIEW_SIZE = 20_000  # 4x the default view size
#: Views of the weighting run at most: its memory and time grew with ``n_views`` x 20,000 tuples
#: (``--views 20000 --view-size 1`` held 10 GB), while the order-3 context frequencies it
#: counts settle within the first few dozen views.
WEIGHT_VIEWS_MAX = 100

# Progression parameters (docs/algorithms.md §2.5 "from the medical literature" is not
# available; these are [proposed] values, tuned so that the default run has ~16,000
# distinct respondents as in the paper). Per disease: base death hazard at stage 1 and its
# growth factor at the last stage; base discharge hazard at stage 1 and its growth factor.
_DEATH_BASE = np.array([0.021, 0.017, 0.026, 0.038])
_DEATH_GROWTH = np.array([5.0, 4.0, 3.0, 5.0])
_DISCH_BASE = np.array([0.04, 0.035, 0.03, 0.043])
_DISCH_GROWTH = np.array([1.6, 1.5, 1.4, 1.8])
_AGE_HAZARD = np.array([0.75, 1.0, 1.3])  # death-hazard multiplier per age third


def seed_streams(seed: int) -> list[np.random.SeedSequence]:
    """Independent seed streams: model parameters, the history, the weighting run."""
    return np.random.SeedSequence(seed).spawn(3)


def build_model(rng: np.random.Generator, det: float) -> MarkovTables:
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

    tables = [t0] + [np.zeros((n_cls, _M**L, _M)) for L in range(1, ORDER + 1)]
    for d, k in enumerate(sizes):
        off = int(_OFFSETS[d])
        frac = np.arange(k) / max(k - 1, 1)
        death = death_f[:, d : d + 1] * _DEATH_BASE[d] * _DEATH_GROWTH[d] ** frac  # (C, K)
        disch = disch_f[:, d : d + 1] * _DISCH_BASE[d] * _DISCH_GROWTH[d] ** frac
        for L in range(1, ORDER + 1):
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


def class_index(age: np.ndarray, weight: np.ndarray, gender: np.ndarray) -> np.ndarray:
    """Class index (int64) of QI arrays; same result as ``CLASS_MAP.classify``."""
    a = np.searchsorted(np.asarray(CLASS_MAP.bins[0]), age, side="right")
    w = np.searchsorted(np.asarray(CLASS_MAP.bins[1]), weight, side="right")
    g = np.searchsorted(np.asarray(CLASS_MAP.bins[2]), gender, side="right")
    return ((a * 3 + w) * 2 + g).astype(np.int64)


def simulate(
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
    ctx = np.full((cap, ORDER), -1, dtype=np.int64)
    alive = np.zeros(cap, dtype=bool)
    n_seen = 0
    n_cls = knowledge.classes.n_classes
    weights = np.zeros(n_cls * _M**ORDER) if count_contexts else None
    pow3 = _M ** np.arange(ORDER - 1, -1, -1, dtype=np.int64)
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
        cls[new] = class_index(qi[new, 0], qi[new, 2], qi[new, 1])
        alive[new] = True

        ids = np.concatenate([active, new])
        c = ctx[ids]
        probs = knowledge.predict(cls[ids], c)
        cum = np.cumsum(probs, axis=1)
        thr = rng.random(ids.size) * cum[:, -1]
        res = (cum <= thr[:, None]).sum(axis=1)  # skips zero-probability values
        if count_contexts:
            full = c[:, 0] >= 0
            keys = cls[ids[full]] * _M**ORDER + c[full] @ pow3
            weights += np.bincount(keys, minlength=weights.size)
        ctx[ids] = np.column_stack([c[:, 1:], res])
        alive[ids[res >= _N_STAGE_VALUES]] = False
        if not count_contexts:
            perm = rng.permutation(ids.size)
            out_ids.append(ids[perm])
            out_res.append(res[perm])

    if count_contexts:
        return None, weights.reshape(n_cls, _M**ORDER)
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


def medical_knowledge(seed: int = 0, *, det: float = 0.9) -> MarkovTables:
    """The exact knowledge of the generator for ``seed`` (without simulating a history).

    Same tables as ``medical_history(..., seed=seed, det=det).knowledge`` for any
    ``n_views``, ``view_size`` and ``attendance`` (the model has its own seed stream):
    ``tables[0]`` (18, 1, 19) float64 is BK^sv, ``tables[L]`` (18, 19**L, 19) the
    order-L tables (see :class:`MedicalHistory`). Takes about 0.05 s.
    """
    check_whole("seed", seed, 0)
    if not 0.0 <= det <= 1.0:
        raise InputError(f"det must be in [0, 1], got {det!r}")
    return build_model(np.random.default_rng(seed_streams(int(seed))[0]), float(det))

"""Synthetic longitudinal medical history: the paper's experimental setting.

:func:`medical_history` generates a history of weekly views (docs/algorithms.md §2.5,
docs/findings.md "Set-up") together with the *exact* knowledge of its generator, in the shared
format of :mod:`dpriv.knowledge.tables`:

* QIs ``age`` 45–74, ``gender`` 1–2, ``weight`` 60–89 (int64, fixed per respondent);
* sensitive ``exam_result`` with the 19 values of :data:`VALUES` (four diseases with
  5/4/3/5 stages, then ``deceased`` and ``discharged``, which are terminal);
* 18 knowledge classes (age thirds x weight thirds x gender, :data:`CLASS_MAP`), each with
  its own disease prior and initial-stage prior (BK^sv = ``tables[0]``);
* an order-3 stage chain per class and disease (BK^seq = ``tables[3]``, with the dedicated
  order-1 / order-2 tables used for a respondent's 2nd and 3rd result, docs/findings.md
  pitfall 2), so that "full DK" is exactly the generator;
* n-step DK (docs/algorithms.md §1.2, n = 1, 2, 3) derived from the exact model with
  :meth:`MarkovTables.truncate`.

:func:`write_history` writes the history, the knowledge files and a ready-to-use
``policy.toml`` (docs/policy.md); :func:`toml_dumps` is the tiny TOML writer it uses.

For one view at cluster scale (issue "Scale out"),
:func:`dpriv.datasets.medical_view.medical_view_dask` builds the view a first release of the
same generator sees as a Dask DataFrame, partition by partition (10^7 rows and more), and
:func:`dpriv.datasets.files.write_medical_view` writes it as a Parquet dataset with the same
knowledge files and policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpriv.datasets.arguments import check_whole, is_number
from dpriv.datasets.model import (
    CLASS_MAP,
    DEFAULT_WEIGHT_VIEW_SIZE,
    ORDER,
    VALUES,
    WEIGHT_VIEWS_MAX,
    build_model,
    seed_streams,
    simulate,
)
from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap, MarkovTables

if TYPE_CHECKING:
    pass


# --------------------------------------------------------------------------------------
# The fixed part of the setting
# --------------------------------------------------------------------------------------


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
        Exact order-3 DK (full DK-BK^seq, docs/algorithms.md §1.2): ``tables[0]`` (18, 1, 19) is
        BK^sv (distribution of a respondent's first result per class), ``tables[1]``
        (18, 19, 19) and ``tables[2]`` (18, 361, 19) give her 2nd and 3rd result,
        ``tables[3]`` (18, 6859, 19) every later one (docs/findings.md pitfall 2). Zero rows:
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
        independent of :attr:`history`): ``max(n_views, 24)`` views (at most
        :data:`WEIGHT_VIEWS_MAX`: the context frequencies have long settled) of
        ``weight_view_size`` tuples (default 20,000, i.e. 4x the default size), one count per
        exam whose respondent already has 3 or more earlier results (the exams the order-3
        table predicts). Computed on first use and cached.
        """
        if self._weights is None:
            cfg = self.config
            _, self._weights = simulate(
                self.knowledge,
                n_views=min(max(int(cfg["n_views"]), 24), WEIGHT_VIEWS_MAX),
                view_size=int(cfg["weight_view_size"]),
                attendance=float(cfg["attendance"]),
                seed_seq=seed_streams(int(cfg["seed"]))[2],
                count_contexts=True,
            )
        return self._weights

    def n_step(self, n: int) -> MarkovTables:
        """n-step DK-BK^seq (docs/algorithms.md §1.2 "n-steps DK"), n = 1, 2 or 3.

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
        if n == ORDER:
            return self.knowledge
        return self.knowledge.truncate(n, self.context_weights())


# --------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------


def medical_history(
    n_views: int = 24,
    view_size: int = 5000,
    *,
    attendance: float = 1.0,
    det: float = 0.9,
    seed: int = 0,
    weight_view_size: int = DEFAULT_WEIGHT_VIEW_SIZE,
) -> MedicalHistory:
    """Generate the paper's synthetic medical history with its exact knowledge.

    docs/algorithms.md §2.5 and docs/findings.md "Set-up": ``n_views`` weekly views of exactly
    ``view_size`` exams; QIs age 45–74, gender 1–2, weight 60–89 (uniform, fixed per
    respondent); one disease per respondent for life, moving between the stages of that
    disease only, until a terminal ``deceased`` / ``discharged`` result (which appears in
    that view and ends her history). The order-3 progression model, the short-history
    tables and BK^sv are described in :class:`MedicalHistory` and ``build_model``; the
    generator draws every result from exactly those tables (``MarkovTables.predict``), so
    full DK is exact (docs/findings.md pitfall 2).

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
    for name, value, low in (("n_views", n_views, 1), ("view_size", view_size, 1), ("seed", seed, 0)):
        check_whole(name, value, low)
    check_whole("weight_view_size", weight_view_size, 1)
    if not is_number(attendance) or not 0.0 < attendance <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    if not is_number(det) or not 0.0 <= det <= 1.0:
        raise InputError(f"det must be in [0, 1], got {det!r}")
    model_ss, hist_ss, _ = seed_streams(int(seed))
    knowledge = build_model(np.random.default_rng(model_ss), float(det))
    history, _ = simulate(
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

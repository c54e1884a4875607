"""Adversary simulation over a release ledger and the average adversary gain (E10).

The adversary of docs/algorithms.md §1.1: it knows the generalization, the respondents of every
QI-group of every release (a group is a bag of respondents and a bag of sensitive values),
the whole released history, and its own background knowledge BK^sv / BK^seq, which may
differ from the defender's. For each committed release ``i`` it runs the same PK/RBK cycle
as the release loop (§1.2), with the same kernels as :mod:`dpriv.state` and :mod:`dpriv.rbk`:

1. priors of the group members: RBK^sv (E7) from its own state and its own BK^seq
   (:func:`dpriv.knowledge.revision.revise` over each member's last n' posteriors, as
   :func:`dpriv.rbk.revised_priors`; BK^sv for first-timers), or BK^sv for every
   member in a *snapshot* attack (no revision, §2.4);
2. PK^sv of every member by the Ω-estimate (E14, :func:`omega_posterior`) from the group's
   released multiset of sensitive values and the members' priors;
3. its state: the members' posteriors appended (the numbers of :func:`dpriv.state.update_state`,
   kept in arrays: :class:`dpriv.adversary.window_state.WindowState`).

The gain of release ``i`` (E10) is the mean over the kept tuples of
``PK(r, true s)_s - m_Q(s)/|Q|``: the posterior on the truth minus the frequency-only
baseline. It is signed (docs/findings.md pitfall 4) and reported as measured; suppressed tuples
do not enter it, so read it next to the release's suppression.

**Tail risk** (issue 11): next to the mean, each release's confident share (posterior on the
true value >= 0.9), the precision of the confident claims, the largest posterior on a true
value and, with exact deductions, the certain ones (:mod:`dpriv.adversary.tail`).

**Retrospective adversary** (``adversary="retrospective"``, :mod:`dpriv.adversary.retrospective`):
every release attacked again after each later one (forward-backward over each respondent's
history under the same tables, one Ω per group); one row per (release, as_of).

**Exact deductions** (``deductions=True``, :mod:`dpriv.adversary.deductions`): the values the
model, the group counts and presence exclude for certain, deduced from the releases known at
the time of the attack, mask both adversaries' priors and posteriors.

**Membership from QIs alone** (``membership="qi"``, :func:`dpriv.adversary.linkage.qi_linkage`):
the gains and tail are still those of the adversary that knows the membership; two columns
more, ``n_pinned`` and ``share_pinned``, say per release how many of those respondents an
adversary with only everyone's QIs, the published boxes and the group sizes pins to one group
(the known-membership numbers hold exactly for them).

Reading the ledger and the history into what the adversary observes is
:mod:`dpriv.attack_input`'s job; this module runs the adversaries on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.adversary.compiled import CompiledTables
from dpriv.adversary.groups import gain_terms, masked_omega
from dpriv.adversary.history_revision import PosteriorHistory
from dpriv.adversary.masks import MasksAsOf, deductions_available
from dpriv.adversary.retrospective import retrospective_attack
from dpriv.adversary.tail import histogram_gain, tail_risk
from dpriv.adversary.window_state import WindowState
from dpriv.attack_files import gain_path, save_gain  # noqa: F401  (public here)
from dpriv.attack_frames import (  # noqa: F401  (the columns are public here)
    GAIN_COLUMNS,
    LINKAGE_COLUMNS,
    PRIOR_COLUMNS,
    RETRO_COLUMNS,
    finished,
    paper_frame,
    retro_frame,
)
from dpriv.attack_input import AttackInput
from dpriv.attack_members import ReadRelease
from dpriv.attack_policy import with_python_hint
from dpriv.attack_share import AttackShare
from dpriv.errors import InputError, KnowledgeFileError, PolicyError
from dpriv.inputs import HistoryInput
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.pending_interrupt import as_interrupt
from dpriv.policy import ReleasePolicy
from dpriv.sources import AdversaryKnowledge

#: Adversaries :func:`attack` simulates.
ADVERSARIES = ("paper", "retrospective")

#: Readings of the paper adversary's revision (:func:`attack` ``revision``): (E7) over the last
#: n' posteriors, or (E5)/(E6) over every allowed full history
#: (:mod:`dpriv.adversary.history_revision`).
REVISIONS = ("window", "history")

#: What the adversary is given of the QI-group membership (:func:`attack` ``membership``).
MEMBERSHIPS = ("known", "qi")


@dataclass
class AttackStep:
    """What the adversary computes for one release (arrays aligned on the kept tuples).

    Attributes
    ----------
    release : int, the release index i
    respondents : ndarray, shape (n,), the respondent ids of the kept tuples (group order)
    groups : ndarray of int64, shape (n,), the released ``qi_group`` of each
    s_true : ndarray of int64, shape (n,), true sensitive code (policy domain order)
    priors : ndarray of float64, shape (n, M), RBK^sv (or BK^sv) used for PK
    posteriors : ndarray of float64, shape (n, M), PK^sv (E14); rows sum to 1
    gain : ndarray of float64, shape (n,), per-tuple term of (E10), in [-1, 1]
        (:func:`dpriv.adversary.groups.gain_terms`)
    seconds : float, wall time of this release's revision + posterior + state update
    frequencies : ndarray of float64, shape (n,), m_Q(true s)/|Q| of each tuple
    allowed : ndarray of bool, shape (n, M), or None: the exact-deduction mask used
    """

    release: int
    respondents: np.ndarray = field(repr=False)  # the arrays are private: the repr shows none
    groups: np.ndarray = field(repr=False)
    s_true: np.ndarray = field(repr=False)
    priors: np.ndarray = field(repr=False)
    posteriors: np.ndarray = field(repr=False)
    gain: np.ndarray = field(repr=False)
    seconds: float
    frequencies: np.ndarray | None = field(default=None, repr=False)
    allowed: np.ndarray | None = field(default=None, repr=False)

    @property
    def adversary_gain(self) -> float:
        """ρ_i (E10): mean of :attr:`gain`; NaN when the release kept no tuple."""
        return float(self.gain.mean()) if self.gain.size else float("nan")

    def row(self) -> dict:
        """The release's row of :data:`GAIN_COLUMNS` (gain, N, tail risk, prior, histogram)."""
        risk = tail_risk(self.posteriors, self.s_true, self.frequencies, self.allowed)
        before = tail_risk(self.priors, self.s_true, self.frequencies)
        prior = {"prior_gain": before.adversary_gain, "prior_confident_share": before.confident_share}
        prior["histogram_gain"] = histogram_gain(self.priors, self.s_true)
        return {**risk.as_row(), "release": self.release, "adversary_gain": self.adversary_gain, **prior}


def attack_steps(
    ledger: Ledger | str | Path,
    history: HistoryInput,
    policy: ReleasePolicy | dict | None,
    knowledge: str | AdversaryKnowledge,
    *,
    corpus: pd.DataFrame | None = None,
    deductions: bool = True,
    attendance: float | None = None,
    revision: str = "window",
) -> Iterator[AttackStep]:
    """Run the adversary's PK/RBK cycle over the committed releases, one step per release.

    Same parameters and errors as :func:`attack` (raised at the call, before iterating);
    yields an :class:`AttackStep` per committed release, in release order (the per-tuple
    view of (E10), for reports and tests).
    """
    if revision not in REVISIONS:
        raise PolicyError(f"unknown revision {revision!r}; valid: {', '.join(REVISIONS)}")
    share = AttackShare()
    inp = _input(share, ledger, history, policy, knowledge, corpus)
    return iter(()) if inp is None else _paper_steps(inp, deductions, attendance, revision, share)


def _input(share: AttackShare, ledger, history, policy, knowledge: str, corpus) -> AttackInput | None:
    """``share.input(...)``; a knowledge file of the ledger's own policy (``policy`` None) not
    found gets where it was looked for and what to pass (:func:`with_python_hint`)."""
    try:
        return share.input(ledger, history, policy, knowledge, corpus)
    except KnowledgeFileError as exc:
        raise (exc if policy is not None else with_python_hint(exc, ledger, history)) from None


def _paper_steps(
    inp: AttackInput, deductions: bool, attendance: float | None, revision: str, share: AttackShare
) -> Iterator[AttackStep]:
    """The deduction masks (now, so that their errors are raised at the call), then the steps."""
    masks = share.masks(inp, attendance) if deductions else None
    return _steps(inp.reads, inp.history, inp.policy, inp.adv, masks, revision, attendance)


def _steps(
    reads: list[ReadRelease],
    history: pd.DataFrame,
    policy: ReleasePolicy,
    adv: AdversaryKnowledge,
    masks: MasksAsOf | None = None,
    revision: str = "window",
    attendance: float | None = None,
) -> Iterator[AttackStep]:
    """The PK/RBK cycle of :func:`attack_steps` (arguments already checked)."""
    window = adv.window
    whole = revision == "history" and adv.revise
    m = len(policy.sensitive_domain)
    state = WindowState(history[policy.id], m, window) if adv.revise and not whole else None  # (E7)'s inputs
    past = PosteriorHistory(m) if whole else None
    compiled: dict[int, CompiledTables] = {}  # per tables object (IE mines new ones each release)
    for k, read in enumerate(reads):
        i, mem, s_true, r_s, r_counts = read.index, read.members, read.s_true, read.s_released, read.counts
        allowed = masks.release(k) if masks is not None else None
        tick = time.perf_counter()
        tables = adv.tables_before(history, policy, i)
        if whole:
            comp = compiled.setdefault(id(tables), CompiledTables(tables))
            priors = past.revise(mem[policy.id].to_numpy(), tables.classes.classify(mem), comp, attendance)
        elif adv.revise:
            rows = state.rows(mem[policy.id])
            priors = state.revised(rows, tables.classes.classify(mem), tables)
        else:
            priors = tables.tables[0][tables.classes.classify(mem), 0]
        groups = mem["last_group"].to_numpy(dtype=np.int64)
        post = masked_omega(groups, r_s, priors, allowed)
        labels = np.unique(groups)
        gi = np.searchsorted(labels, groups)
        freq = r_counts[gi, s_true] / r_counts[gi].sum(axis=1)
        gain = gain_terms(groups, post, s_true, freq, priors, allowed)  # 0.0 where (E14) gives freq
        if whole:
            n_all = len(read.view)
            past.append(mem[policy.id].to_numpy(), post, (n_all - len(mem)) / n_all if n_all else 0.0)
        elif adv.revise:
            state.append(rows, post)
        yield AttackStep(
            release=i,
            respondents=mem[policy.id].to_numpy(),
            groups=groups,
            s_true=s_true,
            priors=priors,
            posteriors=post,
            gain=gain,
            seconds=time.perf_counter() - tick,
            frequencies=freq,
            allowed=allowed,
        )


def _retrospective(
    inp: AttackInput | None,
    deductions: bool,
    attendance: float | None,
    partitions: int | None,
    share: AttackShare,
) -> pd.DataFrame:
    """The retrospective adversary over every committed release (:data:`RETRO_COLUMNS`).

    The tables are the adversary's at the last release (IE: mined before it; snapshot: BK^sv
    only, so no release informs another). ``partitions``: run the forward-backward on Dask over
    that many partitions of respondents (:func:`dpriv.adversary.retrospective.retrospective_attack`).
    """
    if inp is None:
        return retro_frame([])
    tables, observed = share.observed(inp)
    if not inp.adv.revise:
        tables = MarkovTables(tables.values, tables.classes, tables.tables[:1])
    masks = share.masks(inp, attendance) if deductions else None
    rows = retrospective_attack(observed, tables, allowed=masks, attendance=attendance, partitions=partitions)
    return retro_frame(rows)


@as_interrupt  # Ctrl-C inside a numba kernel: a KeyboardInterrupt, not a SystemError
def attack(
    ledger: Ledger | str | Path,
    history: HistoryInput,
    policy: ReleasePolicy | dict | None,
    knowledge: str,
    *,
    corpus: pd.DataFrame | None = None,
    on_release: Callable[[int, dict], None] | None = None,
    adversary: str = "paper",
    deductions: bool = True,
    attendance: float | None = None,
    membership: str = "known",
    revision: str | None = None,
    share: AttackShare | None = None,
) -> pd.DataFrame:
    """Simulate the §1.1 adversary over every committed release; the gain (E10) per release.

    Parameters
    ----------
    ledger : Ledger or path
        A release ledger (:func:`dpriv.release.release_history`); its private state gives
        the QI-group membership the adversary is assumed to know (§1.1 (ii)).
    history : pandas or Dask DataFrame, or the path of a CSV or Parquet file
        The original history that was released (policy id, time, QIs, sensitive): the true
        values for (E10) and the QIs of the knowledge classes; IE mining reads it too. Its
        policy columns are normalised as ``release_history`` normalised them
        (:func:`dpriv.inputs.attack_history`: text ids, ``category`` columns, NFC, dates
        as days). A Dask frame is read whole for those; the retrospective adversary then runs
        its forward-backward on Dask over ``history.npartitions`` partitions of respondents
        (same rows as on pandas).
    policy : ReleasePolicy, dict (its fields) or None
        The policy of the release (columns, domains, ``[knowledge]`` files); None: the one the
        ledger records, as ``dpriv attack`` without ``--policy`` (:mod:`dpriv.attack_policy`: a
        given one may differ in thresholds and knowledge files only, not in its columns).
    knowledge : str
        The adversary's knowledge, one of :data:`dpriv.sources.KNOWLEDGE_NAMES` (see
        :func:`adversary_knowledge`); it may differ from the defender's.
    corpus : pandas.DataFrame, optional
        SPM corpus for ``knowledge="spm"`` (instead of a ``spm:PATH`` file).
    on_release : callable, optional
        Paper adversary: called as ``on_release(i, {"adversary_gain", "n_tuples",
        "seconds"})`` after each release (progress output).
    adversary : {"paper", "retrospective"}
        ``"paper"``: each release attacked when it comes out (the PK/RBK cycle);
        ``"retrospective"``: every release attacked again after each later one
        (:mod:`dpriv.adversary.retrospective`).
    deductions : bool, default True
        Mask priors and posteriors with the exact deductions known at the time of the attack
        (:mod:`dpriv.adversary.deductions`; PolicyError if it is not installed). On by default,
        as in ``dpriv attack``: an auditor wants the strongest adversary; ``False`` gives the
        paper's adversary exactly (``dpriv experiment paper`` uses it for Fig. 3-6).
    attendance : float in (0, 1], optional
        The model's weekly exam probability q, if the adversary knows it: absences become
        evidence (retrospective) and, with q = 1, the presence channel of the deductions.
    membership : {"known", "qi"}
        ``"qi"`` appends :data:`LINKAGE_COLUMNS` per release (merged on ``release``):
        ``n_pinned`` (int64), the respondents an adversary with only everyone's QIs, the
        published boxes and the group sizes pins to one group, and ``share_pinned`` (float64,
        per released tuple). The gains stay those of the known-membership adversary; they hold
        exactly for the pinned respondents.
    revision : {"window", "history"}, optional
        The paper adversary's revision (docs/algorithms.md §1.4): ``"window"`` (the default)
        (E7) over the last n' posteriors, as the paper and the defender; ``"history"`` (E5)
        with the weights (E6) over every full history the model allows, a forward pass
        (:mod:`dpriv.adversary.history_revision`; with ``attendance`` a missing week is one
        step of the weekly chain). The retrospective adversary always reads whole histories:
        ``"window"`` is refused with it.
    share : AttackShare, optional
        Passed to several attacks of the same ledger, history, policy and knowledge (``dpriv
        demo``'s two adversaries): what the first computed that a later one needs (the read
        releases, the exact deductions) is taken from it (:mod:`dpriv.attack_share`); the
        frames are the same as without it.

    Returns
    -------
    pandas.DataFrame
        Paper adversary: one row per committed release, in order: ``release`` (int64),
        ``adversary_gain`` (float64, ρ_i of (E10), signed, in [-1, 1]; NaN if the release kept
        no tuple; a tuple whose group's priors are one, which (E14) gives its frequencies, adds
        0.0, not an ulp: :func:`dpriv.adversary.groups.gain_terms`), ``n_tuples`` (int64, kept
        tuples N), then the tail risk (:class:`dpriv.adversary.tail.TailRisk`): ``confident_share``,
        ``confident_precision``, ``n_confident``, ``max_posterior``, ``n_certain`` (NA
        without deductions), then ``prior_gain`` (float64, the same mean with the adversary's
        prior RBK^sv, before this release's counts and deductions, in place of its posterior) and
        ``prior_confident_share`` (float64, tuples whose prior on the true value is >= 0.9,
        over N), ``histogram_gain`` (:func:`dpriv.adversary.tail.histogram_gain`); NaN when
        N = 0. Retrospective: one row per (release, as_of), columns
        :data:`RETRO_COLUMNS`. Then :data:`LINKAGE_COLUMNS` with ``membership="qi"``, and last
        ``views_sha`` (text, 16 hex digits: the releases 1..release, 1..as_of of a
        retrospective row, the row was computed on, :mod:`dpriv.attack_stamp`), by which
        :func:`save_gain` and ``render_report(gains=...)`` refuse the frame for another ledger.
        Empty (same columns) for a ledger without releases.

    Raises
    ------
    PolicyError
        A policy reading the releases with other columns than the ledger's (naming the fields);
        unknown knowledge, adversary, membership or revision (the message lists the valid
        ones), ``revision="window"`` with the retrospective adversary, a missing table file,
        deductions without their module.
    InputError
        A history that is not the released one (missing view, respondent or value), a bad
        SPM corpus, an attendance outside (0, 1], QIs that do not fit the released boxes.
    LedgerError
        Not a ledger, a ledger whose files lack the expected columns, or (policy None) none yet.
    """
    if adversary not in ADVERSARIES:
        raise PolicyError(f"unknown adversary {adversary!r}; valid: {', '.join(ADVERSARIES)}")
    if attendance is not None and not 0.0 < float(attendance) <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    if deductions and not deductions_available():
        raise PolicyError("exact deductions need dpriv.adversary.deductions; run without them")
    if membership not in MEMBERSHIPS:
        raise PolicyError(f"unknown membership {membership!r}; valid: {', '.join(MEMBERSHIPS)}")
    if revision is not None and revision not in REVISIONS:
        raise PolicyError(f"unknown revision {revision!r}; valid: {', '.join(REVISIONS)}")
    if adversary == "retrospective" and revision == "window":
        raise PolicyError(
            "the retrospective adversary always sums over whole histories: revision 'window' "
            "applies to the paper adversary; drop it or pass revision 'history'"
        )
    partitions = history.npartitions if is_dask(history) else None
    share = share if share is not None else AttackShare()
    inp = _input(share, ledger, history, policy, knowledge, corpus)
    if adversary == "retrospective":
        frame = _retrospective(inp, deductions, attendance, partitions, share)
        return finished(frame, inp, membership, ledger)
    steps = () if inp is None else _paper_steps(inp, deductions, attendance, revision or "window", share)
    rows = []
    for step in steps:
        row = step.row()
        rows.append(row)
        if on_release:
            on_release(step.release, {**row, "seconds": step.seconds})
    return finished(paper_frame(rows), inp, membership, ledger)

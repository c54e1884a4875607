"""The release gate against the retrospective adversary (issue 12, direction 6).

A release's gain as printed when it goes out is not its gain for good: every later release
raises it (docs/algorithms.md §1.1; :mod:`dpriv.adversary.retrospective`). With
``policy.retro_max_gain`` set, before release ``i`` is written the defender attacks its own
history as the strongest adversary dpriv builds would: the retrospective adversary with the
defender's model (``[knowledge]``, the tables release ``i`` is revised with), QI-group
membership known (§1.1 (ii)), the exact deductions of :mod:`dpriv.adversary.deductions`
as masks and, with ``policy.retro_attendance``, absences as evidence, reads releases
``1 .. i`` as of ``i`` and scores each with (E10). The gate holds
when every one of those mean gains is at most the bound; :func:`dpriv.release.release_history`
then commits, else it regroups release ``i`` with ``retro_lever`` tightened (``j``, ``t`` or ``rbk_closeness``
halved, ``k`` doubled; up to ``retro_retries`` times) and finally refuses it: nothing is
written and the ledger stays at ``i - 1``.

With ``policy.retro_posterior_bound`` set, the same reading also bounds each respondent: a
member of release ``i`` with a tuple of releases ``1 .. i`` that the adversary reads at or above
the bound on some value, as of ``i``, is withheld from release ``i`` (suppressed) and the others
are grouped again (:meth:`RetroGate.held_back`, at most :data:`HOLD_PASSES` groupings, then
refused). Withholding her removes her evidence of release ``i``; what earlier releases
published cannot be taken back (``n_over`` in the record counts who stays over).

What the gate reads is what the adversary of ``dpriv attack --adversary retrospective`` reads
from the ledger (:mod:`dpriv.attack_input`: the state's ``last_group`` membership, the released
group counts, the true values of the history), built the same way from the release about to
be committed, so without deductions its figures equal that attack's ``as_of = i`` rows (a
test checks it). With deductions the gate masks every release's evidence with the deductions
known as of ``i``, where the attack masks each release's evidence with those known when that
release came out (the evidence of a release as read when it came out): the two then differ
slightly (0.1009 for the gate vs 0.1004 for the attack on one 3 x 300 history).
It runs on the client: the members and true values of every release so far (int64/float64
arrays, O(tuples released)). The forward-backward reads the as-of steps of the whole history
at every release but keeps each step's forward message once computed and runs one backward
pass at the end (:func:`dpriv.adversary.retro_last.retrospective_last`: the same bytes as the
last snapshot of the attack's kernel, O(T) steps per respondent at release T instead of
O(T^2)). When the releases and masks the previous check read are unchanged it continues that
reading (:class:`dpriv.adversary.retro_last.Reading`: one as-of step per new release); in
practice only without deductions, since with them the masks of earlier releases change at
every release and, through Ω, the evidence of every later release
(benchmarks/bench_gate.py has the figures; docs/policy.md#release-gate). The deductions start
from those of the committed releases while the model's support stays (:mod:`dpriv.gate_deductions`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from dpriv._dispatch import to_pandas
from dpriv.adversary.masks import deductions_available
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.retro_last import Reading
from dpriv.adversary.retrospective import AsOf
from dpriv.adversary.tail import tail_risk
from dpriv.anatomy import expand_sensitive
from dpriv.attack_input import observed_releases, read_releases
from dpriv.attack_members import ReadRelease, members_of
from dpriv.errors import PolicyError
from dpriv.gate_lever import tightened, used
from dpriv.gate_record import GateCheck  # the check's result (and WorstGain): imported from here too
from dpriv.gate_record import WorstGain as WorstGain  # re-exported
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.policy_fix import policy_change
from dpriv.policy_gate import gate_on
from dpriv.released import GROUP

if TYPE_CHECKING:
    from dpriv.gate_deductions import GateDeductions
    from dpriv.view_steps import ViewRelease


class HeldBack(NamedTuple):
    """One grouping of a release that the gate's posterior hold-back settled on
    (:meth:`RetroGate.held_back`): ``run``'s output for the members kept, the candidate release
    the gate's adversary read, and its check (``withheld`` and ``groupings`` set)."""

    out: ViewRelease
    candidate: ReadRelease
    check: GateCheck


class RetroGate:
    """The committed releases as the retrospective adversary reads them, and the check of a
    candidate release against ``policy.retro_max_gain``.

    Parameters
    ----------
    policy : ReleasePolicy
        Resolved; ``retro_max_gain`` bounds the gains, ``retro_posterior_bound`` the posteriors
        (at least one of them is set).
    reads : list of ReadRelease
        The committed releases (:func:`dpriv.attack_input.read_releases`), in order.
    """

    def __init__(self, policy: ReleasePolicy, reads: list[ReadRelease] | None = None) -> None:
        if not gate_on(policy):
            raise ValueError("RetroGate needs policy.retro_max_gain or policy.retro_posterior_bound")
        self.policy = policy
        self.reads: list[ReadRelease] = list(reads or [])
        self.reading: Reading | None = None  # the last check's reading, continued by the next
        self.deduced: GateDeductions | None = None  # the checks' deductions, started from the committed

    @classmethod
    def from_ledger(cls, ledger: Ledger, history: pd.DataFrame, policy: ReleasePolicy) -> RetroGate:
        """The gate over the releases ``ledger`` has committed (``history``: pandas, the
        released history, normalised as the release read it)."""
        committed = [r["index"] for r in ledger.committed()]
        return cls(policy, read_releases(ledger, committed, history, policy) if committed else [])

    def candidate(
        self,
        index: int,
        view: pd.DataFrame,
        state: pd.DataFrame,
        released: pd.DataFrame,
        sensitive: pd.DataFrame | None = None,
    ) -> ReadRelease:
        """Release ``index`` about to be committed, read as the attack reads the ledger: the
        original view (pandas), the new respondent state (its ``last_release == index`` rows
        are the kept members), the released view and, for Anatomy, the sensitive table."""
        values = released if sensitive is None else expand_sensitive(sensitive, self.policy)
        found = members_of(state, index, view, values, self.policy)
        return ReadRelease(index=index, view=view, **found._asdict(), released=released)

    def check(
        self, candidate: ReadRelease, tables: MarkovTables, grouped: ReleasePolicy, regroupings: int = 0
    ) -> GateCheck:
        """The retrospective adversary's gains of the committed releases and ``candidate`` as
        of ``candidate``, with the model ``tables`` (the defender's at that release);
        ``grouped``: the policy the candidate was grouped with after ``regroupings``
        tightenings of the gate's own."""
        tick = time.perf_counter()
        observed, masks = self.evidence(candidate, tables)
        last = self.read(observed, tables, masks)
        gains, confident, over = {}, 0.0, []
        cap = self.policy.retro_posterior_bound
        for k, (o, post) in enumerate(zip(observed, last.posteriors)):
            risk = tail_risk(post, o.truth, o.frequencies(), None if masks is None else masks[k])
            gains[o.index] = risk.adversary_gain
            if np.isfinite(risk.confident_share):
                confident = max(confident, risk.confident_share)
            if cap is not None and len(post):
                over.append(o.respondent[post.max(axis=1) >= cap])
        bound = self.policy.retro_max_gain
        params, seconds = used(grouped), time.perf_counter() - tick
        ids = np.unique(np.concatenate(over)) if over else np.empty(0, dtype=np.int64)
        exact = self.deduced is None or self.deduced.certain  # None: without the deductions module
        return GateCheck(
            candidate.index, gains, confident, bound, params, regroupings, seconds, ids, 0, cap, 1, exact
        )

    def evidence(
        self, candidate: ReadRelease, tables: MarkovTables
    ) -> tuple[list[ObservedRelease], list[np.ndarray] | None]:
        """The committed releases and ``candidate`` as the adversary observes them, and the
        exact-deduction masks (bool (n_i, M) per release) known as of ``candidate`` (None
        without the deductions module), started from the committed releases' (gate_deductions)."""
        observed = observed_releases([*self.reads, candidate], self.policy, tables.classes)
        if not deductions_available():
            return observed, None
        if self.deduced is None:
            from dpriv.gate_deductions import GateDeductions

            self.deduced = GateDeductions(self.policy.retro_attendance)
        return observed, self.deduced.masks(observed, tables, candidate)

    def read(self, observed: list[ObservedRelease], tables: MarkovTables, masks) -> AsOf:
        """Posteriors of every release as of the last of ``observed`` (the retrospective
        adversary's last snapshot), continuing the previous check's reading when it can."""
        if self.reading is None:
            self.reading = Reading(tables, self.policy.retro_attendance)
        return self.reading.read(observed, masks, tables)

    def accept(self, candidate: ReadRelease) -> None:
        """Record ``candidate`` as committed (the next checks read it and start from its deductions)."""
        self.reads.append(candidate)
        if self.deduced is not None:
            self.deduced.accept(candidate)

    def release(
        self, run: Callable[..., ViewRelease], original: pd.DataFrame, index: int, tables: MarkovTables
    ) -> ViewRelease:
        """Release ``index`` under the gate: ``run(policy, withheld=ids)`` (one step of the
        release loop, :func:`dpriv.release.release_view` bound to its view and state, returning
        the record, the released view, the new state and an Anatomy sensitive table or None)
        with the gate's policy. With ``retro_posterior_bound``, the members the check finds
        over it are withheld and the release grouped again without them, until none is (at most
        :data:`HOLD_PASSES` groupings, then PolicyError). With ``retro_max_gain``, a release
        over it is regrouped with ``retro_lever`` tightened, at most ``retro_retries`` times,
        then PolicyError (nothing is written here). ``original``: the view on pandas (the true
        values); ``tables``: the defender's at ``index``. Returns ``run``'s
        :class:`~dpriv.view_steps.ViewRelease` with the record's ``gate`` set."""
        pol, check = self.policy, None
        for attempt in range(self.policy.retro_retries + 1):
            try:
                held = self.held_back(run, pol, original, index, tables, attempt)
            except PolicyError as exc:  # a regrouping that breaks another requirement (suppression)
                if check is None:
                    raise
                raise PolicyError(f"{refusal(check)}; {regrouped_with(pol)}: {exc}") from None
            check = held.check
            if check.ok:
                self.accept(held.candidate)
                return held.out._replace(metrics=replace(held.out.metrics, gate=check.as_record()))
            pol = tightened(pol)
        raise PolicyError(refusal(check))

    def held_back(
        self, run: Callable[..., ViewRelease], pol: ReleasePolicy, original: pd.DataFrame, index: int,
        tables: MarkovTables, attempt: int,
    ) -> HeldBack:  # fmt: skip
        """``run``'s output, the candidate and its check (:class:`HeldBack`) after withholding every
        member of release ``index`` the check finds over ``retro_posterior_bound`` (none without it)."""
        withheld = original[self.policy.id].to_numpy()[:0]  # no ids yet (text ids: object, not pandas' str)
        seconds = 0.0
        for n in range(1, HOLD_PASSES + 1):
            try:
                out = run(pol, withheld=withheld)
            except PolicyError as exc:  # e.g. the suppression, once members are withheld
                if not withheld.size:
                    raise
                bound = self.policy.retro_posterior_bound
                raise PolicyError(
                    f"release {index}: the release gate withheld {withheld.size} member(s) read at or "
                    f"above retro_posterior_bound = {bound:g}, then: {exc}"
                ) from None
            candidate = self.candidate_of(out, original, index)
            check = self.check(candidate, tables, pol, attempt)
            seconds += check.seconds
            # the withheld are out of the view, so none of them is a member here
            more = np.intersect1d(check.over, candidate.members[self.policy.id])
            if not more.size:
                held = replace(check, withheld=int(withheld.size), groupings=n, seconds=seconds)
                return HeldBack(out, candidate, held)
            withheld = np.union1d(withheld, more)
        raise PolicyError(held_refusal(check, index, withheld.size))

    def candidate_of(self, out: ViewRelease, original: pd.DataFrame, index: int) -> ReadRelease:
        """The candidate of ``run``'s output (record, released view, new state, sensitive)."""
        released, new_state, sensitive = out.released, out.state, out.sensitive
        # an Anatomy release's values are in its sensitive table (``sensitive``)
        cols = [GROUP] if sensitive is not None else [GROUP, self.policy.sensitive]
        values = to_pandas(released[cols])
        # only this release's members reach the client, not the whole state
        members = to_pandas(new_state[new_state["last_release"] == index])
        return self.candidate(index, original, members, values, sensitive)


#: Groupings of one release the posterior hold-back may try (``retro_posterior_bound``): each
#: withholds the members over the bound and groups the rest again, which can put a few others
#: over it (the three 24 x 5,000 histories of docs/results/retro-bound-24x5000 never needed
#: more; at 4 one release of them was refused, after 5 groupings it held).
HOLD_PASSES = 8


def held_refusal(check: GateCheck, index: int, n_withheld: int) -> str:
    """The message of a release whose members stay over ``retro_posterior_bound``."""
    fix = policy_change(
        "a stricter policy (smaller t or j, larger k), posterior_bound, or a higher retro_posterior_bound",
        index - 1,
    )
    return (
        f"release {index} refused by the release gate: after withholding {n_withheld} member(s) over "
        f"retro_posterior_bound = {check.posterior_bound:g} and grouping {HOLD_PASSES} times, members "
        "of the release are still read at or above it by the retrospective adversary; nothing was "
        f"written and the ledger stays at the last committed release; what can help: {fix} "
        "(docs/policy.md#retro-posterior-bound)"
    )


def _params(values: dict) -> str:
    return ", ".join(f"{k} = {v:g}" for k, v in values.items())


def regrouped_with(grouped: ReleasePolicy) -> str:
    """The words naming a regrouping's parameters (when it broke another requirement)."""
    return f"regrouped with {_params(used(grouped))}"


def refusal(check: GateCheck) -> str:
    """The message of a release the gate refuses."""
    release, gain = check.worst
    n = check.regroupings
    tried = f" (regrouped {n} time(s), {_params(check.used)})" if n else ""
    if release < check.as_of:  # an earlier, published release read again
        fix = (
            f"release {release} is published already and regrouping release {check.as_of} did not "
            "bring its gain under the bound: raise retro_max_gain, or a stricter policy (smaller "
            "t or j, larger k)"
        )
    else:
        fix = (
            "a stricter policy (smaller t or j, larger k), more retro_retries, another retro_lever "
            "or a higher retro_max_gain"
        )
    fix = policy_change(fix, check.as_of - 1)
    return (
        f"release {check.as_of} refused by the release gate{tried}: the retrospective adversary "
        f"(the defender's model, exact deductions) would gain {gain:.4f} on release {release} as "
        f"of release {check.as_of}, above retro_max_gain = {check.bound:g}; nothing was written "
        f"and the ledger stays at the last committed release; what can help: {fix} "
        "(docs/policy.md#release-gate)"
    )

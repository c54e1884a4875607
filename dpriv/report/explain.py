"""What the report says in words: the title, the adversary knowledges, the gain, KPR, the tail,
and the verdict of every release against the policy's thresholds.

Verdict (:func:`verdicts`): a release is *within the policy* when its achieved values meet
every threshold of the policy -- smallest QI-group >= k, largest EMD <= t, largest JS <= j
(the same comparison as :func:`dpriv.criteria.breaks`, with its 1e-9 tolerance), suppressed
share of the view <= ``max_suppression`` (and smallest number of distinct sensitive values
>= l for ``mondrian-l``) -- and *beyond the policy* otherwise, naming the thresholds it
crosses. A threshold the release method does not guarantee
(:func:`dpriv.criteria.promised`, e.g. j for a Mondrian baseline) is still compared: the
data owner's policy states it, whichever method ran.

Suppression has one unit everywhere in the report: percent of the view's tuples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpriv.attack_files import GAIN_FILE, RETRO_FILE
from dpriv.criteria import breaks, promised
from dpriv.ledger import ATTACK_DIR

#: One sentence per adversary knowledge of ``dpriv attack --knowledge`` (dpriv.sources).
KNOWLEDGE_TEXT: dict[str, str] = {
    "snapshot": (
        "knows only the prior BK^sv (how frequent each sensitive value is for a respondent like "
        "her) and attacks every release on its own, without linking releases over time"
    ),
    "dk": (
        "knows the exact model of how a sensitive value evolves over time (the generator's "
        "disease-progression tables, DK-BK^seq) and revises its belief about every respondent "
        "after each release"
    ),
    "dk-n": (
        "knows the same domain model cut to the last n values (dk-1, dk-2, dk-3: an n-step "
        "Markov model), a weaker version of dk"
    ),
    "spm": (
        "mines the sequences of sensitive values from an external corpus of similar histories "
        "(SPM-BK^seq, Algorithm 3 on another population) and revises its belief after each release"
    ),
    "ie": (
        "mines the sequences of sensitive values from the original views released so far "
        "(IE-BK^seq, the same data the defender mines: the strongest mining adversary)"
    ),
}

GAIN_TEXT = (
    "Adversary gain (E10): the mean, over the released tuples, of the adversary's posterior "
    "probability on a respondent's true sensitive value minus that value's frequency in her "
    "QI-group -- how much better than reading the group's histogram the adversary guesses; "
    "0 = nothing learnt beyond the published group, 1 = every value named with certainty. "
    "Suppressed tuples do not enter it. Dotted: the same adversary's gain had the release been "
    "one QI-group (its histogram only; column histogram_gain), what its own knowledge predicts "
    "beyond the counts whatever the grouping: read the solid line against it. (Dashed lines are "
    "the retrospective adversary's, in the tail-risk plot below.)"
)

KPR_TEXT = (
    "KPR (Knowledge Protection Rate, E21): the share of the view's respondents that an attacker "
    "who knows their quasi-identifiers can NOT single out, by finding exactly one matching "
    "record in synthetic microdata drawn inside the released QI-groups (100 % = nobody singled "
    "out). Even the original view matched against itself does not reach 0 %: respondents who "
    "share their QI profile, or whose profile falls in a bin (E22) with another one, cannot be "
    "singled out either. That value is the dotted reference line; read a release's KPR against "
    "it, not against 0: what the release adds is its distance above the line (below it, the drawn "
    "microdata single out more respondents than the original itself would)."
)

TAIL_TEXT = (
    "Tail risk: the share of the released tuples whose posterior on the true sensitive value is "
    "at least 0.9 -- respondents whose value the adversary names with 90 % confidence and is "
    "right about; the mean gain hides them. Solid lines: the paper adversary, each release "
    f"attacked when it comes out ({ATTACK_DIR}/{GAIN_FILE.format(name='<knowledge>')}, column "
    "confident_share); dashed: the retrospective adversary, each release attacked again after the "
    f"last one ({ATTACK_DIR}/{RETRO_FILE.format(name='<knowledge>')}). The CSV files give the "
    "precision of those claims and the certain deductions."
)

DEFENDER_TEXT = (
    "Wide grey band: the defender's own posteriors (metrics.json), the Ω posteriors (E14) the "
    "release loop computed before writing each release, with its own model of the adversary "
    "(the policy's [knowledge]) and the true QI-group membership: what the paper adversary with "
    "that same knowledge reads before any exact deduction, so its line runs on the band when "
    "the deductions exclude nothing, and the band usually lies above adversaries of weaker "
    "knowledge. "
    "The retrospective adversary reads each respondent's whole history at once (forward-backward) "
    "instead of pushing the earlier posteriors forward (E7) as the defender does, so its share "
    "may lie above or below the band (compare confident_precision in the CSV files)."
)


#: What each column of the verdict table holds (:class:`Check` names), for its caption.
CHECK_TEXT: dict[str, str] = {
    "k": "k is the smallest QI-group size",
    "l": "l the smallest number of distinct sensitive values in a group",
    "t": "t the largest EMD between a group and the view",
    "j": "j the largest JS divergence within a group's revised knowledge",
    "rbk_closeness": (
        "rbk_closeness the largest total variation between a group's sensitive distribution and "
        "its members' mean revised prior"
    ),
    "retro_gain": (
        "retrospective gain the largest mean gain (E10) of the retrospective adversary over "
        "releases 1..i as of release i (the release gate)"
    ),
    "suppression": "suppression the share of the view's tuples left out (percent of the view)",
}


def knowledge_key(name: str) -> str:
    """The :data:`KNOWLEDGE_TEXT` key of a knowledge name as found in a file name or passed to
    ``dpriv attack`` (``"dk-2"`` -> ``"dk-n"``, ``"spm:corpus.csv"`` or ``"spm_x"`` ->
    ``"spm"``, ``"snapshot:dk-1"`` -> ``"snapshot"``); ``""`` when it is none of them."""
    name = str(name)
    for key in ("snapshot", "spm", "ie"):
        if name == key or name.startswith((f"{key}:", f"{key}_", f"{key}-")):
            return key
    if name == "dk":
        return "dk"
    if name.startswith("dk-") and name[3:].isdigit():
        return "dk-n"
    return ""


def describe_knowledge(name: str) -> str:
    """One sentence on what an adversary with this knowledge knows ("" when unknown)."""
    key = knowledge_key(name)
    if not key:
        return ""
    text = KNOWLEDGE_TEXT[key]
    if key == "dk-n":
        text = text.replace("the last n values", f"the last {name[3:]} value(s)")
    return f"The {name} adversary {text}."


_METHODS = {
    "jsreduce": "JS-reduce",
    "mondrian-l": "Mondrian, distinct l-diversity",
    "mondrian-t": "Mondrian, t-closeness",
    "mondrian-bt": "Mondrian, (B,t)-privacy",
    "histogram": "one QI-group per view (histogram reference)",
}


#: Title parameters beyond :func:`dpriv.criteria.promised`: (B,t)-privacy's own bandwidth and
#: bound (the verifier cannot check them, the method enforces them).
_TITLE_EXTRA = {"mondrian-bt": ("bt_b", "bt_t")}
#: Promised criteria the title leaves out: one group per view holds any t (EMD 0).
_TITLE_SKIP = {"histogram": ("t",)}


def title_parameters(method: str, policy: dict[str, Any]) -> tuple[str, ...]:
    """The policy keys a ``method``'s release enforces, as the title names them: k, t, j for
    JS-reduce (and ``rbk_closeness`` when set), k, l for mondrian-l, k, t for mondrian-t,
    k, bt_b, bt_t for mondrian-bt, k for the histogram reference."""
    names = promised(method, policy.get("rbk_closeness")) + _TITLE_EXTRA.get(method, ())
    return tuple(n for n in names if n not in _TITLE_SKIP.get(method, ()))


def report_title(policy: dict[str, Any]) -> str:
    """The page title from a ledger's ``policy.json``: its ``title`` when present, else the
    sensitive attribute, the QIs, the method and the thresholds it enforces
    (:func:`title_parameters`; e.g. ``"exam_result by age, gender, weight: JS-reduce release
    (k = 5, t = 0.5, j = 0.8)"``, ``"...: Mondrian, distinct l-diversity release (k = 5, l = 2)"``)."""
    if policy.get("title"):
        return str(policy["title"])
    method = str(policy.get("method", "jsreduce"))
    qi = ", ".join(map(str, policy.get("qi", [])))
    params = ", ".join(
        f"{p} = {policy[p]:g}"
        for p in title_parameters(method, policy)
        if isinstance(policy.get(p), int | float) and not isinstance(policy.get(p), bool)
    )
    return f"{policy.get('sensitive')} by {qi}: {_METHODS.get(method, method)} release ({params})"


def percent(rate: Any, digits: int = 2) -> str:
    """A share in [0, 1] as the report's one suppression unit: ``"1.25 %"`` ("-" if unknown)."""
    if rate is None or (isinstance(rate, float) and math.isnan(rate)):
        return "-"
    return f"{100 * float(rate):.{digits}f} %"


@dataclass(frozen=True)
class Check:
    """One threshold of the policy against one release's achieved value.

    ``name``: ``"k"``, ``"l"``, ``"t"``, ``"j"``, ``"retro_gain"`` (the release gate's bound
    ``retro_max_gain``) or ``"suppression"``; ``achieved``: the value
    from ``metrics.json`` (suppression as a share in [0, 1]; None when undefined, e.g. an
    empty release); ``threshold``: the policy's; ``within``: None when ``achieved`` is
    undefined; ``enforced``: whether the release method guarantees it.
    """

    name: str
    achieved: float | None
    threshold: float
    within: bool | None
    enforced: bool


@dataclass(frozen=True)
class Verdict:
    """One release against the policy: ``respondents`` (tuples of the view, one per
    respondent), ``released``, the :class:`Check` of every threshold, and ``within`` (all
    checks within, undefined ones ignored)."""

    release: int
    respondents: int | None
    released: int | None
    checks: tuple[Check, ...]

    @property
    def within(self) -> bool:
        return all(c.within is not False for c in self.checks)

    @property
    def beyond(self) -> list[str]:
        """Names of the thresholds this release crosses."""
        return [c.name for c in self.checks if c.within is False]


def _num(value: Any) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def _small_view_suppressed(policy: dict[str, Any], n_view: float | None) -> bool:
    """A view of fewer than k tuples under ``small_view = "suppress"``: released fully
    suppressed by the policy's own rule (docs/policy.md), so its suppression is not a breach."""
    k = policy.get("k")
    return policy.get("small_view") == "suppress" and None not in (n_view, k) and n_view < float(k)


def verdicts(releases: pd.DataFrame, policy: dict[str, Any]) -> list[Verdict]:
    """The verdict of every release (module doc).

    Parameters
    ----------
    releases : pandas.DataFrame
        :func:`dpriv.report.release_frame` (columns ``release``, ``respondents``,
        ``released``, ``k``, ``l``, ``t``, ``j``, ``suppression``).
    policy : dict
        The ledger's ``policy.json`` (``k``, ``t``, ``j``, ``max_suppression``, ``method``, ``l``).

    Returns
    -------
    list of Verdict
        In the order of ``releases``; thresholds absent from the policy are not checked.
    """
    method = str(policy.get("method", "jsreduce"))
    enforced = promised(method, policy.get("rbk_closeness"))
    names = list(dict.fromkeys(["k", "t", "j", *enforced]))  # the promised ones decide the verdict
    out = []
    for row in releases.to_dict("records"):
        checks = []
        for name in names:
            thr = policy.get(name)
            if thr is None:
                continue
            got = _num(row.get(name))
            within = None if got is None else not breaks(name, got, thr)
            checks.append(Check(name, got, float(thr), within, name in enforced))
        bound = policy.get("retro_max_gain")  # the release gate (dpriv/gate.py)
        if bound is not None:
            got = _num(row.get("retro_gain"))
            within = None if got is None else got <= float(bound) + 1e-12
            checks.append(Check("retro_gain", got, float(bound), within, True))
        resp, rel = _num(row.get("respondents")), _num(row.get("released"))
        limit = policy.get("max_suppression")
        if limit is not None:
            got = _num(row.get("suppression"))
            within = None if got is None else got <= float(limit) + 1e-12
            if _small_view_suppressed(policy, resp):  # what small_view = "suppress" asks for
                within = True
            checks.append(Check("suppression", got, float(limit), within, True))
        out.append(
            Verdict(
                int(row["release"]),
                None if resp is None else int(resp),
                None if rel is None else int(rel),
                tuple(checks),
            )
        )
    return out

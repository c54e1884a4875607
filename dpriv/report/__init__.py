"""An HTML release report of a ledger: one self-contained page a data owner reads before publishing.

The page (:func:`write_report`) is titled from the policy (its ``title``, else the sensitive
attribute, QIs, method and the thresholds it enforces, e.g. k, l for mondrian-l;
:func:`~dpriv.report.explain.report_title`), not from the folder name, and has seven sections
(:data:`HEADINGS`):

* **Policy** -- the ledger's policy (``policy.json``): columns, k, t (with its EMD ground),
  j (with its unit, from ``log_base``), the suppression limit (percent of the view's tuples),
  the other release parameters and the knowledge sources;
* **Verdict** -- one row per release: respondents, released tuples, each threshold (k, t, j,
  suppression; l for Mondrian-l) with the achieved value and *within* / *beyond*, and the
  release's verdict (:func:`~dpriv.report.explain.verdicts`);
* **Releases** -- one row per committed release from ``releases/<i>/metrics.json``:
  respondents, QI-groups, released and suppressed tuples, suppression (percent of the view),
  achieved k, l, t and j, average semiperimeter (E11), GCP (E24), KPR (E21) and its
  reference when known, seconds;
* **Privacy** -- achieved t (max EMD) and j (max JS) per release against their thresholds;
* **Utility** -- suppression (percent) and average semiperimeter per release;
* **KPR** -- KPR per release, what it means, and the original view's KPR against itself as
  the reference line (:mod:`dpriv.report.reference`; needs the history);
* **Adversary gain** -- what each adversary knowledge means (snapshot, dk, dk-n, spm, ie) and
  what the gain is, the gain (E10) per release of every adversary whose results exist, the
  retrospective adversary's largest and mean gain per as-of release (``retro-gains``), and
  the tail risk (share of tuples at posterior >= 0.9 on the true value: paper and
  retrospective adversaries, the defender's own posteriors). A result that misses releases of
  the ledger (attacked before the last releases) is named above them (``stale-results``), with
  the releases it covers and the command that updates it; a result naming a release the ledger
  does not hold is refused (:mod:`dpriv.report.coverage`).

Suppression has one unit everywhere on the page: percent of the view's tuples. Line styles
have one meaning each: solid = a measured curve, dotted = the level it is read against (the
histogram gain, the KPR reference, the semiperimeter's maximum), dashed = the retrospective
adversary (red dashed: a policy threshold), a wide grey band = the defender's own posteriors.

Plots are PNG images from matplotlib embedded as base64 ``data:`` URIs; the page loads no
external resource (no script, stylesheet, font or image from elsewhere). Every text taken
from data (column names, values, knowledge names, file names) is escaped. The page never
contains respondent ids: it reads neither ``state/`` (sensitive) nor the released views,
only the public metrics and the adversary-gain tables; and it names files relative to the
ledger, never by absolute path.

Where results that are not in ``metrics.json`` come from (the convention)::

    ledger/attack/gain_<knowledge>.csv   columns release, adversary_gain (n_tuples optional):
                                         the output of ``dpriv attack LEDGER --knowledge
                                         <knowledge> --out LEDGER/attack/gain_<knowledge>.csv``
                                         (or a copy of it)
    ledger/attack/retro_<knowledge>.csv  the retrospective adversary (dpriv attack --adversary
                                         retrospective): release, as_of, adversary_gain,
                                         confident_share, ... (:mod:`dpriv.report.tail`)
    ledger/attack/kpr.csv                columns release, kpr (percent, E21): the KPR of
                                         synthetic data drawn from release ``release``;
                                         optional kpr_reference: the original view's KPR
                                         against itself (else computed from ``history=``)

``<knowledge>`` is the adversary's knowledge as given to ``dpriv attack`` (``dk``,
``snapshot``, ``dk-1``, ``ie``...); a ``:`` (``spm:PATH``) is not allowed in a file name,
so name such a file e.g. ``gain_spm.csv``. Gains passed to :func:`write_report` win over a
file of the same knowledge name. A KPR value in ``metrics.json`` (key ``kpr``) wins over
``attack/kpr.csv``.
"""

from dpriv.report.explain import Check, Verdict, describe_knowledge, report_title, verdicts
from dpriv.report.gains import gain_curves
from dpriv.report.page import HEADINGS, render_report, write_report
from dpriv.report.plots import plot_gains, plot_kpr, plot_privacy, plot_utility
from dpriv.report.reference import reference_kprs
from dpriv.report.tables import (
    ATTACK_DIR,
    RELEASE_COLUMNS,
    defender_tail,
    kpr_values,
    policy_summary,
    release_frame,
)
from dpriv.report.tail import plot_tail, tail_curves

__all__ = [
    "ATTACK_DIR",
    "HEADINGS",
    "RELEASE_COLUMNS",
    "Check",
    "Verdict",
    "defender_tail",
    "describe_knowledge",
    "gain_curves",
    "kpr_values",
    "plot_gains",
    "plot_kpr",
    "plot_privacy",
    "plot_utility",
    "policy_summary",
    "plot_tail",
    "reference_kprs",
    "release_frame",
    "render_report",
    "report_title",
    "tail_curves",
    "verdicts",
    "write_report",
]

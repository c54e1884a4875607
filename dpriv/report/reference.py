"""The KPR reference line of the report: each original view's KPR against itself (E21).

A release's KPR (``metrics.json`` key ``kpr``) says how many respondents an attacker who knows
their QIs cannot single out in microdata drawn from the release. The original view itself does
not score 0 against itself (shared and co-binned QI profiles cannot be singled out either:
81.1 % on WBCD with clump thickness and uniformity of cell size and shape known, 69.3 % with
bare nuclei too; tests/test_report.py), so the report draws that value as the line a release's KPR is read
against. It needs the original history, which the report never reads by itself (it reads the
ledger's public files only): pass it (``write_report(..., history=H)``, ``dpriv report LEDGER
--history H``) or put a ``kpr_reference`` column in ``LEDGER/attack/kpr.csv``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import pandas as pd

from dpriv.errors import InputError
from dpriv.ledger import POLICY, Ledger
from dpriv.ledger_checks import NOTHING_RELEASED, check_released_history
from dpriv.metrics.microdata import reference_kpr
from dpriv.policy import ReleasePolicy

_NOT_POLICY = ("method", "knowledge_sha256", "hierarchy_sha256", "title")


def ledger_release_policy(led: Ledger) -> ReleasePolicy:
    """The :class:`ReleasePolicy` recorded in a ledger's ``policy.json`` (its knowledge files
    are not needed: only the columns and domains are used here)."""
    path = led.root / POLICY
    if not path.is_file():
        raise InputError(f"the ledger has no {POLICY}: {NOTHING_RELEASED}")
    data: dict[str, Any] = json.loads(path.read_text())
    return ReleasePolicy.from_dict(
        {k: v for k, v in data.items() if k not in _NOT_POLICY} | {"base_dir": None}
    )


def reference_kprs(
    ledger: Ledger | str | Path, history: pd.DataFrame | dd.DataFrame | str | Path
) -> dict[int, float]:
    """KPR (percent, E21) of every committed release's original view against itself.

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (its ``policy.json`` names the time column and the QIs).
    history : pandas or Dask DataFrame, or a CSV/Parquet path
        The original history that was released (the policy's time column and QIs).

    Returns
    -------
    dict
        Release index -> KPR in percent (:func:`dpriv.metrics.microdata.reference_kpr`: the
        same known-variable frame as the release's own KPR); a release whose view is empty
        in ``history`` is left out.

    Raises
    ------
    InputError
        The history lacks the time column or a QI (named), a path cannot be read, or a view is
        not the one released (its digest differs from the ledger's ``input_sha``).
    """
    led = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    policy = ledger_release_policy(led)
    if isinstance(history, str | Path):
        from dpriv.io import read_table

        history = read_table(str(history), what="history")
    missing = [c for c in (policy.time, *policy.qi) if c not in history.columns]
    if missing:
        raise InputError(
            f"the history lacks column(s) {missing} of the ledger's policy (time {policy.time!r}, "
            f"QIs {list(policy.qi)}): pass the history that was released"
        )
    # another history would draw a wrong line; dates are measured as the release read them (days)
    history = check_released_history(led, history, policy)
    out = {}
    for entry in led.committed():
        i = int(entry["index"])
        view = history[history[policy.time] == i]
        value = reference_kpr(view, policy)  # a Dask view stays on the workers
        if value is not None:
            out[i] = float(value)
    return out

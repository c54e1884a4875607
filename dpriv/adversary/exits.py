"""The exit channel of a released history, measured (issue 12, direction 5).

For every release ``i`` and every later release ``as_of``, what the exact deductions
(:func:`dpriv.adversary.deductions.deduce` over releases ``1 .. as_of``) fix about the tuples
of release ``i`` through the terminal values of the model (``deceased``, ``discharged``: a
respondent seen later holds none of them):

``n_certain``
    tuples whose value is certain (any value);
``n_exit``
    of those, tuples certainly holding a terminal value (the value revealed);
``n_presence``
    of those, tuples the presence channel marked (``attendance == 1`` only);
``n_exited``
    tuples that certainly hold *some* terminal value (the fact that she left is certain, the
    value may not be);
``n_exit_worst``
    tuples of release ``i`` holding a terminal value in a QI-group whose terminal values are all
    of one kind: an adversary pins each of them once every other member of the group has been
    seen again (the worst future for the defender); 0 under the exit guard
    (:mod:`dpriv.exit_guard`), whatever comes later;
``n_true_exit``
    tuples of release ``i`` truly holding a terminal value (for scale).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.attack_share import AttackShare
from dpriv.exit_guard import one_kind_groups
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy

#: Columns of :func:`exit_deductions`.
EXIT_COLUMNS = (
    "release", "as_of", "n_tuples", "n_true_exit",
    "n_certain", "n_exit", "n_presence", "n_exited", "n_exit_worst",
)  # fmt: skip


def exit_deductions(
    ledger: Ledger | str | Path,
    history: pd.DataFrame,
    policy: ReleasePolicy,
    knowledge: str = "dk",
    *,
    attendance: float | None = None,
    share: AttackShare | None = None,
) -> pd.DataFrame:
    """Exit-channel counts (module doc) per (release, as_of) of a ledger.

    Parameters
    ----------
    ledger, history, policy, knowledge
        As :func:`dpriv.attack.attack`; the knowledge's tables (at the last release) give the
        model's support and its terminal values (states with no successor).
    attendance : float, optional
        The generator's exam probability (only 1.0 opens the presence channel).
    share : AttackShare, optional
        As :func:`dpriv.attack.attack`'s: the releases read and the deductions of each prefix
        that an earlier attack of the same arguments (the retrospective adversary with
        deductions, ``dpriv experiment paper``) computed are taken from it; the same counts.

    Returns
    -------
    DataFrame with :data:`EXIT_COLUMNS` (int64), one row per release and as-of release
    (``as_of >= release``); empty without committed releases.

    Raises
    ------
    As :func:`dpriv.attack.attack` (InputError, PolicyError, LedgerError).
    """
    share = share if share is not None else AttackShare()
    inp = share.input(ledger, history, policy, knowledge, None)
    if inp is None:
        return pd.DataFrame(columns=list(EXIT_COLUMNS), dtype="int64")
    tables, obs = share.observed(inp)
    masks = share.masks(inp, attendance)  # each prefix deduced once, started from the one before
    exits = np.flatnonzero(masks.support.exit_value)
    worst = []
    for o in obs:
        one = one_kind_groups(o.counts, exits)
        worst.append(int(o.counts[one][:, exits].sum()))
    rows = []
    for k in range(len(obs)):
        d = masks.deduced(k)
        for p in range(k + 1):
            a = d.allowed[p]
            only_exit = a.any(axis=1) & ~(a & ~d.exit_value).any(axis=1)
            rows.append(
                {
                    "release": obs[p].index,
                    "as_of": obs[k].index,
                    "n_tuples": len(a),
                    "n_true_exit": int(d.exit_value[obs[p].truth].sum()),
                    "n_certain": int(d.n_certain[p]),
                    "n_exit": int(d.n_exit[p]),
                    "n_presence": int(d.n_presence[p]),
                    "n_exited": int(only_exit.sum()),
                    "n_exit_worst": worst[p],
                }
            )
    return pd.DataFrame(rows, columns=list(EXIT_COLUMNS)).astype("int64")

"""Build :class:`ObservedRelease` objects from the paper adversary's steps over a ledger.

:func:`dpriv.attack.attack_steps` already reads each committed release, the group membership
the adversary is assumed to know (§1.1) and the true values; this turns its steps into the
adversary kernels' common input.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from dpriv.adversary.observed import ObservedRelease
from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap


def observed_from_steps(
    steps: Iterable, history: pd.DataFrame, id_col: str, time_col: str, classmap: ClassMap, n_values: int
) -> list[ObservedRelease]:
    """One :class:`ObservedRelease` per attack step (``dpriv.attack.AttackStep``).

    Parameters
    ----------
    steps : iterable of AttackStep
        ``release``, ``respondents`` (n,), ``groups`` (n,) labels, ``s_true`` (n,) codes.
    history : pandas.DataFrame
        The released history (id, time and the class map's QI columns): classes and the
        number of tuples of each view (suppressed = view size - kept).
    id_col, time_col : str
        Respondent and release-index columns of ``history``.
    classmap : ClassMap
        QIs -> knowledge class of the adversary's tables.
    n_values : int
        M = |D[S]|.

    Returns
    -------
    list of ObservedRelease, in step order.

    Raises
    ------
    InputError
        A respondent of a step that the history's view does not hold.
    """
    times = history[time_col].to_numpy()
    out = []
    for st in steps:
        view = history[times == st.release]
        vid = view[id_col].to_numpy()
        order = np.argsort(vid, kind="stable")
        loc = np.searchsorted(vid[order], st.respondents)
        if st.respondents.size and (loc.max() >= vid.size or not (vid[order][loc] == st.respondents).all()):
            raise InputError(f"release {st.release}: a released respondent is not in view {st.release}")
        cls = classmap.classify(view.iloc[order[loc]])
        labels, group = np.unique(st.groups, return_inverse=True)
        s = np.asarray(st.s_true, dtype=np.int64)
        counts = np.bincount(group * n_values + s, minlength=labels.size * n_values).reshape(-1, n_values)
        out.append(
            ObservedRelease(
                index=int(st.release),
                respondent=np.asarray(st.respondents),
                group=group.astype(np.int64),
                counts=counts.astype(np.int64),
                cls=cls.astype(np.int64),
                truth=s,
                n_suppressed=int(vid.size - st.respondents.size),
            )
        )
    return out

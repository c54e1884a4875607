"""The paper adversary's respondent state as arrays (issue 12, performance of ``dpriv experiment paper``).

The paper adversary of :mod:`dpriv.attack` keeps, per respondent, how many posteriors PK^sv it
has computed and the last ``W`` of them, and revises her prior (E7) from them at her next
release: the defender's state (:mod:`dpriv.state`: ``n_post`` and the ``pk<w>__<value>``
columns, oldest first, NaN before the first) and its RBK (:func:`dpriv.rbk.revised_priors`).
The defender's state is a frame merged with each release's posteriors (an outer join on the id,
then sorted), which costs more than the attack's Ω and revision together at 24 x 5,000; here the
same numbers live in arrays indexed by the respondent's position among the history's ids, and
each release writes its members' rows in place. The floats are copied, never recomputed: the
windows handed to :func:`dpriv.knowledge.revision.revise` are those the frame gives, row for row,
so the priors are the same bits (tests/test_window_state.py replays the frame path).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.knowledge.revision import revise
from dpriv.knowledge.tables import MarkovTables
from dpriv.rbk import background_priors


class WindowState:
    """``n_post`` (int64, (R,)) and the last ``window`` posteriors (float64, (R, window, M),
    oldest first, NaN before the first) of the R respondents of ``ids``.

    Parameters
    ----------
    ids : array-like, shape (R,)
        Every respondent id the attacked releases may hold (the history's ids; any dtype).
    n_values : int
        M, the size of the sensitive domain.
    window : int
        W, the posteriors kept per respondent (the adversary's window, >= 1).
    """

    def __init__(self, ids, n_values: int, window: int) -> None:
        self.index = pd.Index(pd.unique(np.asarray(ids)))
        self.n_post = np.zeros(len(self.index), dtype=np.int64)
        self.windows = np.full((len(self.index), window, n_values), np.nan)

    def rows(self, ids) -> np.ndarray:
        """Positions (int64, (n,)) of ``ids``; KeyError for an id not given at construction."""
        pos = self.index.get_indexer(np.asarray(ids))
        if (pos < 0).any():
            raise KeyError(f"{int((pos < 0).sum())} respondents not in the state's ids")
        return pos

    def revised(self, rows: np.ndarray, cls: np.ndarray, tables: MarkovTables) -> np.ndarray:
        """RBK^sv (float64, (n, M)) of the respondents at ``rows`` (classes ``cls``): BK^sv for
        one without a posterior yet, (E7) over her window for the others (revised together, in
        ``rows`` order, as :func:`dpriv.rbk.revised_priors` revises a view's)."""
        m = self.windows.shape[2]
        out = np.asarray(background_priors(cls, tables), dtype=float)
        lengths = self.n_post[rows]
        some = np.flatnonzero(lengths > 0)
        if some.size:
            hist = self.windows[rows[some]]
            hist = np.where(np.isnan(hist), 1.0 / m, hist)
            out[some] = revise(hist, lengths[some], cls[some], tables, out[some])
        return out

    def append(self, rows: np.ndarray, posteriors: np.ndarray) -> None:
        """Shift the window of each respondent at ``rows`` (distinct) and append her posterior
        (float64, (n, M)); the others keep theirs (§1.4 "Timing")."""
        win = self.windows[rows]
        win[:, :-1] = win[:, 1:]
        win[:, -1] = posteriors
        self.windows[rows] = win
        self.n_post[rows] += 1

"""The frames :func:`dpriv.attack.attack` returns: their columns and dtypes, the linkage columns
of ``membership="qi"``, and each row's :data:`dpriv.attack_stamp.STAMP` (last), which ties the
frame to the releases it was computed on so that ``save_gain`` and ``render_report(gains=...)``
refuse it for another ledger (the names are re-exported by :mod:`dpriv.attack`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpriv.adversary.tail import TAIL_COLUMNS
from dpriv.attack_input import AttackInput, linkage_rows
from dpriv.attack_stamp import stamped
from dpriv.ledger import Ledger

#: Columns :func:`dpriv.attack.attack` appends with ``membership="qi"``.
LINKAGE_COLUMNS = ("n_pinned", "share_pinned")

#: What the paper adversary held before each release (its prior, RBK^sv): the mean gain (E10)
#: with the prior in place of the posterior, and the share of tuples at >= 0.9 on the truth.
PRIOR_COLUMNS = ("prior_gain", "prior_confident_share")

#: Measures of the frame returned by :func:`dpriv.attack.attack` for the paper adversary (then
#: :data:`LINKAGE_COLUMNS` with ``membership="qi"``, then the stamp).
GAIN_COLUMNS = ("release", "adversary_gain", "n_tuples", *TAIL_COLUMNS, *PRIOR_COLUMNS, "histogram_gain")

#: Measures of the frame returned by :func:`dpriv.attack.attack` for the retrospective adversary.
RETRO_COLUMNS = ("release", "as_of", "adversary_gain", *TAIL_COLUMNS, "n_tuples", "histogram_gain")


def paper_frame(rows: list[dict]) -> pd.DataFrame:
    """The paper adversary's rows (one dict per release) as :data:`GAIN_COLUMNS`, with their dtypes."""
    out = pd.DataFrame(rows, columns=list(GAIN_COLUMNS))
    return out.astype(
        {"release": "int64", "adversary_gain": "float64", "n_tuples": "int64", "n_certain": "Int64"}
    )


def retro_frame(rows: list[dict]) -> pd.DataFrame:
    """The retrospective adversary's rows (one dict per (release, as_of)) as :data:`RETRO_COLUMNS`."""
    out = pd.DataFrame(rows, columns=list(RETRO_COLUMNS))
    return out.astype({"release": "int64", "as_of": "int64", "n_tuples": "int64", "n_certain": "Int64"})


def finished(
    out: pd.DataFrame, inp: AttackInput | None, membership: str, ledger: Ledger | str | Path
) -> pd.DataFrame:
    """``out`` (:func:`paper_frame` or :func:`retro_frame` of ``ledger``) with
    :data:`LINKAGE_COLUMNS` merged on ``release`` when ``membership == "qi"``, then the stamp of
    each row (:func:`dpriv.attack_stamp.stamped`, text, the last column, as ``dpriv attack``
    writes it)."""
    if membership == "qi":
        rows = [] if inp is None else linkage_rows(inp.reads, inp.policy)
        link = pd.DataFrame(rows, columns=["release", *LINKAGE_COLUMNS])
        link = link.astype({"release": "int64", "n_pinned": "int64", "share_pinned": "float64"})
        out = out.merge(link, on="release", how="left", validate="many_to_one")
    return stamped(out, ledger)

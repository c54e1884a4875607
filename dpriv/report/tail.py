"""The report's "paper vs retrospective" panel: mean gain and tail share per release (issue 11).

Read from the ledger's ``attack/`` folder (the convention of :mod:`dpriv.report`)::

    attack/gain_<knowledge>.csv    dpriv attack ... --knowledge <knowledge> (paper adversary);
                                   its tail column confident_share when present
    attack/retro_<knowledge>.csv   dpriv attack ... --knowledge <knowledge> --adversary
                                   retrospective: columns release, as_of, adversary_gain,
                                   confident_share (one row per (release, as_of))

The retrospective curve of release ``i`` is read as of the last release in the file (the
most the adversary knows).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.attack_files import GAIN_FILE, RETRO_FILE, RETRO_NEEDED, read_result, result_files
from dpriv.attack_stamp import STAMP

_GAIN, _RETRO = result_files(GAIN_FILE), result_files(RETRO_FILE)

#: Columns of a frame of :func:`tail_curves`.
TAIL_CURVE_COLUMNS = ("release", "paper_gain", "paper_share", "retro_gain", "retro_share")


def retro_results(folder: str | Path) -> dict[str, pd.DataFrame]:
    """The retrospective adversary's results of a ledger's ``attack/`` folder, one row per
    (release, as_of).

    Parameters
    ----------
    folder : str or Path
        A ledger's ``attack/`` folder.

    Returns
    -------
    dict
        Knowledge name (of ``retro_<knowledge>.csv``) -> frame with :data:`RETRO_NEEDED` (and
        ``n_tuples``, ``histogram_gain`` and ``views_sha``, as text, where the file has them),
        sorted by as_of, then release; names in alphabetical order; empty without the folder.

    Raises
    ------
    InputError
        A file without :data:`RETRO_NEEDED`, with a value that is not a number, or with a
        (release, as_of) twice (named relative to the ledger).
    """
    folder = Path(folder)
    out: dict[str, pd.DataFrame] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.iterdir()):
        if (m := _RETRO.match(path.name)) and path.is_file():
            where = f"{folder.name}/{path.name}"
            f = read_result(
                path,
                list(RETRO_NEEDED),
                where,
                whole=("release", "as_of"),
                optional=("n_tuples", "histogram_gain"),
                text=(STAMP,),
                unique=("release", "as_of"),
            )
            out[m["name"]] = f.sort_values(["as_of", "release"], kind="stable").reset_index(drop=True)
    return dict(sorted(out.items()))


def tail_curves(folder: str | Path) -> dict[str, pd.DataFrame]:
    """Per adversary knowledge: mean gain and confident share per release, paper vs retrospective.

    Parameters
    ----------
    folder : str or Path
        A ledger's ``attack/`` folder.

    Returns
    -------
    dict
        Knowledge name -> frame with :data:`TAIL_CURVE_COLUMNS` (float64, NaN where a file
        or column is missing), sorted by release; only knowledge names with a retrospective
        file or a paper file holding ``confident_share``; names in alphabetical order.

    Raises
    ------
    InputError
        A retrospective file without ``release, as_of, adversary_gain, confident_share``, or a
        file holding a release (of a retrospective file: a (release, as_of)) twice (named
        relative to the ledger).
    """
    folder = Path(folder)
    paper: dict[str, pd.DataFrame] = {}
    retro: dict[str, pd.DataFrame] = {}
    if not folder.is_dir():
        return {}
    for path in sorted(folder.iterdir()):
        where = f"{folder.name}/{path.name}"
        if (m := _GAIN.match(path.name)) and path.is_file():
            f = read_result(
                path, ["release", "adversary_gain"], where, optional=("confident_share",), unique=("release",)
            )
            if "confident_share" in f.columns:  # a gain file of an older dpriv has no tail measures
                paper[m["name"]] = f.rename(
                    columns={"adversary_gain": "paper_gain", "confident_share": "paper_share"}
                )
    for name, f in retro_results(folder).items():
        last = f.loc[f["as_of"] == f["as_of"].max(), ["release", "adversary_gain", "confident_share"]]
        retro[name] = last.rename(columns={"adversary_gain": "retro_gain", "confident_share": "retro_share"})
    out = {}
    for name in sorted(set(paper) | set(retro)):
        frames = [x.set_index("release") for x in (paper.get(name), retro.get(name)) if x is not None]
        joined = pd.concat(frames, axis=1).sort_index().reset_index()
        out[name] = joined.reindex(columns=list(TAIL_CURVE_COLUMNS)).astype(float)
    return out


def plot_tail(curves: Mapping[str, pd.DataFrame], defender: pd.DataFrame | None = None):
    """Two panels: mean gain (E10) and confident share (posterior on the truth >= 0.9) per
    release; solid with dots = paper adversary, dashed with triangles = retrospective as of the
    last release (the one meaning of a dashed line on the report's adversary plots).

    Parameters
    ----------
    curves : mapping knowledge name -> DataFrame
        :func:`tail_curves`.
    defender : pandas.DataFrame, optional
        ``release``, ``confident_share`` of the defender's own posteriors
        (:func:`dpriv.report.tables.defender_tail`), drawn in the right panel as a wide grey
        band under the adversaries' lines: the paper adversary with the defender's knowledge
        reads the same posteriors, and its line must stay visible on it.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.4, 3.6), dpi=100, layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    if defender is not None and defender["confident_share"].notna().any():
        a2.plot(
            defender["release"], defender["confident_share"], color="black", alpha=0.25, lw=7,
            solid_capstyle="round", zorder=1, label="defender's own posteriors (metrics.json)",
        )  # fmt: skip
    for k, (name, f) in enumerate(curves.items()):
        color = f"C{k % 10}"
        for col, ax in (("gain", a1), ("share", a2)):
            for who, ls, marker, word in (
                ("paper", "-", "o", "paper"),
                ("retro", "--", "^", "retrospective"),
            ):
                y = f[f"{who}_{col}"].to_numpy()
                if np.isfinite(y).any():
                    ax.plot(f["release"], y, ls=ls, marker=marker, ms=4, color=color, label=f"{name} {word}")
    if a2.get_legend_handles_labels()[0]:
        a2.legend(fontsize=7)
    a1.axhline(0, color="grey", lw=0.8)
    a1.set(xlabel="release", ylabel="adversary gain (E10)", title="Mean gain per release")
    a2.set(xlabel="release", ylabel="share of tuples", title="Posterior on the true value >= 0.9")
    for ax in (a1, a2):
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    a2.set_ylim(bottom=0)
    if a1.get_legend_handles_labels()[0]:
        a1.legend(fontsize=7)
    return fig

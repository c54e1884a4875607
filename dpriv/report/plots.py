"""The report's figures (matplotlib): privacy, utility and adversary gain per release."""

from __future__ import annotations

import base64
import io
import numbers
from collections.abc import Mapping

import pandas as pd

from dpriv.errors import InputError
from dpriv.passed_results import checked_gains
from dpriv.report.tables import check_columns

#: Where the frame of the release plots comes from (their messages say so).
_RELEASES = "the per-release frame release_frame(ledger) returns"


def _figure(n: int, height: float = 3.2):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2 * n, height), dpi=100, layout="constrained")
    axes = fig.subplots(1, n, squeeze=False)[0]
    return fig, axes


def _series(frame: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(frame[col], errors="coerce").astype(float)


def plot_utility(releases: pd.DataFrame, *, m: int | None = None):
    """Suppression rate and average semiperimeter (E11) per release (two panels).

    Parameters
    ----------
    releases : pandas.DataFrame
        :func:`release_frame`.
    m : int, optional
        Number of QIs: the semiperimeter's maximum, drawn as a dotted line.

    Returns
    -------
    matplotlib.figure.Figure
    """
    check_columns(releases, ("release", "suppression", "semiperimeter"), "plot_utility", _RELEASES)
    fig, (a1, a2) = _figure(2)
    x = releases["release"].to_numpy()
    a1.bar(x, 100 * _series(releases, "suppression"), color="#c0504d", width=0.7)
    a1.set(xlabel="release", ylabel="suppressed tuples (%)", title="Suppression per release")
    a1.set_ylim(bottom=0)
    a2.plot(x, _series(releases, "semiperimeter"), marker="o", color="#4f81bd")
    if m:
        a2.axhline(m, ls=":", color="grey", label=f"maximum ({m} QIs)")
        a2.legend(loc="lower right", fontsize=8)
    a2.set(xlabel="release", ylabel="average semiperimeter (E11)", title="Generalization per release")
    a2.set_ylim(bottom=0)
    for ax in (a1, a2):
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    return fig


def plot_privacy(
    releases: pd.DataFrame,
    *,
    t: float | None,
    j: float | None,
    j_unit: str = "bits",
    enforced: tuple[str, ...] = ("t", "j"),
):
    """Achieved t (max EMD) and j (max JS) per release against their thresholds.

    Parameters
    ----------
    releases : pandas.DataFrame
        :func:`release_frame`.
    t, j : float or None
        The policy's thresholds, drawn as dashed lines.
    j_unit : str
        Unit of j for the axis label.
    enforced : tuple of str
        The thresholds the release method guarantees; the others are labelled "not enforced"
        (e.g. t and j for a Mondrian l-diversity baseline).

    Returns
    -------
    matplotlib.figure.Figure
    """
    check_columns(releases, ("release", "t", "j"), "plot_privacy", _RELEASES)
    for name, thr in (("t", t), ("j", j)):
        if thr is not None and (isinstance(thr, bool) or not isinstance(thr, numbers.Real)):
            raise InputError(
                f"plot_privacy(): {name} is the policy's threshold (a number) or None, not {thr!r}"
            )
    fig, (a1, a2) = _figure(2)
    x = releases["release"].to_numpy()
    for ax, col, thr, label, color in (
        (a1, "t", t, "max EMD per release (t achieved)", "#9bbb59"),
        (a2, "j", j, f"max JS per release (j achieved, {j_unit})", "#8064a2"),
    ):
        ax.plot(x, _series(releases, col), marker="o", color=color, label="achieved")
        if thr is not None:
            note = "" if col in enforced else " (not enforced)"
            ax.axhline(thr, ls="--", color="#c0504d", label=f"threshold {thr:g}{note}")
        ax.set(xlabel="release", ylabel=label.split(" per")[0], title=label)
        top = max([v for v in (_series(releases, col).max(), thr) if v is not None and v == v] or [1.0])
        ax.set_ylim(0, 1.15 * top if top > 0 else 1.0)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    return fig


def plot_gains(curves: Mapping[str, pd.DataFrame]):
    """Adversary gain (E10) per release, one line per adversary knowledge, and dotted in the
    same colour its histogram level (``histogram_gain``: the release as one QI-group).

    Parameters
    ----------
    curves : mapping knowledge name -> DataFrame
        :func:`gain_curves`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    curves = checked_gains(curves, "passed to plot_gains()")
    fig, (ax,) = _figure(1, height=3.6)
    fig.set_size_inches(8, 3.6)
    for name, frame in curves.items():
        (line,) = ax.plot(frame["release"], frame["adversary_gain"], marker="o", label=name)
        if "histogram_gain" in frame and frame["histogram_gain"].notna().any():  # the one-group level
            # dotted, as every level a line is read against: dashed is the retrospective adversary
            level, label = frame["histogram_gain"], f"{name}: histogram level (one QI-group)"
            ax.plot(frame["release"], level, ls=":", lw=1.6, color=line.get_color(), label=label)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="release", ylabel="adversary gain (E10)", title="Adversary gain per release")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(title="knowledge", fontsize=8)
    return fig


def plot_kpr(releases: pd.DataFrame):
    """KPR (E21, percent) per release, with the original view's KPR against itself as the
    dotted reference line (drawn where ``kpr_reference`` is known).

    Parameters
    ----------
    releases : pandas.DataFrame
        :func:`release_frame` (columns ``release``, ``kpr``, ``kpr_reference``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    check_columns(releases, ("release", "kpr", "kpr_reference"), "plot_kpr", _RELEASES)
    fig, (ax,) = _figure(1, height=3.4)
    fig.set_size_inches(8, 3.4)
    x = releases["release"].to_numpy()
    kpr, ref = _series(releases, "kpr"), _series(releases, "kpr_reference")
    ax.plot(x, kpr, marker="o", color="#4f81bd", label="KPR of microdata drawn from the release")
    if ref.notna().any():
        label = "reference: the original view against itself"
        ax.plot(x, ref, ls=":", lw=1.6, marker="_", color="#c0504d", label=label)
    ax.set(xlabel="release", ylabel="KPR (%)", title="Knowledge Protection Rate per release")
    ax.set_ylim(0, 105)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def png_uri(fig) -> str:
    """A matplotlib figure as a ``data:image/png;base64,...`` URI (100 dpi) for an HTML page."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")

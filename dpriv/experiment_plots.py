"""The figures of ``dpriv experiment paper`` (:func:`dpriv.experiment.run_experiment`):
``fig3_semiperimeter.png``, ``gain_<method>.png`` per method and ``frontier.png``.

A setting is named by :func:`setting_label` (``t 0.5, j 0.8, topdown``, not its JSON), drawn
with one (colour, line style) of :func:`line_styles` in every panel of a figure, and listed once
in a legend below the panels (at most :data:`LEGEND_COLUMNS` columns); a gain figure has one
panel per knowledge kind, full DK first; releases are whole-number ticks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from dpriv.experiment_files import save_figure

#: The goals of issue 12 drawn on the frontier (dotted): the largest gain against each
#: adversary and the mean average semiperimeter.
GOALS = {"paper": 0.05, "retrospective": 0.08, "semi": 0.3}
#: How a figure names a knowledge kind (others by their own name).
KNOWLEDGE_LABELS = {"dk": "full DK", "snapshot": "snapshot (no BK^seq)"}
#: Columns of a figure's legend, at most.
LEGEND_COLUMNS = 3
#: Short names of a setting's parameters in a label; "": the value alone (``topdown``).
_SHORT = {
    "grouping": "",
    "release_format": "",
    "topdown_pc": "pc",
    "topdown_cut": "cut",
    "exit_values": "exit guard",
    "posterior_bound": "bound",
    "retro_posterior_bound": "retro bound",
    "retro_attendance": "retro q",
    "rbk_closeness": "rbk",
}
_STYLES = ("-", "--", ":", "-.")


def paper_knowledge(kinds: list[str]) -> str:
    """The knowledge kind of the paper adversary that the frontier plots and the experiment
    prints: full DK (``dk``) when attacked, else the first kind in alphabetical order."""
    return "dk" if "dk" in kinds else sorted(kinds)[0]


def knowledge_label(kind: str) -> str:
    """``"full DK"`` for ``dk``; a kind's own name otherwise (:data:`KNOWLEDGE_LABELS`)."""
    return KNOWLEDGE_LABELS.get(kind, kind)


def setting_label(params: str | dict[str, Any]) -> str:
    """A setting of the grid (its JSON ``params`` or the dict) as a short label: t and j
    first, then the other parameters in order (``"t 0.45, j 1.5, topdown, exit guard, rbk
    0.2"``); ``"policy as generated"`` for no override."""
    p = json.loads(params) if isinstance(params, str) else dict(params)
    parts = []
    for key in sorted(p, key=lambda k: ("t", "j").index(k) if k in ("t", "j") else 2):
        name, value = _SHORT.get(key, key), p[key]
        if key == "exit_values" or value is True:  # the guard's terminal values: in policy.json
            parts.append(name)
        elif isinstance(value, list | tuple):
            parts.append(f"{name} {'+'.join(map(str, value))}")
        else:
            parts.append(f"{name} {value}".strip())
    return ", ".join(parts) or "policy as generated"


def line_styles(n: int) -> list[dict[str, str]]:
    """``n`` (colour, line style) pairs, all different up to 40: the ten tab10 colours with a
    solid line, then dashed, dotted and dash-dotted."""
    from matplotlib import colormaps

    colours = colormaps["tab10"].colors
    return [{"color": colours[i % 10], "linestyle": _STYLES[(i // 10) % len(_STYLES)]} for i in range(n)]


def _release_ticks(ax, releases: pd.Series) -> None:
    """Whole-number release ticks: every release up to 12, else at most 12 whole numbers."""
    from matplotlib.ticker import MaxNLocator

    values = sorted({int(r) for r in releases.dropna()})
    if len(values) <= 12:
        ax.set_xticks(values)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=12, integer=True))


def _legend_below(fig, handles: list, labels: list[str]) -> None:
    """One legend for the whole figure, below its panels (the constrained layout makes room)."""
    ncol = min(LEGEND_COLUMNS, len(labels)) or 1
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=7, frameon=False)


def _figure(plt, n_panels: int, n_lines: int, label_width: int):
    """A figure of ``n_panels`` panels (two per row) with room below for ``n_lines`` legend
    entries of about ``label_width`` characters."""
    cols = min(n_panels, 2)
    rows = -(-n_panels // cols)
    legend_rows = -(-n_lines // LEGEND_COLUMNS)
    width = max(6.5 * cols, 0.075 * label_width * LEGEND_COLUMNS + 1)
    height = 3.4 * rows + 0.6 + 0.17 * legend_rows
    fig = plt.figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    for ax in axes.flat[n_panels:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n_panels])


def gain_figure(gains: pd.DataFrame, method: str, plt):
    """The figure of ``gain_<method>.png``: the mean adversary gain (E10) per release of every
    setting of ``method``, one panel per knowledge kind (full DK first), one legend entry per
    setting (:func:`setting_label`)."""
    g = gains[gains["method"] == method]
    kinds = list(dict.fromkeys(g["knowledge"]))
    first = paper_knowledge(kinds)
    kinds.sort(key=lambda k: k != first)
    settings = list(dict.fromkeys(g["params"]))
    labels = [setting_label(p) for p in settings]
    fig, axes = _figure(plt, len(kinds), len(settings), max(map(len, labels)))
    for ax, kind in zip(axes, kinds, strict=True):
        for params, label, style in zip(settings, labels, line_styles(len(settings)), strict=True):
            h = g[(g["knowledge"] == kind) & (g["params"] == params)].sort_values("release")
            ax.plot(h["release"], h["adversary_gain"], label=label, linewidth=1.2, **style)
        ax.set(xlabel="release", ylabel="adversary gain (E10)", title=knowledge_label(kind))
        _release_ticks(ax, g["release"])
    fig.suptitle(f"{method}: mean adversary gain per release, one panel per adversary knowledge")
    _legend_below(fig, *axes[0].get_legend_handles_labels())
    return fig


def utility_figure(runs: pd.DataFrame, plt):
    """The figure of ``fig3_semiperimeter.png``: the average semiperimeter (E11) per release of
    every (method, setting), one legend entry each."""
    settings = list(runs.groupby(["method", "params"], sort=True).groups)
    labels = [f"{m}: {setting_label(p)}" for m, p in settings]
    fig, (ax,) = _figure(plt, 1, len(settings), max(map(len, labels), default=0))
    for (method, params), label, style in zip(settings, labels, line_styles(len(settings)), strict=True):
        h = runs[(runs["method"] == method) & (runs["params"] == params)].sort_values("release")
        ax.plot(h["release"], h["semi"], label=label, linewidth=1.2, **style)
    ax.set(xlabel="release", ylabel="average semiperimeter (E11)", title="Utility per release")
    _release_ticks(ax, runs["release"])
    _legend_below(fig, *ax.get_legend_handles_labels())
    return fig


def plot(tables: dict[str, pd.DataFrame], out: Path) -> None:
    """fig3_semiperimeter.png, gain_<method>.png per method, frontier.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = utility_figure(tables["runs"], plt)
    save_figure(fig, out / "fig3_semiperimeter.png")
    plt.close(fig)
    for method in dict.fromkeys(tables["gains"]["method"]):
        fig = gain_figure(tables["gains"], method, plt)
        save_figure(fig, out / f"gain_{method}.png")
        plt.close(fig)
    frontier_figure(tables["frontier"], out, plt)


def _kind(method: str, params: str) -> str:
    """Legend entry of a frontier point: the method, ``+anatomy`` for an Anatomy release
    (its semiperimeter is 0 by construction; read its association_loss in frontier.csv)."""
    return method + ("+anatomy" if json.loads(params).get("release_format") == "anatomy" else "")


def frontier_figure(front: pd.DataFrame, out: Path, plt) -> None:
    """frontier.png: semiperimeter against the largest gain, one panel per adversary (the
    paper's with full DK, and the retrospective one when it ran); marker area ~ suppression."""
    kind = paper_knowledge([c.removeprefix("max_gain_") for c in front if c.startswith("max_gain_")])
    panels = [(f"max_gain_{kind}", f"paper adversary ({knowledge_label(kind)})", GOALS["paper"])]
    if "max_retro_gain" in front and front["max_retro_gain"].notna().any():
        panels.append(("max_retro_gain", "retrospective adversary (+ deductions)", GOALS["retrospective"]))
    kinds = front.assign(kind=[_kind(m, p) for m, p in zip(front["method"], front["params"])])
    # the histogram reference (every box the view's range) is a level, not a point to compare boxes with
    reference, kinds = kinds[kinds["method"] == "histogram"], kinds[kinds["method"] != "histogram"]
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 5), squeeze=False)
    for ax, (col, who, goal) in zip(axes[0], panels):
        for kind, g in kinds.groupby("kind"):
            ax.scatter(g["semi"], g[col], s=20 + 400 * g["suppression"], label=kind, alpha=0.7)
        for level in reference[col].dropna():
            ax.axhline(level, color="black", linestyle="--", linewidth=1, label="histogram (one group)")
        ax.axhline(goal, color="grey", linestyle=":", linewidth=1)
        ax.axvline(GOALS["semi"], color="grey", linestyle=":", linewidth=1)
        ax.set(
            xlabel="mean average semiperimeter (lower = more useful)",
            ylabel=f"{col}: largest mean gain (lower = safer)",
            title=who,
        )
        ax.legend(fontsize=8)
    fig.suptitle("Frontier (marker area ~ mean suppression; dotted: issue 12's goals; dashed: the histogram)")
    fig.tight_layout()
    save_figure(fig, out / "frontier.png")
    plt.close(fig)

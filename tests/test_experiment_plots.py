"""The experiment's figures (dpriv/experiment_plots.py): short setting labels, one panel per
knowledge kind, one bounded legend below, distinct line styles, whole-number release ticks.

The drill: ``experiment paper --views 4`` drew gain_jsreduce.png with 96 legend entries (the
raw JSON params and the knowledge kind) over 85 % of the width, ten colours repeating, and x
ticks at 2 and 4 only."""

from __future__ import annotations

import json

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dpriv.experiment import GRID  # noqa: E402
from dpriv.experiment_plots import (  # noqa: E402
    LEGEND_COLUMNS,
    gain_figure,
    setting_label,
    utility_figure,
)

KINDS = ("snapshot", "dk", "dk-1", "dk-2")


def _gains(settings: list[dict], releases: int = 4) -> pd.DataFrame:
    rows = [
        {
            "method": "jsreduce",
            "params": json.dumps(p),
            "knowledge": kind,
            "release": r,
            "adversary_gain": 0.01 * i,
        }
        for i, p in enumerate(settings)
        for kind in KINDS
        for r in range(1, releases + 1)
    ]
    return pd.DataFrame(rows)


def test_a_setting_is_labelled_by_its_parameters_not_its_json():
    assert setting_label('{"t": 0.5, "j": 0.8}') == "t 0.5, j 0.8"
    assert setting_label(GRID["jsreduce"][-1]) == "t 1.0, j 0.4, anatomy, topdown, pc"
    exits = {"t": 0.45, "j": 1.5, "grouping": "topdown", "exit_values": ["deceased", "discharged"]}
    assert setting_label({**exits, "rbk_closeness": 0.2}) == "t 0.45, j 1.5, topdown, exit guard, rbk 0.2"
    assert setting_label({"t": 0.5, "j": 0.8, "defender": "dk-1"}) == "t 0.5, j 0.8, defender dk-1"
    assert setting_label({"bt_t": 0.15}) == "bt_t 0.15" and setting_label({}) == "policy as generated"
    # every setting of the grid keeps a label of its own, at most 80 characters long
    for settings in GRID.values():
        labels = [setting_label(p) for p in settings]
        assert len(set(labels)) == len(labels) and max(map(len, labels)) <= 80, labels


def test_a_gain_figure_has_a_panel_per_knowledge_and_one_legend_below():
    settings = GRID["jsreduce"]
    fig = gain_figure(_gains(settings), "jsreduce", plt)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    # one panel per knowledge kind, full DK (what the frontier plots) first
    assert [ax.get_title() for ax in axes] == ["full DK", "snapshot (no BK^seq)", "dk-1", "dk-2"]
    for ax in axes:
        assert len(ax.lines) == len(settings) and ax.get_legend() is None
        assert ax.get_xticks().tolist() == [1, 2, 3, 4]  # every release, whole numbers
        # every setting its own (colour, line style), the same in every panel
        styles = [(line.get_color(), line.get_linestyle()) for line in ax.lines]
        assert len(set(styles)) == len(settings)
        assert styles == [(line.get_color(), line.get_linestyle()) for line in axes[0].lines]
    (legend,) = fig.legends  # one entry per setting (not per setting and knowledge), short labels
    assert [t.get_text() for t in legend.get_texts()] == [setting_label(p) for p in settings]
    assert legend._ncols == LEGEND_COLUMNS <= 3
    plt.close(fig)


@pytest.mark.parametrize("releases", [3, 24])
def test_release_ticks_are_whole_numbers(releases):
    fig = gain_figure(_gains([{"t": 1.0, "j": 0.2}], releases), "jsreduce", plt)
    fig.canvas.draw()
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert all(float(t).is_integer() for t in ticks) and 3 <= len(ticks) <= 13
    if releases == 3:
        assert ticks == [1, 2, 3]
    plt.close(fig)


def test_the_utility_figure_lists_each_setting_once_below():
    runs = pd.DataFrame(
        {"method": m, "params": json.dumps(p), "release": r, "semi": 0.5}
        for m in ("jsreduce", "mondrian-l")
        for p in GRID[m]
        for r in (1, 2)
    )
    fig = utility_figure(runs, plt)
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert len(texts) == len(GRID["jsreduce"]) + 3 and "mondrian-l: l 2" in texts
    assert fig.axes[0].get_legend() is None and fig.axes[0].get_xticks().tolist() == [1, 2]
    plt.close(fig)

"""The paper's experiment (docs/algorithms.md §2.5, Fig. 3-6) on a generated history.

For every method and every value of its parameter: release the whole history into its
own ledger, attack it under each kind of adversary knowledge, and record per release the
suppression, the average semiperimeter (E11), the adversary gain (E10) and its tail (the
share of tuples whose posterior on the true value is >= 0.9, the precision of those
claims). The retrospective adversary (issue 11: every release attacked again after each
later one, exact DK, the generator's attendance, exact deductions when
:mod:`dpriv.adversary.deductions` is installed) attacks every ledger too. The frontier
puts, for every (method, parameter), the largest gain of each adversary and its largest
tail share next to the mean suppression and the mean semiperimeter (and the largest share of
released tuples that the QIs, boxes and group sizes alone pin to one group, ``max_pinned_share``;
per release ``share_pinned`` in runs.csv), so that methods are
compared at equal utility and suppression (docs/findings.md: never read a gain without its
suppression).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from dpriv.adversary.masks import deductions_available
from dpriv.attack import attack
from dpriv.attack_input import linkage_rows
from dpriv.attack_share import AttackShare
from dpriv.datasets import medical_history, write_history
from dpriv.datasets.model import TERMINAL
from dpriv.errors import InputError
from dpriv.experiment_files import (
    check_out,
    check_views,
    read_tables,  # noqa: F401  (public here)
    setting_name,
    stamp_tables,
    write_output,
)
from dpriv.experiment_plots import knowledge_label, paper_knowledge, plot
from dpriv.ledger import Ledger
from dpriv.path_args import path_arguments
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.wording import Named, argument_named

#: (t, j) of the Anatomy (bucketization) settings of the grid (issue 12, direction 3;
#: docs/results/anatomy-8x2000/); each with :data:`ANATOMY`.
ANATOMY_SETTINGS = ((0.3, 0.8), (0.5, 0.6), (0.5, 0.8), (1.0, 0.4))
#: How an Anatomy release groups: the top-down split in knowledge space (Hellinger coordinates
#: of the priors, cuts also along their first principal axis); the greedy scan along the
#: knowledge key suppressed 90 % of release 2 of 8 x 2,000 at t 1, j 0.2 (top-down: 15 %).
ANATOMY = {"release_format": "anatomy", "grouping": "topdown", "topdown_pc": True}
#: The medical generator's terminal values (the exit guard's ``exit_values``).
EXITS = list(TERMINAL)
#: (t, j) of the top-down + exit-guard settings of the grid, from small boxes to low gain.
EXIT_FAMILY = ((0.35, 1.0), (0.45, 1.0), (0.45, 1.5), (0.6, 1.5), (0.9, 5.0))
#: Both posterior bounds at 0.9; the gate's adversary assumes the paper setting's attendance (0.5).
RETRO_BOUND = {"posterior_bound": 0.9, "retro_posterior_bound": 0.9, "retro_attendance": 0.5}
#: (t, rbk_closeness) of the RBK-closeness settings of the grid (top-down, j 1.5, the exit guard).
RBK_SETTINGS = ((0.45, 0.2), (0.55, 0.25))
#: (method, parameter overrides) explored by default; each method's own parameter varies.
GRID: dict[str, list[dict]] = {
    "jsreduce": [{"t": 1.0, "j": j} for j in (0.2, 0.4, 0.8)]
    + [{"t": 0.5, "j": 0.8, "defender": d} for d in ("dk", "dk-1", "ie")]
    # top-down without the exit guard (the previous recommendation, and a stricter j)
    + [{"t": 0.5, "j": j, "grouping": "topdown"} for j in (0.8, 0.4)]
    # top-down with the exit guard along t: the family that dominates most baseline points
    # (docs/results/exit-frontier-8x2000, exit-frontier-24x5000); t 0.45, j 1.5 is the
    # recommended defense (dpriv.datasets.files.RECOMMENDED_DEFENSE)
    + [{"t": t, "j": j, "grouping": "topdown", "exit_values": EXITS} for t, j in EXIT_FAMILY]
    # the slack-widest cut where j binds: on 8 x 2,000 the one setting that also dominates
    # mondrian-bt bt_t 0.15 on seed 0 (docs/results/topdown-cut-8x2000)
    + [{"t": 0.5, "j": 1.0, "grouping": "topdown", "exit_values": EXITS, "topdown_cut": "slack-widest"}]
    # the recommended defense with the posterior bound: no confident claim of the paper adversary
    # (docs/results/posterior-bound-24x5000)
    + [{"t": 0.45, "j": 1.5, "grouping": "topdown", "exit_values": EXITS, "posterior_bound": 0.9}]
    # ... and the retrospective bound as well (docs/results/retro-bound-24x5000)
    + [{"t": 0.45, "j": 1.5, "grouping": "topdown", "exit_values": EXITS, **RETRO_BOUND}]
    # RBK-closeness: below the unbounded family's curve on both adversaries, every seed
    # (docs/results/rbk-closeness-24x5000); c 0.2 for the lowest gains, c 0.25 at t 0.55 for boxes
    + [
        {"t": t, "j": 1.5, "grouping": "topdown", "exit_values": EXITS, "rbk_closeness": c}
        for t, c in RBK_SETTINGS
    ]
    + [{**ANATOMY, "t": t, "j": j} for t, j in ANATOMY_SETTINGS],
    "mondrian-l": [{"l": lv} for lv in (2, 3, 4)],
    "mondrian-t": [{"t": t} for t in (0.2, 0.3, 0.5)],
    "mondrian-bt": [{"bt_t": b} for b in (0.15, 0.25, 0.4)],
    # the reference: one QI-group per view, the view's histogram and nothing more; its gain is
    # what the adversary's own knowledge predicts beyond it (docs/results/histogram-reference-24x5000)
    "histogram": [{}],
}
#: The paper adversary's knowledge kinds: none (snapshot), the full DK and the n-step DK that differ
#: from it. dk-3 is not attacked: the generator's model is order 3, so its 3-step truncation is the
#: full DK itself (:meth:`dpriv.datasets.MedicalHistory.n_step`), the same gains as dk.
KNOWLEDGE = ("snapshot", "dk", "dk-1", "dk-2")
#: Decimals of the gains the experiment writes: a mean of probabilities is not measured below
#: 1e-12, and a gain that is 0 up to the float sums' noise (-2.6e-17) then reads 0.0.
GAIN_DECIMALS = 12
_GAIN_KEEP = ("release", "adversary_gain", "confident_share", "confident_precision", "histogram_gain")
_RETRO_KEEP = (
    "release",
    "as_of",
    "adversary_gain",
    "confident_share",
    "confident_precision",
    "n_certain",
    "n_exit",
    "histogram_gain",
)


def setting_policy(base: ReleasePolicy, params: dict) -> ReleasePolicy:
    """``params`` override the policy; ``defender`` picks the defender's BK^seq (Fig. 6)."""
    params = dict(params)
    defender = params.pop("defender", None)
    if defender is not None:
        params["knowledge"] = {**base.knowledge, "defender": defender}
    return base.with_overrides(**params)


@path_arguments(out="the folder to write into")
def run_experiment(
    out: str | Path,
    *,
    views: int = 24,
    view_size: int = 5000,
    attendance: float = 0.5,
    seed: int = 0,
    grid: dict[str, list[dict]] | None = None,
    knowledge: tuple[str, ...] = KNOWLEDGE,
    retrospective: bool = True,
    say: Callable[[str], None] = print,
    named: Named = argument_named,
) -> dict[str, pd.DataFrame]:
    """Run the grid and write ``runs.csv``, ``gains.csv``, ``retro.csv``, ``frontier.csv`` and
    figures.

    A JS-reduce entry may name the defender's knowledge (``"defender": "dk-1"``); crossed
    with the adversary's ``knowledge`` kinds it gives the paper's Fig. 6 combinations. ``say``
    gets one line per setting, e.g. ``jsreduce_t1.0_j0.2: max gain (full DK) 0.030,
    retrospective 0.041``: the largest gain that frontier.png plots (full DK, else the first
    kind) and the retrospective one. Gains are written rounded to :data:`GAIN_DECIMALS`.

    Returns the tables: ``runs`` (method, params, release, groups, suppression, semi,
    association_loss, group_qi_span, share_pinned), ``gains`` (method, params, knowledge,
    release, adversary_gain, confident_share, confident_precision, histogram_gain), ``retro``
    (method, params, release, as_of, adversary_gain, confident_share, confident_precision,
    n_certain, n_exit, histogram_gain; the retrospective adversary with the exact DK, empty
    with ``retrospective=False``; n_exit: terminal values revealed by the exit channel,
    :func:`dpriv.adversary.exits.exit_deductions`) and ``frontier`` (method, params, mean and
    max suppression, mean semi, mean association_loss and group_qi_span, max_gain per
    knowledge, max_share and max_histogram_gain per knowledge, max_retro_gain, max_retro_share
    and max_retro_histogram_gain over every (release, as_of), rows_n_certain and rows_n_exit:
    how many (release, as_of) rows hold a certain value / a revealed terminal value). Each
    table ends with ``views_sha``: per row the releases of its setting's ledger it was computed
    on (:func:`dpriv.experiment_files.stamp_tables`), which
    :func:`dpriv.experiment_files.read_tables` checks when it reads the tables back.

    A refusal (InputError, before anything is written) names the arguments as ``named`` words
    them: ``out``, ``view_size`` (``dpriv experiment paper`` passes its flags: ``--out``).
    """
    out = Path(out)
    grid = grid or GRID
    check_out(out, grid, [setting_name(m, p) for m, ps in grid.items() for p in ps], named)
    mh = medical_history(views, view_size, attendance=attendance, seed=seed)
    check_views(mh.history, views, view_size, grid, named)
    policy_file = out / "data" / "policy.toml"
    if not policy_file.exists():  # written last: without it, data/ holds at most what an interrupted
        policy_file = write_history(out / "data", mh, overwrite=True)  # run generated (check_out)
    elif not pd.read_parquet(out / "data" / "history.parquet").equals(mh.history):
        raise InputError(
            f"{out / 'data'} holds another history (not views={views}, view_size={view_size}, "
            f"attendance={attendance}, seed={seed}); nothing was written: choose another {named('out')}"
        )
    # the experiment measures suppression along each method's grid (the paper's Fig. 3), so no
    # release is refused for it: max_suppression is lifted here, and reported per release instead
    base = ReleasePolicy.from_toml(policy_file).with_overrides(max_suppression=1.0)
    runs, gains, retro = [], [], []
    paper = paper_knowledge(list(knowledge))  # the gain the frontier plots, printed as it names it
    for method, params in itertools.chain.from_iterable(((m, p) for p in ps) for m, ps in grid.items()):
        name = setting_name(method, params)
        policy = setting_policy(base, params)
        led = release_history(mh.history, policy, out / "ledgers" / name, method=method)
        done = attack_setting(
            led, mh.history, policy, knowledge, attendance=attendance, retrospective=retrospective
        )
        for r in led.committed():
            m = led.read_metrics(r["index"])
            runs.append(
                {
                    "method": method,
                    "params": json.dumps(params),
                    "release": r["index"],
                    "groups": m["n_groups"],
                    "suppression": m["suppression_rate"],
                    "semi": m["average_semiperimeter"],
                    "association_loss": m.get("association_loss"),
                    "group_qi_span": m.get("group_qi_span"),
                    "share_pinned": done.pinned.get(r["index"], float("nan")),
                }
            )
        for kind, g in done.gains.items():
            gains += [
                {"method": method, "params": json.dumps(params), "knowledge": kind, **row}
                for row in g[list(_GAIN_KEEP)].to_dict("records")
            ]
        last = pd.Series(
            [
                g["adversary_gain"]
                for g in gains
                if (g["method"], g["params"], g["knowledge"]) == (method, json.dumps(params), paper)
            ],
            dtype="float64",
        )
        msg = f"{name}: max gain ({knowledge_label(paper)}) "
        if last.isna().all():  # no tuple released: no gain to measure (a frontier row of NaN)
            msg += "n/a (every tuple suppressed: no gain is defined)"
        else:
            msg += f"{last.max():.3f}"
        if done.retro is not None:
            retro += [
                {"method": method, "params": json.dumps(params), **row}
                for row in done.retro[list(_RETRO_KEEP)].to_dict("records")
            ]
            msg += f", retrospective {done.retro['adversary_gain'].max():.3f}"
        say(msg)
    tables = {
        "runs": pd.DataFrame(runs),
        "gains": _denoised(pd.DataFrame(gains)),
        "retro": _denoised(pd.DataFrame(retro, columns=["method", "params", *_RETRO_KEEP])),
    }
    tables["frontier"] = frontier(tables["runs"], tables["gains"], tables["retro"])
    tables = stamp_tables(tables, out)  # a table read later is checked against these ledgers (read_tables)
    for key, frame in tables.items():
        write_output(out / f"{key}.csv", frame.to_csv(index=False).encode())
    plot(tables, out)
    return tables


class SettingAttacks(NamedTuple):
    """What :func:`attack_setting` measures on one setting's ledger."""

    pinned: dict[int, float]  # per release: share_pinned (:func:`_pinned_shares`)
    gains: dict[str, pd.DataFrame]  # per knowledge kind: the paper adversary's frame (attack)
    retro: pd.DataFrame | None  # the retrospective frame with n_exit; None when not asked


def attack_setting(
    led: Ledger,
    history: pd.DataFrame,
    policy: ReleasePolicy,
    knowledge: tuple[str, ...] = KNOWLEDGE,
    *,
    attendance: float,
    retrospective: bool = True,
    shared: bool = True,
) -> SettingAttacks:
    """Every attack :func:`run_experiment` makes of one setting's ledger: the pinned shares, the
    paper adversary (no deductions) under each ``knowledge`` kind and (``retrospective``) the
    retrospective adversary with the exact DK, the exact deductions when installed and
    ``attendance``, with its exit counts (:func:`_with_exits`).

    ``shared`` (default): the ledger is read once for all of them and the retrospective
    adversary's deductions give the exit counts (one :class:`~dpriv.attack_share.AttackShare`);
    False: each reads and deduces on its own, as before issue 12's speed-up (the same frames,
    benchmarks/bench_retrospective.py ``--experiment`` times both). Raises as
    :func:`dpriv.attack.attack`."""
    one = AttackShare()
    share = (lambda: one) if shared else AttackShare
    pinned = _pinned_shares(led, history, policy, share())
    gains = {kind: attack(led, history, policy, kind, deductions=False, share=share()) for kind in knowledge}
    if not retrospective:
        return SettingAttacks(pinned, gains, None)
    use_deductions = deductions_available()
    r = attack(
        led,
        history,
        policy,
        "dk",
        adversary="retrospective",
        deductions=use_deductions,
        attendance=attendance,
        share=share(),
    )
    exits = _with_exits(r, led, history, policy, attendance, use_deductions, share())
    return SettingAttacks(pinned, gains, exits)


def _denoised(frame: pd.DataFrame) -> pd.DataFrame:
    """The gain columns rounded to :data:`GAIN_DECIMALS` (-0.0 as 0.0)."""
    cols = [c for c in ("adversary_gain", "histogram_gain") if c in frame]
    return frame.assign(**{c: pd.to_numeric(frame[c]).round(GAIN_DECIMALS) + 0.0 for c in cols})


def _with_exits(r, led, history, policy, attendance, use_deductions, share: AttackShare) -> pd.DataFrame:
    """The retrospective rows with ``n_exit``: tuples whose terminal value the exact deductions
    as of ``as_of`` reveal (the exit channel, :func:`dpriv.adversary.exits.exit_deductions`, the
    retrospective attack's deductions taken from ``share``); ``n_certain`` counts every certain
    value, whatever channel fixed it. NA without deductions."""
    if not use_deductions:
        return r.assign(n_exit=pd.NA)
    from dpriv.adversary.exits import exit_deductions  # needs the deductions' optional SciPy

    ex = exit_deductions(led, history, policy, "dk", attendance=attendance, share=share)
    return r.merge(ex[["release", "as_of", "n_exit"]], on=["release", "as_of"], how="left")


def _pinned_shares(led, history: pd.DataFrame, policy: ReleasePolicy, share: AttackShare) -> dict[int, float]:
    """Per release: the share of released tuples that everyone's QIs, the published boxes and
    the group sizes alone pin to one QI-group (membership from QIs, issue 11 item 4), from the
    releases as ``share`` reads them for the attacks."""
    inp = share.input(led, history, policy, "snapshot", None)
    if inp is None:
        return {}
    rows = linkage_rows(inp.reads, inp.policy)
    return {r["release"]: r["share_pinned"] for r in rows}


def _largest(gains: pd.DataFrame, key: list[str], col: str) -> pd.DataFrame:
    """The largest ``col`` per ``key`` (rows) and knowledge kind (columns), every kind attacked
    a column (NaN where no release kept a tuple: no gain is defined)."""
    top = gains.pivot_table(index=key, columns="knowledge", values=col, aggfunc="max")
    return top.reindex(columns=sorted(gains["knowledge"].unique()))


def frontier(runs: pd.DataFrame, gains: pd.DataFrame, retro: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (method, params): mean (max) suppression, mean semiperimeter, the max gain, the
    max confident share and the max ``histogram_gain`` (the gain had each release been one
    QI-group, :func:`dpriv.adversary.tail.histogram_gain`) per knowledge kind, and (with
    ``retro``) the retrospective max gain, max confident share and max ``histogram_gain``
    over every (release, as_of)."""
    key = ["method", "params"]
    util = runs.groupby(key).agg(
        suppression=("suppression", "mean"), max_suppression=("suppression", "max"), semi=("semi", "mean")
    )
    extra = [c for c in ("association_loss", "group_qi_span") if c in runs]
    if extra:  # the QI-S association lost (dpriv.metrics.anatomy): Anatomy's semi is 0 by construction
        util = util.join(runs.groupby(key)[extra].mean())
    if "share_pinned" in runs:
        util = util.join(runs.groupby(key).agg(max_pinned_share=("share_pinned", "max")))
    out = util.join(_largest(gains, key, "adversary_gain").add_prefix("max_gain_"))
    for col, prefix in (("confident_share", "max_share_"), ("histogram_gain", "max_histogram_gain_")):
        if col in gains:  # the tail, and the level of the same releases as one QI-group each
            out = out.join(_largest(gains, key, col).add_prefix(prefix))
    if retro is not None and len(retro):
        top = {"max_retro_gain": ("adversary_gain", "max"), "max_retro_share": ("confident_share", "max")}
        if "histogram_gain" in retro:  # the retrospective level of the same releases as one QI-group each
            top["max_retro_histogram_gain"] = ("histogram_gain", "max")
        out = out.join(retro.groupby(key).agg(**top))
        certain = [c for c in ("n_certain", "n_exit") if c in retro]
        if certain:  # how many (release, as_of) rows hold a certain value / a revealed exit
            rows = retro[certain].fillna(0).gt(0).groupby([retro[k] for k in key]).sum()
            out = out.join(rows.astype("int64").add_prefix("rows_"))
    return out.reset_index()

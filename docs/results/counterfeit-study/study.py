"""Counterfeit tuples against an adversary who knows their count and rule (issue 12, direction
4): a measurement study, nothing of it is in the release path. From the repository's root:

Run:   PYTHONPATH=. python docs/results/counterfeit-study/study.py run OUT SEED [VIEWS SIZE [R [C [S]]]]
       (releases the medical history, VIEWS x SIZE (default 8 x 2,000), attendance 0.5, with
       `dpriv.experiment.run_experiment` and the setting S of SETTINGS (default histogram: one
       QI-group per view) into OUT/seedS/, then for every rule of R (default RULES) and share of
       C (default SHARES; both comma-separated) adds the counterfeits to the published counts
       and attacks them: the paper adversary (full DK, window revision, no deductions, as the
       experiment's) and the retrospective one (attendance 0.5, no deductions); writes
       OUT/seedS/counterfeit.csv (one row per rule, share, adversary, release, as_of))
Table: PYTHONPATH=. python docs/results/counterfeit-study/study.py table OUT
       (prints the Markdown tables of README.md from OUT/seed*/counterfeit.csv)

The counterfeits of a group: c = round(share * n) tuples whose values follow the rule; the
release publishes the group's real and counterfeit values together and c. The adversary knows
c and the rule: its Ω step (E14) runs over the n members plus c phantom members whose prior is
the rule's distribution as it can compute it (`group_posterior(..., phantoms=, phantom_priors=)`).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dpriv.adversary.retrospective as retro
from dpriv.adversary.groups import group_posterior
from dpriv.attack_share import AttackShare
from dpriv.experiment import EXITS, run_experiment
from dpriv.experiment_files import setting_name
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.rbk import revised_priors
from dpriv.released import LABEL
from dpriv.state import empty_state, update_state

#: share of counterfeits per group, c / n
SHARES = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0)
#: how the counterfeit values are chosen (see draw()); "none" is the limit of infinitely many
#: counterfeits: the adversary's posterior is its prior, the counts tell it nothing.
RULES = ("prior", "rbk", "uniform", "flatten", "mode", "none")
#: the released settings the counterfeits are added to: method -> params (one QI-group per view;
#: the recommended top-down defense of docs/results/exit-frontier-24x5000)
SETTINGS = {
    "histogram": ("histogram", {}),
    "recommended": ("jsreduce", {"grouping": "topdown", "t": 0.45, "j": 1.5, "exit_values": EXITS}),
}


def draw(
    rule: str,
    real: np.ndarray,
    c: int,
    bk: np.ndarray,
    rbk: np.ndarray,
    prev: np.ndarray | None,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Counterfeit counts (M,) of one group and the phantoms' prior (M,) the adversary uses.

    real: the group's real counts; bk / rbk: its members' BK^sv / RBK^sv, (n, M), which a full-DK
    adversary computes as well; prev: the previous release's published frequencies (None at the
    first release). prior: i.i.d. from the members' mean BK^sv (the population's prior);
    rbk: i.i.d. from their mean RBK^sv; uniform: i.i.d. uniform over the domain; flatten: the c
    values that bring the group's histogram closest to prev (the view's histogram at the first
    release: then nothing to flatten toward, uniform) by water-filling the largest deficits
    first, deterministic; its adversary's phantom prior is its own estimate of that deficit,
    prev * (n + c) - (sum of its priors), clipped at 0 (prev where that is empty). mode: all c
    copies of the group's most frequent value (still its published mode, so the adversary's
    phantoms are a point mass there): it lowers (E10) through the published frequencies only."""
    m = real.size
    if c == 0:
        return np.zeros(m, np.int64), np.full(m, 1.0 / m)
    if rule in ("prior", "rbk", "uniform"):
        q = {"prior": bk.mean(axis=0), "rbk": rbk.mean(axis=0), "uniform": np.full(m, 1.0 / m)}[rule]
        q = q / q.sum()
        return rng.multinomial(c, q).astype(np.int64), q
    if rule == "mode":
        top = int(np.argmax(real))
        return np.eye(m, dtype=np.int64)[top] * c, np.eye(m)[top]
    target = np.full(m, 1.0 / m) if prev is None else prev
    fake = np.zeros(m, np.int64)
    for _ in range(c):  # one counterfeit at a time to the value furthest below the target
        fake[np.argmax(target * (real.sum() + c) - (real + fake))] += 1
    guess = np.clip(target * (real.sum() + c) - rbk.sum(axis=0), 0, None)
    q = guess / guess.sum() if guess.sum() > 0 else target
    return fake, q


def tv(published: np.ndarray, real: np.ndarray) -> float:
    """Total-variation distance between a published and a real histogram (of a release: `tv`;
    of each group, weighted by its real size: `tv_group`, the same at histogram level)."""
    return 0.5 * float(np.abs(published / published.sum() - real / real.sum()).sum())


def paper(inp, rule: str, share: float, seed: int) -> tuple[list[dict], dict]:
    """The paper adversary (window revision, no deductions) on the counterfeited releases; one
    row per release, and each release's (published counts, c per group, phantom priors)."""
    adv, policy, history = inp.adv, inp.policy, inp.history
    state = empty_state(policy, adv.window)
    rows, fakes, prev = [], {}, None
    for read in inp.reads:
        mem, truth, counts = read.members, read.s_true, read.counts
        tables = adv.tables_before(history, policy, read.index)
        priors = revised_priors(mem, state, tables, policy, adv.window)
        bk = tables.tables[0][tables.classes.classify(mem), 0]
        labels, gi = np.unique(mem["last_group"].to_numpy(np.int64), return_inverse=True)
        rng = np.random.default_rng([seed, read.index, int(share * 1000), RULES.index(rule)])
        pub, cs, qs = counts.copy(), np.zeros(len(labels), np.int64), np.zeros(counts.shape)
        for g in range(len(labels)):
            n = int(counts[g].sum())
            cs[g] = round(share * n)
            f, qs[g] = draw(rule, counts[g], int(cs[g]), bk[gi == g], priors[gi == g], prev, rng)
            pub[g] += f
        if rule == "none":
            post = priors / priors.sum(axis=1, keepdims=True)
        else:
            post = group_posterior(gi, pub, priors, phantoms=cs, phantom_priors=qs)
        k = np.arange(len(mem))
        on_truth = post[k, truth]
        rows.append(
            {
                "release": read.index,
                "as_of": read.index,
                "gain": float((on_truth - pub[gi, truth] / pub[gi].sum(axis=1)).mean()),
                "gain_true_freq": float((on_truth - counts[gi, truth] / counts[gi].sum(axis=1)).mean()),
                # B_i of docs/algorithms.md (gain-parts): the mean true frequency of a tuple's own
                # value in its group; (E10) = knowledge - B_i
                "baseline": float((counts[gi, truth] / counts[gi].sum(axis=1)).mean()),
                "prior_gain_true_freq": float(
                    (priors[k, truth] - counts[gi, truth] / counts[gi].sum(axis=1)).mean()
                ),
                "share_09": float((on_truth >= 0.9).mean()),
                "tv": tv(pub.sum(axis=0), counts.sum(axis=0)),
                "tv_group": sum(tv(pub[g], counts[g]) * counts[g].sum() for g in range(len(labels)))
                / counts.sum(),
            }
        )
        prev = pub.sum(axis=0) / pub.sum()
        fakes[read.index] = (pub, cs, qs)
        assigned = pd.DataFrame({policy.id: mem[policy.id].to_numpy(), LABEL: mem["last_group"].to_numpy()})
        state = update_state(state, assigned, post, policy, adv.window, read.index)
    return rows, fakes


def retrospective(share_: AttackShare, inp, fakes: dict, rule: str) -> list[dict]:
    """The retrospective adversary (attendance 0.5, no deductions) on the releases with the
    paper run's counterfeits: every Ω step of a release with phantoms (its published counts,
    its c and rule's prior), through retrospective_posteriors with its Ω wrapped."""
    tables, observed = share_.observed(inp)
    phantom = {}
    seen = []
    for o in observed:
        pub, cs, qs = fakes[o.index]
        seen.append(dataclasses.replace(o, counts=pub))
        phantom[id(seen[-1].counts)] = (cs, qs)

    def with_phantoms(group, counts, prior, mask=None):
        if rule == "none":  # no evidence from the counts: the emissions are constant
            return prior / prior.sum(axis=1, keepdims=True)
        cs, qs = phantom[id(counts)]
        return group_posterior(group, counts, prior, mask, phantoms=cs, phantom_priors=qs)

    real = {o.index: o.counts for o in observed}
    rows, keep = [], retro.group_posterior
    retro.group_posterior = with_phantoms
    try:
        for snap in retro.retrospective_posteriors(seen, tables, attendance=0.5):
            for i, post in zip(snap.releases, snap.posteriors):
                o = next(x for x in seen if x.index == i)
                k, t = np.arange(o.truth.size), o.truth
                on_truth = post[k, t]
                rc = real[i]
                rows.append(
                    {
                        "release": i,
                        "as_of": snap.as_of,
                        "gain": float(
                            (on_truth - o.counts[o.group, t] / o.counts[o.group].sum(axis=1)).mean()
                        ),
                        "gain_true_freq": float((on_truth - rc[o.group, t] / rc[o.group].sum(axis=1)).mean()),
                        "share_09": float((on_truth >= 0.9).mean()),
                    }
                )
    finally:
        retro.group_posterior = keep
    return rows


def run(out: Path, seed: int, views: int, size: int, rules=RULES, shares=SHARES, setting="histogram") -> None:
    here = out / f"seed{seed}"
    method, params = SETTINGS[setting]
    if not (here / "frontier.csv").exists():
        run_experiment(
            here,
            views=views,
            view_size=size,
            attendance=0.5,
            seed=seed,
            knowledge=("dk",),
            grid={method: [params]},
        )
    history = pd.read_parquet(here / "data" / "history.parquet")
    policy = ReleasePolicy.from_toml(here / "data" / "policy.toml").with_overrides(max_suppression=1.0)
    share_ = AttackShare()
    inp = share_.input(Ledger(here / "ledgers" / setting_name(method, params)), history, policy, "dk", None)
    rows = []
    for rule in rules:
        for share in shares:
            if (rule == "none" and share != 0) or (share == 0 and rule not in (RULES[0], "none")):
                continue  # share 0 once (no counterfeits), "none" once
            tick = time.perf_counter()
            p, fakes = paper(inp, rule, share, seed)  # "none": share 0, its posterior its prior
            r = retrospective(share_, inp, fakes, rule)
            rows += [{"rule": rule, "share": share, "adversary": "paper", **x} for x in p]
            rows += [{"rule": rule, "share": share, "adversary": "retrospective", **x} for x in r]
            print(
                f"seed {seed} {rule} {share}: paper {max(x['gain'] for x in p):.3f} "
                f"retro {max(x['gain'] for x in r):.3f} ({time.perf_counter() - tick:.0f} s)",
                flush=True,
            )
    new, old = pd.DataFrame(rows), here / "counterfeit.csv"
    if old.exists():  # keep the rows of the (rule, share) pairs not run now
        before = pd.read_csv(old)
        done = before.set_index(["rule", "share"]).index.isin(new.set_index(["rule", "share"]).index)
        new = pd.concat([before[~done], new], ignore_index=True)
    new.to_csv(old, index=False)


def table(out: Path) -> pd.DataFrame:
    """Per (seed, rule, share): the largest gain over releases (and (release, as_of)) of each
    adversary against the published and the true frequencies, the largest confident share, the
    mean and largest TV distance; printed as README.md's tables, one cell per seed."""
    rows = []
    for f in sorted(out.glob("seed*/counterfeit.csv")):
        c = pd.read_csv(f).assign(seed=int(f.parent.name[4:]))
        for (rule, share), g in c.groupby(["rule", "share"], sort=False):
            p, r = g[g.adversary == "paper"], g[g.adversary == "retrospective"]
            rows.append(
                {
                    "seed": c.seed.iloc[0],
                    "rule": rule,
                    "share": share,
                    "paper": p.gain.max(),
                    "paper_true": p.gain_true_freq.max(),
                    "paper_prior": p.prior_gain_true_freq.max(),
                    "retro": r.gain.max(),
                    "retro_true": r.gain_true_freq.max(),
                    "share_09": g.share_09.max(),
                    "tv_mean": p.get("tv_group", p.tv).mean(),
                    "tv_max": p.get("tv_group", p.tv).max(),
                }
            )
    t = pd.DataFrame(rows)
    seeds = sorted(t.seed.unique())
    cols = [
        ("paper", ".3f"),
        ("paper_true", ".3f"),
        ("retro", ".3f"),
        ("retro_true", ".3f"),
        ("share_09", ".1%"),
        ("tv_mean", ".3f"),
        ("tv_max", ".3f"),
    ]
    print(f"seeds {', '.join(map(str, seeds))} (cells: one value per seed)\n")
    print(
        "| rule | c/n | paper, E10 (published freq.) | paper, true freq. | retrospective, E10 | "
        "retrospective, true freq. | confident share (max) | TV mean | TV max |\n" + "|---" * 9 + "|"
    )
    for (rule, share), g in t.groupby(["rule", "share"], sort=False):
        g = g.set_index("seed")
        cells = [" / ".join(format(g.loc[s, c], f) if s in g.index else "-" for s in seeds) for c, f in cols]
        print(f"| {rule} | {'∞' if rule == 'none' else share} | {' | '.join(cells)} |")
    return t


def plot(t: pd.DataFrame, out: Path) -> None:
    """counterfeit.png: the largest gain against the true frequencies (paper, retrospective)
    along the mean TV distance, one line per rule and seed; the no-counts floor and goals dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpriv.experiment_plots import GOALS

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = dict(zip(RULES, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, (col, who, goal) in zip(
        axes,
        [
            ("paper_true", "paper adversary", GOALS["paper"]),
            ("retro_true", "retrospective adversary", GOALS["retrospective"]),
        ],
    ):
        for seed, s in t.groupby("seed"):
            base = s[(s.rule == "prior") & (s.share == 0)]
            for rule in RULES[:-1]:
                g = pd.concat([base, s[(s.rule == rule) & (s.share > 0)]]).sort_values("share")
                ax.plot(
                    g.tv_mean,
                    g[col],
                    marker="o",
                    color=colors[rule],
                    alpha=0.8,
                    label=rule if seed == t.seed.min() else None,
                )
            ax.axhline(
                s[s.rule == "none"][col].iloc[0],
                color=colors["none"],
                linestyle="--",
                linewidth=1,
                label="no counts (c = ∞)" if seed == t.seed.min() else None,
            )
        ax.axhline(goal, color="grey", linestyle=":", linewidth=1, label="goal")
        ax.set_ylim(bottom=min(goal, t[col].min()) - 0.01)
        ax.set(
            xlabel="TV(published, true histogram) per group, weighted, mean over releases",
            ylabel="max gain over releases (true frequencies)",
            title=who,
        )
        ax.legend(fontsize=7)
    fig.suptitle(
        f"Counterfeits ({out.name}), one line per rule and seed along c/n; the adversary knows c and the rule"
    )
    fig.tight_layout()
    fig.savefig(out / "counterfeit.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    cmd, out = sys.argv[1], Path(sys.argv[2])
    if cmd == "run":
        views, size = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (8, 2000)
        rules = sys.argv[6].split(",") if len(sys.argv) > 6 else RULES
        shares = tuple(map(float, sys.argv[7].split(","))) if len(sys.argv) > 7 else SHARES
        setting = sys.argv[8] if len(sys.argv) > 8 else "histogram"
        run(out, int(sys.argv[3]), views, size, rules, shares, setting)
    else:
        plot(table(out), out)

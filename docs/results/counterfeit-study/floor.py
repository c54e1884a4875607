"""The floor of (E10) itself (issue 12): trivial releases of the paper's history scored by the
experiment's two adversaries. A measurement, nothing of it is in the release path. From the
repository's root, after `study.py run OUT SEED 24 5000 prior,none 0` (histogram setting: it
leaves the history, the policy and the one-group ledger in OUT/seedS/):

Run:   PYTHONPATH=. python docs/results/counterfeit-study/floor.py run OUT SEED
       (writes OUT/seedS/floor.csv: one row per (release kind, adversary, release, as_of))
Classes: PYTHONPATH=. python docs/results/counterfeit-study/floor.py classes OUT SEED
       (the class grouping's average semiperimeter and largest EMD to the view, over the views)
Table: PYTHONPATH=. python docs/results/counterfeit-study/floor.py table OUT OUT_RECOMMENDED
       (prints the README's floor tables from OUT/seed*/{counterfeit,floor}.csv and the
       recommended grouping's OUT_RECOMMENDED/seed*/counterfeit.csv, run with
       `study.py run OUT_RECOMMENDED SEED 24 5000 prior,none 0 recommended`)

Release kinds written here (the one-group release with and without counts is study.py's
"prior" c/n 0 and "none" rows):
* snapshot: nothing published (every tuple suppressed; (E10) is then a mean over no tuple). The
  row scores what the adversary knows of a view's members with no release at all, BK^sv of
  their QIs (no membership, no revision), against the view's frequencies, the baseline of the
  one-group release: the no-release knowledge on (E10)'s scale. Paper adversary only.
* disclosed: every view published as one QI-group per sensitive value present (QIs as wide as
  the one-group release's, the counts true): each group's members all hold its value. Scored
  by the paper adversary (full DK, window revision) and the retrospective one (attendance 0.5)
  with the true counts, no deductions, as study.py does.
* class: every view published as one QI-group per knowledge class of the adversary (the QI
  bins its BK^sv is indexed by: a full-domain generalization to those bins, whatever k), true
  counts. Members of a group share BK^sv, so before any revision Ω gives each the group's
  frequencies; scored as "disclosed". `groups_below_5` is the share of tuples in groups of < 5.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

import dpriv.adversary.retrospective as retro
from dpriv.attack_share import AttackShare
from dpriv.datasets.model import CLASS_MAP
from dpriv.divergence import emd
from dpriv.experiment_files import setting_name
from dpriv.experiment_plots import GOALS
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy

sys.path.insert(0, str(Path(__file__).parent))
import study  # noqa: E402, I001  (the counterfeit study's paper adversary, reused as is)


#: the regroupings of a view: what each tuple's group is keyed by (module doc)
KINDS = ("disclosed", "class")


def regroup(key: np.ndarray, truth: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """One QI-group per distinct key of a view's tuples: group index (n,) int64 and the true
    counts (n_groups, M) int64."""
    labels, group = np.unique(key, return_inverse=True)
    counts = np.zeros((labels.size, m), np.int64)
    np.add.at(counts, (group, truth), 1)
    return group.astype(np.int64), counts


def key_of(kind: str, truth: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """disclosed: the true value; class: the adversary's knowledge class of the QIs."""
    return truth if kind == "disclosed" else cls


def snapshot_rows(inp) -> list[dict]:
    """Per release: the mean BK^sv on the truth of the view's members, minus the view's
    frequency of the truth (the one-group baseline), and the share at >= 0.9."""
    rows = []
    for read in inp.reads:
        tables = inp.adv.tables_before(inp.history, inp.policy, read.index)
        bk = tables.tables[0][tables.classes.classify(read.members), 0]
        bk = bk / bk.sum(axis=1, keepdims=True)
        truth = read.s_true
        on_truth = bk[np.arange(truth.size), truth]
        view = read.counts.sum(axis=0)
        base = view[truth] / view.sum()
        rows.append(
            {
                "kind": "snapshot",
                "adversary": "paper",
                "release": read.index,
                "as_of": read.index,
                "knowledge": float(on_truth.mean()),
                "baseline": float(base.mean()),
                "gain": float((on_truth - base).mean()),
                "share_09": float((on_truth >= 0.9).mean()),
            }
        )
    return rows


def regrouped_paper(inp, kind: str, seed: int) -> list[dict]:
    """The paper adversary on the regrouped releases (study.paper with no counterfeits)."""
    m = inp.reads[0].counts.shape[1]
    reads = []
    for read in inp.reads:
        cls = inp.adv.tables_before(inp.history, inp.policy, read.index).classes.classify(read.members)
        group, counts = regroup(key_of(kind, read.s_true, cls), read.s_true, m)
        reads.append(read._replace(members=read.members.assign(last_group=group), counts=counts))
    rows, _ = study.paper(dataclasses.replace(inp, reads=reads), "prior", 0.0, seed)
    small = [float((np.bincount(r.members["last_group"])[r.members["last_group"]] < 5).mean()) for r in reads]
    return [
        {
            "kind": kind,
            "adversary": "paper",
            "release": r["release"],
            "as_of": r["as_of"],
            "knowledge": r["gain"] + r["baseline"],
            "baseline": r["baseline"],
            "gain": r["gain"],
            "share_09": r["share_09"],
            "groups_below_5": small[n],
        }
        for n, r in enumerate(rows)
    ]


def regrouped_retro(share_: AttackShare, inp, kind: str) -> list[dict]:
    """The retrospective adversary (attendance 0.5, no deductions) on the regrouped releases."""
    tables, observed = share_.observed(inp)
    m = observed[0].counts.shape[1]
    seen = []
    for o in observed:
        group, counts = regroup(key_of(kind, o.truth, o.cls), o.truth, m)
        seen.append(dataclasses.replace(o, group=group, counts=counts))
    rows = []
    for snap in retro.retrospective_posteriors(seen, tables, attendance=0.5):
        for i, post in zip(snap.releases, snap.posteriors):
            o = next(x for x in seen if x.index == i)
            on_truth = post[np.arange(o.truth.size), o.truth]
            base = o.frequencies()[np.arange(o.truth.size), o.truth]
            rows.append(
                {
                    "kind": kind,
                    "adversary": "retrospective",
                    "release": i,
                    "as_of": snap.as_of,
                    "knowledge": float(on_truth.mean()),
                    "baseline": float(base.mean()),
                    "gain": float((on_truth - base).mean()),
                    "share_09": float((on_truth >= 0.9).mean()),
                }
            )
    return rows


def run(out: Path, seed: int) -> None:
    here = out / f"seed{seed}"
    history = pd.read_parquet(here / "data" / "history.parquet")
    policy = ReleasePolicy.from_toml(here / "data" / "policy.toml").with_overrides(max_suppression=1.0)
    share_ = AttackShare()
    ledger = Ledger(here / "ledgers" / setting_name("histogram", {}))
    inp = share_.input(ledger, history, policy, "dk", None)
    rows = snapshot_rows(inp)
    for kind in KINDS:
        rows += regrouped_paper(inp, kind, seed) + regrouped_retro(share_, inp, kind)
    pd.DataFrame(rows).to_csv(here / "floor.csv", index=False)
    for (kind, adv), g in pd.DataFrame(rows).groupby(["kind", "adversary"]):
        print(f"seed {seed} {kind} {adv}: max gain {g.gain.max():.3f}, min {g.gain.min():.3f}", flush=True)


def knowledge(c: pd.DataFrame) -> pd.DataFrame:
    """The no-counts rows ("none") of one study run with their knowledge term: (E10) plus the
    release's B_i (the paper rows' `baseline`, the same groups for both adversaries)."""
    base = c[(c.adversary == "paper") & (c.rule == "none")].set_index("release").baseline
    none = c[c.rule == "none"].copy()
    none["baseline"] = none.release.map(base)
    none["knowledge"] = none.gain_true_freq + none.baseline
    return none


def shares(rows: pd.DataFrame) -> list[float]:
    """The largest share of tuples at >= 0.9 on the truth, per adversary present."""
    return [g.share_09.max() for _, g in rows.groupby("adversary", sort=True)]


def cell(values: list[float], fmt: str = ".3f") -> str:
    return " / ".join(format(v, fmt) for v in values)


def table(out: Path, recommended: Path) -> None:
    """Prints the README's tables (module doc), one cell per seed (seeds with a floor.csv)."""
    seeds = sorted(int(f.parent.name[4:]) for f in out.glob("seed*/floor.csv"))
    runs = {
        (name, s): pd.read_csv(d / f"seed{s}" / "counterfeit.csv")
        for name, d in (("one group per view", out), ("recommended", recommended))
        for s in seeds
    }
    floors = {s: pd.read_csv(out / f"seed{s}" / "floor.csv") for s in seeds}
    print(f"seeds {', '.join(map(str, seeds))}\n")
    print(
        "| release | counts | paper | retrospective | confident share, paper / retro. (max) |\n"
        + "|---" * 5
        + "|"
    )

    def row(name: str, counts: str, parts: list[pd.DataFrame]) -> None:
        paper = [p[p.adversary == "paper"].gain.max() for p in parts]
        retro = [p[p.adversary == "retrospective"].gain.max() for p in parts]
        conf = [" / ".join(f"{x:.1%}" for x in shares(p)) for p in parts]
        r = cell(retro) if all(x == x for x in retro) else "-"
        print(f"| {name} | {counts} | {cell(paper)} | {r} | {' ; '.join(conf)} |")

    snap = [f.assign(gain_true_freq=f.gain) for f in floors.values()]
    row("nothing published (BK^sv vs the view's frequencies)", "-", [x[x.kind == "snapshot"] for x in snap])
    for name in ("one group per view", "recommended"):
        for lvl, pick in (("none (c/n -> inf)", "none"), ("true", "prior")):
            parts = [runs[name, s] for s in seeds]
            parts = [
                p[(p.rule == pick) & (p.share == 0)].assign(gain=lambda x: x.gain_true_freq) for p in parts
            ]
            row(name, lvl, parts)
    for kind, name in (("class", "one group per knowledge class"), ("disclosed", "one group per value")):
        row(name, "true", [f[f.kind == kind] for f in floors.values()])
    # the value-grouped release without counts: the no-counts knowledge against frequencies of 1
    know = {s: knowledge(runs["one group per view", s]) for s in seeds}
    row(
        "one group per value",
        "none (c/n -> inf)",
        [k.assign(gain=k.knowledge - 1.0) for k in know.values()],
    )

    print(
        "\n| seed | largest K_i paper / retro. | B_i one group (min-max) | B_i recommended (min-max) | "
        "B_i needed, paper / retro. | no-counts K_i, one group vs recommended (largest difference) |"
    )
    print("|---" * 6 + "|")
    for s in seeds:
        k, kr = know[s], knowledge(runs["recommended", s])
        kp, kt = k[k.adversary == "paper"], k[k.adversary == "retrospective"]
        need = [(kp.knowledge - GOALS["paper"]).max(), (kt.knowledge - GOALS["retrospective"]).max()]
        merged = k.merge(kr, on=["adversary", "release", "as_of"], suffixes=("", "_rec"))
        b = [
            runs[n, s].query("adversary == 'paper' and rule == 'none'").baseline
            for n in ("one group per view", "recommended")
        ]
        print(
            f"| {s} | {cell([kp.knowledge.max(), kt.knowledge.max()])} | "
            f"{b[0].min():.3f}-{b[0].max():.3f} | {b[1].min():.3f}-{b[1].max():.3f} | {cell(need)} | "
            f"{(merged.knowledge - merged.knowledge_rec).abs().max():.1e} |"
        )


class ClassGrouping(NamedTuple):
    """The knowledge-class grouping of every view: its average semiperimeter (E11, unweighted
    over groups) and the largest EMD (E18, the policy's ground) of a group to its view, (views,)."""

    semi: pd.Series
    emd: pd.Series


def describe_classes(out: Path, seed: int) -> ClassGrouping:
    """:class:`ClassGrouping` of OUT/seedS/'s history (the class map of dpriv.datasets.model)."""
    here = out / f"seed{seed}"
    history = pd.read_parquet(here / "data" / "history.parquet")
    policy = ReleasePolicy.from_toml(here / "data" / "policy.toml")
    frame = history.assign(cls=CLASS_MAP.classify(history))
    keys = [policy.time, "cls"]
    span = {q: float(np.ptp(policy.domains[q])) for q in policy.qi}
    ext = frame.groupby(keys)[list(policy.qi)].agg(np.ptp)
    semi = sum(ext[q] / span[q] for q in policy.qi).groupby(level=0).mean()
    counts = pd.crosstab([frame[policy.time], frame.cls], frame[policy.sensitive]).astype(float)
    dist = counts.div(counts.sum(axis=1), axis=0)
    view = counts.groupby(level=0).sum()
    view = view.div(view.sum(axis=1), axis=0)
    far = pd.Series(
        [
            emd(row, view.loc[v].to_numpy(), policy.emd_ground)
            for (v, _), row in zip(dist.index, dist.to_numpy())
        ],
        index=dist.index,
    )
    return ClassGrouping(semi, far.groupby(level=0).max())


if __name__ == "__main__":
    cmd, out = sys.argv[1], Path(sys.argv[2])
    if cmd == "run":
        run(out, int(sys.argv[3]))
    elif cmd == "classes":
        c = describe_classes(out, int(sys.argv[3]))
        print(
            f"class grouping, per view: average semiperimeter {c.semi.min():.3f}-{c.semi.max():.3f}, "
            f"largest EMD of a group to its view {c.emd.min():.3f}-{c.emd.max():.3f}"
        )
    else:
        table(out, Path(sys.argv[3]))

"""Adult (ARX's 30,162 rows) with and without ARX's generalization hierarchies (issue 16 item 1).

QIs age (numeric), sex, race, marital-status, education; sensitive salary-class; k = 5,
t = 0.2 (JS-reduce with j = 2, i.e. no JS constraint: one-shot class priors) and the
Mondrian t-closeness baseline. Prints, per method and categorical encoding: groups,
suppressed tuples, max EMD, average semiperimeter (E11; a hierarchical QI counts ARX's loss
of its node) and seconds; the value-set releases are also measured as if each set were
published as its lowest common hierarchy node ("semi as nodes"), which isolates the effect
of the Hilbert order on the tree from the coarser format. Reads /work/shared/data/arx (or
the folder given as argument).

    python benchmarks/bench_hierarchy.py [DATA/arx]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.baselines import baseline_view
from dpriv.input_checks import resolve_policy
from dpriv.metrics.release import utility_domains
from dpriv.metrics.utility import utility_metrics
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize
from dpriv.validate import validate_view

QI = ["age", "sex", "race", "marital-status", "education"]


def main(arx: Path) -> None:
    view = pd.read_csv(arx / "adult.csv", sep=";")
    view.insert(0, "rid", np.arange(len(view)))
    view = view[["rid", *QI, "salary-class"]]
    hier = {q: str(arx / f"adult_hierarchy_{q}.csv") for q in QI[1:]}
    base = dict(id="rid", qi=QI, sensitive="salary-class", k=5, t=0.2, j=2.0)
    head = f"{'method':<12} {'categorical':<12} {'groups':>7} {'suppr.':>7} {'max_emd':>9} {'semi':>7}"
    print(head + f" {'semi as nodes':>13} {'s':>6}")
    tree = ReleasePolicy(**base, hierarchies=hier)
    for method in ("jsreduce", "mondrian-t"):
        for label, extra in (("value sets", {}), ("hierarchies", {"hierarchies": hier})):
            pol = ReleasePolicy(**base, **extra)
            t0 = time.perf_counter()
            if method == "jsreduce":
                out = anonymize(view, pol)
                m = out.metrics
                row = (m["n_groups"], m["n_suppressed"], m["t_achieved"], m["average_semiperimeter"])
            else:
                pol, _ = resolve_policy(view, pol)
                counts = validate_view(view, pol).s_counts
                out = baseline_view(view, pol, method)
                u = utility_metrics(out.released, **utility_domains(pol), n_original=len(view), k=5)
                emd = _max_emd(out.released, pol, counts)
                row = (u["n_groups"], u["n_suppressed"], emd, u["average_semiperimeter"])
            secs = time.perf_counter() - t0
            nodes = _as_nodes(out.released, tree) if not extra else row[3]
            line = f"{method:<12} {label:<12} {row[0]:>7} {row[1]:>7} {row[2]:>9.6f} {row[3]:>7.4f}"
            print(line + f" {nodes:>13.4f} {secs:>6.1f}")


def _as_nodes(released: pd.DataFrame, tree: ReleasePolicy) -> float:
    """Average semiperimeter of a value-set release with every set replaced by its lowest
    common node (ARX's loss), numeric QIs as released."""
    from dpriv.released import split_value_sets

    groups = released.drop_duplicates("qi_group")
    lo, hi = groups["age_min"].to_numpy(float), groups["age_max"].to_numpy(float)
    semi = (hi - lo) / (released["age_max"].max() - released["age_min"].min())
    for q in QI[1:]:
        h = tree.hierarchy(q)
        pos = {leaf: i for i, leaf in enumerate(h.leaves)}
        items = split_value_sets(groups[q]).map(lambda vs, pos=pos: [pos[v] for v in vs])
        node = h.lowest_common(items.map(min).to_numpy(), items.map(max).to_numpy())
        semi = semi + np.array([h.loss(h.names[i]) for i in node])
    return float(np.mean(semi))


def _max_emd(released: pd.DataFrame, pol: ReleasePolicy, counts: np.ndarray) -> float:
    from dpriv.anonymity.verify import verify_release

    return verify_release(released, pol, view_counts=counts).t_achieved


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/shared/data/arx"))

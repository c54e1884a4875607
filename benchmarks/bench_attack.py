"""Adversary gain (E10) on the paper workload: ``python benchmarks/bench_attack.py``.

Run: python benchmarks/bench_attack.py [--views 24] [--view-size 5000] [--seed 0]
     [--workdir DIR] [--knowledge snapshot dk dk-1 dk-3] [--at 1 8 24]

The synthetic medical history (``medical_history``, defaults 24 views x 5,000 tuples,
attendance 1, det 0.9, docs/algorithms.md §2.5) is released twice with ``release_history``
(JS-reduce, k = 5): "k-only" with t = 1.0, j = 1.0 bit (k-anonymity-like small groups) and
"t0.5-j0.8" with t = 0.5 (equal-distance EMD), j = 0.8 bit. Each ledger is attacked by
``dpriv.attack.attack`` under every ``--knowledge`` (snapshot = BK^sv only; dk = full
order-3 DK, the generator's exact model; dk-n = n-step DK). It prints, per release policy:
suppression and average semiperimeter at the chosen releases, then per knowledge the gain
rho_i at those releases, the max over all releases, and the attack's time per release
(mean and max, revision + Ω + state update; reading the ledger excluded).

With ``--workdir`` the history and ledgers are kept there and reused by the next run (a
ledger whose releases are committed is not released again).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from dpriv.attack import attack
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

POLICIES = {"k-only (t=1.0, j=1.0)": (1.0, 1.0), "t=0.5, j=0.8": (0.5, 0.8)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--views", type=int, default=24)
    ap.add_argument("--view-size", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--knowledge", nargs="+", default=["snapshot", "dk", "dk-1", "dk-3"])
    ap.add_argument("--at", nargs="+", type=int, default=[1, 8, 24])
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_attack_"))
    work.mkdir(parents=True, exist_ok=True)
    at = [i for i in args.at if 1 <= i <= args.views]

    t0 = time.perf_counter()
    mh = medical_history(n_views=args.views, view_size=args.view_size, seed=args.seed)
    path = write_history(work / "data", mh)
    print(
        f"history: {args.views} views x {args.view_size} tuples, {mh.n_respondents} respondents, "
        f"seed {args.seed} ({time.perf_counter() - t0:.1f} s); work dir {work}"
    )
    results: dict = {}
    for pname, (t, j) in POLICIES.items():
        policy = ReleasePolicy.from_toml(path, t=t, j=j, k=args.k)
        tag = f"t{t}-j{j}-k{args.k}-s{args.seed}-{args.views}x{args.view_size}"
        t0 = time.perf_counter()
        led = release_history(mh.history, policy, work / f"ledger-{tag}")
        rel_s = time.perf_counter() - t0
        metrics = [led.read_metrics(r["index"]) for r in led.committed()]
        supp = np.array([m["n_suppressed"] / m["n_original"] for m in metrics])
        semi = [m.get("average_semiperimeter") for m in metrics]
        print(f"\n== release {pname}, k={args.k} (EMD equal distance, JS in bits); released in {rel_s:.1f} s")
        print(
            "   suppression % at "
            + ", ".join(f"{i}: {100 * supp[i - 1]:.1f}" for i in at)
            + f"; mean {100 * supp.mean():.1f}, max {100 * supp.max():.1f}"
        )
        print("   avg semiperimeter at " + ", ".join(f"{i}: {semi[i - 1]:.3f}" for i in at if semi[i - 1]))
        header = f"   {'knowledge':<10}" + "".join(f"{'rho@' + str(i):>9}" for i in at)
        print(header + f"{'max rho':>9}{'s/release':>11}{'max s':>8}")
        for kn in args.knowledge:
            secs: list[float] = []
            out = attack(
                led,
                mh.history,
                policy,
                kn,
                deductions=False,
                on_release=lambda i, m, s=secs: s.append(m["seconds"]),
            )
            g = out.set_index("release")["adversary_gain"]
            results[(pname, kn)] = g
            print(
                f"   {kn:<10}"
                + "".join(f"{g.loc[i]:>9.4f}" for i in at)
                + f"{g.max():>9.4f}{np.mean(secs):>11.3f}{np.max(secs):>8.3f}"
            )
    return results


if __name__ == "__main__":
    main()

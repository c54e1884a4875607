"""``dpriv demo``: generate the paper-setting history, release it with the recommended defense
and attack it as the adversary who knows the generator's exact model."""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dpriv.cli.common import Cluster, Debug, Scheduler, Views, ViewSize, app, command, say_err
from dpriv.cli.policy_flags import load_effective
from dpriv.cli.release_run import run_release
from dpriv.errors import InputError, LedgerError
from dpriv.scheduler_address import chosen_scheduler

if TYPE_CHECKING:
    from dpriv.attack_share import AttackShare


def demo_ledger(kwargs: Mapping[str, Any]) -> Path:
    """The ledger ``dpriv demo`` writes: ``OUT/ledger`` (``OUT`` by default ``demo-out``)."""
    return Path(kwargs.get("out") or "demo-out") / "ledger"


@app.command()
@command(ledger=demo_ledger)  # an interrupted demo names its ledger's last committed release
def demo(
    out: Annotated[Path, typer.Option(help="Working folder.")] = Path("demo-out"),
    views: Views = 24,
    view_size: ViewSize = 5000,
    scheduler: Scheduler = None,
    cluster: Cluster = None,
    force: Annotated[
        bool,
        typer.Option(
            help="Re-use a folder of an earlier demo: its ledger is moved aside to ledger.<n> "
            "(kept, never deleted) and the generated files an earlier demo or generate wrote are "
            "replaced (refused if changed since); refused (exit 3) while a dpriv release writes that "
            "ledger."
        ),
    ] = False,
    retrospective: Annotated[
        bool,
        typer.Option(
            help="Also attack every release again once the whole history is out (the "
            "retrospective adversary, who knows the generator's attendance): its largest gain is "
            "what the history leaks in the end, often twice the paper adversary's; about as long "
            "as the release itself."
        ),
    ] = True,
    debug: Debug = False,
) -> None:
    """Generate the paper-setting history, release it with JS-reduce (in this process, or on a
    local cluster with --cluster or for views over 50,000 tuples) and attack it."""
    from dpriv.cli.outputs import check_outside_ledger, check_writable
    from dpriv.datasets import write_history
    from dpriv.datasets.generated import GENERATED_FILES
    from dpriv.ledger_files import LOCK, drop_lock, hold_lock

    check_outside_ledger(out, *GENERATED_FILES)  # raw data and a nested ledger inside a ledger
    folder = next(p for p in (out, *out.absolute().parents) if p.exists() or p.is_symlink())
    if folder.is_dir():  # probed here, before any work
        check_writable(folder)
    elif folder != out:  # (out itself a file: check_generated names it)
        raise InputError(
            f"--out {out}: {folder} is a file, not a folder; choose another --out: nothing was written"
        )
    # reached before anything is generated (the release would find out after)
    scheduler = chosen_scheduler(scheduler, cluster, say_err)
    led = out / "ledger"
    if not force and led.exists():
        raise LedgerError(
            f"{led} exists (an earlier release, perhaps not a demo): nothing was changed; choose another "
            f"--out, or pass --force to move it aside to {led}.<n> (kept) and run the demo again"
        )
    # a running release holds the ledger's lock: moving its folder aside under it made
    # it fail mid-write; held from here (before anything is generated) until the move
    made = led.is_dir() and not (led / LOCK).exists()  # a lock file this command makes goes again
    lock, aside = hold_lock(led) if led.is_dir() else None, None  # aside: where it was moved
    try:
        mh = _generate_checked(out, views, view_size, force)
        if led.exists() or led.is_symlink():
            aside = next(p for n in itertools.count(1) if not (p := led.with_name(f"ledger.{n}")).exists())
            led.rename(aside)
            say_err(f"--force: the existing ledger was moved to {aside} (kept)")
    finally:
        drop_lock(lock)
        if made:  # in the folder as it was, moved aside or not
            ((aside or led) / LOCK).unlink(missing_ok=True)
    policy_path = write_history(out, mh, policy_extra=_demo_privacy(), overwrite=force)
    typer.echo(f"generated {len(mh.history)} tuples of {mh.n_respondents} respondents; policy {policy_path}")
    eff, _ = load_effective(policy_path)
    run_release(str(out / "history.parquet"), out / "ledger", eff, scheduler, None, cluster=cluster)
    policy = eff.policy
    from dpriv.attack import attack as run_attack
    from dpriv.attack import save_gain
    from dpriv.attack_share import AttackShare

    share = AttackShare()  # the retrospective attack takes the releases and deductions read here
    gain = run_attack(out / "ledger", mh.history, policy, "dk", share=share)
    path = save_gain(gain, out / "ledger", "dk")  # where `dpriv report` finds the gain curve
    worst = gain.loc[gain["adversary_gain"].idxmax()]
    typer.echo(
        f"adversary with the generator's exact knowledge (full DK): largest gain "
        f"{worst['adversary_gain']:.3f} at release {int(worst['release'])} (E10; as one QI-group that "
        f"release would leave {worst['histogram_gain']:.3f}); per release in {path}"
    )
    if retrospective:
        _retrospective(out / "ledger", mh, policy, float(worst["adversary_gain"]), share)
    typer.echo(f"the HTML report: dpriv report {shlex.quote(str(out / 'ledger'))}")


def _generate_checked(out: Path, views: int, view_size: int, force: bool) -> Any:
    """The demo's MedicalHistory, after the checks that refuse before anything is generated."""
    from dpriv.datasets import medical_history
    from dpriv.datasets.generated import check_generated

    check_generated(out, overwrite=force, flag="--force")  # an edited policy.toml is kept
    k = _demo_privacy()["privacy"].get("k", 5)
    if view_size < k:  # refused before anything is generated: every tuple would be suppressed
        raise InputError(
            f"--view-size {view_size} is smaller than the demo's k = {k}: no QI-group can form; "
            f"choose --view-size {k} or more (nothing was written)"
        )
    return medical_history(views, view_size, seed=0)


def _retrospective(ledger: Path, mh: Any, policy: Any, paper_gain: float, share: AttackShare) -> None:
    """The retrospective adversary (full DK, the generator's attendance, exact deductions) on
    every release as of every later one, written where ``dpriv report`` finds it, and its largest
    gain printed beside the paper adversary's (docs/algorithms.md, retrospective adversary)."""
    from dpriv.attack import attack as run_attack
    from dpriv.cli.audit import default_out
    from dpriv.cli.outputs import write_frame

    attendance = float(mh.config["attendance"])
    retro = run_attack(
        ledger, mh.history, policy, "dk", adversary="retrospective", attendance=attendance, share=share
    )
    path = default_out(ledger, "dk", "retrospective")
    write_frame(retro, path, kind="attack", own=True)  # stamped by attack(); a fresh ledger's own file
    worst = retro.loc[retro["adversary_gain"].idxmax()]
    ratio = f"{worst['adversary_gain'] / paper_gain:.1f}x the paper adversary's; " if paper_gain > 0 else ""
    typer.echo(
        f"the same adversary attacking each release again once later ones are out (retrospective, "
        f"attendance {attendance:g}): largest gain {worst['adversary_gain']:.3f} on release "
        f"{int(worst['release'])} as of release {int(worst['as_of'])} ({ratio}as one QI-group that "
        f"release would leave {worst['histogram_gain']:.3f}); per (release, as_of) in {path}"
    )


def _demo_privacy() -> dict[str, dict[str, Any]]:
    """The demo releases with the recommended defense (dpriv/datasets/files.py; the paper's
    t = 0.3, j = 0.1 suppress most tuples). Small demo views (--view-size of a few hundred)
    suppress more than the paper-size demo does: the demo shows that figure rather than
    refusing."""
    from dpriv.datasets.files import RECOMMENDED_DEFENSE

    return {
        "privacy": {**RECOMMENDED_DEFENSE["privacy"], "max_suppression": 0.25},
        "release": RECOMMENDED_DEFENSE["release"],
    }

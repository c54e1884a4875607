"""``dpriv attack`` and ``dpriv report``: attack a ledger's releases as an adversary would, and
put a ledger's releases, metrics and attack results on one HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from dpriv.attack_files import GAIN_FILE, RETRO_FILE
from dpriv.cli.common import (
    Debug,
    Ledger,
    app,
    check_out,
    command,
    policy_option,
    say_err,
    write_frame,
)
from dpriv.cli.policy_flags import ledger_policy_file
from dpriv.errors import PolicyError
from dpriv.ledger import ATTACK_DIR
from dpriv.output_record import changed_since_written
from dpriv.policy_base import with_hint

if TYPE_CHECKING:
    import pandas as pd

    from dpriv.policy import ReleasePolicy
    from dpriv.report.coverage import AttackResults


def default_out(ledger: Path, knowledge: str, adversary: str) -> Path:
    """Where ``dpriv attack`` writes without ``--out``: ``LEDGER/attack/gain_<knowledge>.csv``
    for the paper adversary, ``LEDGER/attack/retro_<knowledge>.csv`` for the retrospective one
    (where ``dpriv report`` finds each). PolicyError for an unknown knowledge or adversary."""
    from dpriv.attack import ADVERSARIES
    from dpriv.attack_files import gain_path, retro_path

    if adversary not in ADVERSARIES:
        raise PolicyError(f"unknown adversary {adversary!r}; valid: {', '.join(ADVERSARIES)}")
    return (gain_path if adversary == "paper" else retro_path)(ledger, knowledge)


#: ``dpriv attack --policy FILE``: optional, the ledger's own policy by default.
AttackPolicyFile = policy_option(
    "Optional: by default the policy the ledger recorded with its releases is used; a file given must "
    "read the releases with the same columns."
)


@app.command()
@command
def attack(
    ledger: Ledger,
    history: Annotated[str, typer.Option(help="The original history that was released.")],
    knowledge: Annotated[
        str, typer.Option(help="snapshot, dk, dk-1, dk-2, dk-3, spm:PATH (external corpus) or ie.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help=f"CSV (or .parquet); default LEDGER/{ATTACK_DIR}/{GAIN_FILE.format(name='<knowledge>')} "
            f"for the paper adversary and LEDGER/{ATTACK_DIR}/{RETRO_FILE.format(name='<knowledge>')} "
            "for the retrospective one, where "
            "dpriv report finds them (these two are the ledger's own files, replaced by a later "
            "attack while unchanged). paper: release, adversary_gain, n_tuples and the tail risk "
            "(confident_share, confident_precision, n_confident, max_posterior, n_certain), then "
            "prior_gain and prior_confident_share (the same with the adversary's prior), "
            "histogram_gain (had the release been one QI-group); "
            "retrospective: one row per (release, as_of) with the same measures; views_sha last "
            "(the releases each row was computed on, which dpriv report checks)."
        ),
    ] = None,
    adversary: Annotated[
        str,
        typer.Option(
            help="paper: each release attacked when it comes out; retrospective: every release "
            "attacked again after each later one (forward-backward over each history)."
        ),
    ] = "paper",
    deductions: Annotated[
        bool,
        typer.Option(
            "--deductions/--no-deductions",
            help="Mask both adversaries with the exact deductions known at the time (default on, "
            "the strongest adversary; --no-deductions gives the paper's adversary exactly).",
        ),
    ] = True,
    attendance: Annotated[
        float | None,
        typer.Option(
            help="The model's weekly exam probability q, if the adversary knows it (absences as evidence)."
        ),
    ] = None,
    membership: Annotated[
        str,
        typer.Option(
            help="known: the adversary knows the QI-group membership (docs/algorithms.md §1.1); qi: "
            "also write per release n_pinned, share_pinned, the respondents that everyone's QIs, the "
            "published boxes and group sizes alone pin to one group (the gains stay the "
            "known-membership ones)."
        ),
    ] = "known",
    revision: Annotated[
        str | None,
        typer.Option(
            help="The paper adversary's revision (docs/algorithms.md §1.4): window (default) is (E7) "
            "over the last n' posteriors, as the paper and the defender; history is (E5)/(E6) over "
            "every full history the model allows (with --attendance, a missing week is one step of "
            "the weekly chain). The retrospective adversary always reads whole histories."
        ),
    ] = None,
    policy: AttackPolicyFile = None,
    force: Annotated[
        bool,
        typer.Option(
            help="Replace an existing --out file that an earlier dpriv attack wrote (never another "
            "file; the default LEDGER/attack/ file is replaced while unchanged)."
        ),
    ] = False,
    debug: Debug = False,
) -> None:
    """Attack a ledger as the adversary of docs/algorithms.md §1.1 would; adversary gain (E10) and tail
    risk per release."""
    target = _attack_out(ledger, knowledge, adversary, out, history, force)  # before the attack's work
    pol = ledger_policy_file(policy, ledger, history)  # None: the ledger's own; else its columns checked
    from dpriv.ledger import Ledger as Led
    from dpriv.ledger_checks import check_released_any

    check_released_any(Led(ledger))  # nothing to attack: no header-only table written
    options = {"adversary": adversary, "deductions": deductions, "attendance": attendance}
    options.update(membership=membership, revision=revision)
    gain = _gains(ledger, history, pol, knowledge, policy is not None, options)
    from dpriv.attack_stamp import STAMP

    write_frame(gain, target.path, kind="attack", force=force, own=target.own)  # with views_sha per row
    typer.echo(shown_gain(gain.drop(columns=STAMP)))  # the digests are for dpriv report, not the reader
    what = "per (release, as_of)" if adversary == "retrospective" else "per release"
    typer.echo(f"adversary gain and tail risk {what} written to {target.path}")


class AttackOut(NamedTuple):
    """Where ``dpriv attack`` writes: ``path``, and whether it is the ledger's own ``attack/``
    file (``own``: dpriv attack writes and re-writes it while unchanged)."""

    path: Path
    own: bool


def _attack_out(
    ledger: Path, knowledge: str, adversary: str, out: Path | None, history: str, force: bool
) -> AttackOut:
    """Where the attack writes, checked before its work: ``--out`` (an unknown suffix, the history
    itself, an existing file: refused), else :func:`default_out` (an earlier attack's result only,
    never a file put there; a folder it can write to)."""
    if out is not None:
        check_out(out, history, kind="attack", force=force)
        return AttackOut(out, own=False)
    from dpriv.attack_files import check_result_file
    from dpriv.cli.outputs import check_writable

    own = default_out(ledger, knowledge, adversary)
    check_result_file(own)
    where = own.parent if own.parent.is_dir() else ledger  # attack/ is made by the first attack
    fix = (
        f"give --out DIR/{own.name} in a folder DIR you can write to (dpriv report {ledger} "
        "--attack-dir DIR then shows it), or make the ledger's folder writable"
    )
    check_writable(where, f"the ledger's {ATTACK_DIR}/ folder", fix)
    return AttackOut(own, own=True)


def _gains(
    ledger: Path, history: str, pol: ReleasePolicy, knowledge: str, given: bool, options: dict[str, Any]
) -> pd.DataFrame:
    """:func:`dpriv.attack.attack` of ``ledger`` with ``options``, the history read whole (a bad
    row named by its line in the file). A PolicyError under the ledger's own policy (``given``
    False: no --policy) gets the hint that --policy FILE fixes it."""
    from dpriv.attack import attack as run
    from dpriv.io import read_table
    from dpriv.rows import rows_of

    try:
        with rows_of(history):  # a row of the history is named by its line in the file
            return run(ledger, read_table(history, what="history").compute(), pol, knowledge, **options)
    except PolicyError as exc:
        if given:
            raise
        from dpriv.attack_policy import base_folders

        raise with_hint(exc, base_folders(ledger, history)) from None


def shown_gain(gain: pd.DataFrame) -> str:
    """The attack table as printed (the CSV keeps the exact values): floats to 6 decimals, so a
    sum's rounding of 0 (3.0e-17) reads 0.000000, and a measure that is not defined (NaN:
    confident_precision without a confident guess, a gain of a release that kept no tuple) as
    '-' with a line that says so."""
    text = gain.to_string(index=False, float_format=lambda x: f"{round(x, 6) + 0.0:.6f}", na_rep="-")
    if gain.isna().any().any():
        text += "\n-: not defined (confident_precision with no confident guess; a release that kept no tuple)"
    if "prior_gain" in gain and (gain["prior_gain"].round(6) < 0).any():  # read as a bug (s44): it is not
        text += "\n" + NEGATIVE_PRIOR_GAIN
    return text


#: The footnote of a negative ``prior_gain``: (E10) with the prior in place of the posterior is
#: the prior on the truth minus the release's own frequency of it in the tuple's QI-group.
NEGATIVE_PRIOR_GAIN = (
    "prior_gain < 0: on average the adversary's prior puts less on a tuple's true value than that "
    "value's frequency in its released QI-group (m_Q(s)/|Q|, the baseline of E10 in "
    "docs/algorithms.md): the groups alone tell more than the prior; a correct value, not an error"
)


@app.command()
@command
def report(
    ledger: Ledger,
    out: Annotated[
        Path, typer.Option(help="The HTML page to write (self-contained): a .html or .htm file.")
    ] = Path("report.html"),
    force: Annotated[
        bool,
        typer.Option(
            help="Replace an existing --out page that an earlier dpriv report wrote (never another file)."
        ),
    ] = False,
    history: Annotated[
        str | None,
        typer.Option(
            help="The original history (CSV/Parquet): the KPR section then draws each view's KPR "
            "against itself as the reference line (the report reads no original data otherwise)."
        ),
    ] = None,
    title: Annotated[
        str | None,
        typer.Option(help="Page title (default: from the policy: sensitive attribute, QIs, method)."),
    ] = None,
    attack_dir: Annotated[
        Path | None,
        typer.Option(
            "--attack-dir",
            help="Read the attack results (gain_<knowledge>.csv, retro_<knowledge>.csv, kpr.csv) from "
            "this folder instead of LEDGER/attack/, with the same checks (results of this ledger's "
            "releases): for a ledger you cannot write in, attacked with --out DIR/gain_dk.csv.",
        ),
    ] = None,
    debug: Debug = False,
) -> None:
    """One self-contained HTML page: policy, a verdict per release against its thresholds,
    per-release metrics, privacy, utility and KPR plots, and the adversary gains and tail risk
    found in LEDGER/attack/ (where dpriv attack writes; --attack-dir: another folder), with what
    each of them means."""
    import shlex

    from dpriv.attack_files import AGAIN, results_folder
    from dpriv.ledger import Ledger
    from dpriv.report import write_report
    from dpriv.report.coverage import attack_results

    check_out(out, *([history] if history else []), kind="report", force=force)
    led = Ledger(ledger)
    folder, label = results_folder(led, attack_dir)  # before any work: an --attack-dir that is no folder
    path = write_report(led, out, title=title, history=history, attack_dir=attack_dir)  # recorded
    results = attack_results(led, attack_dir=attack_dir)
    for name in changed_since_written(folder):
        say_err(
            f"note: {label}{name} changed since dpriv attack wrote it (its bytes differ from "
            f"{label}.dpriv-outputs): the report shows the edited figures; {AGAIN}"
        )
    for note in results.notes(shlex.quote(str(ledger))):
        say_err(f"note: {note}")
    none = f"no attack results in {label}" + ("" if attack_dir else _ELSEWHERE)
    found = "; ".join(found_results(results)) or none
    typer.echo(f"report of {results.held} release(s) written to {path}; {found}")


#: Where the report's line points when attack/ holds no results: those written with --out.
_ELSEWHERE = " (results written elsewhere with dpriv attack --out DIR/gain_<knowledge>.csv: --attack-dir DIR)"


def found_results(results: AttackResults) -> list[str]:
    """What the report found in ``attack/``, e.g. ``["adversary gains: dk (releases 1..4 of 5),
    snapshot", "retrospective adversary: dk (largest gain ...)"]``: a result that misses
    releases of the ledger says which it covers."""

    def covers(name: str, retro: bool = False) -> str:
        return f" ({results.coverage(name, retro=retro)})" if results.missing(name, retro=retro) else ""

    gains = [name + covers(name) for name in results.curves]
    retros = [retro_summary(n, f) + covers(n, retro=True) for n, f in results.retros.items()]
    return ([f"adversary gains: {', '.join(gains)}"] if gains else []) + (
        [f"retrospective adversary: {'; '.join(retros)}"] if retros else []
    )


def retro_summary(name: str, frame: pd.DataFrame) -> str:
    """One line on a retrospective result (:func:`dpriv.report.tail.retro_results`): its
    largest gain, the release it is of and as of which release, e.g. ``dk (largest gain 0.1234:
    release 1 as of release 3)``."""
    gain = frame["adversary_gain"]
    if not gain.notna().any():
        return f"{name} (no gain defined: no release kept a tuple)"
    worst = frame.loc[gain.idxmax()]
    return (
        f"{name} (largest gain {float(worst['adversary_gain']):.4f}: release {int(worst['release'])} "
        f"as of release {int(worst['as_of'])})"
    )

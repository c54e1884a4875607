"""What every ``dpriv`` command shares: the app, option types, the error-to-exit-status
mapping, the printing of the effective policy and the writer of output tables (the policy itself
is read by :mod:`dpriv.cli.policy_flags`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import traceback
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer

from dpriv.allocator import keep_freed_memory, no_huge_page_advice
from dpriv.cli.failures import (
    CLUSTER_EXIT,
    internal_failure,
    is_write_failure,
    quiet_dask_logs,
    write_failure,
)
from dpriv.cli.interrupts import LedgerOf, interrupted, ledger_written, sigterm_interrupts
from dpriv.cli.outputs import (  # noqa: F401 - re-exported: the one helper for every --out FILE
    TABLE_SUFFIXES,
    check_ledger_folder,
    check_not_input,
    check_out,
    check_suffix,
    check_writable,
    ledger_of,
    write_frame,
)
from dpriv.cli.pipe import ClosedPipeSafe
from dpriv.cli.policy_message import error_text
from dpriv.cli.repeats import App
from dpriv.dask_config import check_dask_config
from dpriv.errors import DprivError, LedgerBusy
from dpriv.policy import ReleasePolicy
from dpriv.rows import rows_of

app = App(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # help texts hold [45-52], [hierarchies]: text, not markup
    help="Privacy-preserving sequential data release (JS-reduce) on Dask. Docs: docs/README.md.",
)


def _print_version(value: bool) -> None:
    if value:
        from dpriv import __version__

        typer.echo(f"dpriv {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print dpriv's version and exit."
        ),
    ] = False,
) -> None:
    """Privacy-preserving sequential data release (JS-reduce) on Dask. Docs: docs/README.md."""
    keep_freed_memory()  # this process is the command's own (dpriv.allocator)
    no_huge_page_advice()


Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]


K = Annotated[int | None, typer.Option(min=1, help="QI-group size (>= 1).")]


T = Annotated[float | None, typer.Option(help="EMD threshold in [0, 1].")]


J = Annotated[float | None, typer.Option(help="JS threshold (bits, >= 0).")]


L = Annotated[
    int | None,
    typer.Option(
        "--l",
        min=1,
        help="Distinct l-diversity of --method mondrian-l: at least l sensitive values per QI-group "
        "(>= 1; docs/policy.md).",
    ),
]


BtB = Annotated[
    float | None,
    typer.Option(
        "--bt-b", help="Bandwidth B of the kernel priors of --method mondrian-bt ((B,t)-privacy; > 0)."
    ),
]


BtT = Annotated[
    float | None,
    typer.Option("--bt-t", help="Threshold t of (B,t)-privacy, --method mondrian-bt (plain JS, >= 0)."),
]


def method_option(default: str) -> Any:
    """The ``--method`` option of ``anonymize`` and ``release`` (the names of
    :data:`dpriv.baselines.METHODS`); ``default``: what the command's help says it defaults to."""
    return Annotated[
        str | None,
        typer.Option(
            help="jsreduce, a Mondrian baseline (mondrian-l with --l, mondrian-t with --t, mondrian-bt "
            "with --bt-b/--bt-t) or histogram (one QI-group per view, a reference); default: "
            f"{default}."
        ),
    ]


Scheduler = Annotated[
    str | None,
    typer.Option(
        help="Address of an existing Dask scheduler to run on (not with --cluster/--no-cluster); "
        "default: Dask's scheduler-address config (DASK_SCHEDULER_ADDRESS) when set."
    ),
]


Cluster = Annotated[
    bool | None,
    typer.Option(
        "--cluster/--no-cluster",
        help="Start a local Dask cluster (--cluster) or release in this process (--no-cluster); "
        "default: a cluster only when a view has over 50,000 tuples, the history over 500,000 "
        "respondents or over 2,000,000 tuples (same bytes either way). Not with --scheduler (that uses "
        "the given scheduler).",
    ),
]


Views = Annotated[int, typer.Option(help="Number of weekly views.", min=1)]


ViewSize = Annotated[int, typer.Option(help="Tuples per view.", min=1)]


def policy_option(more: str = "") -> Any:
    """The ``--policy FILE`` option of a command (a policy TOML, docs/policy.md); ``more``: what
    the command's help adds about it."""
    return Annotated[
        Path | None, typer.Option("--policy", help=f"Policy TOML (docs/policy.md). {more}".strip())
    ]


PolicyFile = policy_option()


Partitions = Annotated[int | None, typer.Option(help="Hilbert ranges per view (Dask partitions).", min=1)]


Ledger = Annotated[Path, typer.Argument(help="A release ledger.")]


QI = Annotated[str | None, typer.Option(help="QI columns, comma-separated (repeated: they add up).")]


Sensitive = Annotated[str | None, typer.Option(help="Sensitive column.")]


Released = Annotated[
    str | None, typer.Argument(help="Released view (Parquet or CSV); or --ledger L --view I.")
]


def _probability(value: float) -> float:
    """``--attendance``: a probability in (0, 1] (click names the flag in its error)."""
    if not 0 < value <= 1:
        raise typer.BadParameter(f"{value} is not a probability in (0, 1]")
    return value


Attendance = Annotated[
    float, typer.Option(help="Probability of an exam in a given week (q), in (0, 1].", callback=_probability)
]


Seed = Annotated[int, typer.Option(help="Seed of the generated history.")]


def say_err(msg: str) -> None:
    """Print ``msg`` and a newline on stderr (what a command tells its user besides its output)."""
    typer.echo(msg, err=True)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    say_err(f"warning: {message}")


#: The argument holding the file a command checks whole and in order: its bad rows are named by
#: their line in that file (:func:`dpriv.rows.rows_of`).
#: The option of each command whose file a bad row is named in (by its line), first given wins.
LINE_SOURCES = {
    "anonymize": ("input",),
    "release": ("history",),
    "verify": ("original", "history"),
    "report": ("history",),
}


def _input_file(name: str, kwargs: Mapping[str, Any]) -> str | None:
    paths = [kwargs.get(option) for option in LINE_SOURCES.get(name, ())]
    return next((str(p) for p in paths if p is not None), None)


def command(fn: Callable | None = None, *, ledger: LedgerOf | None = None):
    """Map dpriv errors (and unreadable input) to exit 2, a lost Dask worker or scheduler to 3
    (:mod:`dpriv.cli.failures`) and anything else to exit 1, tracebacks only with --debug;
    warnings print as one "warning: ..." line. ``ledger``: for a command that writes a ledger, its
    parameter or a function of its arguments giving the folder
    (:data:`~dpriv.cli.interrupts.LedgerOf`): an interrupted run names its last committed release.
    Used as ``@command`` or ``@command(ledger=...)``."""
    if fn is None:
        return functools.partial(command, ledger=ledger)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug, scheduler = kwargs.get("debug", False), kwargs.get("scheduler")
        try:
            with (
                sigterm_interrupts(debug),  # SIGTERM (timeout, systemd, SLURM) ends it as Ctrl-C does
                quiet_dask_logs(debug),
                warnings.catch_warnings(),
                rows_of(_input_file(fn.__name__, kwargs)),
                contextlib.redirect_stdout(ClosedPipeSafe(sys.stdout)),
            ):
                warnings.showwarning = _show_warning
                check_dask_config()  # before anything is read: a bad value failed deep inside Dask
                if not debug:  # the knowledge tables (~19 MiB) travel with each release's graph
                    warnings.filterwarnings("ignore", message="Sending large graph")
                from dpriv.io import ignore_dask_reset_index  # dask.dataframe: not for --help

                ignore_dask_reset_index()
                return fn(*args, **kwargs)
        except (DprivError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            if debug:
                traceback.print_exc()
            say_err(f"error: {error_text(exc)}".rstrip())  # one bad policy value: one line
            # a ledger another command is writing: the same command succeeds later (a retry, as on 3)
            raise typer.Exit(CLUSTER_EXIT if isinstance(exc, LedgerBusy) else 2) from None
        except typer.Exit:
            raise
        except KeyboardInterrupt as exc:
            interrupted(debug, exc, fn.__name__, ledger_written(ledger, kwargs))
        except OSError as exc:
            if not is_write_failure(exc):
                internal_failure(exc, debug, scheduler, fn.__name__, ledger_written(ledger, kwargs))
            write_failure(exc, debug, fn.__name__)  # a folder read-only (or made so since), a full disk
        except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - the CLI's last resort
            internal_failure(exc, debug, scheduler, fn.__name__, ledger_written(ledger, kwargs))

    return wrapper


Categorical = Annotated[
    str | None,
    typer.Option(help="QIs to treat as categorical (value sets), comma-separated, e.g. codes or mixed text."),
]


Hierarchies = Annotated[
    list[str] | None,
    typer.Option(
        "--hierarchy",
        help="COL=PATH: ARX-format generalization hierarchy of categorical QI COL (';'-separated, one "
        "value per row then its generalizations, '*' last); COL is released as the lowest common "
        "node of its group. Repeatable; wins over [hierarchies] in the policy. See docs/policy.md.",
    ),
]


Dates = Annotated[
    str | None,
    typer.Option(
        "--date",
        help="QIs holding dates (e.g. ISO text in a CSV), comma-separated: released as date intervals "
        "(date/timestamp columns of a Parquet file are found without it).",
    ),
]


def show_policy(eff: Any) -> ReleasePolicy:
    """Print the effective policy to stderr (every value and where it came from), once the
    input has been opened and before the work starts; returns the policy."""
    for line in eff.lines():
        say_err(line)
    return eff.policy


ReleaseFormat = Annotated[
    str | None,
    typer.Option(
        help='"generalized" (QI intervals / value sets, default) or "anatomy" (exact QIs in a QI '
        "table, each group's sensitive values counted in a second table; docs/released-format.md)."
    ),
]


def sensitive_out(out: Path) -> Path:
    """Where ``anonymize`` writes an Anatomy release's sensitive table: ``OUT.sensitive.<ext>``."""
    return out.with_name(f"{out.stem}.sensitive{out.suffix}")


#: The summary's achieved values that a criterion bounds (:func:`dpriv.criteria.promised` names).
_BOUNDED_BY = {
    "k_achieved": "k",
    "l_achieved": "l",
    "t_achieved": "t",
    "j_achieved": "j",
    "rbk_closeness_achieved": "rbk_closeness",
}


def print_summary(metrics: Mapping[str, Any], method: str = "jsreduce") -> None:
    """``dpriv anonymize``'s summary of ``metrics`` (stdout), one ``key: value`` line each; under a
    baseline ``method`` an achieved value it does not bound says so (``j_achieved: 0.4799
    (measured; mondrian-l does not promise j)``): the JS threshold is no criterion of a Mondrian
    release, so its value is no failure (the keys of ``OUT.metrics.json`` are the same)."""
    from dpriv.criteria import unpromised

    free = unpromised(method)
    keys = [
        "n_original",
        "n_groups",
        "n_suppressed",
        "suppression_rate",
        "k_achieved",
        "l_achieved",
        "t_achieved",
        "j_achieved",
        "rbk_closeness_achieved",
        "average_semiperimeter",
        "largest_group",
        "seconds",
    ]
    for key in keys:
        if key in metrics:
            val = metrics[key]
            note = (
                f"  (measured; {method} does not promise {_BOUNDED_BY[key]})"
                if _BOUNDED_BY.get(key) in free
                else ""
            )
            typer.echo((f"{key:>22}: {val:.4f}" if isinstance(val, float) else f"{key:>22}: {val}") + note)


def ledger_view(ledger: Path, released: str | None, view: int | None, verb: str):
    """The :class:`~dpriv.ledger.Ledger` at ``--ledger`` whose release ``--view`` a command
    reads (``verb``: "check", "export"). InputError when RELEASED is given too or ``view`` is
    not a committed release (the message lists them); LedgerError when it is not a ledger, or
    a release's files are missing, truncated or edited (:func:`dpriv.ledger_checks.check_ledger_whole`)."""
    from dpriv.errors import InputError, LedgerError
    from dpriv.ledger import Ledger
    from dpriv.ledger_checks import check_ledger_whole

    if released is not None:
        raise InputError("give RELEASED or --ledger L --view I, not both")
    if not (ledger / "manifest.json").is_file():
        raise LedgerError(f"--ledger {ledger} is not a ledger (no manifest.json)")
    led = Ledger(ledger)
    indices = [r["index"] for r in led.committed()]
    if view is None:
        raise InputError(f"--ledger needs --view I, the release to {verb}; {ledger} holds releases {indices}")
    if view not in indices:
        raise InputError(f"--view {view}: {ledger} holds no release {view}; it holds releases {indices}")
    check_ledger_whole(led, state=False)  # a missing, truncated or edited release: exit 2, named
    return led

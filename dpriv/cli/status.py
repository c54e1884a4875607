"""``dpriv status LEDGER``: what a ledger holds, read only (dpriv.ledger_status)."""

from __future__ import annotations

import typer

from dpriv.cli.common import Ledger, app, command
from dpriv.wording import counted


@app.command()
@command
def status(ledger: Ledger) -> None:
    """What LEDGER holds, read only (monitoring, a scheduled job's pre-flight): its committed
    releases, the last commit's time, the policy digest, a release being written or left
    uncommitted, and whether every committed release reads whole. Exit 0 when it does, 2 (an
    error: line) when it is no ledger or is damaged. Prints no id and no sensitive value."""
    from dpriv.ledger_status import ledger_status

    st = ledger_status(ledger)
    typer.echo(f"ledger: {ledger}")
    if st.releases:
        typer.echo(
            f"releases: {counted(len(st.releases), 'release')} committed (1..{st.releases[-1]}); "
            f"last commit {st.committed_at:%Y-%m-%d %H:%M:%S} UTC (manifest.json written)"
        )
    else:
        typer.echo("releases: none committed yet")
    typer.echo(f"policy_sha256: {st.policy_sha256 or 'none recorded'}")
    if st.writing:
        typer.echo("writing: another dpriv command holds the ledger's lock now (a release running)")
    if st.leftovers:
        who = "being written now" if st.writing else "left by a run stopped before its commit"
        shown = ", ".join(st.leftovers[:5]) + (", ..." if len(st.leftovers) > 5 else "")
        typer.echo(
            f"pending: {counted(len(st.leftovers), 'file')} of a release not committed, {who}: {shown} "
            "(the next dpriv release removes those dpriv wrote)"
        )
    else:
        typer.echo("pending: none (no uncommitted release, no leftovers)")
    typer.echo("valid: yes (every committed release's files whole and as manifest.json records them)")

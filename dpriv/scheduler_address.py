"""Which Dask scheduler a command runs on, settled before the command reads anything.

Every command that takes ``--scheduler`` (``anonymize``, ``release``, ``demo``, ``generate
medical --partitions``) calls :func:`chosen_scheduler` first:

* an empty address (``--scheduler "$SCHED"`` with ``SCHED`` unset) is refused: it would run on
  this machine without a word;
* without ``--scheduler``, Dask's own ``scheduler-address`` config (``DASK_SCHEDULER_ADDRESS``,
  or a Dask YAML file) is used as if it were given, as a Dask ``Client()`` would, and said on
  stderr; ``--cluster`` or ``--no-cluster`` still say where to run (the config is then said to
  be left unused); in Python, :func:`dpriv.cluster.dask_client` without an address does the same;
* the address is probed (:func:`scheduler_identity`): nothing listening, an unknown host (both
  at once, :func:`tcp_refusal`), a silent port or another protocol (within
  :data:`CONNECT_SECONDS`) is bad input, exit 2, before any input is read. Found later, by the
  release, it was taken for a lost cluster (exit 3), which a scheduled job retries for ever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import socket
from collections.abc import Callable

import dask

from dpriv.errors import InputError
from dpriv.wording import Named, argument_named, flag_named

#: How an address from Dask's config is named in messages.
CONFIG = "Dask's scheduler-address config (DASK_SCHEDULER_ADDRESS or a Dask YAML file)"


def configured_scheduler() -> str | None:
    """Dask's ``scheduler-address`` config (``DASK_SCHEDULER_ADDRESS``...), None when unset or
    empty (an empty one: Dask's ``Client()`` starts a local cluster too)."""
    value = dask.config.get("scheduler-address", None)
    if value is None:
        return None
    return str(value).strip() or None


def chosen_scheduler(
    scheduler: str | None, cluster: bool | None, say: Callable[[str], None] = print
) -> str | None:
    """The scheduler address the command runs on (None: this machine, a LocalCluster or this
    process as ``cluster`` and the input decide), checked.

    ``scheduler``: ``--scheduler`` as given (None: not given); ``cluster``: ``--cluster`` (True),
    ``--no-cluster`` (False) or neither (None). Raises InputError (exit 2) for an empty
    ``--scheduler``, and for an address (given, or from Dask's config) where no Dask scheduler
    answers (:func:`scheduler_identity`)."""
    if scheduler is not None and not scheduler.strip():
        raise InputError(
            f"--scheduler is empty ({scheduler!r}; an unset shell variable?): give the address a "
            "running Dask scheduler prints (tcp://host:8786), or leave --scheduler out to run on "
            "this machine"
        )
    configured = configured_scheduler() if scheduler is None else None
    if configured is None:
        if scheduler is not None:
            scheduler_identity(scheduler, flag_named)
        return scheduler
    if cluster is not None:
        flag = "--cluster" if cluster else "--no-cluster"
        say(f"note: {CONFIG} names {configured}; not used: {flag} runs on this machine")
        return None
    say(config_used(configured, flag_named, "--cluster or --no-cluster runs on this machine instead"))
    scheduler_identity(configured, flag_named, origin=CONFIG)
    return configured


def config_used(address: str, named: Named, instead: str) -> str:
    """The note said when Dask's config (:data:`CONFIG`) names the scheduler ``address`` to run
    on: as the argument ``named`` words would (``--scheduler ADDR``, ``scheduler=ADDR``), and
    what runs on this machine ``instead``."""
    return f"note: {CONFIG} names {address}: used as {named('scheduler', address)} would be; {instead}"


def contradiction(scheduler: str, cluster: bool, named: Named = argument_named) -> str:
    """Why a scheduler address and ``cluster`` (True: start a LocalCluster; False: this process)
    cannot be given together, as ``named`` words the arguments (``--scheduler``/``--cluster``,
    ``scheduler``/``cluster=True``): each says where to run, differently."""
    address, flag = named("scheduler"), named("cluster", cluster)
    alone = "start a local Dask cluster" if cluster else "release in this process"
    return (
        f"{address} and {flag} contradict each other: drop {flag} to run on {scheduler}, "
        f"or drop {address} to {alone}"
    )


def unreachable(
    scheduler: str, why: str, named: Named = argument_named, origin: str | None = None
) -> InputError:
    """The refusal of an address where no Dask scheduler answers (``why``), named as the user
    gave it: the argument ``named`` words (``--scheduler`` or ``scheduler``), or ``origin``
    (:data:`CONFIG`)."""
    why += dashboard_hint(scheduler)
    if origin is None:
        flag = named("scheduler")
        return InputError(
            f"{flag} {scheduler}: cannot reach a Dask scheduler there ({why}); give the address "
            f"a running scheduler prints (tcp://host:8786), or drop {flag} to use this machine"
        )
    return InputError(
        f"{origin} names {scheduler}: cannot reach a Dask scheduler there ({why}); start it, correct "
        "the address, or unset it (or give --cluster or --no-cluster) to use this machine"
    )


#: The port Dask's dashboard (HTTP) listens on by default, next to the scheduler's 8786.
DASHBOARD_PORT = 8787


def dashboard_hint(scheduler: str) -> str:
    """``"; 8787 is usually the Dask dashboard's port: the scheduler listens on 8786"`` for an
    address on :data:`DASHBOARD_PORT` (the dashboard answers no scheduler's handshake: a wait of
    20 s, then "no answer", without a word of why; a fresh user's drill, s40), else ``""``."""
    if not re.search(rf":{DASHBOARD_PORT}/?$", scheduler.strip()):
        return ""
    return (
        f"; {DASHBOARD_PORT} is usually the Dask dashboard's port: the scheduler listens on 8786 by default"
    )


def tcp_refusal(address: str, timeout: float) -> str | None:
    """Why a TCP connection to ``address`` (``tcp://`` or ``tls://``, or a bare ``host:port``)
    fails: an unknown host, nothing listening, no answer within ``timeout`` seconds. None when
    it connects, or when the address is of another kind or malformed (distributed's connect
    then says why). distributed's own connect retries a refused connection until its timeout:
    a typo in the port took 20 s to be told."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address, strict=False)
        if scheme not in ("tcp", "tls"):
            return None
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        return None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except socket.gaierror as exc:
        return f"unknown host {host!r}: {exc.strerror or exc}"
    except ConnectionRefusedError:
        return f"nothing listens on port {port} of {host}: connection refused"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:  # no route to the host, the network down
        return f"{host}:{port}: {exc.strerror or exc}"
    return None


#: Seconds to reach a scheduler and hear it answer (a Client waits forever for the handshake
#: of a port that accepts connections but never answers).
CONNECT_SECONDS = 20.0


def scheduler_identity(scheduler: str, named: Named = argument_named, *, origin: str | None = None) -> dict:
    """What the server at ``scheduler`` says it is (its ``identity`` reply), within
    :data:`CONNECT_SECONDS`; InputError when nothing listens there, the host is unknown (both
    said at once, :func:`tcp_refusal`), it does not answer, or answers as no Dask server
    (:func:`unreachable`). ``named`` words the argument (``scheduler`` in Python,
    ``--scheduler`` on the command line); ``origin``: where the address came from when not from
    that argument (Dask's config, :data:`CONFIG`)."""
    refused = tcp_refusal(scheduler, CONNECT_SECONDS)
    if refused is not None:
        raise unreachable(scheduler, refused, named, origin)

    async def ask() -> object:
        from distributed.comm import connect
        from distributed.security import Security

        # the TLS settings a Client would take from the Dask config (tls:// addresses)
        tls = Security().get_connection_args("client")
        comm = await connect(scheduler, timeout=CONNECT_SECONDS, **tls)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    def run() -> object:
        return asyncio.run(asyncio.wait_for(ask(), CONNECT_SECONDS))

    try:
        # a thread of its own: the caller may already run an event loop (Jupyter)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            reply = pool.submit(run).result()
    except TimeoutError:
        raise unreachable(scheduler, f"no answer within {CONNECT_SECONDS:g} s", named, origin) from None
    except (OSError, ValueError, TypeError) as exc:
        raise unreachable(scheduler, str(exc), named, origin) from None
    except Exception as exc:  # noqa: BLE001 -- bytes of another protocol fail anywhere in the decoder
        why = f"it answers, but not as a Dask scheduler: {type(exc).__name__}"
        raise unreachable(scheduler, why, named, origin) from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        kind = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
        why = f"it answers, but as {kind!r}, not as a Dask scheduler"
        raise unreachable(scheduler, why, named, origin)
    return reply

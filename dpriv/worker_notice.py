"""A Dask worker plugin that reports numba's first compile of a dpriv kernel on a worker to the
client (:func:`dpriv.cluster.dask_client`), where :class:`dpriv.numba_cache.CompileNotice` says
it once for the whole command. Imported only when a cluster is used (it imports distributed).

Source: distributed's structured events (``Worker.log_event``, ``Client.subscribe_topic``) and
worker plugins (``Client.register_plugin``), https://distributed.dask.org/en/stable/plugins.html
"""

from __future__ import annotations

from distributed.diagnostics.plugin import WorkerPlugin
from numba.core import event

from dpriv.numba_cache import COMPILE_EVENT, CompileListener

#: The Dask event topic the workers report their first compile of a dpriv kernel on.
COMPILE_TOPIC = "dpriv-numba-compile"


class WorkerCompileNotice(WorkerPlugin):
    """Each worker reports its first compile of a dpriv kernel on :data:`COMPILE_TOPIC`
    (``Worker.log_event``), which the client's :class:`dpriv.numba_cache.CompileNotice` turns
    into one line for the whole command (distributed's structured events)."""

    name = "dpriv-numba-compile-notice"

    def setup(self, worker) -> None:
        sent: list[str | None] = []

        def found(where: str | None) -> None:
            if not sent:
                sent.append(where)
                worker.log_event(COMPILE_TOPIC, {"where": where})

        self._listener = CompileListener(found)
        event.register(COMPILE_EVENT, self._listener)

    def teardown(self, worker) -> None:
        event.unregister(COMPILE_EVENT, self._listener)

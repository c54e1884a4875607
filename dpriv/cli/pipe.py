"""The command line's stdout when its reader goes away (a closed pipe)."""

from __future__ import annotations

import contextlib
import os


class ClosedPipeSafe:
    """stdout that outlives its reader: once the pipe is closed (``dpriv release ... | head -1``)
    what is printed is dropped instead of failing the command, so a release goes on to its
    last view (the ledger is the output; the table is only a report of it). Everything else
    (encoding, fileno, isatty...) is the stream's own, so click writes through it."""

    def __init__(self, stream):
        self._stream, self._gone = stream, False

    def write(self, text: str) -> int:
        if not self._gone:
            with self._on_closed_pipe():
                self._stream.write(text)
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            with self._on_closed_pipe():
                self._stream.flush()

    @contextlib.contextmanager
    def _on_closed_pipe(self):
        try:
            yield
        except BrokenPipeError:
            self._gone = True
            with contextlib.suppress(AttributeError, OSError, ValueError):  # no flush error at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

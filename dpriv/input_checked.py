"""What a command says before a release's work starts, held until the input has passed the
checks of :func:`dpriv.release.release_history` (every view, the ids' type against the ledger,
new ids): a status line such as "600 tuples, no view left to release" printed just before a
refusal of the same input ("duplicate 'respondent_id' within one view") contradicted it, and
its count of respondents was of ids the check then refused."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

#: The flushes of the :func:`held_until_checked` blocks now open (innermost last).
_waiting: list[Callable[[], None]] = []


@contextlib.contextmanager
def held_until_checked(say: Callable[[str], None]) -> Iterator[Callable[[str], None]]:
    """A ``say`` for the block that holds each message until :func:`input_checked` (then says
    them, in order, and says later ones at once); held messages are dropped when the block
    ends before it (a refusal of the input)."""
    held: list[str] | None = []

    def hold(message: str) -> None:
        if held is None:
            say(message)
        else:
            held.append(message)

    def flush() -> None:
        nonlocal held
        messages, held = held or [], None
        for message in messages:
            say(message)

    _waiting.append(flush)
    try:
        yield hold
    finally:
        _waiting.remove(flush)


def input_checked() -> None:
    """The input of a release passed its checks: say what the open :func:`held_until_checked`
    blocks hold (nothing when none is open, as in Python)."""
    for flush in list(_waiting):
        flush()

"""How a refusal names what its caller gave: the argument of a Python call (``view_size``,
``view=<index>``, ``cluster=False``) or the ``dpriv`` flag the command line takes it from
(``--view-size``, ``--view <index>``, ``--no-cluster``).

A function a Python user calls and the command line calls too takes ``named``
(:class:`Named`), :func:`argument_named` by default; the command passes :func:`flag_named`, so
that each reader sees the words they typed (as :meth:`dpriv.policy.ReleasePolicy.read_toml`
names its overrides with :func:`dpriv.policy_keys.overrides_named` or, from the command line,
:func:`dpriv.policy_keys.flags_named`). A message raised deep inside a release, where no
caller's words reach, names both forms instead (``--categorical A ... or
policy.with_overrides(...) in Python``).
"""

from __future__ import annotations

from typing import Protocol


class Named(Protocol):
    """``named(name)`` is how a message names the argument ``name`` (its Python name);
    ``named(name, value)`` the argument given that value (a placeholder such as ``"<index>"``,
    or True/False for a switch)."""

    def __call__(self, name: str, value: object = None) -> str: ...


def argument_named(name: str, value: object = None) -> str:
    """The Python argument: ``view``, ``view=<index>``, ``cluster=False``."""
    return name if value is None else f"{name}={value}"


def flag_named(name: str, value: object = None) -> str:
    """The ``dpriv`` flag of the argument: ``--view``, ``--view <index>``, ``--view-size``; a switch
    as set (``--cluster``) or unset (``--no-cluster``)."""
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return f"--{flag}" if value else f"--no-{flag}"
    return f"--{flag}" if value is None else f"--{flag} {value}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular for one: ``counted(1, "row")`` is ``"1 row"``,
    ``counted(3, "row")`` ``"3 rows"``; ``plural`` for a noun not made plural by an ``s``
    (``counted(2, "QI-group of", "QI-groups of")``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"

"""Path options as the command line gives them: ``~`` expanded everywhere, a URL where a path of
this machine is wanted refused in the user's own spelling.

An operator's drill (s33) found a quoted ``'~/dpt/h.parquet'`` history expanded (fsspec reads
it) but ``--ledger '~/dpt/L'`` taken literally ("cannot write in folder /tmp/op/~/dpt"), and
``--out file:///tmp/op/outd/b.parquet`` refused as "folder file:/tmp/op/outd does not exist;
create it first (mkdir -p file:/tmp/op/outd)": pathlib had collapsed the URL's ``//``, and the
advice would make a folder named ``file:``. So each value is taken from the parser before any
conversion (:func:`watch_paths`, for every :class:`dpriv.cli.repeats.OnceCommand`):

* a path option (``--out``, ``--ledger``, ``--policy``, ``--metrics``, a LEDGER argument: those
  typed ``Path``) is where dpriv writes, or a local file it reads: a URL (``file://``,
  ``s3://``...) is refused as given, naming the path to give for a ``file://`` one
  (:func:`url_refusal`); what dpriv reads through fsspec (:data:`INPUTS`) takes URLs;
* an empty value (``--ledger ""``, ``--ledger "$UNSET"``) is refused as empty: pathlib read it as
  ``.``, so the ledger was the current folder ("error: . is not empty and is not a ledger");
* a leading ``~`` of a path option or of an input (:data:`INPUTS`) is expanded, as fsspec and a
  shell do (``--hierarchy COL=~/h.csv``: :func:`dpriv.cli.policy_flags.with_hierarchies`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from dpriv.cli.click_parts import OptionError, flags_of, takes_path
from dpriv.input_url import path_hint, url_scheme

#: The parameters that name an input, a local path or an fsspec URL (read through fsspec).
INPUTS = frozenset({"input", "history", "original", "released", "synthetic", "path"})


def url_refusal(flag: str, given: str, name: str) -> str | None:
    """Why ``given``, the value of the path option ``flag`` (parameter ``name``), cannot be
    taken: it is a URL (None: a path)."""
    from dpriv.ledger_files import url_problem

    scheme = url_scheme(given)
    if scheme is None:
        return None
    if name == "ledger":  # the ledger's own wording: its commits rename files, it holds a lock
        return url_problem(given, flag)
    return (
        f"{flag} {given} is a URL ({scheme}:), but {flag} takes a path of this machine's file "
        f"system: give its path{path_hint(given)}"
    )


def given_path(flag: str, name: str, is_path: bool, value: Any) -> Any:
    """``value`` (a parsed string; None or click's marker when absent) as the command takes it:
    ``~`` expanded; OptionError for an empty value (``--ledger ""`` was the current folder) and
    for a URL given to a path option (``is_path``)."""
    if not isinstance(value, str):
        return value
    if not value.strip():  # "" read as "." (the folder the command runs in), or as no file at all
        raise OptionError(f"{flag} is empty ({value!r}; an unset shell variable?): give a path")
    if is_path and (problem := url_refusal(flag, value, name)):
        raise OptionError(problem)
    return os.path.expanduser(value)


def _watched(process: Callable[[Any, Any], None], flag: str, name: str, is_path: bool) -> Callable:
    def watched(value: Any, state: Any) -> None:
        return process(given_path(flag, name, is_path, value), state)

    return watched


def watch_paths(parser: Any) -> None:
    """Route the values of ``parser``'s path options and input parameters (click's parser:
    options, then positional arguments) through :func:`given_path`, before click converts them."""
    options = {id(o): o for o in [*parser._long_opt.values(), *parser._short_opt.values()]}
    targets = [(o, flags_of(o)) for o in options.values()]
    targets += [(a, a.obj.name.upper()) for a in getattr(parser, "_args", [])]
    for target, flag in targets:
        param = target.obj
        is_path = takes_path(param)
        if is_path or param.name in INPUTS:
            target.process = _watched(target.process, flag, param.name, is_path)

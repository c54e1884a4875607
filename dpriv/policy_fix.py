"""The words of a refusal whose fix is a policy change, when the ledger already holds releases.

A ledger keeps the policy it was started with (:meth:`dpriv.ledger.Ledger.check_policy`
refuses any other), so "raise retro_max_gain" or "allow more suppression with [privacy]
max_suppression" cannot be followed on the same ledger once a release is committed: the
changed policy needs a new ledger, into which the history is released from its first view.
The one exception: ``small_view = "suppress"`` may be taken up by a running ledger
(:data:`dpriv.ledger.TAKE_UP`), so the refusal of a view smaller than k says so. Text in a
numeric QI is not met by declaring it categorical there (:func:`with_kind_hint`).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from dpriv.errors import InputError, PolicyError

#: How to start a new ledger with a changed policy: the CLI's flag and the Python call.
INTO_NEW_LEDGER = (
    "release the history with it into --ledger NEW (release_history(history, policy, NEW) in Python), "
    "from the first view"
)
#: What a policy change needs once a ledger holds committed releases.
NEW_LEDGER = (
    "a ledger keeps the policy it was started with, so a changed policy needs a new ledger: "
    + INTO_NEW_LEDGER
)


def declare_categorical(name: str) -> str:
    """How to declare QI ``name`` categorical: the CLI's flag, the policy file and Python."""
    return (
        f'--categorical {name}, [kinds] {name} = "categorical" in the policy, or '
        f"policy.with_overrides(kinds={{**policy.kinds, {name!r}: 'categorical'}}) in Python"
    )


#: The advice to declare a QI categorical (:func:`declare_categorical`; ``[kinds]`` alone where a
#: message names no flag), which a ledger holding releases cannot follow: its QIs' kinds are fixed.
_DECLARE = re.compile(
    r", or declare the QI categorical(?: in \[kinds\]| \((?:--categorical .*? in Python|\[kinds\] .*?)\))"
)


E = TypeVar("E", bound=Exception)


def hinted_once(exc: E, said: str, hint: str, text: str | None = None) -> E:
    """``exc`` (same type) whose message is ``text`` (default: its own) followed by `` (hint)``,
    unless its message holds ``said`` (words of ``hint`` that do not depend on the ledger)
    already: then ``exc`` itself. A refusal passes through :func:`ledger_kind_hint` inside
    :func:`dpriv.release.release_history` and then through ``dpriv release``, both adding
    their hints, and says each once."""
    if said in str(exc):
        return exc
    return type(exc)(f"{str(exc) if text is None else text} ({hint})")


#: What :func:`with_kind_hint` adds, found in a message it already worded.
_KEEPS_KINDS = "the ledger keeps the kind of each QI"


def with_kind_hint(exc: InputError, committed: int) -> InputError:
    """``exc`` without its advice to declare a QI categorical when ``committed`` > 0 releases are
    in the ledger (which refuses a changed policy), and with what that needs instead: a new
    ledger; else ``exc`` itself."""
    text = str(exc)
    if committed <= 0 or not _DECLARE.search(text):
        return exc
    hint = (
        f"{_held(committed)} committed and {_KEEPS_KINDS}; declaring one categorical changes the "
        f"policy, which needs a new ledger: {INTO_NEW_LEDGER}"
    )
    return hinted_once(exc, _KEEPS_KINDS, hint, _DECLARE.sub("", text, count=1))


F = TypeVar("F", bound=Callable[..., Any])


def ledger_kind_hint(fn: F) -> F:
    """Decorate a release into a ledger (its third argument or ``ledger_dir=``, as
    :func:`dpriv.release.release_history`): an InputError it raises gets :func:`with_kind_hint`
    and :func:`with_domain_hint` (a value outside a domain: not "add them to [domains]", which
    the ledger would refuse) for the releases the ledger holds, as ``dpriv release`` words it."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            if not _DECLARE.search(str(exc)) and not any(w in str(exc) for w in OUTSIDE_DOMAIN):
                raise
            from dpriv.ledger import MANIFEST, Ledger

            root = Path(kwargs["ledger_dir"] if "ledger_dir" in kwargs else args[2])
            if not (root / MANIFEST).is_file():  # no ledger yet: its policy may still change
                raise
            try:
                held = max((int(r["index"]) for r in Ledger(root).committed()), default=0)
            except Exception:  # an unreadable ledger: the refusal as it was
                raise exc from None
            raise with_kind_hint(with_domain_hint(exc, held), held) from None

    return wrapped  # type: ignore[return-value]


def policy_change(fix: str, committed: int) -> str:
    """``fix`` (the words suggesting a policy change) followed, when ``committed`` > 0 releases
    are in the ledger, by :data:`NEW_LEDGER` naming how many."""
    if committed <= 0:
        return fix
    return f"{fix} ({_held(committed)} committed: {NEW_LEDGER})"


@contextlib.contextmanager
def view_named(index: int) -> Iterator[None]:
    """Re-raise a PolicyError of a baseline's grouping (which knows only its input: "the input
    has 2 distinct sensitive values, fewer than l = 3 ...; lower l") naming view ``index``, and,
    when releases 1..index-1 are committed, that the policy change it asks for needs a new
    ledger (:func:`policy_change`)."""
    try:
        yield
    except PolicyError as exc:
        raise PolicyError(policy_change(f"view {index}: {exc}", index - 1)) from None


def relax_hint(policy) -> str:
    """The criteria whose relaxing lowers the suppression of a JS-reduce release (``policy``: a
    :class:`dpriv.policy.ReleasePolicy`): k, t or j, and ``posterior_bound`` and
    ``retro_posterior_bound`` and ``rbk_closeness`` when they are set; with ``exit_values``, the
    exit guard too (it suppresses the terminal tuples no group can hide)."""
    bounds = ("posterior_bound", "retro_posterior_bound", "rbk_closeness")
    keys = ["k", "t", "j"] + [b for b in bounds if getattr(policy, b, None) is not None]
    hint = f"relax {', '.join(keys[:-1])} or {keys[-1]}"
    if getattr(policy, "exit_values", None):
        hint += ", or drop values from exit_values (the exit guard suppresses terminal tuples it cannot hide)"
    return hint


def _held(committed: int) -> str:
    return "release 1 is" if committed == 1 else f"releases 1..{committed} are"


#: What a ledger holding releases can take up without a new one (:data:`dpriv.ledger.TAKE_UP`).
TAKE_UP_SMALL_VIEW = (
    '--small-view suppress (small_view = "suppress" in the policy) applies to this ledger as it '
    "is; a lower k needs a new ledger: " + INTO_NEW_LEDGER
)


#: The words of the refusal of a view smaller than k (:func:`dpriv.validate.validate_view`),
#: whose fixes ("lower k", ``small_view = "suppress"``) are policy changes.
K_LARGER_THAN_VIEW = "is larger than the view"


def with_new_ledger(exc: PolicyError, committed: int) -> PolicyError:
    """``exc`` with :func:`policy_change`'s words when it is the refusal of a view smaller than
    k (:data:`K_LARGER_THAN_VIEW`) and ``committed`` > 0 releases are in the ledger; else
    ``exc`` itself (other refusals word their own fix, e.g. :mod:`dpriv.gate`)."""
    if committed <= 0 or K_LARGER_THAN_VIEW not in str(exc):
        return exc
    return hinted_once(exc, TAKE_UP_SMALL_VIEW, f"{_held(committed)} committed: {TAKE_UP_SMALL_VIEW}")


#: The words of a value outside a declared domain (:func:`dpriv.validate.validate_view`), or one a
#: resumed ledger inferred (:func:`dpriv.validate.check_rows`), whose fix ("widen [domains]") is a
#: policy change once a ledger holds releases.
OUTSIDE_DOMAIN = tuple(
    f"{where} its {how} {kind}"
    for how in ("declared", "inferred")
    for where, kind in (("outside", "domain"), ("not in", "domain"), ("not in", "levels"))
)


#: The fix a value outside a domain is given on its own (:mod:`dpriv.validate`), which a ledger
#: holding releases cannot follow: its domains are fixed.
_WIDEN = re.compile(r"(?:widen \[domains\]|add them to \[domains\]) or correct the data")


#: What :func:`with_domain_hint` adds, found in a message it already worded.
_FIRST_DOMAINS = "with the domains of the ledger's first release"


def with_domain_hint(exc: InputError, committed: int) -> InputError:
    """``exc`` with :data:`NEW_LEDGER`'s words when a value lies outside a domain and
    ``committed`` > 0 releases are in the ledger (whose domains, declared or inferred from
    the views of its first release, cannot change), its "widen [domains]" dropped; else
    ``exc`` itself."""
    text = str(exc)
    if committed <= 0 or not any(words in text for words in OUTSIDE_DOMAIN):
        return exc
    hint = (
        f"{_held(committed)} committed {_FIRST_DOMAINS} (its policy's [domains], or inferred from "
        f"its views where none was declared); values outside them: {NEW_LEDGER}, its policy "
        "declaring [domains] that cover every week's values"
    )
    return hinted_once(exc, _FIRST_DOMAINS, hint, _WIDEN.sub("correct the data", text))

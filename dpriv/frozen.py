"""Read-only lists and tables for the containers of a :class:`dpriv.policy.ReleasePolicy`.

A policy is immutable (``p.k = 3`` is refused), but its lists and tables were plain ``list`` and
``dict``: ``p.qi.append("rid")`` changed a validated policy without a check (the id became a QI
too). :class:`FrozenList` and :class:`FrozenDict` are a ``list`` and a ``dict`` in every way that
reads them (``==`` with lists and dicts, ``policy.qi + [...]``, pandas ``view[policy.qi]``,
``json.dumps``, ``dict(policy.kinds)`` and ``list.copy`` give plain ones), and refuse every method
that writes them with a :class:`~dpriv.errors.PolicyError` naming the copy to make. Tuples would
not do: pandas reads ``view[("age", "sex")]`` as one column label, and ``() != []``.

pydantic's ``model_dump`` gives plain lists and dicts of the same values, so the policy's
fingerprint, ``policy.json`` and its digest keep their bytes. A pickled container (a policy sent
to a Dask worker) is rebuilt frozen (:meth:`FrozenList.__reduce__`). Being read-only, both are
hashable (their items' hash), so a policy is: a dict key or an ``lru_cache`` argument.
"""

from __future__ import annotations

from typing import Any, NoReturn

from dpriv.errors import PolicyError


def _refuse(field: str) -> NoReturn:
    raise PolicyError(
        f"a ReleasePolicy is immutable: its {field} cannot be changed in place; make a changed copy "
        f"with p.with_overrides({field}=...)"
    )


class FrozenList(list):
    """A list that refuses to change (``field``: the policy key it holds, named when refused)."""

    __slots__ = ("field",)

    def __init__(self, items: Any = (), field: str = "list") -> None:
        super().__init__(items)
        self.field = field

    def __reduce__(self) -> tuple:
        return (type(self), (list(self), self.field))

    def _refused(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.field)

    def __hash__(self) -> int:  # read-only: a policy holding it can be a dict key (docs/policy.md)
        return hash(tuple(self))

    append = extend = insert = remove = pop = clear = sort = reverse = _refused
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refused


class FrozenDict(dict):
    """A dict that refuses to change (``field``: the policy key it holds, named when refused)."""

    __slots__ = ("field",)

    def __init__(self, items: Any = (), field: str = "table") -> None:
        super().__init__(items)
        self.field = field

    def __reduce__(self) -> tuple:
        return (type(self), (dict(self), self.field))

    def _refused(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.field)

    def __hash__(self) -> int:  # read-only, as FrozenList's
        return hash(frozenset(self.items()))

    update = setdefault = pop = popitem = clear = _refused
    __setitem__ = __delitem__ = __ior__ = _refused


def freeze(value: Any, field: str) -> Any:
    """``value`` (a policy field's) with its lists and dicts, nested ones too, read-only."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v, field) for k, v in value.items()}, field)
    if isinstance(value, list):
        return FrozenList([freeze(v, field) for v in value], field)
    return value

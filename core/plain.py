"""The plain form of frozen values: :func:`thaw`, the inverse of
:func:`~obelisk.core.values.freeze`, at the API boundary.

A thawed value is plain JSON, as ``json.loads`` makes it: objects are ``dict``, arrays
``list``, each container new. Object keys come out sorted (a ``PMap`` iterates in hash
order, which changes with ``PYTHONHASHSEED``), so every output is deterministic.
"""

from __future__ import annotations

import operator
from typing import Any

from pyrsistent import PMap, PVector, pvector

from obelisk.core.errors import ValueTooLarge
from obelisk.core.pmaps import items as _items
from obelisk.core.values import SCALAR_TYPES, UNLIMITED, Frozen, Json

__all__ = ["sorted_items", "thaw", "thaw_counted"]

_PVECTOR: type = type(pvector())  # the C type behind PVector (an abstract class)

#: Sorts a map's items by key (keys are unique, so the values are never compared).
_KEY = operator.itemgetter(0)


def thaw(value: Frozen, *, max_nodes: int = UNLIMITED) -> Json:
    """The plain JSON form of a frozen value (dict and list), iteratively: every container
    is new, so changing it changes nothing else.

    Object keys come out in sorted order, whatever order they were written in. A value of
    more than ``max_nodes`` JSON values raises :class:`ValueTooLarge` (a frozen value can
    share one child under many keys, so its plain form can be much larger).
    """
    return thaw_counted(value, max_nodes)[0]


def thaw_counted(value: Frozen, max_nodes: int = UNLIMITED) -> tuple[Json, int]:
    """:func:`thaw`, and how many JSON values the plain form holds."""
    if type(value) in SCALAR_TYPES:  # the common case, without an ABC's isinstance
        if max_nodes < 1:
            raise ValueTooLarge(max_nodes)
        return value, 1  # type: ignore[return-value]  # a scalar is its own plain form
    if type(value) is PMap:
        # An object of scalars (a call, most results): one dict, without the walk.
        items: list[Any] = sorted(_items(value), key=_KEY)
        for _, scalar in items:
            if type(scalar) not in SCALAR_TYPES:
                break
        else:
            if len(items) >= max_nodes:
                raise ValueTooLarge(max_nodes)
            return dict(items), len(items) + 1
    if isinstance(value, PMap):
        out: Any = {}
    elif isinstance(value, PVector):
        out = []
    else:
        if max_nodes < 1:
            raise ValueTooLarge(max_nodes)
        return value, 1
    return out, max_nodes - _walk(value, out, max_nodes - 1, max_nodes)


def _walk(value: Any, out: Any, left: int, max_nodes: int) -> int:
    # Fill ``out`` (an empty dict or list) with the plain form of ``value``, a container
    # at a time from a stack (no recursion: depth is bounded by freeze, but a stack costs
    # less); returns what is left of the count. (Any: the loop tells the kinds apart by
    # exact type, which mypy cannot follow.)
    stack: list[tuple[Any, Any]] = [(value, out)]
    child: Any
    new: Any
    while stack:
        src, dst = stack.pop()
        left -= len(src)
        if left < 0:
            raise ValueTooLarge(max_nodes)
        if type(dst) is dict:
            for key, child in sorted(_items(src), key=_KEY):  # keys sorted: deterministic
                # Scalars first, by exact type: PMap and PVector are ABCs, and an
                # isinstance check against an ABC costs several times a type lookup.
                kind = type(child)
                if kind in SCALAR_TYPES:
                    dst[key] = child
                elif kind is PMap or isinstance(child, PMap):
                    dst[key] = new = {}
                    stack.append((child, new))
                elif kind is _PVECTOR or isinstance(child, PVector):
                    dst[key] = new = []
                    stack.append((child, new))
                else:
                    dst[key] = child
        else:
            for child in src:
                kind = type(child)
                if kind in SCALAR_TYPES:
                    dst.append(child)
                elif kind is PMap or isinstance(child, PMap):
                    dst.append(new := {})
                    stack.append((child, new))
                elif kind is _PVECTOR or isinstance(child, PVector):
                    dst.append(new := [])
                    stack.append((child, new))
                else:
                    dst.append(child)
    return left


def sorted_items(src: PMap[str, Frozen]) -> list[tuple[str, Frozen]]:
    """A frozen object's ``(key, value)`` pairs in key order: the order :func:`thaw`
    gives its keys."""
    return sorted(_items(src), key=_KEY)

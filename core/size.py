"""The size of a JSON value as it will be serialised, counted without serialising it.

Values share structure: a frozen object read twice is one object in memory and two
copies in JSON text. A limit on the number of values held in memory cannot see that, so
an output of eighteen calls that each repeat the previous one twice is a few kilobytes in
memory and gigabytes as text. :func:`json_size` counts each occurrence as it will be
written, and each shared container's size is worked out once (by identity), so the count
costs the distinct objects, not the text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pyrsistent import PMap, PVector, pvector

from obelisk.core.pmaps import items as map_items

__all__ = ["MAX_REQUEST_BYTES", "MAX_VALUE_BYTES", "fits", "json_size"]

#: The default limit of one value a run hands out or writes (a result, a resolved call):
#: its compact JSON text in bytes. Runs take ``max_value_bytes=`` to change it.
MAX_VALUE_BYTES = 16 * 1024 * 1024

#: The default limit of a request an agent sends its LLM, in bytes of rendered text.
MAX_REQUEST_BYTES = 8 * 1024 * 1024

# A string needs a closer look only when JSON escapes something in it.
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')

# A string shorter than this is measured each time it appears: remembering it costs more.
_SHORT = 64

_CONTAINERS = (dict, list, tuple, PMap, PVector)
_VECTOR: type[Any] = type(pvector())  # the C vector's own type (PVector is an abstract class)


def json_size(value: Any, limit: int | None = None) -> int:
    """The length in bytes of ``value``'s compact JSON text, UTF-8 encoded, as
    ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` writes it.

    Objects and arrays (plain or frozen) are walked without recursion, each one measured
    once (after its members) and counted wherever it appears. With ``limit``, the walk
    stops once the size is known to be over it and returns a number over ``limit`` (not
    the exact size). Other objects count as their ``repr``. Raises ValueError for a
    container that contains itself.
    """
    known: dict[int, int] = {}
    if type(value) is PMap:  # most results and calls: an object of scalars
        flat = _flat_size(value)
        if flat is not None:
            return flat
    elif not isinstance(value, _CONTAINERS):
        return _scalar_size(value, known)
    opened: set[int] = set()  # containers whose members are being measured
    # The bytes the containers measured so far add themselves (brackets, keys, scalars):
    # each appears at least once in the text, so this is a lower bound of the whole.
    floor = 0
    # Each entry: a container and its members (None until they are pushed).
    stack: list[tuple[Any, list[Any] | None]] = [(value, None)]
    while stack:
        item, members = stack.pop()
        if members is not None:
            size, own = _container_size(item, members, known)
            known[id(item)] = size
            floor += own
            if limit is not None and (size > limit or floor > limit):
                return max(size, floor)
        elif id(item) not in known:
            if id(item) in opened:
                raise ValueError("the value contains itself: it has no JSON text")
            opened.add(id(item))
            members = _members(item)
            stack.append((item, members))
            for member in members:
                if isinstance(member, _CONTAINERS) and id(member) not in known:
                    stack.append((member, None))
    return known[id(value)]


def fits(value: Any, limit: int) -> bool:
    """True when ``value``'s JSON text (as :func:`json_size` counts it) is at most
    ``limit`` bytes. Most values are told by a bound made of lengths alone (a character
    is at most six bytes, ``\\u0000``; an integer at most 4,301 characters, Python's
    limit on printing one; any other scalar a few), without measuring them."""
    kind = type(value)
    if kind is str:
        if len(value) * 6 + 2 <= limit:
            return True
    elif (kind is PMap or kind is _VECTOR) and len(value) <= _SHORT:
        bound = _flat_bound(value)
        if bound is not None and bound <= limit:
            return True
    elif kind in _NUMBERS or value is None:
        return limit >= _NUMBER_BOUND or json_size(value) <= limit
    return json_size(value, limit) <= limit


def _flat_bound(item: PMap[Any, Any] | PVector[Any]) -> int | None:
    """A bound of an object's or array's size made of lengths alone (None when it holds
    an object or an array)."""
    pairs = map_items(item) if type(item) is PMap else [("", member) for member in item]
    bound = 2 + len(pairs)
    for key, member in pairs:
        member_kind = type(member)
        if member_kind is str:
            bound += len(member) * 6 + 2
        elif member_kind in _NUMBERS or member is None:
            bound += _NUMBER_BOUND
        else:
            return None
        bound += len(key) * 6 + 3
    return bound


#: Scalars that are not text, and the most characters one of them can take.
_NUMBERS = frozenset({int, float, bool})
_NUMBER_BOUND = 4301


def _flat_size(item: PMap[Any, Any]) -> int | None:
    """The size of an object of scalars (None when it holds an object or an array)."""
    size = 2 + max(len(item) - 1, 0)  # the braces and commas
    for key, member in map_items(item):
        kind = type(member)
        if kind is str:
            size += _text_size(member)
        elif member is None or kind is bool:
            size += 4 if member is not False else 5
        elif kind is int:
            size += len(str(member))
        elif kind is float:
            size += len(repr(member))
        else:
            return None
        size += _text_size(key) + 1
    return size


def _members(item: Any) -> list[Any]:
    """An array's members, or an object's values."""
    kind = type(item)
    if kind is PMap:
        return [value for _, value in map_items(item)]
    if kind is dict:
        return list(item.values())
    return list(item)


def _container_size(item: Any, members: list[Any], known: dict[int, int]) -> tuple[int, int]:
    """The size of a container whose member containers are all measured, and the part of
    it that is its own (all but its member containers)."""
    own = 2 + max(len(members) - 1, 0)  # brackets and commas
    if isinstance(item, (dict, PMap)):
        for key in item:  # the keys and their colons
            own += (len(key) + 3 if len(key) < _SHORT and key.isascii()
                    and _ESCAPED.search(key) is None else _scalar_size(key, known) + 1)
    inner = 0
    for member in members:
        if isinstance(member, _CONTAINERS):
            inner += known[id(member)]
        else:
            own += _scalar_size(member, known)
    return own + inner, own


def _scalar_size(value: Any, known: dict[int, int]) -> int:
    kind = type(value)
    if kind is str:
        if len(value) < _SHORT:
            return _text_size(value)
        size = known.get(id(value))
        if size is None:
            size = known[id(value)] = _text_size(value)
        return size
    if value is None or kind is bool:
        return 4 if value is not False else 5  # null, true, false
    if kind is float:
        return len(repr(value))
    if kind is int:
        return len(str(value))
    return len(repr(value))


def _text_size(text: str) -> int:
    if text.isascii() and _ESCAPED.search(text) is None:
        return len(text) + 2
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass"))

"""The five write methods, as pure functions on frozen values.

``apply_write(root, path, method, value)`` returns the new root. Each method is applied to
the old value at the path (possibly MISSING); the table :data:`METHODS` dispatches by name.
Writes below a MISSING path create the objects on the way; writing through a scalar, or
creating an array element through a MISSING container, raises :class:`WriteError`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

from pyrsistent import PMap, PVector, pmap, pvector
from pyrsistent.typing import PMapEvolver

from obelisk.core.errors import WriteError
from obelisk.core.paths import Path, render_path
from obelisk.core.text import article
from obelisk.core.values import MISSING, Frozen, Missing, bucket_get, json_type, pmap_from


class Method(str, enum.Enum):
    """How a written value combines with what is already at its path."""

    SET = "set"
    MERGE = "merge"
    ASSIGN = "assign"
    PUSH = "push"
    CONCAT = "concat"


# Method.SET as a module constant, for the check on every write: reading an Enum member
# through its class costs about 70 ns on Python 3.11, a module constant about 6.
_SET = Method.SET

def _set(old: Frozen | Missing, new: Frozen) -> Frozen:
    # set: the new value replaces whatever was there.
    return new


def _merge(old: Frozen | Missing, new: Frozen) -> Frozen:
    # merge: deep. Objects merge key by key, recursively; anything else is replaced.
    # Iterative over the levels both sides share as objects, so depth cannot overflow:
    # descend once collecting one evolver per shared level (a parent always before its
    # children), then fold the levels back bottom-up into their parents.
    if not (isinstance(old, PMap) and isinstance(new, PMap)):
        return new
    levels: list[tuple[PMapEvolver[str, Frozen], int, str]] = []  # (evolver, parent, key)
    todo: list[tuple[PMap[str, Frozen], PMap[str, Frozen], int, str]] = [(old, new, -1, "")]
    while todo:
        old_level, new_level, parent, parent_key = todo.pop()
        evolver = old_level.evolver()
        here = len(levels)
        levels.append((evolver, parent, parent_key))
        for key, value in new_level.items():
            current = old_level.get(key, MISSING)
            if isinstance(current, PMap) and isinstance(value, PMap):
                todo.append((current, value, here, key))
            else:
                evolver[key] = value
    for evolver, parent, parent_key in reversed(levels[1:]):
        levels[parent][0][parent_key] = evolver.persistent()
    return levels[0][0].persistent()


def _assign(old: Frozen | Missing, new: Frozen) -> Frozen:
    # assign: shallow. Top-level keys of the new object replace those of the old one.
    if isinstance(old, PMap) and isinstance(new, PMap):
        merged: PMap[str, Frozen] = old.update(new)
        return merged
    return new


def _push(old: Frozen | Missing, new: Frozen) -> Frozen:
    # push: append the value as one element; MISSING becomes [value].
    if old is MISSING:
        return pvector([new])
    if isinstance(old, PVector):
        return old.append(new)
    raise WriteError(f"push needs an array there, found {_a(json_type(old))}")


def _concat(old: Frozen | Missing, new: Frozen) -> Frozen:
    # concat: append every element of an array; MISSING becomes the value.
    if not isinstance(new, PVector):
        raise WriteError(f"concat needs an array to append, got {_a(json_type(new))}")
    if old is MISSING:
        return new
    if isinstance(old, PVector):
        return old.extend(new)
    raise WriteError(f"concat needs an array there, found {_a(json_type(old))}")


#: Method name -> the function combining (old, new).
METHODS: dict[Method, Callable[[Frozen | Missing, Frozen], Frozen]] = {
    Method.SET: _set,
    Method.MERGE: _merge,
    Method.ASSIGN: _assign,
    Method.PUSH: _push,
    Method.CONCAT: _concat,
}


def apply_write(root: Frozen | Missing, path: Path, method: Method, value: Frozen) -> Frozen:
    """The new root after writing ``value`` at ``path`` with ``method``.

    Raises :class:`WriteError` (with the reason; the caller adds kind and message) when the
    write cannot be applied. Iterative: descends once, then rebuilds the spine bottom-up.
    """
    if method is _SET and type(root) is PMap:
        # The most common write: a key set through objects that exist (or one level that
        # does not), every segment a key. Same result as the general loop below, without
        # its spine of (container, key) pairs and per-level dispatch.
        fast = set_in_objects(root, path, value)
        if fast is not None:
            return fast
    combine = METHODS[method]
    # Descend, remembering each container and the concrete key used in it.
    spine: list[tuple[Frozen | Missing, str | int]] = []
    node: Frozen | Missing = root
    for depth, segment in enumerate(path):
        # The location is rendered only for an error: rendering it at every step made a
        # write quadratic in the path's length.
        if isinstance(node, PMap):
            name = segment if isinstance(segment, str) else _decimal_key(segment, path, depth)
            spine.append((node, name))
            node = node.get(name, MISSING)
        elif isinstance(node, PVector):
            if not isinstance(segment, int):
                raise WriteError(
                    f"{_where(path, depth)} is an array, so the key {segment!r} cannot be "
                    "written in it (use an integer index)"
                )
            index = segment + len(node) if segment < 0 else segment
            if not 0 <= index < len(node):
                raise WriteError(
                    f"index {segment} is out of range for the array at {_where(path, depth)} "
                    f"(length {len(node)}); use push to append"
                )
            spine.append((node, index))
            node = node[index]
        elif node is MISSING:
            if isinstance(segment, int):
                raise WriteError(
                    f"{_where(path, depth)} does not exist, so element {segment} cannot be "
                    "created (write the array first, or push onto it)"
                )
            spine.append((MISSING, segment))
            node = MISSING
        else:
            raise WriteError(
                f"{_where(path, depth)} holds {_a(json_type(node))}, so nothing can be "
                "written below it"
            )
    node = combine(node, value)
    for container, key in reversed(spine):
        if isinstance(container, PVector):
            assert isinstance(key, int)
            node = container.set(key, node)
        elif isinstance(container, PMap):
            assert isinstance(key, str)  # an object's key (an index became its decimal text)
            node = container.set(key, node)
        else:  # MISSING: create the object on the way
            assert isinstance(key, str)  # an index below MISSING raised above
            node = pmap({key: node})
    return node


def set_in_objects(root: PMap[str, Frozen], path: Path, value: Frozen) -> Frozen | None:
    """``apply_write(root, path, Method.SET, value)`` when every segment of ``path`` is a
    key and every container on the way is an object, except that the last one may be
    missing (it is created); None when the path leaves that shape (then ask
    :func:`apply_write`, which tries this first)."""
    last = len(path) - 1
    if last < 1:
        if last < 0:
            return None
        key = path[0]  # one key (``†state.total``): the commonest write, without the loops
        if type(key) is not str or type(root) is not PMap:
            return None
        return _set_key(root, key, value) if _FAST_SET.on else root.set(key, value)
    levels: list[tuple[PMap[str, Frozen], str]] = []
    node: Frozen | Missing = root
    fast = _FAST_SET.on
    for depth, key in enumerate(path):
        if type(key) is not str:
            return None
        if type(node) is PMap:
            levels.append((node, key))
            if depth < last:
                node = _get(node, key) if fast else node.get(key, MISSING)
        elif node is MISSING and depth == last:
            value = pmap({key: value})
        else:
            return None
    for container, name in reversed(levels):
        value = _set_key(container, name, value) if fast else container.set(name, value)
    return value


# PMap is pure Python: its ``set`` makes an evolver, copies the bucket vector's evolver and
# makes the map again. The two helpers below do what ``get`` and ``set`` do on its buckets
# directly (a key set in a third of the time), and are used only when a check at import
# finds they make exactly the maps PMap makes (same items, same order, same hash).


class _FAST_SET:  # noqa: N801 - a flag, named as the one in core/messages.py
    """Whether :func:`_get` and :func:`_set_key` may read PMap's buckets."""

    on = False


def get_key(container: PMap[str, Any], key: str) -> Any:
    """``container.get(key, MISSING)``, from PMap's buckets when that is checked safe."""
    return _get(container, key) if _FAST_SET.on else container.get(key, MISSING)


#: container.get(key, MISSING), from the buckets.
_get: Callable[[PMap[str, Frozen], str], Frozen | Missing] = bucket_get


def _set_key(container: PMap[str, Frozen], key: str, value: Frozen) -> PMap[str, Frozen]:
    # container.set(key, value), laid out as PMap's evolver lays it out: a new key goes
    # first in its bucket; when the map must grow its buckets, PMap itself does it.
    buckets: Any = container._buckets
    size: Any = container._size  # a slot; len() would be a Python-level call
    index = hash(key) % len(buckets)
    bucket = buckets[index]
    if bucket:
        for k, v in bucket:
            if k == key:
                if v is value:
                    return container
                return pmap_from(size, buckets.set(
                    index, [(k2, value) if k2 == key else (k2, v2) for k2, v2 in bucket]))
    if len(buckets) < 0.67 * size:
        return _grown(buckets, size, key, value)
    return pmap_from(size + 1, buckets.set(
        index, [(key, value), *bucket] if bucket else [(key, value)]))


def _rehashed(buckets: Iterable[Any], count: int) -> list[Any]:
    # The entries of ``buckets`` filed in ``count`` new buckets, in bucket order (as
    # PMap's evolver grows a map); the entries' tuples are reused.
    grown: list[Any] = [None] * count
    for bucket in buckets:
        if bucket:
            for entry in bucket:
                at = hash(entry[0]) % count
                if grown[at]:
                    grown[at].append(entry)
                else:
                    grown[at] = [entry]
    return grown


def _grown(buckets: Any, size: int, key: str, value: Frozen) -> PMap[str, Frozen]:
    # The map with a new key when it must grow first, laid out as PMap's evolver lays it
    # out (twice the buckets, the entries rehashed in bucket order, then the new key set
    # first in its bucket), without the evolvers: the entries' tuples are reused.
    grown = _rehashed(buckets, 2 * len(buckets))
    at = hash(key) % len(grown)
    grown[at] = [(key, value), *grown[at]] if grown[at] else [(key, value)]
    return pmap_from(size + 1, pvector(grown))


class OpenMap:
    """A PMap opened for many key sets, closed into one map at the end.

    :func:`set_in_open` writes into it as :func:`apply_write` would write ``set`` into
    the map, level by level (opening each object on the way once); :meth:`close` makes
    the map that those writes one by one would have made: the same items in the same
    buckets in the same order (the layout ``_set_key`` keeps), so equal, hashing and
    iterating the same. The bucket vector is copied on write (an evolver), so opening
    a large map for one set costs what that set costs. Used only while ``_FAST_SET.on``
    (it reads PMap's buckets), by the context's :class:`~obelisk.core.context.Appender`.
    """

    __slots__ = ("_buckets", "_width", "_size", "_children")

    def __init__(self, container: PMap[str, Frozen]) -> None:
        buckets: Any = container._buckets
        self._buckets: Any = buckets.evolver()  # a list once the map has grown
        self._width: int = len(buckets)
        size: Any = container._size  # a slot of PMap
        self._size: int = size
        #: The objects opened below this one, by key; their writes reach this map's own
        #: buckets only when it closes.
        self._children: dict[str, OpenMap] = {}

    def _lookup(self, key: str) -> Frozen | Missing:
        bucket = self._buckets[hash(key) % self._width]
        if bucket:
            for k, v in bucket:
                if k == key:
                    return v  # type: ignore[no-any-return]
        return MISSING

    def set(self, key: str, value: Frozen) -> None:
        """``set`` of ``value`` at ``key``: what an opened object there held is dropped."""
        if self._children:
            self._children.pop(key, None)
        self._put(key, value)

    def _put(self, key: str, value: Frozen) -> None:
        # _set_key's rules on the open buckets: a key already there keeps its place, a
        # new one goes first in its bucket, after the buckets double when the map is full.
        buckets = self._buckets
        index = hash(key) % self._width
        bucket = buckets[index]
        if bucket:
            for k, v in bucket:
                if k == key:
                    if v is not value:
                        buckets[index] = [(k2, value) if k2 == key else (k2, v2)
                                          for k2, v2 in bucket]
                    return
        if self._width < 0.67 * self._size:
            self._grow()
            buckets = self._buckets
            index = hash(key) % self._width
            bucket = buckets[index]
        buckets[index] = [(key, value), *bucket] if bucket else [(key, value)]
        self._size += 1

    def _grow(self) -> None:
        # Twice the buckets, the entries rehashed in bucket order (as _grown does).
        old = self._buckets
        self._width *= 2
        self._buckets = _rehashed(old if type(old) is list else old.persistent(), self._width)

    def close(self) -> PMap[str, Frozen]:
        """The map with every write made (the object stays usable, and empty of children)."""
        for key, child in self._children.items():
            self._put(key, child.close())  # the key is there: it keeps its place
        self._children = {}
        buckets = self._buckets
        vector = pvector(buckets) if type(buckets) is list else buckets.persistent()
        return pmap_from(self._size, vector)


def set_in_open(root: OpenMap, path: Path, value: Frozen) -> bool:
    """``set`` of ``value`` at ``path`` into an opened object, as :func:`apply_write` makes
    it when every segment is a key and every container on the way is an object, except
    that the last one may be missing (it is created). False, with nothing written, when
    the path leaves that shape: the caller then takes the general route."""
    last = len(path) - 1
    if last < 0:
        return False
    node = root
    for depth in range(last):
        key = path[depth]
        if type(key) is not str:
            return False
        child = node._children.get(key)
        if child is None:
            current = node._lookup(key)
            if type(current) is PMap:
                child = node._children[key] = OpenMap(current)
            elif current is MISSING and depth == last - 1:
                name = path[last]
                if type(name) is not str:
                    return False
                node.set(key, pmap({name: value}))
                return True
            else:
                return False
        node = child
    key = path[last]
    if type(key) is not str:
        return False
    node.set(key, value)
    return True


def fast_sets() -> bool:
    """Whether :class:`OpenMap` may be used (PMap's buckets are laid out as checked)."""
    return _FAST_SET.on


def _check_fast_set() -> bool:
    # Grow maps key by key (through every reallocation), replace and re-set keys, and
    # compare each step with PMap's own set.
    try:
        _FAST_SET.on = True
        ours: PMap[str, Frozen] = pmap()
        theirs: PMap[str, Frozen] = pmap()
        keys = [f"k{i}" for i in range(40)] + ["k3", "k17", "k3", ""]
        for number, key in enumerate(keys):
            ours = _set_key(ours, key, number)
            theirs = theirs.set(key, number)
            if (list(ours.items()) != list(theirs.items()) or ours != theirs
                    or hash(ours) != hash(theirs) or _get(ours, key) != number
                    or _get(ours, "absent") is not MISSING):
                return False
        if _set_key(ours, "k3", ours["k3"]) is not ours:
            return False
        # The same sets through an opened map, closed at every step and at the end.
        opened = OpenMap(pmap())
        theirs = pmap()
        for number, key in enumerate(keys):
            opened.set(key, number)
            theirs = theirs.set(key, number)
            if number % 7 == 0 and list(opened.close().items()) != list(theirs.items()):
                return False
        closed = opened.close()
        return list(closed.items()) == list(theirs.items()) and hash(closed) == hash(theirs)
    except Exception:  # noqa: BLE001 - a pyrsistent that keeps maps another way
        return False


_FAST_SET.on = _check_fast_set()


def _decimal_key(segment: int, path: Path, depth: int) -> str:
    if segment < 0:
        raise WriteError(
            f"{_where(path, depth)} is an object, so the negative index {segment} has no meaning"
        )
    return str(segment)


def _where(path: Path, depth: int) -> str:
    """The container reached after ``depth`` segments of ``path``, as text for an error."""
    return render_path(path[:depth]) or "the root"


def _a(type_name: str) -> str:
    return article(type_name)

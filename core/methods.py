"""The five write methods, as pure functions on frozen values.

``apply_write(root, path, method, value)`` returns the new root. Each method is applied to
the old value at the path (possibly MISSING); the table :data:`METHODS` dispatches by name.
Writes below a MISSING path create the objects on the way; writing through a scalar, or
creating an array element through a MISSING container, raises :class:`WriteError`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from pyrsistent import PMap, PVector, pmap, pvector
from pyrsistent.typing import PMapEvolver

from obelisk.core.errors import WriteError
from obelisk.core.paths import Path
from obelisk.core.pathtext import render_path
from obelisk.core.pmaps import OpenMap, get, set_key
from obelisk.core.text import article
from obelisk.core.values import MISSING, Frozen, Missing, json_type


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
    spine, node = _descend(root, path)
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


def _descend(root: Frozen | Missing,
             path: Path) -> tuple[list[tuple[Frozen | Missing, str | int]], Frozen | Missing]:
    # Descend once along ``path``, remembering each container and the concrete key used in
    # it; the value found at the end (MISSING below a missing object). The location is
    # rendered only for an error: rendering it at every step made a write quadratic in
    # the path's length.
    spine: list[tuple[Frozen | Missing, str | int]] = []
    node: Frozen | Missing = root
    for depth, segment in enumerate(path):
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
    return spine, node


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
        return set_key(root, key, value)
    levels: list[tuple[PMap[str, Frozen], str]] = []
    node: Frozen | Missing = root
    for depth, key in enumerate(path):
        if type(key) is not str:
            return None
        if type(node) is PMap:
            levels.append((node, key))
            if depth < last:
                node = get(node, key, MISSING)
        elif node is MISSING and depth == last:
            value = pmap({key: value})
        else:
            return None
    for container, name in reversed(levels):
        value = set_key(container, name, value)
    return value


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
        child = node.child(key)
        if child is None:
            current = node.get(key, MISSING)
            if type(current) is PMap:
                child = node.open_child(key, current)
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

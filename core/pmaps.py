"""The kernel room: the one module that reads pyrsistent's internals (a PMap's buckets).

A ``PMap`` is pure Python: its ``get``, ``set``, ``items`` and constructor each cost
several Python-level calls (an evolver, a copied bucket vector, generators). The engine
does them for every call it runs and every object it freezes, so this module does the
same work on the map's two slots directly: ``_size`` (the number of entries) and
``_buckets`` (a PVector of buckets, each None or a list of ``(key, value)`` tuples; a key
is filed in bucket ``hash(key) % len(_buckets)``).

Every operation is written twice, side by side: its meaning in pyrsistent's public API
(``_public_*``, the definition) and the same on the buckets (``_fast_*``), which makes the
same map: equal, hashing alike, and laid out alike (the same buckets, entries in the same
order, so it iterates alike). The names the rest of obelisk imports (:func:`get`,
:func:`items`, :func:`set_key`, :func:`from_dict`, :func:`single`, :func:`compact`) are
bound to the fast ones only when

- one layout check at import (:func:`_layout_holds`) finds that the installed pyrsistent
  lays maps out as they assume, and
- nobody switched to the public API: :func:`use_public_api`, called before the rest of
  obelisk is imported (the test suite does when ``OBELISK_PYRSISTENT=public`` is set, and
  CI runs the property suites that way, so the general path is tested whole).

:class:`OpenMap` (many sets into one map, closed at the end) exists only on the buckets:
its general path is the sets one by one, which its user takes when :data:`FAST` is false.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any, TypeVar

from pyrsistent import PMap, pmap, pvector

K = TypeVar("K")
V = TypeVar("V")

# -- reading ----------------------------------------------------------------------------


def _public_items(src: PMap[K, V]) -> list[tuple[K, V]]:
    # The definition: the map's entries, in its iteration (bucket) order.
    return list(src.items())


def _fast_items(src: PMap[K, V]) -> list[tuple[K, V]]:
    # The entries of the non-empty buckets, in bucket order, without PMap.items()'s
    # generators (chain in C: no Python frame per entry).
    if type(src) is PMap:
        buckets: Any = src._buckets
        return list(_chained(filter(None, buckets)))
    return list(src.items())


_chained = chain.from_iterable


def _public_get(container: PMap[K, V], key: K, default: Any) -> Any:
    # The definition.
    return container.get(key, default)


def _fast_get(container: PMap[K, V], key: K, default: Any) -> Any:
    # The bucket the key's hash files it in, scanned (a third of PMap.get's time).
    buckets: Any = container._buckets
    bucket = buckets[hash(key) % len(buckets)]
    if bucket:
        for k, v in bucket:
            if k == key:
                return v
    return default


# -- making maps ------------------------------------------------------------------------


def _made(size: int, buckets: Any) -> PMap[Any, Any]:
    # What PMap(size, buckets) makes, without its Python-level __new__ (half the time):
    # an instance made bare and its two slots filled.
    made: Any = _NEW(PMap)
    made._size = size
    made._buckets = buckets
    return made  # type: ignore[no-any-return]


_NEW = object.__new__


def _public_from_dict(entries: dict[K, V]) -> PMap[K, V]:
    # The definition.
    return pmap(entries)


def _fast_from_dict(entries: dict[K, V]) -> PMap[K, V]:
    # pmap's layout (twice as many buckets as entries, 8 for none; each entry appended to
    # its bucket in the dict's order), without its Mapping checks and its constructor.
    size = 2 * len(entries) or 8
    buckets: list[Any] = [None] * size
    for entry in entries.items():
        index = hash(entry[0]) % size
        bucket = buckets[index]
        if bucket:
            bucket.append(entry)
        else:
            buckets[index] = [entry]
    return _made(len(entries), pvector(buckets))


def _public_single(key: K, value: V) -> PMap[K, V]:
    # The definition.
    return pmap({key: value})


def _fast_single(key: K, value: V) -> PMap[K, V]:
    # pmap's layout of one entry (two buckets), without its loops.
    buckets: list[Any] = [None, None]
    buckets[hash(key) % 2] = [(key, value)]
    return _made(1, pvector(buckets))


def _public_compact(pairs: list[tuple[K, V]]) -> PMap[K, V]:
    # The definition: one bucket holding the entries in the order given (distinct keys).
    return pmap(dict(pairs), pre_size=1)


def _fast_compact(pairs: list[tuple[K, V]]) -> PMap[K, V]:
    # The list given is the bucket (the caller makes it for this map alone).
    return _made(len(pairs), pvector([pairs]))


# -- setting a key ----------------------------------------------------------------------


def _public_set_key(container: PMap[K, V], key: K, value: V) -> PMap[K, V]:
    # The definition.
    return container.set(key, value)


def _fast_set_key(container: PMap[K, V], key: K, value: V) -> PMap[K, V]:
    # PMap's evolver's layout: a key already there keeps its place, a new one goes first
    # in its bucket, after the buckets double when the map is full (a key set in a third
    # of PMap.set's time, which makes an evolver and copies the bucket vector's evolver).
    buckets: Any = container._buckets
    size: Any = container._size  # a slot: len() is a call
    index = hash(key) % len(buckets)
    bucket = buckets[index]
    if bucket:
        for k, v in bucket:
            if k == key:
                if v is value:
                    return container
                return _made(size, buckets.set(
                    index, [(k2, value) if k2 == key else (k2, v2) for k2, v2 in bucket]))
    if len(buckets) < 0.67 * size:
        grown = _rehashed(buckets, 2 * len(buckets))
        at = hash(key) % len(grown)
        grown[at] = [(key, value), *grown[at]] if grown[at] else [(key, value)]
        return _made(size + 1, pvector(grown))
    return _made(size + 1, buckets.set(
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


class OpenMap:
    """A PMap opened for many key sets, closed into one map at the end.

    Its meaning: ``set`` one by one (``m = m.set(key, value)``), the map made only when
    closed. :meth:`close` makes the map those sets would have made, laid out alike (the
    rules of :func:`set_key`). The bucket vector is copied on write (an evolver), so
    opening a large map for one set costs what that set costs. An object below it may be
    opened too (:meth:`child`): its sets reach this map when it closes. Made only while
    :data:`FAST` (it reads the buckets); its user takes the sets one by one otherwise.
    """

    __slots__ = ("_buckets", "_width", "_size", "_children")

    def __init__(self, container: PMap[str, Any]) -> None:
        buckets: Any = container._buckets
        self._buckets: Any = buckets.evolver()  # a list once the map has grown
        self._width: int = len(buckets)
        self._size: int = container._size
        #: The objects opened below this one, by key.
        self._children: dict[str, OpenMap] = {}

    def get(self, key: str, default: Any) -> Any:
        """``get`` of the map so far (an opened child's sets not included)."""
        bucket = self._buckets[hash(key) % self._width]
        if bucket:
            for k, v in bucket:
                if k == key:
                    return v
        return default

    def child(self, key: str) -> OpenMap | None:
        """The object at ``key`` opened below this one, when it was."""
        return self._children.get(key)

    def open_child(self, key: str, container: PMap[str, Any]) -> OpenMap:
        """Open ``container``, the object at ``key``, below this one."""
        child = self._children[key] = OpenMap(container)
        return child

    def set(self, key: str, value: Any) -> None:
        """``set`` of ``value`` at ``key``: what an opened object there held is dropped."""
        if self._children:
            self._children.pop(key, None)
        self._put(key, value)

    def _put(self, key: str, value: Any) -> None:
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
        if self._width < 0.67 * self._size:  # full: twice the buckets, rehashed in order
            old = self._buckets
            self._width *= 2
            self._buckets = buckets = _rehashed(
                old if type(old) is list else old.persistent(), self._width)
            index = hash(key) % self._width
            bucket = buckets[index]
        buckets[index] = [(key, value), *bucket] if bucket else [(key, value)]
        self._size += 1

    def close(self) -> PMap[str, Any]:
        """The map with every set made (the object stays usable, and empty of children)."""
        for key, child in self._children.items():
            self._put(key, child.close())  # the key is there: it keeps its place
        self._children = {}
        buckets = self._buckets
        vector = pvector(buckets) if type(buckets) is list else buckets.persistent()
        return _made(self._size, vector)


def bucket_count(container: PMap[Any, Any]) -> int:
    """How many buckets a map spreads over: a probe of its layout, for tests and
    bench/ (no public-API meaning: the buckets are what it measures)."""
    return len(container._buckets)


# -- the layout check and the switch ----------------------------------------------------


#: Each operation: (its fast version, its public definition).
TWINS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "items": (_fast_items, _public_items),
    "get": (_fast_get, _public_get),
    "from_dict": (_fast_from_dict, _public_from_dict),
    "single": (_fast_single, _public_single),
    "compact": (_fast_compact, _public_compact),
    "set_key": (_fast_set_key, _public_set_key),
}


def _alike(ours: Any, theirs: Any) -> bool:
    # The same map: equal, hashing alike, iterating alike (so laid out alike).
    return (type(ours) is PMap and ours == theirs and hash(ours) == hash(theirs)
            and list(ours.items()) == list(theirs.items()))


def _layout_holds() -> bool:
    """Whether every fast operation makes what its definition makes, on maps grown key
    by key through every reallocation, keys replaced and re-set, read present or not."""
    try:
        keys = [f"k{i}" for i in range(40)] + ["k3", "k17", "k3", ""]
        samples: list[dict[str, Any]] = [{}, {"a": 1}, {f"k{i}": i for i in range(40)},
                                         {"type": "x", "n": None, "": (1,)}]
        ours: PMap[str, Any] = pmap()
        theirs: PMap[str, Any] = pmap()
        opened = OpenMap(pmap())
        for number, key in enumerate(keys):
            ours, theirs = _fast_set_key(ours, key, number), theirs.set(key, number)
            opened.set(key, number)
            if not _alike(ours, theirs) or (number % 7 == 0 and not _alike(opened.close(),
                                                                             theirs)):
                return False
        maps = [pmap(), *map(pmap, samples), ours, ours.remove("k7").set("new", 2)]
        return (_fast_set_key(ours, "k3", ours["k3"]) is ours
                and _alike(opened.close(), theirs)
                and all(_alike(_fast_from_dict(d), pmap(d)) for d in samples)
                and all(_alike(_fast_single(k, v), pmap({k: v})) for k, v in samples[3].items())
                and all(_alike(_fast_compact(list(d.items())), _public_compact(list(d.items())))
                        and _fast_compact(list(d.items())).set("z", 0) == pmap(d).set("z", 0)
                        for d in samples[1:])
                and all(_fast_items(m) == list(m.items()) for m in maps)
                and all(_fast_get(m, k, None) is m.get(k, None)
                        for m in maps for k in ["a", "k7", "new", "absent", *keys]))
    except Exception:  # noqa: BLE001 - a pyrsistent that keeps maps another way
        return False


#: Whether the installed pyrsistent lays maps out as the fast operations assume.
LAYOUT_HOLDS = _layout_holds()
#: Whether the fast operations are in use (the layout holds, and no switch to the public
#: API was made).
FAST = LAYOUT_HOLDS


def _bind(fast: bool) -> None:
    global FAST
    FAST = fast
    module = sys.modules[__name__]
    for name, twins in TWINS.items():
        setattr(module, name, twins[0] if fast else twins[1])


def use_public_api() -> None:
    """Use pyrsistent's public API everywhere from now on (the general path, tested
    whole). Call it before anything else of obelisk is imported: modules take these
    functions when they are imported. Raises ``RuntimeError`` when that is too late."""
    late = sorted(name for name in sys.modules
                  if name.startswith("obelisk.") and name not in _BELOW)
    if late:
        raise RuntimeError(f"switch to the public API before importing {late[0]}: it "
                           "has taken the fast operations already")
    _bind(False)


#: What may be imported before the switch: the packages on the way here, this module, and
#: the kit's pytest plugin, which pytest loads (entry point ``pytest11``) before any
#: conftest can switch, and which imports nothing else of obelisk until vectors are
#: collected (tests/kit/test_plugin_import.py keeps it so).
_BELOW = frozenset({"obelisk.core", "obelisk.core.lazy", __name__,
                    "obelisk.kit", "obelisk.kit.pytest_plugin"})

# The names the rest of obelisk imports, each bound to its fast or public twin.
items: Callable[[PMap[Any, Any]], list[tuple[Any, Any]]]
get: Callable[[PMap[Any, Any], Any, Any], Any]
from_dict: Callable[[dict[Any, Any]], PMap[Any, Any]]
single: Callable[[Any, Any], PMap[Any, Any]]
compact: Callable[[list[tuple[Any, Any]]], PMap[Any, Any]]
set_key: Callable[[PMap[Any, Any], Any, Any], PMap[Any, Any]]
_bind(FAST)

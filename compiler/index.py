"""An index of written paths, so finding the writers a read overlaps never scans every writer.

Targets are stored in a trie per kind, keyed by path segment. A query for path ``P``
collects the entries on the way down to ``P`` (writes at or above it) and every entry
below it (writes inside it). Negative and non-negative indexes may name the same array
element, so an integer segment also follows integer children of the other sign.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from obelisk.core.paths import Path

T = TypeVar("T")


class _Node(Generic[T]):
    __slots__ = ("entries", "children", "negative", "nonnegative")

    def __init__(self) -> None:
        self.entries: list[T] = []
        self.children: dict[str | int, _Node[T]] = {}
        # Integer children by sign, so a query crosses to the other sign without a scan
        # of every key.
        self.negative: list[_Node[T]] = []
        self.nonnegative: list[_Node[T]] = []


class PathIndex(Generic[T]):
    """Entries filed under ``(kind, path)``; :meth:`overlapping` finds those that overlap.

    Built once while compiling, then only read. Entries come back in the order they were
    added within each trie node; callers sort when they need a global order.
    """

    def __init__(self) -> None:
        self._roots: dict[str, _Node[T]] = {}

    def add(self, kind: str, path: Path, entry: T) -> None:
        node = self._roots.setdefault(kind, _Node())
        for segment in path:
            child = node.children.get(segment)
            if child is None:
                child = node.children[segment] = _Node()
                if isinstance(segment, int):
                    (node.negative if segment < 0 else node.nonnegative).append(child)
            node = child
        node.entries.append(entry)

    def kinds(self) -> Iterator[str]:
        return iter(self._roots)

    def under_kind(self, kind: str) -> Iterator[T]:
        """Every entry of ``kind``."""
        root = self._roots.get(kind)
        if root is not None:
            yield from _subtree(root)

    def overlapping(self, kind: str, path: Path) -> Iterator[T]:
        """Every entry whose path is a prefix of ``path`` or has ``path`` as a prefix."""
        root = self._roots.get(kind)
        if root is None:
            return
        frontier = [root]
        for segment in path:
            following: list[_Node[T]] = []
            for node in frontier:
                yield from node.entries  # written at or above the path
                following.extend(_matching_children(node, segment))
            frontier = following
            if not frontier:
                return
        for node in frontier:
            yield from _subtree(node)  # written at or below the path

    def groups(self, kind: str, path: Path) -> list[tuple[_Node[T], bool]]:
        """What :meth:`overlapping` reads, as groups: ``(trie node, below)`` pairs, where
        ``below`` means every entry of the node's subtree and otherwise the node's own
        entries. Queries of one path (or of paths under one written path) give the same
        groups, so their results can be shared instead of copied per reader."""
        root = self._roots.get(kind)
        if root is None:
            return []
        found: list[tuple[_Node[T], bool]] = []
        frontier = [root]
        for segment in path:
            following: list[_Node[T]] = []
            for node in frontier:
                if node.entries:
                    found.append((node, False))
                following.extend(_matching_children(node, segment))
            frontier = following
            if not frontier:
                return found
        found.extend((node, True) for node in frontier)
        return found

    @staticmethod
    def entries_of(node: _Node[T], below: bool) -> Iterator[T]:
        """The entries of one group of :meth:`groups`."""
        return _subtree(node) if below else iter(node.entries)


def _matching_children(node: _Node[T], segment: str | int) -> list[_Node[T]]:
    # The same rules as core.paths.overlaps: equal segments; an index n >= 0 and the key
    # "n" (on an object they are one key); indexes of opposite signs (-1 may be 3).
    # A list, not a generator: most segments are keys with one match, queried per read.
    exact = node.children.get(segment)
    found = [] if exact is None else [exact]
    if isinstance(segment, int):
        if segment >= 0:
            alias = node.children.get(str(segment))
            if alias is not None:
                found.append(alias)
        found.extend(node.nonnegative if segment < 0 else node.negative)
    elif segment.isdigit() and segment.isascii() and str(int(segment)) == segment:
        alias = node.children.get(int(segment))
        if alias is not None:
            found.append(alias)
    return found


def _subtree(node: _Node[T]) -> Iterator[T]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield from current.entries
        stack.extend(current.children.values())


class LayeredIndex(Generic[T]):
    """One :class:`PathIndex` per layer: the global layer (``None``) and each instance.

    A reader sees the global layer and its own instance's, so a query never looks at the
    entries of other instances: compiling for N instances stays linear in N.
    """

    def __init__(self) -> None:
        self._layers: dict[str | None, PathIndex[T]] = {}

    def add(self, layer: str | None, kind: str, path: Path, entry: T) -> None:
        """File ``entry`` under ``(kind, path)`` in ``layer``."""
        found = self._layers.get(layer)
        if found is None:
            found = self._layers[layer] = PathIndex()
        found.add(kind, path, entry)

    def layer(self, layer: str | None) -> PathIndex[T] | None:
        """The index of one layer (None when nothing was filed there)."""
        return self._layers.get(layer)

    def visible_to(self, instance: str | None) -> list[PathIndex[T]]:
        """The layers a reader of ``instance`` sees: the global one, then its own."""
        layers = [self._layers.get(None)]
        if instance is not None:
            layers.append(self._layers.get(instance))
        return [layer for layer in layers if layer is not None]

    def kinds(self) -> Iterator[str]:
        """Every kind filed in any layer (once each)."""
        seen: set[str] = set()
        for layer in self._layers.values():
            for kind in layer.kinds():
                if kind not in seen:
                    seen.add(kind)
                    yield kind

    def under_kind(self, kind: str) -> Iterator[T]:
        """Every entry of ``kind``, in every layer."""
        for layer in self._layers.values():
            yield from layer.under_kind(kind)

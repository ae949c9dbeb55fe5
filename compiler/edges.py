"""The dependencies of a plan, grouped by written path, so their memory grows with the
calls and not with writers x readers.

A read is linked to *groups* of the path index (the writers filed at one trie node, or in
its whole subtree) instead of to each writer. Reads of one path share their groups, and so
share one tuple of writers; a node's predecessors and a writer's successors are shared
tuples too whenever they are the same set. Nothing stores one object per (writer, reader)
pair: :class:`EdgeView` and :class:`EdgeMap` build each :class:`Edge` when it is asked for.

1,000 writers and 1,000 readers of ``†state.a`` make a million edges, but one group, one
tuple of writers shared by the readers, and one tuple of readers shared by the writers.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from obelisk.compiler.index import LayeredIndex, PathIndex
from obelisk.compiler.nodes import Edge
from obelisk.core.ast import Reference

#: An entry of the path index: (writer node id, output alternative, target written).
Target = tuple[int, int, Reference]


class Group:
    """The writers one query of the index found: their entries by writer, sorted ids."""

    __slots__ = ("writers", "targets", "readers", "readers_tuple")

    def __init__(self, entries: Iterator[Target]) -> None:
        by_writer: dict[int, list[tuple[int, Reference]]] = {}
        for writer, alt, target in entries:
            by_writer.setdefault(writer, []).append((alt, target))
        self.writers: tuple[int, ...] = tuple(sorted(by_writer))
        # Each writer's (alternative, target) entries, in the order of ``writers``: kept
        # as tuples found by bisection rather than a dict (a group lives as long as the
        # plan, and most have one writer).
        self.targets: tuple[tuple[tuple[int, Reference], ...], ...] = tuple(
            tuple(by_writer[w]) for w in self.writers)
        self.readers: list[int] = []  # the nodes reading through it, ascending
        self.readers_tuple: tuple[int, ...] = ()

    def of_writer(self, writer: int) -> tuple[tuple[int, Reference], ...]:
        """The (alternative, target) entries of ``writer`` in this group (none if absent)."""
        place = bisect.bisect_left(self.writers, writer)
        if place < len(self.writers) and self.writers[place] == writer:
            return self.targets[place]
        return ()


class Links:
    """Each node's reads linked to groups, and the adjacency they make (shared tuples)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._groups: dict[tuple[tuple[int, bool], ...], Group] = {}
        self.of_node: list[list[tuple[Reference, Group]]] = [[] for _ in range(n)]
        self._shared: dict[Any, tuple[int, ...]] = {}
        # (node, group) -> the group's writers without the node, made once per pair and
        # shared by the node's reads and its predecessors.
        self._without: dict[tuple[int, int], tuple[int, ...]] = {}
        #: Each node's links once :meth:`adjacency` has run (``of_node`` until then).
        self.links_of: tuple[tuple[tuple[Reference, Group], ...], ...] = ()

    def link(self, node_id: int, instance: str | None, ref: Reference,
             index: LayeredIndex[Target]) -> tuple[int, ...]:
        """Link one read of ``node_id`` to what it overlaps; return the writers it reads
        (never the node itself), a tuple shared with every read of the same groups."""
        parts: list[tuple[Any, bool]] = []
        for layer in index.visible_to(instance):
            parts.extend(layer.groups(ref.kind, ref.path))
        key = tuple((id(node), below) for node, below in parts)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = Group(
                entry for node, below in parts for entry in PathIndex.entries_of(node, below))
        if not group.writers:
            return ()
        self.of_node[node_id].append((ref, group))
        if not group.readers or group.readers[-1] != node_id:
            group.readers.append(node_id)
        if _holds(group.writers, node_id):  # a call never depends on itself
            mine = (node_id, id(group))
            found = self._without.get(mine)
            if found is None:
                found = self._without[mine] = tuple(w for w in group.writers if w != node_id)
            return found
        return group.writers

    def adjacency(self) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
        """(successors, predecessors) by node id, sorted; equal sets share one tuple."""
        for group in self._groups.values():
            if group.readers is not _NO_READERS:  # linking is over: keep the tuple only
                group.readers_tuple = tuple(group.readers)
                group.readers = _NO_READERS
        predecessors = tuple(
            self._union(node_id, [g for _, g in links], "writers")
            for node_id, links in enumerate(self.of_node))
        writes: list[list[Group]] = [[] for _ in range(self.n)]
        for group in self._groups.values():
            if group.readers_tuple:
                for writer in group.writers:
                    writes[writer].append(group)
        successors = tuple(self._union(node_id, groups, "readers_tuple")
                           for node_id, groups in enumerate(writes))
        # Linking is over: keep only what :meth:`edge` reads, as tuples (the links live
        # as long as the plan; the lookup tables were for building).
        self.links_of = tuple(tuple(links) if links else () for links in self.of_node)
        self.of_node = []
        self._groups, self._shared, self._without = {}, {}, {}
        return successors, predecessors

    def _union(self, node_id: int, groups: list[Group], members: str) -> tuple[int, ...]:
        distinct = list({id(g): g for g in groups}.values())
        if not distinct:
            return ()
        sets: list[tuple[int, ...]] = [getattr(g, members) for g in distinct]
        if len(sets) == 1 and not _holds(sets[0], node_id):
            return sets[0]
        if len(sets) == 1 and members == "writers":
            return self._without[(node_id, id(distinct[0]))]
        key = (members, tuple(sorted(id(g) for g in distinct)))
        mine = any(_holds(s, node_id) for s in sets)
        if not mine and key in self._shared:
            return self._shared[key]
        found = tuple(sorted({m for s in sets for m in s} - {node_id}))
        if not mine:
            self._shared[key] = found
        return found

    def edge(self, writer: int, reader: int) -> Edge | None:
        """The edge writer -> reader, built from the reader's links (None if none)."""
        if writer == reader:
            return None
        alts: set[int] = set()
        paths: set[tuple[str, str]] = set()
        for ref, group in self.links_of[reader]:
            for alt, target in group.of_writer(writer):
                alts.add(alt)
                paths.add((str(target), str(ref)))
        if not alts:
            return None
        return Edge(writer, reader, tuple(sorted(alts)), tuple(sorted(paths)))


_NO_READERS: list[int] = []  # never appended to: linking ends before adjacency


def _holds(members: tuple[int, ...], node_id: int) -> bool:
    place = bisect.bisect_left(members, node_id)
    return place < len(members) and members[place] == node_id


class EdgeView(Sequence[Edge]):
    """Every edge, sorted by (writer, reader), each built when it is read.

    It compares equal to any sequence of the same edges (a tuple among them); ``len`` is
    free. Reading every edge costs time in their number, but no memory.
    """

    def __init__(self, links: Links, successors: Sequence[Sequence[int]]) -> None:
        self._links = links
        self._successors = successors
        self._starts = [0]
        for succ in successors:
            self._starts.append(self._starts[-1] + len(succ))

    def __len__(self) -> int:
        return self._starts[-1]

    def __iter__(self) -> Iterator[Edge]:
        for writer, succ in enumerate(self._successors):
            for reader in succ:
                yield self._edge(writer, reader)

    @overload
    def __getitem__(self, i: int) -> Edge: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Edge]: ...
    def __getitem__(self, i: int | slice) -> Edge | Sequence[Edge]:
        if isinstance(i, slice):
            return tuple(self._at(j) for j in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("edge index out of range")
        return self._at(i)

    def _at(self, i: int) -> Edge:
        writer = bisect.bisect_right(self._starts, i) - 1
        return self._edge(writer, self._successors[writer][i - self._starts[writer]])

    def _edge(self, writer: int, reader: int) -> Edge:
        edge = self._links.edge(writer, reader)
        assert edge is not None  # the successors come from the same links
        return edge

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"EdgeView({len(self)} edges)"


class EdgeMap(Mapping[tuple[int, int], Edge]):
    """(writer, reader) -> its :class:`Edge`, built when it is asked for."""

    def __init__(self, links: Links, edges: EdgeView,
                 successors: Sequence[Sequence[int]]) -> None:
        self._links, self._edges, self._successors = links, edges, successors

    def __getitem__(self, key: tuple[int, int]) -> Edge:
        writer, reader = key
        edge = self._links.edge(writer, reader) if 0 <= reader < self._links.n else None
        if edge is None:
            raise KeyError(key)
        return edge

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return ((w, r) for w, succ in enumerate(self._successors) for r in succ)

    def __len__(self) -> int:
        return len(self._edges)

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


#: One part of a query of the index: a trie node, and whether its whole subtree counts.
Part = tuple[Any, bool]


class Group:
    """The writers one query of the index found: the parts of the index it covers, and
    their entries by writer, sorted ids (made at once, or by :meth:`fill` after
    counting when the links were made lazily)."""

    __slots__ = ("parts", "entries", "writers", "targets", "readers", "readers_tuple")

    def __init__(self, parts: Sequence[Part], entries: int, fill: bool) -> None:
        self.parts = tuple(parts)
        self.entries = entries  # the index entries of its parts: at least its writers
        self.writers: tuple[int, ...] = ()
        self.targets: tuple[tuple[tuple[int, Reference], ...], ...] = ()
        self.readers: list[int] = []  # the nodes reading through it, ascending
        self.readers_tuple: tuple[int, ...] = ()
        if fill:
            self.fill()

    def fill(self) -> None:
        """Find the writers of its parts (their entries by writer)."""
        by_writer: dict[int, list[tuple[int, Reference]]] = {}
        for node, below in self.parts:
            for writer, alt, target in PathIndex.entries_of(node, below):
                by_writer.setdefault(writer, []).append((alt, target))
        self.writers = tuple(sorted(by_writer))
        # Each writer's (alternative, target) entries, in the order of ``writers``: kept
        # as tuples found by bisection rather than a dict (a group lives as long as the
        # plan, and most have one writer).
        self.targets = tuple(tuple(by_writer[w]) for w in self.writers)

    def of_writer(self, writer: int) -> tuple[tuple[int, Reference], ...]:
        """The (alternative, target) entries of ``writer`` in this group (none if absent)."""
        place = bisect.bisect_left(self.writers, writer)
        if place < len(self.writers) and self.writers[place] == writer:
            return self.targets[place]
        return ()


class Links:
    """Each node's reads linked to groups, and the adjacency they make (shared tuples).

    ``lazy``: a group's writers are not found when it is made, but by :meth:`fill`, once
    :meth:`count` has shown the plan is not too dense (a plan whose reads make a new
    group each, every reader its own key under a path thousands write, would make a
    tuple of thousands per reader). Otherwise they are found at once, as most plans want.
    """

    def __init__(self, n: int, lazy: bool = False) -> None:
        self.n = n
        self.lazy = lazy
        self._groups: dict[tuple[tuple[int, bool], ...], Group] = {}
        self.of_node: list[list[tuple[Reference, Group]]] = [[] for _ in range(n)]
        self._shared: dict[Any, tuple[int, ...]] = {}
        # (node, group) -> the group's writers without the node, made once per pair and
        # shared by the node's reads and its predecessors.
        self._without: dict[tuple[int, int], tuple[int, ...]] = {}
        #: Each node's links once :meth:`adjacency` has run (``of_node`` until then).
        self.links_of: tuple[tuple[tuple[Reference, Group], ...], ...] = ()
        #: At least the number of edges: each group's entries, once per node reading it.
        self.bound = 0
        self._subtrees: dict[int, int] = {}  # trie node -> the entries of its subtree

    def group(self, node_id: int, instance: str | None, ref: Reference,
              index: LayeredIndex[Target]) -> Group | None:
        """Link one read of ``node_id`` to the group of writers it overlaps (None: no
        writer). Nothing per (writer, reader) pair is made, nor a group's writers:
        :meth:`count` can tell how many edges the links make before any is built."""
        parts: list[Part] = []
        for layer in index.visible_to(instance):
            parts.extend(layer.groups(ref.kind, ref.path))
        if not parts:  # a part is a trie node with entries, or a subtree holding some
            return None
        key = tuple((id(node), below) for node, below in parts)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = Group(parts, self._entries(parts), not self.lazy)
        self.of_node[node_id].append((ref, group))
        if not group.readers or group.readers[-1] != node_id:
            group.readers.append(node_id)
            self.bound += group.entries
        return group

    def _entries(self, parts: Sequence[Part]) -> int:
        total = 0
        for node, below in parts:
            if not below:
                total += len(node.entries)
                continue
            size = self._subtrees.get(id(node))
            if size is None:
                size = self._subtrees[id(node)] = sum(
                    1 for _ in PathIndex.entries_of(node, True))
            total += size
        return total

    def fill(self) -> None:
        """Find every group's writers (lazy links, once the plan is known not too dense)."""
        for group in self._groups.values():
            group.fill()

    def writers(self, node_id: int, group: Group) -> tuple[int, ...]:
        """The writers a read of ``node_id`` through ``group`` reads (never the node
        itself), a tuple shared with every read of the same group."""
        if _holds(group.writers, node_id):  # a call never depends on itself
            mine = (node_id, id(group))
            found = self._without.get(mine)
            if found is None:
                found = self._without[mine] = tuple(w for w in group.writers if w != node_id)
            return found
        return group.writers

    def count(self, limit: int) -> tuple[int, bool] | None:
        """How many edges the links make, counted from the parts of the index they
        cover, before any edge or group's writers is made: ``(count, exact)``; None when
        :attr:`bound` shows at once that there are at most ``limit`` (most plans).

        A node reading one group costs a lookup, each group's writers being found once
        (from its parts, each part's found once); a node reading several groups costs
        the union of their writers. Once the count is past ``limit``, unions of about
        ``limit`` writers more (at least ``_SPARE``) are spent on it, then counting stops
        and the count is a lower bound (``exact`` false): so refusing a dense plan costs no
        more than about twice the limit, whatever the plan.
        """
        if self.bound <= limit:
            return None
        members = _Members()
        total, stop = 0, None
        for node_id, links in enumerate(self.of_node):
            if not links:
                continue
            first = links[0][1]
            if len(links) == 1 or all(g is first for _, g in links):
                size, sets = members.of_group(first)
                total += size - (node_id in sets[0] if len(sets) == 1
                                 else any(node_id in found for found in sets))
            else:
                found = members.union([p for g in {id(g): g for _, g in links}.values()
                                       for p in g.parts])
                total += len(found) - (node_id in found)
            if stop is None and total > limit:
                stop = members.work + max(limit, _SPARE)
            if stop is not None and members.work > stop:
                return total, not any(self.of_node[node_id + 1:])
        return total, True

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

    def unlinked(self) -> tuple[tuple[int, ...], ...]:
        """No adjacency at all, for a graph too dense to order: every node's successors
        and predecessors are empty, and :meth:`edge` finds none."""
        self.links_of = ((),) * self.n
        self.of_node = []
        self._groups, self._shared, self._without = {}, {}, {}
        return ((),) * self.n

    def _union(self, node_id: int, groups: list[Group], members: str) -> tuple[int, ...]:
        distinct = list({id(g): g for g in groups}.values())
        if not distinct:
            return ()
        sets: list[tuple[int, ...]] = [getattr(g, members) for g in distinct]
        if len(sets) == 1 and not _holds(sets[0], node_id):
            return sets[0]
        if len(sets) == 1 and members == "writers":
            return self.writers(node_id, distinct[0])
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


#: The writers put in sets to finish counting past a small limit, at least.
_SPARE = 100_000


class _Members:
    """The writers of the parts of the index, and the number of each group's, found
    once each while counting, and the work spent: how many writers were put in sets."""

    def __init__(self) -> None:
        self.work = 0
        self._parts: dict[tuple[int, bool], frozenset[int]] = {}
        self._groups: dict[int, tuple[int, tuple[frozenset[int], ...]]] = {}

    def of_group(self, group: Group) -> tuple[int, tuple[frozenset[int], ...]]:
        """How many writers ``group`` has, and the writers of each of its parts (its
        union is not kept: a group costs one number more than its parts)."""
        found = self._groups.get(id(group))
        if found is None:
            sets = tuple(self._of_part(part) for part in group.parts)
            found = self._groups[id(group)] = (len(self.union(group.parts)), sets)
        return found

    def union(self, parts: Sequence[Part]) -> frozenset[int]:
        """The writers of ``parts``."""
        if len(parts) == 1:
            return self._of_part(parts[0])
        sets = [self._of_part(part) for part in {(id(n), b): (n, b) for n, b in parts}.values()]
        self.work += sum(map(len, sets))
        return frozenset().union(*sets)

    def _of_part(self, part: Part) -> frozenset[int]:
        key = (id(part[0]), part[1])
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = frozenset(w for w, _, _ in PathIndex.entries_of(*part))
            self.work += len(found)
        return found


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

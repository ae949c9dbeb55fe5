"""Graph algorithms for the dataflow graph, all iterative (no recursion, any plan size).

Nodes are integers ``0..n-1``; ``successors[v]`` lists the nodes ``v`` has edges to, in
ascending order. Every result is deterministic: ties are broken by node number.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def strongly_connected(successors: Sequence[Sequence[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components, without recursion.

    Returns every component as a sorted list, components in reverse topological order of
    the condensation (as Tarjan finds them). A single node without a self-loop is its own
    component.
    """
    n = len(successors)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        # Each frame: (node, position of the next successor to visit).
        work: list[tuple[int, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            succ = successors[v]
            if i < len(succ):
                work[-1] = (v, i + 1)
                w = succ[i]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:  # (no min(): a hot loop)
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                if low[v] < low[parent]:
                    low[parent] = low[v]
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    component.append(w)
                    if w == v:
                        break
                components.append(sorted(component))
    return components


def acyclic_order(successors: Sequence[Sequence[int]],
                  predecessors: Sequence[Sequence[int]]) -> list[int] | None:
    """The :func:`topological_order` of a graph without cycles, or None when it has one.

    Kahn's algorithm on the graph itself, which costs one step per edge: most plans have
    no loop, and then the strongly connected components (each a single node) are not
    needed. ``predecessors`` must be the reverse of ``successors``.
    """
    indegree = [len(p) for p in predecessors]
    ready = [v for v, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for w in successors[v]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, w)
    return order if len(order) == len(successors) else None


def topological_order(successors: Sequence[Sequence[int]],
                      components: list[list[int]] | None = None) -> list[int]:
    """Every node, each after all nodes with a path to it, smallest number first on ties.

    Cycles are collapsed: the members of a strongly connected component come together,
    in ascending order, where the component stands in the order of the condensation.
    ``components`` are :func:`strongly_connected`'s, when already known.
    """
    if components is None:
        components = strongly_connected(successors)
    component_of = [0] * len(successors)
    for c, members in enumerate(components):
        for v in members:
            component_of[v] = c
    indegree = [0] * len(components)
    out: list[set[int]] = [set() for _ in components]
    for v, succ in enumerate(successors):
        for w in succ:
            a, b = component_of[v], component_of[w]
            if a != b and b not in out[a]:
                out[a].add(b)
                indegree[b] += 1
    # Kahn's algorithm on the condensation, keyed by each component's smallest node.
    ready = [(components[c][0], c) for c in range(len(components)) if indegree[c] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, c = heapq.heappop(ready)
        order.extend(components[c])
        for d in out[c]:
            indegree[d] -= 1
            if indegree[d] == 0:
                heapq.heappush(ready, (components[d][0], d))
    return order


def reaches(
    successors: Sequence[Sequence[int]], position: Sequence[int], source: int, target: int,
    *, by_position: bool = False,
) -> bool:
    """True when a path leads from ``source`` to ``target``.

    ``position`` is each node's place in a topological order; the search never enters a
    node placed after ``target``, which keeps it short when the two are close. With
    ``by_position``, each ``successors[v]`` is sorted by position, and the scan of one
    stops at the first node placed after ``target`` (a writer with a thousand readers
    placed after both costs one step, not a thousand).
    """
    if source == target:
        return True
    limit = position[target]
    if position[source] > limit:
        return False
    seen = {source}
    todo = [source]
    while todo:
        v = todo.pop()
        for w in successors[v]:
            if w == target:
                return True
            if by_position and position[w] > limit:
                break
            if w not in seen and position[w] < limit:
                seen.add(w)
                todo.append(w)
    return False


def closure(neighbours: Sequence[Sequence[int]], start: int) -> set[int]:
    """Every node reachable from ``start`` through ``neighbours`` (``start`` excluded)."""
    seen: set[int] = set()
    todo = [start]
    while todo:
        v = todo.pop()
        for w in neighbours[v]:
            if w not in seen and w != start:
                seen.add(w)
                todo.append(w)
    return seen

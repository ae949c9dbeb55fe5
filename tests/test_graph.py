"""compiler/graph.py: strongly connected components, topological order, reachability.

Every algorithm is checked against a plain brute-force definition on generated graphs,
and on graphs far deeper than Python's recursion limit.
"""

from __future__ import annotations

import itertools
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.compiler.graph import closure, reaches, strongly_connected, topological_order

Graph = list[tuple[int, ...]]


def graph(n: int, edges: list[tuple[int, int]]) -> Graph:
    succ: list[set[int]] = [set() for _ in range(n)]
    for a, b in edges:
        succ[a].add(b)
    return [tuple(sorted(s)) for s in succ]


def reachable(succ: Graph, start: int) -> set[int]:
    """Brute force: every node reachable from ``start`` by one edge or more."""
    seen: set[int] = set()
    todo = list(succ[start])
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(succ[v])
    return seen


def brute_components(succ: Graph) -> set[tuple[int, ...]]:
    n = len(succ)
    reach = [reachable(succ, v) | {v} for v in range(n)]
    return {tuple(sorted(w for w in range(n) if w in reach[v] and v in reach[w]))
            for v in range(n)}


@st.composite
def graphs(draw: st.DrawFn, max_nodes: int = 12) -> Graph:
    n = draw(st.integers(0, max_nodes))
    if n == 0:
        return []
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    return graph(n, draw(st.lists(pairs, max_size=3 * n)))


# -- strongly connected components ------------------------------------------------------


@pytest.mark.parametrize(("n", "edges", "components"), [
    (0, [], []),
    (1, [], [[0]]),
    (1, [(0, 0)], [[0]]),
    (3, [(0, 1), (1, 2)], [[2], [1], [0]]),
    (3, [(0, 1), (1, 0), (1, 2)], [[2], [0, 1]]),
    (4, [(0, 2), (2, 1), (1, 0), (3, 3)], [[0, 1, 2], [3]]),
    (5, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 3), (2, 3)], [[3, 4], [0, 1, 2]]),
])
def test_components_table(n: int, edges: list[tuple[int, int]],
                          components: list[list[int]]) -> None:
    assert strongly_connected(graph(n, edges)) == components


@given(graphs())
def test_components_match_brute_force(succ: Graph) -> None:
    found = strongly_connected(succ)
    assert all(c == sorted(c) for c in found)
    assert sorted(v for c in found for v in c) == list(range(len(succ)))
    assert {tuple(c) for c in found} == brute_components(succ)


@given(graphs())
def test_components_come_in_reverse_topological_order(succ: Graph) -> None:
    found = strongly_connected(succ)
    place = {v: i for i, c in enumerate(found) for v in c}
    for v, out in enumerate(succ):
        for w in out:
            assert place[w] <= place[v]  # an edge never leads to a later component


def test_components_of_a_deep_graph_need_no_recursion() -> None:
    n = sys.getrecursionlimit() * 20
    chain = [(i + 1,) for i in range(n - 1)] + [(0,)]  # one cycle through every node
    assert strongly_connected(chain) == [list(range(n))]
    path = [(i + 1,) for i in range(n - 1)] + [()]
    assert len(strongly_connected(path)) == n


# -- topological order -----------------------------------------------------------------


@pytest.mark.parametrize(("n", "edges", "order"), [
    (0, [], []),
    (3, [], [0, 1, 2]),
    (3, [(2, 1), (1, 0)], [2, 1, 0]),
    (4, [(3, 0), (2, 1)], [2, 1, 3, 0]),  # smallest ready node first
    (4, [(0, 2), (2, 1), (1, 0), (3, 0)], [3, 0, 1, 2]),  # a cycle comes as one block
    (5, [(4, 3), (3, 4), (0, 3)], [0, 1, 2, 3, 4]),
])
def test_order_table(n: int, edges: list[tuple[int, int]], order: list[int]) -> None:
    assert topological_order(graph(n, edges)) == order


@given(graphs())
def test_order_respects_every_edge_between_components(succ: Graph) -> None:
    order = topological_order(succ)
    assert sorted(order) == list(range(len(succ)))
    place = {v: i for i, v in enumerate(order)}
    components = strongly_connected(succ)
    component = {v: i for i, c in enumerate(components) for v in c}
    for v, out in enumerate(succ):
        for w in out:
            if component[v] != component[w]:
                assert place[v] < place[w]
    for c in components:  # members of a component stand together, ascending
        places = [place[v] for v in c]
        assert places == list(range(places[0], places[0] + len(c)))


@given(graphs())
def test_order_does_not_depend_on_how_successors_are_listed(succ: Graph) -> None:
    shuffled = [tuple(random.Random(v).sample(out, len(out))) for v, out in enumerate(succ)]
    assert topological_order(shuffled) == topological_order(succ)


@pytest.mark.slow
def test_order_of_a_long_chain() -> None:
    n = 100_000
    chain = [(i - 1,) if i else () for i in range(n)]  # n-1 -> ... -> 0
    assert topological_order(chain) == list(range(n - 1, -1, -1))


# -- reachability ---------------------------------------------------------------------------


@pytest.mark.slow
@given(graphs())
@settings(max_examples=200)
def test_reaches_matches_brute_force_on_acyclic_graphs(succ: Graph) -> None:
    # reaches() prunes by topological position, which is exact on an acyclic graph.
    acyclic = [tuple(w for w in out if w > v) for v, out in enumerate(succ)]
    order = topological_order(acyclic)
    position = [0] * len(acyclic)
    for i, v in enumerate(order):
        position[v] = i
    for a, b in itertools.product(range(len(acyclic)), repeat=2):
        assert reaches(acyclic, position, a, b) == (a == b or b in reachable(acyclic, a))


@given(graphs())
def test_closure_is_everything_reachable_but_the_start(succ: Graph) -> None:
    for v in range(len(succ)):
        assert closure(succ, v) == reachable(succ, v) - {v}


def test_closure_of_a_deep_chain() -> None:
    n = 50_000
    chain = [(i + 1,) for i in range(n - 1)] + [()]
    assert closure(chain, 0) == set(range(1, n))

"""Races: unordered calls whose result depends on timing.

A *write race* is two nodes of one layer (global, or the same instance) that write
overlapping paths, are not on exclusive branches, and neither of which waits for the
other. A *scope race* is a node whose ``_scopes`` snapshot may or may not hold the writes
of nodes it does not wait for. Both searches are bounded by the graph's
:class:`~obelisk.compiler.plangraph.Limits`; past a bound one ``too-many`` info says so.
"""

from __future__ import annotations

from collections.abc import Iterator

from obelisk.compiler.checks.branches import exclusive
from obelisk.compiler.diagnostics import Diagnostic, ScopeRaceDetails, WriteRaceDetails
from obelisk.compiler.graph import closure, reaches
from obelisk.compiler.nodes import Node
from obelisk.compiler.plangraph import PlanGraph
from obelisk.core.ast import Reference


def check_write_races(graph: PlanGraph) -> Iterator[Diagnostic]:
    """A ``write-race`` warning per racing pair, in (first node, second node) order."""
    # Pairs are visited in (a, b) order as they are found, never collected first: a plan
    # where thousands of calls write one path has millions of pairs. Past max_race_pairs
    # the search stops, so its time stays bounded.
    limits = graph.limits
    if graph.too_dense:
        return  # unordered: too-dense is the one error about its structure
    reported = skipped = examined = 0
    for a, pairs in _overlapping_pairs(graph):
        for b, (ta, tb) in pairs:
            if examined >= limits.max_race_pairs:
                yield Diagnostic(
                    "too-many", f"at least {skipped} more write races not reported: the "
                    f"search stopped after {limits.max_race_pairs} pairs of calls writing "
                    "overlapping paths")
                return
            examined += 1
            if not _racing(graph, a, b):
                continue
            if reported >= limits.max_races:
                skipped += 1
                continue
            reported += 1
            yield _write_race(graph.nodes[a], graph.nodes[b], ta, tb)
    if skipped:
        yield Diagnostic("too-many", f"{skipped} more write races not reported")


def _overlapping_pairs(graph: PlanGraph) -> Iterator[
        tuple[int, list[tuple[int, tuple[Reference, Reference]]]]]:
    """For each writing node ``a``, the later nodes of its layer that write a path
    overlapping one of its targets, with the first such pair of targets; by node id."""
    for a, node in enumerate(graph.nodes):
        if node.output is None:
            continue
        found: dict[int, tuple[Reference, Reference]] = {}
        # Only the same layer races: global with global, one instance with itself.
        # (Global and instance writes never race: the instance layer is applied on top
        # whatever the order they arrive in.)
        layer = graph.index.layer(node.instance)
        assert layer is not None  # the node's own targets are filed there
        for target in node.output.targets:
            for other, _, other_target in layer.overlapping(target.kind, target.path):
                if other > a:
                    found.setdefault(other, (target, other_target))
        yield a, sorted(found.items())


def _racing(graph: PlanGraph, a: int, b: int) -> bool:
    """Whether two nodes writing overlapping paths may finish in either order."""
    if exclusive(graph.guards[a], graph.guards[b]):
        return False
    loop_a = graph.loop_of.get(a)
    if loop_a is not None and loop_a == graph.loop_of.get(b):
        # Calls of one loop depend on each other (reported as a cycle); the topological
        # order cannot tell which reaches which inside it.
        return False
    position = graph.positions
    first, second = (a, b) if position[a] <= position[b] else (b, a)
    return not reaches(graph.by_position, position, first, second, by_position=True)


def _write_race(a: Node, b: Node, ta: Reference, tb: Reference) -> Diagnostic:
    return a.diagnostic(
        "write-race",
        f"{a.label} writes {ta} and {b.label} writes {tb}; neither waits for the other, "
        "so the result depends on which finishes last",
        pointer="/_outputPath", expression=a.output_text, span=ta.span,
        calls=tuple(sorted({a.index, b.index})),
        hint="make one call read the other's result, write to different paths, "
             "or put them on different alternatives of one branching call",
        details=WriteRaceDetails(a.id, b.id, str(ta), str(tb)),
    )


def check_scope_races(graph: PlanGraph) -> Iterator[Diagnostic]:
    """A ``scope-race`` warning per node with ``_scopes`` that unordered writers race."""
    limits = graph.limits
    if graph.too_dense:
        return
    reported = skipped = 0
    for node in graph.nodes:
        if not node.scopes:
            continue
        if reported >= limits.max_races:  # each check walks the graph: stop, and say so below
            skipped += 1
            continue
        racing = _scope_writers(graph, node)
        if racing:
            reported += 1
            yield _scope_race(graph, node, racing)
    if skipped:
        yield Diagnostic(
            "too-many", f"{skipped} more calls with _scopes were not checked for scope races "
                        f"after {limits.max_races} were reported")


def _scope_writers(graph: PlanGraph, node: Node) -> dict[int, Reference]:
    """The nodes that may write under the node's scoped kinds without being ordered
    with it, each with the first target it writes there."""
    before = closure(graph.predecessors, node.id)
    after = closure(graph.successors, node.id)
    racing: dict[int, Reference] = {}
    for kind in node.scopes:
        for layer in graph.index.visible_to(node.instance):
            for writer, _, target in layer.under_kind(kind):
                if (writer == node.id or writer in before or writer in after
                        or exclusive(node.guards, graph.guards[writer])):
                    continue
                racing.setdefault(writer, target)
    return racing


def _scope_race(graph: PlanGraph, node: Node, racing: dict[int, Reference]) -> Diagnostic:
    most = graph.limits.max_related
    shown = "; ".join(f"{graph.nodes[w].label} writes {t}" for w, t in sorted(racing.items())[:5])
    related = sorted({graph.nodes[w].index for w in racing} - {node.index})
    more = len(related) - most
    return node.diagnostic(
        "scope-race",
        f"_scopes shows this call a snapshot of {', '.join(node.scopes)} taken when it "
        f"starts, and calls it does not wait for may write there: {shown}"
        + (f" (calls lists {most} of {len(related)} such calls)" if more > 0 else ""),
        pointer="/_scopes", calls=tuple(sorted({node.index, *related[:most]})),
        hint="read the values it needs through parameters (†state.x), which wait for "
             "their writers, instead of relying on the scoped snapshot",
        details=ScopeRaceDetails(node.id, node.scopes,
                                 tuple((w, str(t)) for w, t in sorted(racing.items()))),
    )

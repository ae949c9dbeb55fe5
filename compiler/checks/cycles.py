"""Cycles: calls that depend on each other in a loop can never start."""

from __future__ import annotations

from collections.abc import Iterator

from obelisk.compiler.diagnostics import CycleDetails, CycleStep, Diagnostic
from obelisk.compiler.plangraph import PlanGraph


def check_cycles(graph: PlanGraph) -> Iterator[Diagnostic]:
    """One ``cycle`` error per loop, naming its steps; its details hold every edge."""
    for loop in graph.loops:
        members = set(loop)
        steps = tuple(
            CycleStep(v, w, *graph.edge_at[(v, w)].paths[0])
            for v in loop for w in graph.successors[v] if w in members
        )
        texts = [f"{graph.nodes[s.reader].label} reads {s.read}, written by "
                 f"{graph.nodes[s.writer].label}" for s in steps]
        indexes = tuple(sorted({graph.nodes[v].index for v in loop}))
        yield graph.nodes[loop[0]].diagnostic(
            "cycle",
            "calls " + ", ".join(str(i) for i in indexes) + " depend on each other in a loop: "
            + "; ".join(texts[:6]) + ("; ..." if len(texts) > 6 else ""),
            calls=indexes,
            hint="break the loop: let one of these calls read its value from the context "
                 "or from a call outside the loop, or split the plan in two",
            details=CycleDetails(tuple(sorted(loop)), steps),
        )

"""Cycles: calls that depend on each other in a loop can never start."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from obelisk.compiler.diagnostics import CycleDetails, CycleStep, Diagnostic
from obelisk.compiler.plangraph import PlanGraph


def check_cycles(graph: PlanGraph) -> Iterator[Diagnostic]:
    """One ``cycle`` error per loop, naming its steps; its details hold its edges, at
    most ``limits.max_cycle_steps`` of them (the message then says how many there are)."""
    most = graph.limits.max_cycle_steps
    for loop in graph.loops:
        members = set(loop)
        total = sum(1 for v in loop for w in graph.successors[v] if w in members)
        # A loop of n calls can have n x n edges: list a bounded number of them.
        steps = tuple(
            CycleStep(v, w, *graph.edge_at[(v, w)].paths[0])
            for v, w in islice(((v, w) for v in loop for w in graph.successors[v]
                                if w in members), most)
        )
        texts = [f"{graph.nodes[s.reader].label} reads {s.read}, written by "
                 f"{graph.nodes[s.writer].label}" for s in steps]
        indexes = tuple(sorted({graph.nodes[v].index for v in loop}))
        yield graph.nodes[loop[0]].diagnostic(
            "cycle",
            "calls " + ", ".join(str(i) for i in indexes) + " depend on each other in a loop"
            + (f" ({total} edges; the details list the first {most})" if total > most
               else "")
            + ": " + "; ".join(texts[:6]) + ("; ..." if len(texts) > 6 else ""),
            calls=indexes,
            hint="break the loop: let one of these calls read its value from the context "
                 "or from a call outside the loop, or split the plan in two",
            details=CycleDetails(tuple(sorted(loop)), steps),
        )


def check_density(graph: PlanGraph) -> Iterator[Diagnostic]:
    """One ``too-dense`` error when the plan has more edges than ``limits.max_edges``."""
    if graph.too_dense:
        yield Diagnostic(
            "too-dense",
            f"the plan has {'' if graph.edge_count_exact else 'at least '}"
            f"{graph.edge_count} dependencies between calls, more than the limit of "
            f"{graph.limits.max_edges}, so it is not ordered and none of it runs",
            hint="have many calls write different paths, or read one call that gathers "
                 "them (a join), instead of many calls reading what many calls write")

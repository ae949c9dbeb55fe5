"""Branches: a call that needs two alternatives of one branching output never runs.

The guards themselves (which alternatives each node needs) are worked out once, with the
graph (:func:`obelisk.compiler.plangraph.build_graph`); :func:`exclusive` tells whether two
nodes are on mutually exclusive branches (the race checks use it).
"""

from __future__ import annotations

from collections.abc import Iterator, Set

from obelisk.compiler.diagnostics import Diagnostic, UnreachableDetails
from obelisk.compiler.plangraph import PlanGraph
from obelisk.core.ast import OutputExpr


def exclusive(a: Set[tuple[int, int]], b: Set[tuple[int, int]]) -> bool:
    """Two nodes are on mutually exclusive branches when they need different
    alternatives of the same node's output."""
    chosen: dict[int, set[int]] = {}
    for writer, alt in a:
        chosen.setdefault(writer, set()).add(alt)
    return any(writer in chosen and alt not in chosen[writer] for writer, alt in b)


def check_unreachable(graph: PlanGraph) -> Iterator[Diagnostic]:
    """An ``unreachable`` warning for each node and branching writer whose alternatives
    it needs two or more of."""
    for node in graph.nodes:
        by_writer: dict[int, set[int]] = {}
        for writer_id, alt in node.guards:
            by_writer.setdefault(writer_id, set()).add(alt)
        for writer_id, alts in sorted(by_writer.items()):
            if len(alts) < 2:
                continue
            writer = graph.nodes[writer_id]
            names = " and ".join(
                f"alternative {a + 1} ({_alt_text(writer.output, a)})" for a in sorted(alts))
            yield node.diagnostic(
                "unreachable",
                f"this call needs both {names} of {writer.label}'s _outputPath, "
                "but only one of them is ever written, so it can never run",
                calls=tuple(sorted({node.index, writer.index})),
                hint="read the alternatives with || instead, or from different calls",
                details=UnreachableDetails(node.id, writer_id, tuple(sorted(alts))),
            )


def _alt_text(output: OutputExpr | None, alt: int) -> str:
    if output is None:
        return "?"
    return " && ".join(str(t) for t in output.alternatives[alt].targets)

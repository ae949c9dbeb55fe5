"""Exports of a compiled plan: JSON, Mermaid and Graphviz DOT.

Edges are labelled with the paths they carry. An edge from a branching call's second or
later alternative is drawn dashed and labelled with the alternative's number, so exclusive
branches are told apart. What the plan reads from outside it (the context, or inputs to be
supplied at run time) appears as source nodes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from obelisk.core.values import thaw

if TYPE_CHECKING:
    from obelisk.compiler.nodes import CompiledPlan, Edge


def _sources(plan: CompiledPlan) -> list[tuple[str, list[int]]]:
    """External inputs: references no plan call writes, with the nodes reading them."""
    found: dict[str, set[int]] = {}
    for node in plan.nodes:
        for read in node.reads:
            if not read.writers:
                found.setdefault(str(read.reference), set()).add(node.id)
    return [(ref, sorted(ids)) for ref, ids in sorted(found.items())]


def to_json(plan: CompiledPlan) -> dict[str, Any]:
    """The graph as plain JSON: nodes, edges, external sources, order, diagnostics."""
    return {
        "ok": plan.ok,
        "nodes": [
            {
                "id": n.id, "call": n.index, "instance": n.instance, "tool": n.tool,
                "reads": [
                    {"pointer": p.pointer, "expression": p.text,
                     "references": [str(r.reference) for r in p.reads]}
                    for p in n.params
                ],
                "output": n.output_text,
                "alternatives": [[str(t) for t in alt.targets]
                                 for alt in (n.output.alternatives if n.output else ())],
                "method": n.method.value,
                "scopes": list(n.scopes),
                "guards": [{"node": w, "alternative": a} for w, a in sorted(n.guards)],
            }
            for n in plan.nodes
        ],
        "edges": [
            {"from": e.writer, "to": e.reader, "alternatives": list(e.alternatives),
             "paths": [{"written": w, "read": r} for w, r in e.paths]}
            for e in plan.edges
        ],
        "sources": [{"reference": ref, "readers": ids} for ref, ids in _sources(plan)],
        "order": list(plan.order),
        "diagnostics": [d.to_json() for d in plan.diagnostics],
    }


def _node_text(plan: CompiledPlan, node_id: int) -> str:
    # A box in a drawing, not a message: shorter than Node.label ("0: tool", no "call").
    node = plan.nodes[node_id]
    text = f"{node.index}: {node.tool or '?'}"
    if node.instance is not None:
        text += f" [{node.instance}]"
    return text


def _edge_label(plan: CompiledPlan, edge: Edge) -> tuple[str, bool]:
    reads = sorted({r for _, r in edge.paths})
    label = ", ".join(reads[:3]) + (" …" if len(reads) > 3 else "")
    writer = plan.nodes[edge.writer]
    branching = writer.output is not None and len(writer.output.alternatives) > 1
    if branching:
        alts = "/".join(str(a + 1) for a in edge.alternatives)
        label = f"alt {alts}: {label}"
    later_alt = branching and min(edge.alternatives) > 0
    return label, later_alt


def _mermaid_text(text: str) -> str:
    # Inside a quoted label Mermaid reads #name; as an entity and ends the line at a line
    # break: write # itself as an entity first, then quotes, and line breaks as spaces.
    text = text.replace("#", "#35;").replace('"', "#quot;")
    return "".join(" " if c in "\r\n\t" else c for c in text)


def to_mermaid(plan: CompiledPlan) -> str:
    """A Mermaid flowchart: calls as boxes, external inputs as rounded sources."""
    lines = ["flowchart LR"]
    for node in plan.nodes:
        lines.append(f'  n{node.id}["{_mermaid_text(_node_text(plan, node.id))}"]')
    for i, (ref, readers) in enumerate(_sources(plan)):
        lines.append(f'  s{i}(["{_mermaid_text(ref)}"])')
        for reader in readers:
            lines.append(f"  s{i} -.-> n{reader}")
    for edge in plan.edges:
        label, later = _edge_label(plan, edge)
        arrow = "-.->" if later else "-->"
        lines.append(f'  n{edge.writer} {arrow}|"{_mermaid_text(label)}"| n{edge.reader}')
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(plan: CompiledPlan) -> str:
    """A Graphviz digraph (render with ``dot -Tsvg``)."""
    lines = ["digraph plan {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    for node in plan.nodes:
        lines.append(f"  n{node.id} [label={_dot_text(_node_text(plan, node.id))}];")
    for i, (ref, readers) in enumerate(_sources(plan)):
        lines.append(f"  s{i} [label={_dot_text(ref)}, shape=ellipse, style=dashed];")
        for reader in readers:
            lines.append(f"  s{i} -> n{reader} [style=dotted];")
    for edge in plan.edges:
        label, later = _edge_label(plan, edge)
        style = ", style=dashed" if later else ""
        lines.append(f"  n{edge.writer} -> n{edge.reader} [label={_dot_text(label)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dumps(plan: CompiledPlan) -> str:
    """The JSON export as text."""
    return json.dumps(to_json(plan), ensure_ascii=False, indent=2, default=thaw)

"""Exports of a compiled plan: JSON, Mermaid and Graphviz DOT.

Edges are labelled with the paths they carry. An edge from an alternative of a branching
call (``||``) is drawn dashed and labelled with the alternative's number, so exclusive
branches are told apart; an edge from one of several targets written together (``&&``) is
drawn thick; an edge of a cycle is red and labelled "cycle". What the plan reads from
outside it appears as source nodes: one per kind (``†input``) for what the context or the
inputs provide, and one per dangling read, in red. Both drawings end with a legend of
what they use (none with ``legend=False``, or when the plan has nothing to explain).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from obelisk.core.plain import thaw

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


#: How an edge is drawn: a plain read, one alternative of ``||`` (exclusive), a target
#: of ``&&`` (written together with the others), and whether it is part of a cycle.
_PLAIN, _ALTERNATIVE, _FAN_OUT = "plain", "alternative", "fan-out"


def _edge_kind(plan: CompiledPlan, edge: Edge) -> tuple[str, str]:
    """The edge's label (the paths it carries) and how it is drawn."""
    reads = sorted({r for _, r in edge.paths})
    label = ", ".join(reads[:3]) + (" …" if len(reads) > 3 else "")
    writer = plan.nodes[edge.writer]
    alternatives = writer.output.alternatives if writer.output is not None else ()
    if len(alternatives) > 1:
        alts = "/".join(str(a + 1) for a in edge.alternatives)
        return f"alt {alts}: {label}", _ALTERNATIVE
    if alternatives and len(alternatives[0].targets) > 1:
        return f"&& {label}", _FAN_OUT
    return label, _PLAIN


def _cycle_edges(plan: CompiledPlan) -> set[tuple[int, int]]:
    """(writer, reader) of every edge a cycle diagnostic names."""
    found: set[tuple[int, int]] = set()
    for d in plan.diagnostics:
        steps = getattr(d.details, "steps", ()) if d.code == "cycle" else ()
        found.update((step.writer, step.reader) for step in steps)
    return found


def _outside_reads(plan: CompiledPlan) -> tuple[list[tuple[str, list[tuple[str, int]]]],
                                                list[tuple[str, list[int]]]]:
    """Reads no call writes: those the context or inputs provide, grouped by kind (one
    node per kind, the path on each edge), and the dangling ones (one node each), as the
    compiler's dangling-reference diagnostics name them."""
    dangling_at: set[tuple[int, str | None, str, str]] = set()
    for d in plan.diagnostics:
        if d.code == "dangling-reference" and d.call is not None and d.span is not None \
                and d.expression is not None:
            dangling_at.add((d.call, d.instance, d.pointer,
                             d.expression[d.span.start:d.span.end]))
    kinds: dict[str, set[tuple[str, int]]] = {}
    dangling: dict[str, set[int]] = {}
    for node in plan.nodes:
        for param in node.params:
            for read in param.reads:
                if read.writers:
                    continue
                ref = str(read.reference)
                if (node.index, node.instance, param.pointer, ref) in dangling_at:
                    dangling.setdefault(ref, set()).add(node.id)
                else:
                    kinds.setdefault(read.reference.kind, set()).add((ref, node.id))
    return ([(kind, sorted(reads)) for kind, reads in sorted(kinds.items())],
            [(ref, sorted(ids)) for ref, ids in sorted(dangling.items())])


def _mermaid_text(text: str) -> str:
    # Inside a quoted label Mermaid reads #name; as an entity and ends the line at a line
    # break: write # itself as an entity first, then quotes, and line breaks as spaces.
    text = text.replace("#", "#35;").replace('"', "#quot;")
    return "".join(" " if c in "\r\n\t" else c for c in text)


#: What a legend can explain, in its order: the three kinds of edge, a cycle's edge, a
#: source read from outside the plan, and a dangling read.
_CYCLE, _SOURCE, _DANGLING = "cycle", "source", "dangling"
_FEATURES = (_PLAIN, _ALTERNATIVE, _FAN_OUT, _CYCLE, _SOURCE, _DANGLING)


def _used(plan: CompiledPlan) -> set[str]:
    """The features of :data:`_FEATURES` the drawing of ``plan`` shows."""
    cycle = _cycle_edges(plan)
    used: set[str] = set()
    for edge in plan.edges:
        kind = _edge_kind(plan, edge)[1]
        if (edge.writer, edge.reader) in cycle:
            used.add(_CYCLE)  # drawn red: a plain one is the cycle entry's arrow
            if kind == _PLAIN:
                continue
        used.add(kind)
    outside, dangling = _outside_reads(plan)
    if outside:
        used.add(_SOURCE)
    if dangling:
        used.add(_DANGLING)
    return used


_MERMAID_ARROW = {_PLAIN: "-->", _ALTERNATIVE: "-.->", _FAN_OUT: "==>"}
#: Each feature's lines in the Mermaid legend; an edge is one link.
_MERMAID_LEGEND = {
    _PLAIN: '    L0["N: tool, a call"] -->|"a path one call writes and the other reads"| '
            'L1["N: tool"]',
    _ALTERNATIVE: '    L2["N: tool"] -.->|"alt k: one alternative of ||, exclusive"| '
                  'L3["N: tool"]',
    _FAN_OUT: '    L4["N: tool"] ==>|"&& one of the paths written together"| L5["N: tool"]',
    _CYCLE: '    L6["N: tool"] -->|"cycle: part of a loop"| L7["N: tool"]',
    _SOURCE: '    L8(["†kind: read from the context or inputs"])',
    _DANGLING: '    L9(["†kind.path: nothing writes it"]):::dangling',
}


def _mermaid_legend(used: set[str], links: int) -> tuple[list[str], list[int]]:
    """The legend's lines for the ``used`` features, and the number of its red link (a
    cycle's) when it has one; its links are numbered from ``links``."""
    shown = [f for f in _FEATURES if f in used]
    if not shown:
        return [], []
    edges = [f for f in shown if f in _MERMAID_ARROW or f == _CYCLE]
    red = [links + edges.index(_CYCLE)] if _CYCLE in edges else []
    lines = ["  subgraph legend [legend]", "    direction LR",
             *(_MERMAID_LEGEND[f] for f in shown), "  end"]
    return lines, red


def to_mermaid(plan: CompiledPlan, legend: bool = True) -> str:
    """A Mermaid flowchart: calls as boxes, reads from outside the plan as rounded
    sources (one per kind; a dangling read on its own, in red), ``||`` alternatives
    dashed, ``&&`` targets thick, cycle edges red; a legend of what it uses at the end."""
    lines = ["flowchart LR"]
    links = 0  # Mermaid styles a link by its number, in the order links are written
    red_links: list[int] = []
    for node in plan.nodes:
        lines.append(f'  n{node.id}["{_mermaid_text(_node_text(plan, node.id))}"]')
    outside, dangling = _outside_reads(plan)
    for i, (kind, reads) in enumerate(outside):
        lines.append(f'  k{i}(["{_mermaid_text("†" + kind)}"])')
        for ref, reader in reads:
            # A read from outside ends in a circle: told apart from a dashed alternative.
            lines.append(f'  k{i} --o|"{_mermaid_text(ref)}"| n{reader}')
            links += 1
    for i, (ref, readers) in enumerate(dangling):
        lines.append(f'  d{i}(["{_mermaid_text(ref)}: nothing writes it"]):::dangling')
        for reader in readers:
            lines.append(f"  d{i} --o n{reader}")
            red_links.append(links)
            links += 1
    cycle = _cycle_edges(plan)
    for edge in plan.edges:
        label, kind = _edge_kind(plan, edge)
        if (edge.writer, edge.reader) in cycle:
            label = f"cycle: {label}"
            red_links.append(links)
        lines.append(f'  n{edge.writer} {_MERMAID_ARROW[kind]}|"{_mermaid_text(label)}"| '
                     f"n{edge.reader}")
        links += 1
    if legend:
        legend_lines, legend_red = _mermaid_legend(_used(plan), links)
        lines.extend(legend_lines)
        red_links.extend(legend_red)
    if dangling:
        lines.append("  classDef dangling stroke:#d00,color:#d00,stroke-dasharray:4")
    if red_links:
        lines.append(f"  linkStyle {','.join(map(str, red_links))} "
                     "stroke:#d00,stroke-width:2px")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_DOT_STYLE = {_PLAIN: "", _ALTERNATIVE: ", style=dashed", _FAN_OUT: ", style=bold"}
_DOT_RED = ', color="#dd0000", fontcolor="#dd0000", penwidth=2'
#: Each feature's lines in the DOT legend.
_DOT_LEGEND = {
    _PLAIN: ['    L0 [label="N: tool, a call"]; L1 [label="N: tool"];',
             '    L0 -> L1 [label="a path one call writes and the other reads"];'],
    _ALTERNATIVE: ['    L2 [label="N: tool"]; L3 [label="N: tool"];',
                   '    L2 -> L3 [label="alt k: one alternative of ||, exclusive", '
                   'style=dashed];'],
    _FAN_OUT: ['    L4 [label="N: tool"]; L5 [label="N: tool"];',
               '    L4 -> L5 [label="&& one of the paths written together", style=bold];'],
    _CYCLE: ['    L6 [label="N: tool"]; L7 [label="N: tool"];',
             f'    L6 -> L7 [label="cycle: part of a loop"{_DOT_RED}];'],
    _SOURCE: ['    L8 [label="†kind: read from the context or inputs", shape=ellipse, '
              'style=dashed];'],
    _DANGLING: ['    L9 [label="†kind.path: nothing writes it", shape=ellipse, '
                f'style=dashed{_DOT_RED}];'],
}


def _dot_legend(used: set[str]) -> list[str]:
    shown = [line for f in _FEATURES if f in used for line in _DOT_LEGEND[f]]
    if not shown:
        return []
    return ["  subgraph cluster_legend {",
            '    label="legend"; fontname="Helvetica"; style=dashed;', *shown, "  }"]


def to_dot(plan: CompiledPlan, legend: bool = True) -> str:
    """A Graphviz digraph (render with ``dot -Tsvg``), drawn as :func:`to_mermaid` draws."""
    lines = ["digraph plan {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    for node in plan.nodes:
        lines.append(f"  n{node.id} [label={_dot_text(_node_text(plan, node.id))}];")
    outside, dangling = _outside_reads(plan)
    for i, (kind, reads) in enumerate(outside):
        lines.append(f"  k{i} [label={_dot_text('†' + kind)}, shape=ellipse, style=dashed];")
        for ref, reader in reads:
            lines.append(f"  k{i} -> n{reader} [label={_dot_text(ref)}, style=dotted, "
                         "arrowhead=odot];")
    for i, (ref, readers) in enumerate(dangling):
        lines.append(f"  d{i} [label={_dot_text(ref + ': nothing writes it')}, "
                     f"shape=ellipse, style=dashed{_DOT_RED}];")
        for reader in readers:
            lines.append(f"  d{i} -> n{reader} [style=dotted, arrowhead=odot{_DOT_RED}];")
    cycle = _cycle_edges(plan)
    for edge in plan.edges:
        label, kind = _edge_kind(plan, edge)
        style = _DOT_STYLE[kind]
        if (edge.writer, edge.reader) in cycle:
            label, style = f"cycle: {label}", style + _DOT_RED
        lines.append(f"  n{edge.writer} -> n{edge.reader} [label={_dot_text(label)}{style}];")
    if legend:
        lines.extend(_dot_legend(_used(plan)))
    lines.append("}")
    return "\n".join(lines) + "\n"


def dumps(plan: CompiledPlan) -> str:
    """The JSON export as text."""
    return json.dumps(to_json(plan), ensure_ascii=False, indent=2, default=thaw)

"""The report's two pictures as SVG text, made here (no graph library, nothing fetched
when the page is viewed): the plan as a layered graph, and the Gantt timeline."""

from __future__ import annotations

import html
from typing import Any

from obelisk.runreport.model import CallView, PlanView, RunView

__all__ = ["COLOURS", "graph_svg", "timeline_svg"]

#: Each outcome's colour (the graph's nodes, the timeline's bars, the legend).
COLOURS = {"executed": "#3f9b5a", "failed": "#d0453a", "skipped": "#a7adb4",
           "cancelled": "#e08a2c", "invalid": "#8a5cc2", "pending": "#ffffff",
           "running": "#f1c232"}
_WIDE, _HIGH, _GAP_X, _GAP_Y, _ROWS = 150, 26, 60, 12, 30


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _layers(plan: PlanView) -> dict[int, int]:
    """Each node's layer: the longest chain of edges leading to it."""
    preds: dict[int, list[int]] = {}
    for writer, reader, _ in plan.edges:
        preds.setdefault(reader, []).append(writer)
    depth: dict[int, int] = {}
    for node in sorted(plan.nodes):  # a plan's edges go from earlier calls to later ones
        depth[node] = 1 + max((depth.get(p, 0) for p in preds.get(node, ()) if p < node),
                              default=-1)
    return depth


def _positions(plan: PlanView) -> tuple[dict[int, tuple[float, float]], float, float]:
    """Where each node's box is: layers left to right, a layer of more than ``_ROWS``
    nodes wrapped into columns of its own."""
    layers = _layers(plan)
    columns: list[list[int]] = []
    for layer in sorted(set(layers.values())):
        members = sorted(n for n, d in layers.items() if d == layer)
        columns.extend(members[i:i + _ROWS] for i in range(0, len(members), _ROWS))
    where: dict[int, tuple[float, float]] = {}
    for x, column in enumerate(columns):
        for y, node in enumerate(column):
            where[node] = (10 + x * (_WIDE + _GAP_X), 10 + y * (_HIGH + _GAP_Y))
    width = 20 + max(len(columns), 1) * (_WIDE + _GAP_X) - _GAP_X
    height = 20 + max((len(c) for c in columns), default=1) * (_HIGH + _GAP_Y) - _GAP_Y
    return where, width, height


def graph_svg(view: RunView, plan: PlanView) -> str:
    """The plan as an SVG graph: one node per call coloured by its outcome, an edge per
    reference (solid when the writer took the alternative it reads, dashed when not), a
    call with ``||`` alternatives drawn with a double border and its taken one named."""
    where, width, height = _positions(plan)
    parts = [f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
             f'aria-label="the plan{_tick_label(plan.tick)}">']
    for writer, reader, alternatives in plan.edges:
        if writer not in where or reader not in where:
            continue
        (x1, y1), (x2, y2) = where[writer], where[reader]
        taken = view.calls.get(_key(plan.tick, writer))
        live = taken is None or taken.alternative is None or taken.alternative in alternatives
        style = "edge" if live else "edge dead"
        parts.append(f'<path class="{style}" d="M{x1 + _WIDE:.0f},{y1 + _HIGH / 2:.0f} '
                     f'C{x1 + _WIDE + _GAP_X / 2:.0f},{y1 + _HIGH / 2:.0f} '
                     f'{x2 - _GAP_X / 2:.0f},{y2 + _HIGH / 2:.0f} '
                     f'{x2:.0f},{y2 + _HIGH / 2:.0f}"/>')
    for node in sorted(where):
        call = view.calls[_key(plan.tick, node)]
        x, y = where[node]
        parts.append(_node(call, x, y))
    parts.append("</svg>")
    return "".join(parts)


def _node(call: CallView, x: float, y: float) -> str:
    branches = call.output is not None and "||" in call.output
    colour = COLOURS.get(call.outcome, "#ffffff")
    text = call.label if len(call.label) <= 22 else call.label[:21] + "…"
    extra = ""
    if branches and call.alternative is not None and call.outcome == "executed":
        extra = f'<text class="alt" x="{x + _WIDE - 4:.0f}" y="{y + _HIGH - 4:.0f}">' \
                f'alt {call.alternative + 1}</text>'
    return (f'<g class="node{" branches" if branches else ""}" data-key="{call.key}" '
            f'tabindex="0"><title>{_esc(call.label)}: {_esc(call.outcome)}</title>'
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{_WIDE}" height="{_HIGH}" rx="5" '
            f'fill="{colour}"/><text x="{x + 6:.0f}" y="{y + 17:.0f}">{_esc(text)}</text>'
            f"{extra}</g>")


def _key(tick: int | None, node: int) -> str:
    return f"{tick if tick is not None else 0}:{node}"


def _tick_label(tick: int | None) -> str:
    return "" if tick is None else f" of tick {tick}"


_ROW, _LABEL, _SPAN = 16, 170, 680


def timeline_svg(view: RunView) -> str:
    """The Gantt chart: a row per call (grey while it waited to start, its outcome's
    colour while it ran, a stripe while it waited for approval), a row per LLM request
    and per plan review (lazy mode), ticks in order; the axis in seconds from the run's
    start."""
    rows = _rows(view)
    start = view.started if view.started is not None else min(
        (t for _, _, bars in rows for t, _, _ in bars), default=0.0)
    end = max([view.ended or start] + [t + d for _, _, bars in rows for t, d, _ in bars])
    scale = _SPAN / max(end - start, 1e-6)
    height = 24 + len(rows) * _ROW
    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" '
             f'width="{_LABEL + _SPAN + 20}" height="{height}" role="img" '
             f'aria-label="the timeline">']
    for step in range(6):
        x = _LABEL + step * _SPAN / 5
        anchor = ' text-anchor="end"' if step == 5 else ""
        parts.append(f'<line class="tick" x1="{x:.0f}" y1="0" x2="{x:.0f}" y2="{height}"/>'
                     f'<text class="axis" x="{x + 2:.0f}" y="{height - 4}"{anchor}>'
                     f'{(end - start) * step / 5:.3g} s</text>')
    for index, (label, key, bars) in enumerate(rows):
        y = 4 + index * _ROW
        kind = key.split(":")[0] if key.startswith(("tick:", "review:")) else "call"
        kind = "llm" if kind == "tick" else kind
        parts.append(f'<g class="row {kind}" data-key="{key}"><rect class="hit" x="0" '
                     f'y="{y}" width="{_LABEL + _SPAN}" height="{_ROW}"/>'
                     f'<text x="4" y="{y + 11}">{_esc(label[:30])}</text>')
        for begin, duration, kind in bars:
            x = _LABEL + (begin - start) * scale
            parts.append(f'<rect class="bar {kind}" x="{x:.1f}" y="{y + 1}" '
                         f'width="{max(duration * scale, 1.5):.1f}" height="{_ROW - 4}"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


Bar = tuple[float, float, str]


def _rows(view: RunView) -> list[tuple[str, str, list[Bar]]]:
    """(label, call key or ``tick:N``, bars) per row: by tick, the LLM request first, then the
    calls in the order they were made ready."""
    rows: list[tuple[str, str, list[Bar]]] = []
    ticks = sorted({c.tick for c in view.calls.values()} | set(view.ticks),
                   key=lambda t: -1 if t is None else t)
    for tick in ticks:
        info = view.ticks.get(tick) if tick is not None else None
        if info is not None and info.asked is not None:
            named = f"LLM {info.model}" if info.model else "LLM request"  # (a journal's:
            rows.append((f"tick {tick}: {named}", f"tick:{tick}",       # no model kept)
                         [(info.asked, (info.answered or info.asked) - info.asked, "llm")]))
        if info is not None and info.reviewed is not None:
            begun = info.review_asked if info.review_asked is not None else info.reviewed
            rows.append((f"tick {tick}: review", f"review:{tick}",
                         [(begun, info.reviewed - begun, "approval")]))
        calls = [c for c in view.calls.values() if c.tick == tick]
        calls.sort(key=lambda c: (c.ready if c.ready is not None else c.finished or 0.0,
                                  c.node))
        for call in calls:
            rows.append(((f"{tick}: " if tick is not None else "") + call.label, call.key,
                         _bars(call)))
    return rows


def _bars(call: CallView) -> list[Bar]:
    bars: list[Bar] = []
    begin = call.ready
    if begin is not None and call.approved is not None:
        bars.append((begin, call.approved - begin, "approval"))
        begin = call.approved
    if begin is not None and call.started is not None:
        bars.append((begin, call.started - begin, "queue"))
    if call.started is not None:
        bars.append((call.started, (call.finished or call.started) - call.started, call.outcome))
    elif call.finished is not None:
        bars.append((call.finished, 0.0, call.outcome))
    return bars

"""The report page: one HTML file with its style, its pictures, its data and a short
script inline. Nothing is fetched when it is viewed (no CDN, font or image)."""

from __future__ import annotations

import html
import json
from typing import Any

from obelisk.runreport.model import CallView, RunView, TickView, fold
from obelisk.runreport.svg import COLOURS, graph_svg, timeline_svg

__all__ = ["render_page"]

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 34% 0 0;color:#222;background:#fafafa}
header,section{padding:8px 16px}header h1{font-size:20px;margin:4px 0}
.summary td{padding:1px 10px 1px 0}.legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:12px;height:12px;border:1px solid #555;margin-right:4px;
vertical-align:-2px}
.scroll{overflow:auto;max-height:70vh;border:1px solid #ddd;background:#fff}
.graph text{font-size:12px;pointer-events:none}.graph .alt{text-anchor:end;font-size:10px}
.graph rect{stroke:#444}.graph .branches rect{stroke-width:3;stroke-dasharray:none}
.graph .node{cursor:pointer}.graph .node.selected rect{stroke:#06c;stroke-width:4}
.edge{fill:none;stroke:#667;stroke-width:1.2}.edge.dead{stroke:#bbb;stroke-dasharray:4 3}
.timeline text{font-size:11px}.timeline .row{cursor:pointer}
.timeline .row.selected text{font-weight:bold;fill:#06c}
.hit{fill:transparent}.row:hover .hit{fill:#eef4fb}.bar.queue{fill:#d9dde2}.bar.approval{fill:#9ec5f0}.bar.llm{fill:#6a51a3}
.tick{stroke:#eee}.axis{fill:#666}
#details{position:fixed;right:0;top:0;width:32%;height:100vh;box-sizing:border-box;
background:#fff;border-left:2px solid #06c;overflow:auto;padding:8px 16px}#details pre{background:#f3f3f3;padding:6px;white-space:pre-wrap;
word-break:break-all;margin:2px 0 8px}#details th{text-align:left;padding-right:10px}
"""
_STYLE += "".join(f".bar.{name}{{fill:{colour}}}" for name, colour in COLOURS.items())

_SCRIPT = """
(function(){
var data=JSON.parse(document.getElementById('report-data').textContent);
var box=document.getElementById('details');
function row(t,k,v){var tr=document.createElement('tr'),th=document.createElement('th'),
td=document.createElement('td');th.textContent=k;td.textContent=v;tr.appendChild(th);
tr.appendChild(td);t.appendChild(tr);}
function block(k,v){var h=document.createElement('h4');h.textContent=k;box.appendChild(h);
var p=document.createElement('pre');p.textContent=typeof v==='string'?v:
JSON.stringify(v,null,2);box.appendChild(p);}
function show(key){var d=data[key];if(!d){return;}box.textContent='';
var h=document.createElement('h3');h.textContent=d.title;box.appendChild(h);
var t=document.createElement('table');box.appendChild(t);
d.rows.forEach(function(r){row(t,r[0],r[1]);});
d.blocks.forEach(function(b){block(b[0],b[1]);});
document.querySelectorAll('.selected').forEach(function(e){e.classList.remove('selected');});
document.querySelectorAll('[data-key="'+key+'"]').forEach(function(e){
e.classList.add('selected');});box.hidden=false;}
document.addEventListener('click',function(ev){var el=ev.target.closest('[data-key]');
if(el){show(el.getAttribute('data-key'));}});
document.addEventListener('keydown',function(ev){if(ev.key==='Enter'){
var el=document.activeElement;if(el&&el.getAttribute('data-key')){
show(el.getAttribute('data-key'));}}});
})();
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _seconds(value: float | None, start: float | None) -> str:
    if value is None or start is None:
        return "-"
    return f"{value - start:.3f} s"


def _call_data(call: CallView, start: float | None) -> dict[str, Any]:
    rows = [["tool", call.tool or "(latent)"], ["outcome", call.outcome]]
    if call.instance is not None:
        rows.append(["instance", call.instance])
    if call.tick is not None:
        rows.append(["tick", str(call.tick)])
    if call.output is not None:
        rows.append(["_outputPath", call.output])
    if call.alternative is not None and call.outcome == "executed":
        rows.append(["alternative taken", str(call.alternative + 1)])
    if call.reason:
        rows.append(["skip reason" if call.outcome == "skipped" else "reason", call.reason])
    if call.verdict:
        rows.append(["approval", call.verdict])
    for name, value in (("ready", call.ready), ("approved", call.approved),
                        ("started", call.started), ("finished", call.finished)):
        if value is not None:
            rows.append([name, _seconds(value, start)])
    blocks: list[list[Any]] = []
    if call.error:
        blocks.append(["error", f"{call.error.get('type', '')}: {call.error.get('message', '')}"])
    for name, value, shown in (("the call as written", call.written, call.written is not None),
                               ("resolved parameters", call.params, call.params is not None),
                               ("result", call.result, call.has_result)):
        if shown:
            blocks.append([name, value])
    if call.written is None and call.params is None and not call.has_result:
        blocks.append(["content", "not recorded (opt in with "
                                  "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"])
    return {"title": call.label, "rows": rows, "blocks": blocks}


def _tick_data(tick: TickView, start: float | None) -> dict[str, Any]:
    rows = [["model", tick.model or "not recorded"],
            ["request size", f"{tick.size:,} characters"],
            ["tokens", f"{tick.input_tokens:,} in, {tick.output_tokens:,} out"],
            ["asked", _seconds(tick.asked, start)], ["answered", _seconds(tick.answered, start)]]
    if tick.reviewed is not None:
        rows += [["plan review", tick.review],
                 ["review asked", _seconds(tick.review_asked, start)],
                 ["reviewed", _seconds(tick.reviewed, start)]]
    if tick.error:
        rows.append(["error", tick.error])
    if tick.errors:
        rows.append(["errors", ", ".join(tick.errors)])
    blocks: list[list[Any]] = []
    if tick.request is not None:
        blocks.append(["the rendered request", tick.request])
    if tick.solution is not None:
        blocks.append(["the solution", tick.solution])
    if tick.request is None and tick.solution is None:
        blocks.append(["content", "not recorded"])
    return {"title": f"tick {tick.tick}", "rows": rows, "blocks": blocks}


def _summary(view: RunView) -> str:
    counts = ", ".join(f"{n} {k}" for k, n in sorted(view.counts().items()))
    path = view.critical_path()
    spent = sum((c.finished or 0) - (c.started or 0) for c in path if c.started is not None)
    rows = [("status", view.status + (f" ({view.reason})" if view.reason else "")),
            ("duration", f"{view.duration:.3f} s"), ("calls", f"{len(view.calls)}: {counts}"),
            ("critical path", " → ".join(c.label for c in path[:12])
             + (" …" if len(path) > 12 else "") + f" ({spent:.3g} s running)" if path else "-")]
    if view.kind == "agent" or view.input_tokens:
        ticks = len(view.ticks)
        rows.append(("tokens", f"{view.input_tokens:,} in, {view.output_tokens:,} out"
                               f" over {ticks} tick{'' if ticks == 1 else 's'}"))
    if view.run:
        rows.append(("run", view.run))
    return "".join(f"<tr><td>{_esc(k)}</td><td>{_esc(v)}</td></tr>" for k, v in rows)


def render_page(events: list[dict[str, Any]], title: str = "obelisk run") -> str:
    """The whole page for the run ``events`` tell."""
    view = fold(events)
    start = view.started
    data: dict[str, Any] = {call.key: _call_data(call, start) for call in view.calls.values()}
    data.update({f"tick:{t.tick}": _tick_data(t, start) for t in view.ticks.values()})
    data.update({f"review:{t.tick}": _tick_data(t, start) for t in view.ticks.values()
                 if t.reviewed is not None})
    legend = "".join(f'<span><i style="background:{c}"></i>{_esc(k)}</span>'
                     for k, c in COLOURS.items() if k != "running")
    graphs = []
    for tick in sorted(view.plans, key=lambda t: -1 if t is None else t):
        plan = view.plans[tick]
        heading = "The plan" if tick is None else f"Tick {tick}'s plan"
        note = (f" ({plan.edges_omitted} edges not drawn: too dense)"
                if plan.edges_omitted else "")
        graphs.append(f"<h3>{_esc(heading)}{_esc(note)}</h3><div class=\"scroll\">"
                      f"{graph_svg(view, plan)}</div>")
    # "<" as its JSON escape: nothing in the data can end the script block or open a tag.
    payload = json.dumps(data, ensure_ascii=False, default=repr).replace("<", "\\u003c")
    what = f"{view.kind} run" + (f" {view.name}" if view.kind == "agent" else "")
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        f"<header><h1>{_esc(title)}: {_esc(what)}</h1>"
        f"<table class=\"summary\">{_summary(view)}</table>"
        f"<p class=\"legend\">{legend}<span><i style=\"background:#d9dde2\"></i>waiting to "
        "start</span><span><i style=\"background:#9ec5f0\"></i>waiting for approval</span>"
        "<span><i style=\"background:#6a51a3\"></i>LLM request</span></p></header>"
        f"<section><h2>Graph</h2>{''.join(graphs) or '<p>no calls</p>'}</section>"
        f"<section><h2>Timeline</h2><div class=\"scroll\">{timeline_svg(view)}</div></section>"
        "<aside id=\"details\" hidden><p>Click a call for its details.</p></aside>"
        f"<script type=\"application/json\" id=\"report-data\">{payload}</script>"
        f"<script>{_SCRIPT}</script></body></html>")

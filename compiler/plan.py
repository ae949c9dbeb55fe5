"""The plan compiler: a list of calls in, an immutable dataflow graph and diagnostics out.

``compile_plan`` is a pipeline of plain functions, each over the previous step's values:

1. *read* every call alone (:func:`obelisk.compiler.reading.read_call`): parse its
   expressions, check its meta-properties, its tool and its literal parameters;
2. *expand* the calls into nodes (one per instance when instancing);
3. *build the graph* (:func:`obelisk.compiler.plangraph.build_graph`): index every output
   target, link each read to the writers that overlap it (the edges), order the nodes,
   find loops and branch guards;
4. *check* the graph: every check of :data:`obelisk.compiler.checks.CHECKS` (dangling
   references, cycles, unreachable calls, write and scope races, type mismatches);
5. sort the diagnostics and build the :class:`CompiledPlan`, with ``invalid``.

Nothing here runs a call. Every diagnostic is collected; none stops the steps after it.

Keeping going past bad calls: every call that is a JSON object gets its node(s), whatever
its diagnostics, and ``CompiledPlan.invalid`` maps each node an error is about to those
errors (a diagnostic about call ``i`` with no instance applies to every node of call
``i``; a cycle to every node in it). A runner can then run the rest of the plan. The
edges into and out of an invalid node may be partial: a parameter that does not parse
reads nothing, an ``_outputPath`` that does not parse writes nothing. A call that is not
a JSON object (or not JSON at all) has no node; with ``instances`` and no instance in
the context, a call without ``_instance`` has none either (it would never run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyrsistent import PMap, PVector, pmap

from obelisk.compiler.checks import CHECKS
from obelisk.compiler.codes import DiagnosticCode
from obelisk.compiler.diagnostics import CycleDetails, Diagnostic, sort_diagnostics
from obelisk.compiler.nodes import CompiledPlan, Node
from obelisk.compiler.plangraph import Limits, build_graph
from obelisk.compiler.reading import CallInfo, CallReading, read_call
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.core.errors import PlanError
from obelisk.core.values import json_type

__all__ = [
    "HINT_BUDGET", "MAX_CYCLE_STEPS", "MAX_EDGES", "MAX_RACES", "MAX_RACE_PAIRS",
    "MAX_RELATED", "compile_plan", "invalid_nodes",
]

# The checks' bounds, read when a compile starts (so a test may lower them here).
#: Write races reported at most (a plan where thousands of calls push to one list would
#: otherwise print millions of pairs); past it one ``too-many`` info says how many more.
MAX_RACES = 1000
#: Related calls listed in one scope-race diagnostic at most.
MAX_RELATED = 100
#: Pairs of calls writing overlapping paths examined for write races at most; past it the
#: search stops (with a ``too-many`` info), so the check's time is bounded.
MAX_RACE_PAIRS = 100_000
#: How many candidate paths the did-you-mean and nearby searches may compare in one
#: compile, all dangling references together. Each search compares the reference with
#: every candidate, so a plan with thousands of dangling references against thousands of
#: written paths would otherwise take minutes; past the budget a generic hint is given.
HINT_BUDGET = 200_000
#: Dependencies (edges) between nodes at most. Edges are stored grouped by written path,
#: so their memory stays linear, but ordering the nodes and finding loops takes time in
#: their number; past the cap the plan gets one ``too-dense`` error and is not ordered.
MAX_EDGES = 2_000_000
#: Edges listed in the details of one cycle at most (a loop of n calls reading and
#: writing one path has n x n edges); the message gives the full count.
MAX_CYCLE_STEPS = 1000


def compile_plan(
    calls: Sequence[Any],
    *,
    tools: ToolRegistry | Iterable[Any] | None = (),
    context: Context | Iterable[Any] | None = None,
    instances: bool = False,
    open: bool = False,
) -> CompiledPlan:
    """Compile a plan (a list of calls) into a :class:`CompiledPlan`.

    ``tools``: tool schemas (or a ToolRegistry); when empty, any ``_tool`` is accepted.
    ``context``: what the plan will run against (a Context or a list of messages).
    ``instances``: map every call without ``_instance`` over the context's instance ids.
    ``open``: the calls seen so far of a plan still arriving (streaming): a reference that
    no call seen so far writes is not reported as ``dangling-reference`` (it waits).
    Problems in the plan become diagnostics; only an unusable plan raises
    :class:`PlanError` (not a list) and invalid tools raise ``ToolError``.
    """
    if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, (Sequence, PVector)):
        raise PlanError(f"a plan is a list of calls, got {json_type(calls)}")
    return _compile(calls, tools, context, instances, open)


def _compile(calls: Sequence[Any], tools: ToolRegistry | Iterable[Any] | None,
             context: Context | Iterable[Any] | None, instances: bool,
             open: bool) -> CompiledPlan:
    registry = tools if isinstance(tools, ToolRegistry) else (
        ToolRegistry.of(tools) if tools else None)
    if registry is not None and len(registry) == 0:
        registry = None
    ctx = context if isinstance(context, Context) else Context.of(context or ())

    memo: dict[Any, Any] = {}  # per-plan work shared between calls; dropped after reading
    readings = [read_call(i, call, registry, memo) for i, call in enumerate(calls)]
    del memo
    expanded, expand_diagnostics = _expand(readings, ctx, instances)
    graph = build_graph(expanded, ctx, registry, Limits(
        max_races=MAX_RACES, max_related=MAX_RELATED, max_race_pairs=MAX_RACE_PAIRS,
        hint_budget=HINT_BUDGET, max_edges=MAX_EDGES, max_cycle_steps=MAX_CYCLE_STEPS))
    diagnostics = sort_diagnostics([
        *(d for reading in readings for d in reading.diagnostics),
        *expand_diagnostics,
        *(d for check in CHECKS for d in check(graph)),
    ])
    if open:  # a later call may still write it: the run parks the reader instead
        diagnostics = tuple(d for d in diagnostics if d.code != DiagnosticCode.DANGLING_REFERENCE)
    return CompiledPlan(
        calls=tuple(r.info.call if r.info is not None else raw
                    for r, raw in zip(readings, calls, strict=True)),
        nodes=graph.nodes, edges=graph.edges, diagnostics=diagnostics, order=graph.order,
        successors=graph.successors, predecessors=graph.predecessors, context=ctx,
        tools=registry, instanced=instances, invalid=invalid_nodes(graph.nodes, diagnostics),
    )


def _expand(readings: Sequence[CallReading], ctx: Context, instances: bool) -> tuple[
        list[tuple[CallInfo, str | None]], tuple[Diagnostic, ...]]:
    """The nodes to build, in node id order: (call, instance) pairs, one per call, or one
    per call and instance id when instancing (a call's own ``_instance`` wins)."""
    infos = [r.info for r in readings if r.info is not None]
    if not instances:
        return [(info, info.instance) for info in infos], ()
    ids = ctx.instances
    found: tuple[Diagnostic, ...] = () if ids else (Diagnostic(
        "no-instances", "instancing was asked for, but no data message in the "
        "context has an _instance, so only calls with an explicit _instance run",
        hint='instances come from data messages such as {"type": "data", '
             '"_instance": "①", ...}'),)
    expanded: list[tuple[CallInfo, str | None]] = []
    for info in infos:
        if info.instance is not None:
            expanded.append((info, info.instance))
        else:
            expanded.extend((info, i) for i in ids)
    return expanded, found


def invalid_nodes(nodes: Sequence[Node], diagnostics: Iterable[Diagnostic]) -> PMap[
        int, tuple[Diagnostic, ...]]:
    """Node id -> the error diagnostics about it, in their order.

    A cycle is about every node in it; ``too-dense`` about every node of the plan (it is
    not ordered, so none of it may run); any other diagnostic about call ``i`` is about the
    nodes of call ``i`` (only those of its instance, when it names one). Plan-wide
    diagnostics (no call) make no node invalid.
    """
    by_call: dict[int, list[Node]] = {}
    for node in nodes:
        by_call.setdefault(node.index, []).append(node)
    found: dict[int, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        if diagnostic.code == DiagnosticCode.TOO_DENSE:
            about = [n.id for n in nodes]  # plan-wide, yet about every node
        elif not diagnostic.is_error or diagnostic.call is None:
            continue
        elif isinstance(diagnostic.details, CycleDetails):
            about = list(diagnostic.details.nodes)
        else:
            about = [n.id for n in by_call.get(diagnostic.call, ())
                     if diagnostic.instance is None or n.instance == diagnostic.instance]
        for node_id in about:
            found.setdefault(node_id, []).append(diagnostic)
    return pmap({node_id: tuple(ds) for node_id, ds in found.items()})

"""The plan compiler: a list of calls in, an immutable dataflow graph and diagnostics out.

``compile_plan`` runs in passes, each a plain function over the previous pass's values:

1. *read* every call: parse its expressions, check its meta-properties and tool;
2. *expand* calls into nodes (one per instance when instancing);
3. *index* every output target, then *link* each read to the writers that overlap it
   (same kind, one path a prefix of the other, visible instance): the edges;
4. *check* the graph: dangling references, cycles, branch guards and unreachable calls,
   write races, scope races, type mismatches.

Nothing here runs a call. Every diagnostic is collected; none stops the passes after it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen
from pyrsistent import PMap, PVector, pmap

from obelisk.compiler.diagnostics import Diagnostic, sort_diagnostics
from obelisk.compiler.graph import closure, reaches, strongly_connected, topological_order
from obelisk.compiler.index import PathIndex
from obelisk.compiler.parse import parse_input, parse_output
from obelisk.compiler.tools import (
    Tool,
    ToolRegistry,
    literal_param_errors,
    schema_types_at,
    types_compatible,
)
from obelisk.core.ast import And, Expr, Literal, Or, OutputExpr, Reference, Span, references
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, ObeliskError, WriteError
from obelisk.core.messages import KIND_NAME, NON_DATA_KINDS
from obelisk.core.methods import Method
from obelisk.core.paths import Path, is_prefix, overlaps, render_reference
from obelisk.core.values import MISSING, Frozen, freeze, json_type, pointer_of, thaw

#: Write races reported at most (a plan where thousands of calls push to one list would
#: otherwise print millions of pairs); past it one ``too-many`` info says how many more.
MAX_RACES = 1000
#: Related calls listed in one scope-race diagnostic at most.
MAX_RELATED = 100
#: Pairs of calls writing overlapping paths examined for write races at most; past it the
#: search stops (with a ``too-many`` info), so the check's time is bounded.
MAX_RACE_PAIRS = 1_000_000


class PlanError(ObeliskError, ValueError):
    """The plan as a whole is unusable (not a list of calls, tools that are invalid)."""


# -- values -------------------------------------------------------------------------


@frozen
class Read:
    """One reference read by a parameter, with the nodes that may write what it reads."""

    reference: Reference
    writers: tuple[int, ...]
    provided: bool  # the context given to the compiler already holds a value there


@frozen
class Param:
    """One parameter expression of a call: where it is, its text, its AST, its reads."""

    pointer: str
    path: Path
    text: str
    expr: Expr
    reads: tuple[Read, ...]


@frozen
class Node:
    """One call of the plan (one per instance when instancing), as the graph sees it.

    ``guards`` are the branch choices the node needs in order to run: ``(node id,
    alternative)`` pairs meaning "that node must write its result to that alternative".
    """

    id: int
    index: int
    instance: str | None
    call: Frozen
    tool: str | None
    params: tuple[Param, ...]
    output: OutputExpr | None
    output_text: str | None
    method: Method
    scopes: tuple[str, ...]
    guards: frozenset[tuple[int, int]]

    @property
    def reads(self) -> tuple[Read, ...]:
        return tuple(r for p in self.params for r in p.reads)

    @property
    def label(self) -> str:
        name = f"call {self.index}"
        if self.tool:
            name += f" ({self.tool})"
        if self.instance is not None:
            name += f" [{self.instance}]"
        return name


@frozen
class Edge:
    """``writer`` may write something ``reader`` reads.

    ``alternatives`` lists the writer's output alternatives that write it; ``paths`` the
    (written, read) reference pairs that overlap.
    """

    writer: int
    reader: int
    alternatives: tuple[int, ...]
    paths: tuple[tuple[str, str], ...]


@frozen
class CompiledPlan:
    """An immutable dataflow graph of a plan, with every problem found in it.

    ``nodes`` are the calls (one per instance when instanced); ``edges`` go writer ->
    reader, sorted; ``order`` is a topological order of node ids (cycles kept together);
    ``successors``/``predecessors`` are adjacency tuples by node id. ``ok`` is true when no
    diagnostic is an error.
    """

    calls: tuple[Frozen, ...]
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    diagnostics: tuple[Diagnostic, ...]
    order: tuple[int, ...]
    successors: tuple[tuple[int, ...], ...]
    predecessors: tuple[tuple[int, ...], ...]
    context: Context
    tools: ToolRegistry | None
    instanced: bool
    #: Node id -> that node's error diagnostics, for a run that keeps going past invalid
    #: calls (filled by the compiler; empty by default).
    invalid: PMap[int, tuple[Diagnostic, ...]] = field(factory=pmap)
    #: A cache of values derived from the plan (per-node templates the interpreters
    #: build once); not part of the plan's value.
    memo: dict[Any, Any] = field(factory=dict, init=False, eq=False, repr=False, hash=False)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.is_error)

    def tool_of(self, node: Node) -> Tool | None:
        """The tool a node calls, when a registry was given and knows it."""
        if self.tools is None or node.tool is None:
            return None
        return self.tools.get(node.tool)

    def to_json(self) -> dict[str, Any]:
        from obelisk.compiler.export import to_json

        result: dict[str, Any] = to_json(self)
        return result

    def to_mermaid(self) -> str:
        from obelisk.compiler.export import to_mermaid

        text: str = to_mermaid(self)
        return text

    def to_dot(self) -> str:
        from obelisk.compiler.export import to_dot

        text: str = to_dot(self)
        return text


# -- pass 1: read each call -----------------------------------------------------------


@frozen
class _CallInfo:
    index: int
    call: Frozen
    tool: str | None
    instance: str | None
    params: tuple[tuple[str, Path, str, Expr], ...]
    output: OutputExpr | None
    output_text: str | None
    method: Method
    scopes: tuple[str, ...]


def _read_call(index: int, raw: Any, registry: ToolRegistry | None,
               out: list[Diagnostic]) -> _CallInfo | None:
    def report(code: str, message: str, **kw: Any) -> None:
        out.append(Diagnostic(code, message, call=index, tool=tool_name, **kw))

    tool_name: str | None = None
    if not isinstance(raw, (Mapping, PMap)):
        out.append(Diagnostic(
            "invalid-call", f"a call must be a JSON object, got {json_type(raw)}", call=index,
            hint='write it as {"_tool": "name", "param": value, ...}'))
        return None
    try:
        call = freeze(raw)
    except ValueError as exc:
        out.append(Diagnostic("invalid-call", f"the call is not JSON: {exc}", call=index))
        return None
    assert isinstance(call, PMap)  # a Mapping freezes to a PMap

    # _tool: present, a string, and known when a registry is given.
    tool = call.get("_tool")
    if isinstance(tool, str) and tool:
        tool_name = tool
        if registry is not None and tool not in registry:
            near = difflib.get_close_matches(tool, list(registry.names), n=1)
            report("unknown-tool", f"no tool named {tool!r}", pointer="/_tool",
                   hint=f"did you mean {near[0]!r}?" if near
                   else f"known tools: {', '.join(registry.names) or 'none'}")
    else:
        report("unknown-tool", "the call has no _tool" if tool is None
               else "_tool is an empty string" if tool == ""
               else f"_tool must be a tool's name, got {json_type(tool)}",
               pointer="/_tool", hint='name the tool: "_tool": "processPayment"')

    # Parameters: every string that starts with † anywhere below a non-meta key.
    params: list[tuple[str, Path, str, Expr]] = []
    stack: list[tuple[Path, Frozen]] = [
        ((key,), value) for key, value in sorted(call.items(), reverse=True)
        if not key.startswith("_")
    ]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if value.startswith("†"):
                pointer = pointer_of(path)
                try:
                    params.append((pointer, path, value, parse_input(value)))
                except ExpressionSyntaxError as exc:
                    report("syntax", exc.reason, pointer=pointer, expression=value,
                           span=Span(exc.column - 1, exc.end - 1), hint=_syntax_hint(exc))
        elif isinstance(value, PMap):
            stack.extend(((*path, k), v) for k, v in sorted(value.items(), reverse=True))
        elif isinstance(value, PVector):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))

    # _outputPath: an output expression over data kinds.
    output: OutputExpr | None = None
    text = call.get("_outputPath")
    output_text = text if isinstance(text, str) else None
    if text is not None and not isinstance(text, str):
        report("syntax", f"_outputPath must be a string, got {json_type(text)}",
               pointer="/_outputPath")
    elif isinstance(text, str):
        try:
            output = parse_output(text)
        except ExpressionSyntaxError as exc:
            report("syntax", exc.reason, pointer="/_outputPath", expression=text,
                   span=Span(exc.column - 1, exc.end - 1), hint=_syntax_hint(exc))
        else:
            for target in output.targets:
                if target.kind in NON_DATA_KINDS:
                    report("invalid-output-target",
                           f'kind "{target.kind}" is a message type that cannot hold data',
                           pointer="/_outputPath", expression=text, span=target.span,
                           hint="write to a data kind such as †state or †data")

    # _outputMethod: one of the five.
    method = Method.SET
    raw_method = call.get("_outputMethod")
    if raw_method is not None:
        try:
            method = Method(raw_method)
        except ValueError:
            near = difflib.get_close_matches(str(raw_method), [m.value for m in Method], n=1)
            report("invalid-output-method",
                   f"_outputMethod {thaw(raw_method)!r} is not set, merge, assign, push or concat",
                   pointer="/_outputMethod",
                   hint=f"did you mean {near[0]!r}?" if near else "leave it out for set")

    # _instance: a string id. _scopes: a list of kind names.
    instance = call.get("_instance")
    if instance is not None and not isinstance(instance, str):
        report("invalid-meta", f"_instance must be a string id, got {json_type(instance)}",
               pointer="/_instance")
        instance = None
    scopes: list[str] = []
    raw_scopes = call.get("_scopes")
    if raw_scopes is not None:
        if not isinstance(raw_scopes, PVector):
            report("invalid-meta", "_scopes must be a list of kind names",
                   pointer="/_scopes", hint='for example "_scopes": ["state", "input"]')
        else:
            for i, kind in enumerate(raw_scopes):
                if isinstance(kind, str) and KIND_NAME.match(kind.removeprefix("†")):
                    scopes.append(kind.removeprefix("†"))
                else:
                    report("invalid-meta", f"_scopes[{i}] is not a kind name: {thaw(kind)!r}",
                           pointer=f"/_scopes/{i}", hint='kind names look like "state"')

    # Literal parameters against the tool's schema (references are type-checked later).
    if registry is not None and tool_name is not None and tool_name in registry:
        tool_def = registry.get(tool_name)
        assert tool_def is not None
        for pointer, message in literal_param_errors(tool_def, thaw(call)):  # type: ignore[arg-type]
            report("param-schema", message, pointer=pointer)

    return _CallInfo(
        index=index, call=call, tool=tool_name, instance=instance, params=tuple(params),
        output=output, output_text=output_text, method=method, scopes=tuple(scopes),
    )


def _syntax_hint(exc: ExpressionSyntaxError) -> str | None:
    parts = []
    if exc.expected:
        parts.append("expected " + (exc.expected[0] if len(exc.expected) == 1
                                    else "one of: " + ", ".join(exc.expected)))
    if exc.hint:
        parts.append(exc.hint)
    return "; ".join(parts) or None


# -- the compiler ----------------------------------------------------------------------


def compile_plan(
    calls: Sequence[Any],
    *,
    tools: ToolRegistry | Iterable[Any] | None = (),
    context: Context | Iterable[Any] | None = None,
    instances: bool = False,
) -> CompiledPlan:
    """Compile a plan (a list of calls) into a :class:`CompiledPlan`.

    ``tools``: tool schemas (or a ToolRegistry); when empty, any ``_tool`` is accepted.
    ``context``: what the plan will run against (a Context or a list of messages).
    ``instances``: map every call without ``_instance`` over the context's instance ids.
    Problems in the plan become diagnostics; only an unusable plan raises
    :class:`PlanError` (not a list) and invalid tools raise ``ToolError``.
    """
    if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, (Sequence, PVector)):
        raise PlanError(f"a plan is a list of calls, got {json_type(calls)}")
    registry = tools if isinstance(tools, ToolRegistry) else (
        ToolRegistry.of(tools) if tools else None)
    if registry is not None and len(registry) == 0:
        registry = None
    ctx = context if isinstance(context, Context) else Context.of(context or ())

    diagnostics: list[Diagnostic] = []
    infos = [_read_call(i, call, registry, diagnostics) for i, call in enumerate(calls)]

    # Pass 2: nodes, one per call, or per call and instance.
    expanded: list[tuple[_CallInfo, str | None]] = []
    if instances:
        ids = ctx.instances
        if not ids:
            diagnostics.append(Diagnostic(
                "no-instances", "instancing was asked for, but no data message in the "
                "context has an _instance, so only calls with an explicit _instance run",
                hint='instances come from data messages such as {"type": "data", '
                     '"_instance": "①", ...}'))
        for info in infos:
            if info is None:
                continue
            if info.instance is not None:
                expanded.append((info, info.instance))
            else:
                expanded.extend((info, i) for i in ids)
    else:
        expanded = [(info, info.instance) for info in infos if info is not None]

    # Pass 3: index every output target, then link reads to writers.
    index: PathIndex[tuple[int, int, Reference]] = PathIndex()
    for node_id, (info, instance) in enumerate(expanded):
        if info.output is not None:
            for alt, group in enumerate(info.output.alternatives):
                for target in group.targets:
                    index.add(target.kind, target.path, (node_id, alt, target))
    instance_of = [instance for _, instance in expanded]

    edge_alts: dict[tuple[int, int], set[int]] = {}
    edge_paths: dict[tuple[int, int], set[tuple[str, str]]] = {}
    node_params: list[tuple[Param, ...]] = []
    for node_id, (info, instance) in enumerate(expanded):
        params = []
        for pointer, path, text, expr in info.params:
            reads = []
            for ref in references(expr):
                writers = set()
                for writer, alt, target in index.overlapping(ref.kind, ref.path):
                    if writer == node_id or not _visible(instance_of[writer], instance):
                        continue
                    writers.add(writer)
                    edge_alts.setdefault((writer, node_id), set()).add(alt)
                    edge_paths.setdefault((writer, node_id), set()).add((str(target), str(ref)))
                reads.append(Read(ref, tuple(sorted(writers)), _provided(ctx, ref, instance)))
            params.append(Param(pointer, path, text, expr, tuple(reads)))
        node_params.append(tuple(params))

    n = len(expanded)
    successors_sets: list[set[int]] = [set() for _ in range(n)]
    predecessors_sets: list[set[int]] = [set() for _ in range(n)]
    for writer, reader in edge_alts:
        successors_sets[writer].add(reader)
        predecessors_sets[reader].add(writer)
    successors = tuple(tuple(sorted(s)) for s in successors_sets)
    predecessors = tuple(tuple(sorted(s)) for s in predecessors_sets)
    edges = tuple(
        Edge(w, r, tuple(sorted(edge_alts[(w, r)])), tuple(sorted(edge_paths[(w, r)])))
        for w, r in sorted(edge_alts)
    )
    order = tuple(topological_order(successors))

    # Pass 4: checks over the graph.
    def label(node_id: int) -> str:
        info, instance = expanded[node_id]
        name = f"call {info.index}"
        if info.tool:
            name += f" ({info.tool})"
        return name + (f" [{instance}]" if instance is not None else "")

    inputs = _Inputs.of(ctx)  # read once: the context's input messages and schemas
    _check_dangling(expanded, node_params, index, ctx, inputs, diagnostics, label)
    cyclic = _check_cycles(expanded, successors, edge_paths, diagnostics, label)
    guards = _guards(expanded, node_params, order, cyclic)
    _check_unreachable(expanded, guards, diagnostics, label)
    position = [0] * n
    for place, node_id in enumerate(order):
        position[node_id] = place
    _check_write_races(expanded, index, successors, position, guards, cyclic, diagnostics,
                       label)
    _check_scope_races(expanded, index, successors, predecessors, guards, diagnostics, label)
    if registry is not None:
        _check_types(expanded, node_params, registry, ctx, inputs, diagnostics)

    nodes = tuple(
        Node(
            id=node_id, index=info.index, instance=instance, call=info.call, tool=info.tool,
            params=node_params[node_id], output=info.output, output_text=info.output_text,
            method=info.method, scopes=info.scopes, guards=frozenset(guards[node_id]),
        )
        for node_id, (info, instance) in enumerate(expanded)
    )
    return CompiledPlan(
        calls=tuple(info.call if info is not None else raw for info, raw in zip(infos, calls)),
        nodes=nodes, edges=edges, diagnostics=sort_diagnostics(diagnostics), order=order,
        successors=successors, predecessors=predecessors, context=ctx, tools=registry,
        instanced=instances,
    )


def _visible(writer_instance: str | None, reader_instance: str | None) -> bool:
    # A global write is visible to every instance; an instance write only to that instance.
    return writer_instance is None or writer_instance == reader_instance


def _provided(ctx: Context, ref: Reference, instance: str | None) -> bool:
    try:
        return ctx.value(ref.kind, ref.path, instance) is not MISSING
    except WriteError:
        return True  # the read will fail at run time with the write's own error


@frozen
class _Inputs:
    """What the context says about ``input``: whether it has input messages, and the
    schemas they declare (in context order)."""

    present: bool
    schemas: tuple[PMap[str, Any], ...]

    @classmethod
    def of(cls, ctx: Context) -> _Inputs:
        present = False
        schemas = []
        for message in ctx.messages:
            if message.get("type") not in ("input", "data"):
                continue
            if message.get("kind", message.get("type")) != "input":
                continue
            present = True
            if isinstance(message.get("schema"), PMap):
                schemas.append(message["schema"])
        return cls(present, tuple(schemas))

    def declaring(self, path: Path) -> PMap[str, Any] | None:
        """The first schema that declares ``path``, or None."""
        return next((s for s in self.schemas if _schema_declares(s, path)), None)


def _schema_declares(schema: PMap[str, Any], path: Path) -> bool:
    node: Any = schema
    for segment in path:
        if not isinstance(node, PMap):
            return False
        if isinstance(segment, int):
            node = node.get("items")
        else:
            props = node.get("properties")
            if not isinstance(props, PMap) or segment not in props:
                return False
            node = props[segment]
    return True


# -- checks ------------------------------------------------------------------------------

Label = Any  # Callable[[int], str]


def _check_dangling(expanded: list[tuple[_CallInfo, str | None]],
                    node_params: list[tuple[Param, ...]], index: PathIndex[Any],
                    ctx: Context, inputs: _Inputs, out: list[Diagnostic], label: Label) -> None:
    hints = _Hints(expanded, index, ctx, label)
    for node_id, (info, instance) in enumerate(expanded):
        for param in node_params[node_id]:
            verdict: dict[Reference, str] = {}
            for read in param.reads:
                ref = read.reference
                if read.writers or read.provided:
                    verdict[ref] = "ok"
                elif ref.kind == "input":
                    has_input = inputs.present
                    declared = inputs.declaring(ref.path) is not None
                    verdict[ref] = "external" if (not has_input or declared) else "dangling"
                else:
                    verdict[ref] = "dangling"
            for ref in _culprits(param.expr, verdict):
                out.append(Diagnostic(
                    "dangling-reference",
                    f"{ref} is read here, but no call writes it and the "
                    "context does not provide it",
                    call=info.index, instance=instance, tool=info.tool,
                    pointer=param.pointer, expression=param.text,
                    span=ref.span,
                    hint=hints.near_miss(ref, instance),
                ))
            for read in param.reads:
                if verdict[read.reference] == "external":
                    out.append(Diagnostic(
                        "external-reference",
                        f"{read.reference} is an input to be supplied at run time",
                        call=info.index, instance=instance, tool=info.tool,
                        pointer=param.pointer, expression=param.text,
                        span=read.reference.span,
                    ))


def _culprits(expr: Expr, verdict: Mapping[Reference, str]) -> list[Reference]:
    """The dangling references that make ``expr`` dangle, left to right: none when it is
    satisfied, and none inside a satisfied operand (``†a`` in ``(†a || 'x') && †b``)."""
    if _satisfied(expr, verdict):
        return []
    match expr:
        case Reference():
            return [expr]
        case Or(operands=ops) | And(operands=ops):
            return [ref for op in ops for ref in _culprits(op, verdict)]
    return []  # pragma: no cover - a literal is always satisfied


def _satisfied(expr: Expr, verdict: Mapping[Reference, str]) -> bool:
    # An || with a literal or one provided alternative does not dangle; an && dangles when
    # any operand does.
    match expr:
        case Reference():
            return verdict[expr] != "dangling"
        case Literal():
            return True
        case Or(operands=ops):
            return any(_satisfied(op, verdict) for op in ops)
        case And(operands=ops):
            return all(_satisfied(op, verdict) for op in ops)
    return True  # pragma: no cover


#: How many candidate paths the did-you-mean and nearby searches may compare in one
#: compile, all dangling references together. Each search compares the reference with
#: every candidate, so a plan with thousands of dangling references against thousands of
#: written paths would otherwise take minutes; past the budget a generic hint is given.
HINT_BUDGET = 200_000


class _Hints:
    """Hints for dangling references: the candidate paths (written by a visible call, or
    present in the context) are gathered once per instance, and the searches share
    :data:`HINT_BUDGET`. Used by one ``_check_dangling`` pass, in its deterministic order."""

    def __init__(self, expanded: list[tuple[_CallInfo, str | None]], index: PathIndex[Any],
                 ctx: Context, label: Label) -> None:
        self.expanded, self.index, self.ctx, self.label = expanded, index, ctx, label
        self.budget = HINT_BUDGET
        self.candidates: dict[str | None, dict[str, tuple[str, Path, str]]] = {}

    def _candidates(self, instance: str | None) -> dict[str, tuple[str, Path, str]]:
        """Rendered reference -> (kind, path, where it comes from), in a stable order."""
        found = self.candidates.get(instance)
        if found is None:
            found = {}
            writes = [(writer, str(target), target.kind, target.path)
                      for kind in list(self.index.kinds())
                      for writer, _, target in self.index.under_kind(kind)
                      if _visible(self.expanded[writer][1], instance)]
            writes.sort(key=lambda w: (w[0], w[1]))  # by writer, then text: never by path
            for writer, text, kind, path in writes:
                found.setdefault(text, (kind, path, f"written by {self.label(writer)}"))
            for kind in self.ctx.kinds:
                for path in _leaf_paths(self.ctx, kind, instance):
                    found.setdefault(render_reference(kind, path),
                                     (kind, path, "present in the context"))
            self.candidates[instance] = found
        return found

    def near_miss(self, ref: Reference, instance: str | None) -> str:
        generic = (f"write it with an earlier call's _outputPath, or add a {ref.kind} "
                   "message to the context")
        candidates = self._candidates(instance)
        if len(candidates) > self.budget:
            return generic
        self.budget -= len(candidates)
        text = str(ref)
        near = difflib.get_close_matches(text, list(candidates), n=1, cutoff=0.75)
        if near:
            return f"did you mean {near[0]} ({candidates[near[0]][2]})?"
        # The paths below the deepest path above the reference that has any.
        best = -1
        for kind, path, _ in candidates.values():
            if kind != ref.kind or not path:
                continue
            common = 0
            for a, b in zip(path, ref.path):
                if a != b:
                    break
                common += 1
            best = max(best, min(common, len(path) - 1, len(ref.path) - 1))
        if best < 0:
            return generic
        below = sorted(c for c, (kind, path, _) in candidates.items()
                       if kind == ref.kind and len(path) > best
                       and path[:best] == ref.path[:best])
        shown = ", ".join(f"{c} ({candidates[c][2]})" for c in below[:3])
        return f"nearby: {shown}"


def _leaf_paths(ctx: Context, kind: str, instance: str | None, limit: int = 2000) -> list[Path]:
    try:
        root = ctx.value(kind, (), instance)
    except WriteError:
        return []
    out: list[Path] = []
    stack: list[tuple[Path, Any]] = [((), root)]
    while stack and len(out) < limit:
        path, value = stack.pop()
        if path:
            out.append(path)
        if isinstance(value, PMap) and len(path) < 8:
            stack.extend(((*path, k), v) for k, v in value.items())
    return out


def _check_cycles(expanded: list[tuple[_CallInfo, str | None]],
                  successors: Sequence[Sequence[int]],
                  edge_paths: Mapping[tuple[int, int], set[tuple[str, str]]],
                  out: list[Diagnostic], label: Label) -> set[int]:
    cyclic: set[int] = set()
    for component in strongly_connected(successors):
        if len(component) < 2:
            continue
        cyclic.update(component)
        members = set(component)
        steps = []
        for v in component:
            for w in successors[v]:
                if w in members:
                    written, read = sorted(edge_paths[(v, w)])[0]
                    steps.append(f"{label(w)} reads {read}, written by {label(v)}")
        first = expanded[component[0]]
        indexes = tuple(sorted({expanded[v][0].index for v in component}))
        out.append(Diagnostic(
            "cycle",
            "calls " + ", ".join(str(i) for i in indexes) + " depend on each other in a loop: "
            + "; ".join(steps[:6]) + ("; ..." if len(steps) > 6 else ""),
            call=first[0].index, instance=first[1], tool=first[0].tool, calls=indexes,
            hint="break the loop: let one of these calls read its value from the context "
                 "or from a call outside the loop, or split the plan in two",
        ))
    return cyclic


def _required(expr: Expr) -> list[Reference]:
    """The references an expression cannot do without (every operand of &&, a bare ref)."""
    match expr:
        case Reference():
            return [expr]
        case And(operands=ops):
            return [r for op in ops for r in _required(op)]
    return []  # a literal needs nothing; an || needs no operand in particular


def _guards(expanded: list[tuple[_CallInfo, str | None]], node_params: list[tuple[Param, ...]],
            order: Sequence[int], cyclic: set[int]) -> list[set[tuple[int, int]]]:
    """For each node, the branch choices it needs: (writer node, alternative) pairs.

    A node needs a writer when that writer is the only source of a value it requires (not
    provided by the context). It then needs what the writer needs, and, when the writer
    writes the value in only one of two or more alternatives, that alternative.
    """
    guards: list[set[tuple[int, int]]] = [set() for _ in expanded]
    for node_id in order:
        if node_id in cyclic:
            continue
        for param in node_params[node_id]:
            required = set(_required(param.expr))
            for read in param.reads:
                if read.reference not in required or read.provided or len(read.writers) != 1:
                    continue
                writer = read.writers[0]
                guards[node_id] |= guards[writer]
                output = expanded[writer][0].output
                if output is None or len(output.alternatives) < 2:
                    continue
                alts = {alt for alt, group in enumerate(output.alternatives)
                        if any(t.kind == read.reference.kind
                               and overlaps(t.path, read.reference.path) for t in group.targets)}
                if len(alts) == 1:
                    guards[node_id].add((writer, alts.pop()))
    return guards


def _exclusive(a: set[tuple[int, int]], b: set[tuple[int, int]]) -> bool:
    """Two calls are on mutually exclusive branches when they need different alternatives
    of the same call's output."""
    chosen: dict[int, set[int]] = {}
    for writer, alt in a:
        chosen.setdefault(writer, set()).add(alt)
    return any(writer in chosen and alt not in chosen[writer] for writer, alt in b)


def _check_unreachable(expanded: list[tuple[_CallInfo, str | None]],
                       guards: list[set[tuple[int, int]]], out: list[Diagnostic],
                       label: Label) -> None:
    for node_id, needed in enumerate(guards):
        by_writer: dict[int, set[int]] = {}
        for writer, alt in needed:
            by_writer.setdefault(writer, set()).add(alt)
        for writer, alts in sorted(by_writer.items()):
            if len(alts) > 1:
                info, instance = expanded[node_id]
                w_info = expanded[writer][0]
                names = " and ".join(
                    f"alternative {a + 1} ({_alt_text(w_info.output, a)})" for a in sorted(alts))
                out.append(Diagnostic(
                    "unreachable",
                    f"this call needs both {names} of {label(writer)}'s _outputPath, "
                    "but only one of them is ever written, so it can never run",
                    call=info.index, instance=instance, tool=info.tool,
                    calls=tuple(sorted({info.index, w_info.index})),
                    hint="read the alternatives with || instead, or from different calls",
                ))


def _alt_text(output: OutputExpr | None, alt: int) -> str:
    if output is None:
        return "?"
    return " && ".join(str(t) for t in output.alternatives[alt].targets)


def _check_write_races(expanded: list[tuple[_CallInfo, str | None]],
                       index: PathIndex[tuple[int, int, Reference]],
                       successors: Sequence[Sequence[int]], position: Sequence[int],
                       guards: list[set[tuple[int, int]]], cyclic: set[int],
                       out: list[Diagnostic], label: Label) -> None:
    # Pairs are visited in (a, b) order as they are found, never collected first: a plan
    # where thousands of calls write one path has millions of pairs. Past MAX_RACE_PAIRS
    # the search stops, so its time stays bounded.
    reported = skipped = examined = 0
    stopped = False
    component_of: dict[int, int] | None = None
    for a, (info_a, inst_a) in enumerate(expanded):
        if info_a.output is None:
            continue
        found: dict[int, tuple[Reference, Reference]] = {}
        for target in info_a.output.targets:
            for other, _, other_target in index.overlapping(target.kind, target.path):
                # Only the same layer races: global with global, one instance with itself.
                # (Global and instance writes never race: the instance layer is applied
                # on top whatever the order they arrive in.)
                if other > a and inst_a == expanded[other][1]:
                    found.setdefault(other, (target, other_target))
        for b in sorted(found):
            if examined >= MAX_RACE_PAIRS:
                stopped = True
                break
            examined += 1
            if _exclusive(guards[a], guards[b]):
                continue
            if a in cyclic and b in cyclic:
                # Calls of one loop depend on each other (reported as a cycle); the
                # topological order cannot tell which reaches which inside it.
                if component_of is None:
                    component_of = {v: c for c, members in enumerate(strongly_connected(successors))
                                    for v in members}
                if component_of[a] == component_of[b]:
                    continue
            first, second = (a, b) if position[a] <= position[b] else (b, a)
            if reaches(successors, position, first, second):
                continue
            if reported >= MAX_RACES:
                skipped += 1
                continue
            reported += 1
            ta, tb = found[b]
            info_b = expanded[b][0]
            out.append(Diagnostic(
                "write-race",
                f"{label(a)} writes {ta} and {label(b)} writes {tb}; neither waits for the other, "
                "so the result depends on which finishes last",
                call=info_a.index, instance=inst_a, tool=info_a.tool, pointer="/_outputPath",
                expression=info_a.output_text, span=ta.span,
                calls=tuple(sorted({info_a.index, info_b.index})),
                hint="make one call read the other's result, write to different paths, "
                     "or put them on different alternatives of one branching call",
            ))
        if stopped:
            break
    if stopped:
        out.append(Diagnostic(
            "too-many", f"at least {skipped} more write races not reported: the search stopped "
            f"after {MAX_RACE_PAIRS} pairs of calls writing overlapping paths"))
    elif skipped:
        out.append(Diagnostic("too-many", f"{skipped} more write races not reported"))


def _check_scope_races(expanded: list[tuple[_CallInfo, str | None]],
                       index: PathIndex[tuple[int, int, Reference]],
                       successors: Sequence[Sequence[int]],
                       predecessors: Sequence[Sequence[int]],
                       guards: list[set[tuple[int, int]]], out: list[Diagnostic],
                       label: Label) -> None:
    reported = skipped = 0
    for node_id, (info, instance) in enumerate(expanded):
        if not info.scopes:
            continue
        if reported >= MAX_RACES:  # each check walks the graph: stop, and say so below
            skipped += 1
            continue
        before = closure(predecessors, node_id)
        after = closure(successors, node_id)
        racing: dict[int, Reference] = {}  # rendered only when shown
        for kind in info.scopes:
            for writer, _, target in index.under_kind(kind):
                if (writer == node_id or writer in before or writer in after
                        or not _visible(expanded[writer][1], instance)
                        or _exclusive(guards[node_id], guards[writer])):
                    continue
                racing.setdefault(writer, target)
        if racing:
            reported += 1
            shown = "; ".join(f"{label(w)} writes {t}" for w, t in sorted(racing.items())[:5])
            related = sorted({expanded[w][0].index for w in racing} - {info.index})
            more = len(related) - MAX_RELATED
            out.append(Diagnostic(
                "scope-race",
                f"_scopes shows this call a snapshot of {', '.join(info.scopes)} taken when it "
                f"starts, and calls it does not wait for may write there: {shown}"
                + (f" (calls lists {MAX_RELATED} of {len(related)} such calls)" if more > 0 else ""),
                call=info.index, instance=instance, tool=info.tool, pointer="/_scopes",
                calls=tuple(sorted({info.index, *related[:MAX_RELATED]})),
                hint="read the values it needs through parameters (†state.x), which wait for "
                     "their writers, instead of relying on the scoped snapshot",
            ))
    if skipped:
        out.append(Diagnostic(
            "too-many", f"{skipped} more calls with _scopes were not checked for scope races "
                        f"after {MAX_RACES} were reported"))


# -- types -------------------------------------------------------------------------------


def _check_types(expanded: list[tuple[_CallInfo, str | None]],
                 node_params: list[tuple[Param, ...]], registry: ToolRegistry,
                 ctx: Context, inputs: _Inputs, out: list[Diagnostic]) -> None:
    plain: dict[str, Any] = {}  # each tool's schema, thawed once
    for node_id, (info, instance) in enumerate(expanded):
        tool = registry.get(info.tool) if info.tool else None
        if tool is None:
            continue
        if tool.name not in plain:
            plain[tool.name] = thaw(tool.schema)
        for param in node_params[node_id]:
            accepted = schema_types_at(plain[tool.name], param.path)
            if accepted is None:
                continue
            produced, source = _types_of(param, expanded, registry, ctx, inputs, instance)
            if produced is None or types_compatible(produced, accepted):
                continue
            name = param.pointer.lstrip("/").replace("/", ".")
            out.append(Diagnostic(
                "type-mismatch",
                f"{param.text} can only be {_types_text(produced)} ({source}), but parameter "
                f"{name!r} of {info.tool} needs {_types_text(accepted)}",
                call=info.index, instance=instance, tool=info.tool, pointer=param.pointer,
                expression=param.text, span=param.expr.span,
                hint=("declare the input with the type the parameter needs, or read another path"
                      if source == "the input message's schema" else
                      "read a path that holds the right type, or change the producer's _output"),
            ))


def _types_text(types: frozenset[str]) -> str:
    names = sorted(types)
    words = [("an " if t[0] in "aeiou" else "a ") + t for t in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _types_of(param: Param, expanded: list[tuple[_CallInfo, str | None]],
              registry: ToolRegistry, ctx: Context, inputs: _Inputs,
              instance: str | None) -> tuple[frozenset[str] | None, str]:
    reads = {r.reference: r for r in param.reads}
    sources: list[str] = []

    def of(expr: Expr) -> frozenset[str] | None:
        match expr:
            case Literal(value=value):
                return frozenset({json_type(value)})
            case Reference():
                return ref_types(reads[expr])
            case Or(operands=ops):
                parts = [of(op) for op in ops]
                if any(p is None for p in parts):
                    return None
                return frozenset().union(*[p for p in parts if p is not None])
            case And(operands=ops):
                return of(ops[-1])
        return None

    def ref_types(read: Read) -> frozenset[str] | None:
        ref = read.reference
        found: set[str] = set()
        if read.provided:
            try:
                value = ctx.value(ref.kind, ref.path, instance)
            except WriteError:
                return None
            found.add(json_type(value))
            sources.append("the value in the context")
        if not read.writers and not read.provided:
            # An input supplied at run time: its type is what an input message's schema
            # declares at the path (SEMANTICS §6), when one does.
            schema = inputs.declaring(ref.path) if ref.kind == "input" else None
            if schema is None:
                return None
            sources.append("the input message's schema")
            return schema_types_at(schema, ref.path)
        for writer in read.writers:
            info = expanded[writer][0]
            tool = registry.get(info.tool) if info.tool else None
            if info.output is None:
                return None
            for target in info.output.targets:
                if target.kind != ref.kind or not overlaps(target.path, ref.path):
                    continue
                if not is_prefix(target.path, ref.path):
                    return None  # reads above what is written: shape unknown
                rest = ref.path[len(target.path):]
                if info.method in (Method.PUSH, Method.CONCAT):
                    if not rest:
                        found.add("array")
                        sources.append(f"written with {info.method.value} by call {info.index}")
                        continue
                    return None
                if tool is None or tool.output_schema is None:
                    return None
                types = schema_types_at(tool.output_schema, rest)
                if types is None:
                    return None
                found.update(types)
                sources.append(f"the _output schema of {info.tool}, call {info.index}")
        return frozenset(found) if found else None

    result = of(param.expr)
    return result, (sources[0] if sources else "")

"""The plan graph: the one frozen value every check takes.

:func:`build_graph` turns the calls read by :mod:`obelisk.compiler.reading`, expanded into
nodes (one per call, or per call and instance), into a :class:`PlanGraph`: it files every
output target in a path index, links each read to the writers it overlaps (the edges),
orders the nodes, finds the loops, and works out each node's branch guards. The checks in
:mod:`obelisk.compiler.checks` are functions of this value alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from attrs import frozen
from pyrsistent import PMap

from obelisk.compiler.edges import EdgeMap, EdgeView, Links, Target
from obelisk.compiler.graph import acyclic_order, strongly_connected, topological_order
from obelisk.compiler.index import LayeredIndex
from obelisk.compiler.nodes import Edge, Node, Param, Read, is_flat, sole_text
from obelisk.compiler.reading import CallInfo
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.ast import And, Expr, Reference, references
from obelisk.core.context import Context
from obelisk.core.errors import WriteError
from obelisk.core.paths import Path, overlaps
from obelisk.core.values import present


@frozen
class Limits:
    """Bounds on the checks' work, so a huge plan cannot make them run for minutes."""

    max_races: int  # write races reported at most (then one ``too-many`` info)
    max_related: int  # related calls listed in one scope-race diagnostic at most
    max_race_pairs: int  # pairs of overlapping writers examined for write races at most
    hint_budget: int  # candidate paths the did-you-mean searches compare, all together
    max_edges: int = 2_000_000  # dependencies between nodes at most (past it: too-dense)
    max_cycle_steps: int = 1000  # edges listed in one cycle's details at most


@frozen
class Inputs:
    """What the context says about ``input``: whether it has input messages, and the
    schemas they declare (in context order)."""

    present: bool
    schemas: tuple[PMap[str, Any], ...]

    @classmethod
    def of(cls, ctx: Context) -> Inputs:
        """Read the context's input messages once."""
        present = False
        schemas = []
        for message in ctx.described():  # the input messages among them
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


@frozen
class PlanGraph:
    """The nodes of a plan and everything the checks need to know about them.

    ``index`` files every output target under (layer, kind, path) as a :data:`Target`
    (built once, then only read). ``edges`` and ``edge_at`` build each edge when read
    (see :mod:`obelisk.compiler.edges`). ``successors``/``predecessors`` are adjacency
    tuples by node id (equal ones shared), ``by_position`` the successors sorted by
    position; ``edge_count`` is the number of edges (``len(edges)`` unless too dense),
    counted before any edge is linked. Past ``limits.max_edges`` the graph is *too
    dense*: it is not linked (no edges, every node's successors and predecessors empty,
    no read's writers), not ordered (``order`` is node order, no
    loops, no guards), and only the ``too-dense`` error is reported about its structure
    (the checks that follow reads to their writers are skipped).
    ``order`` a topological order (each loop kept together), ``positions`` each node's
    place in it. ``loops`` are the strongly connected components of two nodes or more,
    ``loop_of`` maps each of their nodes to its loop's number. ``guards`` are the nodes'
    branch guards (as on the nodes). ``tools`` is None when no registry was given.
    """

    nodes: tuple[Node, ...]
    index: LayeredIndex[Target]
    edges: Sequence[Edge]
    edge_at: Mapping[tuple[int, int], Edge]
    successors: tuple[tuple[int, ...], ...]
    predecessors: tuple[tuple[int, ...], ...]
    by_position: tuple[tuple[int, ...], ...]
    edge_count: int
    order: tuple[int, ...]
    positions: tuple[int, ...]
    loops: tuple[tuple[int, ...], ...]
    loop_of: Mapping[int, int]
    guards: tuple[frozenset[tuple[int, int]], ...]
    context: Context
    inputs: Inputs
    tools: ToolRegistry | None
    limits: Limits
    #: False when counting the edges stopped once it passed ``limits.max_edges``:
    #: ``edge_count`` is then a lower bound.
    edge_count_exact: bool = True

    @property
    def too_dense(self) -> bool:
        """More edges than ``limits.max_edges``: the structural checks are skipped."""
        return self.edge_count > self.limits.max_edges


def visible(writer_instance: str | None, reader_instance: str | None) -> bool:
    """Whether a write is seen by a reader: a global write by every instance, an instance
    write only by that instance."""
    return writer_instance is None or writer_instance == reader_instance


def build_graph(expanded: Sequence[tuple[CallInfo, str | None]], ctx: Context,
                tools: ToolRegistry | None, limits: Limits) -> PlanGraph:
    """The graph of the nodes ``expanded`` (node id -> its call and instance)."""
    index: LayeredIndex[Target] = LayeredIndex()
    for node_id, (info, instance) in enumerate(expanded):
        if info.output is not None:
            for alt, group in enumerate(info.output.alternatives):
                for target in group.targets:
                    index.add(instance, target.kind, target.path, (node_id, alt, target))
    n = len(expanded)
    links, params, counted = _linked(expanded, index, ctx, limits.max_edges)
    edge_count, exact = counted if counted is not None else (0, True)
    dense = edge_count > limits.max_edges
    if dense:
        # Too dense to order in bounded time: the too-dense error says so, and the graph
        # is left unordered and unlinked (no node of it runs).
        successors = predecessors = links.unlinked()
        order: tuple[int, ...] = tuple(range(n))
        loops: tuple[tuple[int, ...], ...] = ()
    else:
        successors, predecessors = links.adjacency()
        acyclic = acyclic_order(successors, predecessors)
        if acyclic is not None:
            order, loops = tuple(acyclic), ()
        else:
            components = strongly_connected(successors)
            order = tuple(topological_order(successors, components))
            loops = tuple(tuple(c) for c in components if len(c) > 1)
    edges = EdgeView(links, successors)
    if not dense:
        edge_count = len(edges)
    positions = [0] * n
    for place, node_id in enumerate(order):
        positions[node_id] = place
    loop_of = {v: number for number, members in enumerate(loops) for v in members}
    guards = _guards(expanded, params, order, loop_of)
    nodes = tuple(
        Node(node_id, info.index, instance, info.call, info.tool, params[node_id],
             info.output, info.output_text, info.method, info.scopes, guards[node_id],
             info.prescribed, sole_text(info.output, info.output_text), is_flat(info.call))
        for node_id, (info, instance) in enumerate(expanded)
    )
    return PlanGraph(
        nodes=nodes, index=index, edges=edges,
        edge_at=EdgeMap(links, edges, successors),
        successors=successors, predecessors=predecessors,
        by_position=_by_position(successors, positions), edge_count=edge_count,
        edge_count_exact=exact,
        order=order, positions=tuple(positions), loops=loops,
        loop_of=MappingProxyType(loop_of), guards=guards, context=ctx,
        inputs=Inputs.of(ctx), tools=tools, limits=limits,
    )


#: Up to this many edges (as :attr:`Links.bound` counts them), a plan is linked in one
#: pass, each group's writers found as it is made; past it, the edges are counted from
#: the groups first. The one pass is the faster way (3% of compiling the plans of
#: bench/compile.py), but what it makes before the bound stops it is not kept: a few tens
#: of megabytes at this bound, where the limit's two million edges would take hundreds.
EAGER_BOUND = 250_000


def _linked(expanded: Sequence[tuple[CallInfo, str | None]], index: LayeredIndex[Target],
            ctx: Context, limit: int) -> tuple[Links, list[tuple[Param, ...]],
                                               tuple[int, bool] | None]:
    """Each node's parameters with their reads linked to the writers they overlap (in
    the global layer and the node's own instance only), and, when it was needed, the
    count of the edges (:meth:`Links.count`; None: at most ``limit``, so not counted).

    Linked in one pass while :attr:`Links.bound` shows the edges are at most ``limit``
    and :data:`EAGER_BOUND` (most plans). Past it, linking starts again lazily: every read is grouped first, the
    edges are counted from the groups, and the reads get their writers only when the plan
    is not too dense; a too-dense graph is not linked, so no read has writers (a tuple
    per reader would be quadratic in the calls, and none of it runs).
    """
    links = Links(len(expanded))
    params = _link(expanded, index, ctx, links, min(limit, EAGER_BOUND))
    if params is not None:
        return links, params, None
    links = Links(len(expanded), lazy=True)
    grouped = [[(refs, [links.group(node_id, instance, ref, index) for ref in refs])
                for refs in _refs(info)] for node_id, (info, instance) in enumerate(expanded)]
    counted = links.count(limit)
    dense = counted is not None and counted[0] > limit
    if not dense:
        links.fill()
    params = []
    for node_id, (info, instance) in enumerate(expanded):
        node = []
        for (pointer, path, text, expr), (refs, groups) in zip(
                info.params, grouped[node_id], strict=True):
            reads = tuple(Read(ref, () if group is None or dense
                               else links.writers(node_id, group),
                               _provided(ctx, ref, instance))
                          for ref, group in zip(refs, groups, strict=True))
            node.append(Param(pointer, path, text, expr, reads))
        params.append(tuple(node))
    return links, params, counted


def _refs(info: CallInfo) -> list[tuple[Reference, ...]]:
    # Most parameters are one plain reference: no walk of the expression for it.
    return [(expr,) if type(expr) is Reference else tuple(references(expr))
            for _pointer, _path, _text, expr in info.params]


def _link(expanded: Sequence[tuple[CallInfo, str | None]], index: LayeredIndex[Target],
          ctx: Context, links: Links, limit: int) -> list[tuple[Param, ...]] | None:
    """Each node's parameters with their reads linked to the writers they overlap; None
    as soon as :attr:`Links.bound` passes ``limit`` (the edges must be counted first)."""
    node_params: list[tuple[Param, ...]] = []
    for node_id, (info, instance) in enumerate(expanded):
        params = []
        for pointer, path, text, expr in info.params:
            # Most parameters are one plain reference: no walk of the expression for it.
            refs = (expr,) if type(expr) is Reference else references(expr)
            reads = []
            for ref in refs:
                group = links.group(node_id, instance, ref, index)
                if links.bound > limit:
                    return None
                reads.append(Read(ref, () if group is None else links.writers(node_id, group),
                                  _provided(ctx, ref, instance)))
            params.append(Param(pointer, path, text, expr, tuple(reads)))
        node_params.append(tuple(params))
    return node_params


def _by_position(successors: Sequence[tuple[int, ...]],
                 positions: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Each node's successors sorted by position (equal tuples sorted once, shared)."""
    done: dict[int, tuple[int, ...]] = {}
    out = []
    for succ in successors:
        found = done.get(id(succ))
        if found is None:
            found = done[id(succ)] = tuple(sorted(succ, key=positions.__getitem__))
        out.append(found)
    return tuple(out)


def _provided(ctx: Context, ref: Reference, instance: str | None) -> bool:
    """Whether the initial context provides ``ref``: it resolves to a present value
    (neither MISSING nor null, as ``||`` tests), so a null that no call writes dangles."""
    try:
        return present(ctx.value(ref.kind, ref.path, instance))
    except WriteError:
        return True  # the read will fail at run time with the write's own error


def _required(expr: Expr) -> list[Reference]:
    """The references an expression cannot do without (every operand of &&, a bare ref)."""
    match expr:
        case Reference():
            return [expr]
        case And(operands=ops):
            return [r for op in ops for r in _required(op)]
    return []  # a literal needs nothing; an || needs no operand in particular


def _guards(expanded: Sequence[tuple[CallInfo, str | None]],
            node_params: Sequence[tuple[Param, ...]], order: Sequence[int],
            cyclic: Mapping[int, int]) -> tuple[frozenset[tuple[int, int]], ...]:
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
    # Most nodes have no guard: they share one empty set (a new one is 216 bytes).
    return tuple(frozenset(g) if g else _NO_GUARDS for g in guards)


_NO_GUARDS: frozenset[tuple[int, int]] = frozenset()


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

"""The values of a compiled plan: reads, parameters, nodes, edges and the plan itself.

Every one is frozen. A :class:`Node` is one call (one per instance when instancing) as the
graph sees it; its :attr:`Node.label` is how every message names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import field, frozen
from pyrsistent import PMap, pmap

from obelisk.compiler.diagnostics import Diagnostic, call_label
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.ast import Expr, OutputExpr, Reference
from obelisk.core.context import Context
from obelisk.core.methods import Method
from obelisk.core.paths import Path
from obelisk.core.plain import sorted_items
from obelisk.core.values import NON_STRING_SCALAR_TYPES, Frozen

__all__ = ["CompiledPlan", "Edge", "Node", "Param", "Read"]


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
    #: The meta-properties the tool prescribes and the call leaves out (§5): the node
    #: behaves as if the call had written them, while ``call`` stays the call as written.
    prescribed: PMap[str, Frozen] = field(factory=pmap)
    #: The ``_outputPath`` of the messages the node writes when its output is a single
    #: target (one alternative of one target), else None: ``output_text`` itself when
    #: that is the target as a reference writes it (the messages then share the plan's
    #: string), else the target's canonical text (:func:`sole_text`). Found once, when
    #: compiling, so no run renders it again.
    sole_text: str | None = None
    #: True when every member of ``call`` is a JSON scalar and no string of a parameter
    #: starts with a backslash (:func:`is_flat`): the call as plain JSON is then its
    #: members as they are, with nothing to thaw or unescape.
    #: (These two are derived from ``call``, ``output`` and ``output_text`` by the
    #: compiler's ``build_graph``, the one place nodes are made: a node made or changed
    #: by other code must set them to match.)
    flat: bool = False

    @property
    def reads(self) -> tuple[Read, ...]:
        """Every reference the node's parameters read, parameter by parameter."""
        return tuple(r for p in self.params for r in p.reads)

    @property
    def label(self) -> str:
        """How messages name the node: ``call 3 (tool) [instance]``."""
        return call_label(self.index, self.tool, self.instance)

    def diagnostic(self, code: str, message: str, **fields: Any) -> Diagnostic:
        """A diagnostic about this node: its call, instance and tool filled in."""
        return Diagnostic(code, message, call=self.index, instance=self.instance,
                          tool=self.tool, **fields)


def message_path(target: Reference, written: str | None) -> str:
    """The ``_outputPath`` of the messages that write ``target`` for a call whose
    ``_outputPath`` is ``written``: the target as a reference, and ``written`` itself
    when that is the very text (the messages then share the plan's string)."""
    rendered = str(target)
    return written if rendered == written else rendered


def sole_text(output: OutputExpr | None, text: str | None) -> str | None:
    """:attr:`Node.sole_text` of a node whose ``_outputPath`` ``text`` parsed to
    ``output``."""
    if output is None or len(output.alternatives) != 1:
        return None
    targets = output.alternatives[0].targets
    if len(targets) != 1:
        return None
    return message_path(targets[0], text)


def is_flat(call: Frozen) -> bool:
    """:attr:`Node.flat` of a node whose frozen call is ``call``."""
    if type(call) is not PMap:
        return False
    for key, value in sorted_items(call):
        kind = type(value)
        if kind is str:
            if value[:1] == "\\" and key[:1] != "_":  # type: ignore[index]  # it is a str
                return False
        elif kind not in NON_STRING_SCALAR_TYPES:  # an object or array: thawed
            return False
    return True


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
    reader, sorted (a sequence that builds each :class:`Edge` when read, so a dense plan's
    million edges take no memory; it equals the tuple of the same edges); ``order`` is a topological order of node ids (cycles kept together);
    ``successors``/``predecessors`` are adjacency tuples by node id. ``ok`` is true when no
    diagnostic is an error. ``invalid`` maps the id of every node that an error diagnostic
    is about to those diagnostics: a runner that keeps going past bad calls skips exactly
    these nodes (and what needs their results).
    """

    calls: tuple[Frozen, ...]
    nodes: tuple[Node, ...]
    edges: Sequence[Edge]
    diagnostics: tuple[Diagnostic, ...]
    order: tuple[int, ...]
    successors: tuple[tuple[int, ...], ...]
    predecessors: tuple[tuple[int, ...], ...]
    context: Context
    tools: ToolRegistry | None
    instanced: bool
    invalid: PMap[int, tuple[Diagnostic, ...]] = field(factory=pmap)

    @property
    def ok(self) -> bool:
        """True when no diagnostic is an error."""
        return not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        """The error diagnostics, in order."""
        return tuple(d for d in self.diagnostics if d.is_error)

    def tool_of(self, node: Node) -> Tool | None:
        """The tool a node calls, when a registry was given and knows it."""
        if self.tools is None or node.tool is None:
            return None
        return self.tools.get(node.tool)

    def to_json(self) -> dict[str, Any]:
        """The graph as plain JSON (see :mod:`obelisk.compiler.export`)."""
        from obelisk.compiler.export import to_json

        result: dict[str, Any] = to_json(self)
        return result

    def to_mermaid(self, legend: bool = True) -> str:
        """The graph as a Mermaid flowchart, with a legend of what it shows unless
        ``legend`` is false."""
        from obelisk.compiler.export import to_mermaid

        text: str = to_mermaid(self, legend)
        return text

    def to_dot(self, legend: bool = True) -> str:
        """The graph as Graphviz DOT, with a legend of what it shows unless ``legend``
        is false."""
        from obelisk.compiler.export import to_dot

        text: str = to_dot(self, legend)
        return text

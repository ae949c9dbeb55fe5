"""Types: a parameter read whose known JSON types cannot meet what the tool accepts.

Type inference is static and partial: a literal has its own type; a read has the types
its writers' ``_output`` schemas (or ``push``/``concat``: an array) give at the path read,
or those of the value in the context, or those an input message's schema declares; an
``||`` has the union of its operands', an ``&&`` its last operand's. Whatever cannot be
known (no schema, a read above what is written) is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from obelisk.compiler.diagnostics import Diagnostic, TypeMismatchDetails
from obelisk.compiler.nodes import Node, Param, Read
from obelisk.compiler.plangraph import PlanGraph
from obelisk.compiler.schemas import schema_types_at, types_compatible
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.ast import And, Expr, Literal, Or, Reference
from obelisk.core.errors import WriteError
from obelisk.core.methods import Method
from obelisk.core.paths import Path, is_prefix, overlaps
from obelisk.core.plain import thaw
from obelisk.core.text import article
from obelisk.core.values import json_type

_UNKNOWN = object()

#: Inferred types (None: unknown) and where they come from, first source first.
Inferred = tuple[frozenset[str] | None, tuple[str, ...]]


def check_types(graph: PlanGraph) -> Iterator[Diagnostic]:
    """A ``type-mismatch`` error per parameter whose inferred types the tool's schema
    cannot accept (only when tools were given)."""
    registry = graph.tools
    if registry is None or graph.too_dense:
        return  # too dense: no edges to follow (too-dense is the one error about them)
    plain: dict[str, Any] = {}  # each tool's schema, thawed once
    # Reads of one path share one tuple of writers: infer their types once, not once per
    # reader (1,000 readers of what 1,000 calls write would be a million inferences).
    memo: dict[Any, Inferred] = {}
    known: dict[tuple[str, Path], Any] = {}  # (tool, parameter path) -> accepted types
    for node in graph.nodes:
        tool = registry.get(node.tool) if node.tool else None
        if tool is None:
            continue
        if tool.name not in plain:
            plain[tool.name] = thaw(tool.schema)
        for param in node.params:
            # Many calls of a tool set the same parameter: find its types once.
            where = (tool.name, param.path)
            accepted = known.get(where, _UNKNOWN)
            if accepted is _UNKNOWN:
                accepted = known[where] = schema_types_at(plain[tool.name], param.path)
            if accepted is None:
                continue
            produced, sources = _types_of(param.expr,
                                          _Reads(graph, registry, node, param, memo))
            if produced is None or types_compatible(produced, accepted):
                continue
            yield _mismatch(node, param, produced, accepted, sources[0] if sources else "")


def _mismatch(node: Node, param: Param, produced: frozenset[str], accepted: frozenset[str],
              source: str) -> Diagnostic:
    name = param.pointer.lstrip("/").replace("/", ".")
    return node.diagnostic(
        "type-mismatch",
        f"{param.text} can only be {_types_text(produced)} ({source}), but parameter "
        f"{name!r} of {node.tool} needs {_types_text(accepted)}",
        pointer=param.pointer, expression=param.text, span=param.expr.span,
        hint=_hint(source, param.expr),
        details=TypeMismatchDetails(node.id, tuple(sorted(produced)), tuple(sorted(accepted)),
                                    source),
    )


def _hint(source: str, expr: Expr) -> str:
    """How to fix a mismatch, by where the known type comes from."""
    if source == "the input message's schema":
        return "declare the input with the type the parameter needs, or read another path"
    if source == "the value in the context":
        what = str(expr) if isinstance(expr, Reference) else "the path read"
        return (f"change the value the context gives for {what} to the type the parameter "
                "needs, or read another path")
    return "read a path that holds the right type, or change the producer's _output"


def _types_text(types: frozenset[str]) -> str:
    names = sorted(types)
    words = [article(t) for t in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


class _Reads:
    """What the inference needs to know about one parameter's reads (read-only)."""

    def __init__(self, graph: PlanGraph, registry: ToolRegistry, node: Node,
                 param: Param, memo: dict[Any, Inferred]) -> None:
        self.graph, self.registry, self.instance = graph, registry, node.instance
        self.reads = {r.reference: r for r in param.reads}
        self.memo = memo

    def types(self, read: Read) -> Inferred:
        """The types of one read, shared by every read of the same writers and path."""
        key = (id(read.writers), read.reference, read.provided,
               self.instance if read.provided else None)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = _read_types(read, self)
        return found


def _types_of(expr: Expr, reads: _Reads) -> Inferred:
    """The JSON types ``expr`` may evaluate to, and their sources (one case per form)."""
    match expr:
        case Literal(value=value):
            return frozenset({json_type(value)}), ()
        case Reference():
            return reads.types(reads.reads[expr])
        case Or(operands=ops):
            parts = [_types_of(op, reads) for op in ops]
            sources = tuple(s for _, found in parts for s in found)
            if any(types is None for types, _ in parts):
                return None, sources
            return frozenset().union(*[t for t, _ in parts if t is not None]), sources
        case And(operands=ops):
            return _types_of(ops[-1], reads)  # an && evaluates to its last operand
    return None, ()  # pragma: no cover


def _read_types(read: Read, reads: _Reads) -> Inferred:
    ref = read.reference
    found: set[str] = set()
    sources: list[str] = []
    if read.provided:
        try:
            value = reads.graph.context.value(ref.kind, ref.path, reads.instance)
        except WriteError:
            return None, ()
        found.add(json_type(value))
        sources.append("the value in the context")
    if not read.writers and not read.provided:
        # An input supplied at run time: its type is what an input message's schema
        # declares at the path, when one does.
        schema = reads.graph.inputs.declaring(ref.path) if ref.kind == "input" else None
        if schema is None:
            return None, ()
        return schema_types_at(schema, ref.path), ("the input message's schema",)
    for writer in read.writers:
        written = _written_types(reads.graph.nodes[writer], ref, reads.registry)
        if written is None:
            return None, tuple(sources)
        found.update(written[0])
        sources.extend(written[1])
    return (frozenset(found) if found else None), tuple(sources)


def _written_types(writer: Node, ref: Reference,
                   registry: ToolRegistry) -> tuple[set[str], list[str]] | None:
    """The types ``writer`` may write where ``ref`` reads, with their sources; None when
    they cannot be known."""
    if writer.output is None:
        return None
    tool = registry.get(writer.tool) if writer.tool else None
    found: set[str] = set()
    sources: list[str] = []
    for target in writer.output.targets:
        if target.kind != ref.kind or not overlaps(target.path, ref.path):
            continue
        if not is_prefix(target.path, ref.path):
            return None  # reads above what is written: shape unknown
        rest = ref.path[len(target.path):]
        if writer.method in (Method.PUSH, Method.CONCAT):
            if rest:
                return None
            found.add("array")
            sources.append(f"written with {writer.method.value} by call {writer.index}")
            continue
        if tool is None or tool.output_schema is None:
            return None
        types = schema_types_at(tool.output_schema, rest)
        if types is None:
            return None
        found.update(types)
        sources.append(f"the _output schema of {writer.tool}, call {writer.index}")
    return found, sources

"""Unknown fields: a read below a path whose producer's schema lists its keys names a key
that is not among them.

The producers of a read are the writers it overlaps and the context's messages with a
``schema``. Only some of them say which keys a value has:
- the first alternative of a writer's ``_outputPath`` (and its fan-out group), written with
  ``set``, has the shape of its tool's ``_output`` schema;
- the last alternative, when there are two or more, holds an error object
  ``{type, message, data?}`` (it may also be chosen explicitly, so it is never closed);
- a data message's ``schema`` describes its kind from the root.
Any other write (another method, a middle alternative, a tool without ``_output``) says
nothing about keys and is left out. A key is unknown only when every producer that lists
the keys at its level omits it and no producer writes at or below it; the read is then a
warning, an error when each of those producers forbids other keys
(``additionalProperties: false`` or ``unevaluatedProperties: false``). A producer whose
schema declares the value above the key as an array or a scalar (its ``type``) lists no
keys there: a key below an array, or anything below a string, can never have a value, and
the hint reads the array's first item (``†state.n.news.0.webUrl``). A read the
context already provides a value for is never unknown, and one no call writes is left to
the dangling-reference check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from attrs import frozen
from pyrsistent import PMap

from obelisk.compiler.codes import Severity
from obelisk.compiler.diagnostics import Diagnostic, ReferenceDetails
from obelisk.compiler.hints import close_match
from obelisk.compiler.nodes import Node, Param, Read
from obelisk.compiler.plangraph import PlanGraph, visible
from obelisk.core.ast import Reference
from obelisk.core.methods import Method
from obelisk.core.paths import Path, is_prefix, overlaps
from obelisk.core.pathtext import render_reference
from obelisk.core.plain import thaw
from obelisk.core.text import article

#: What the last of two or more alternatives holds: the error object of a routed failure.
ERROR_OBJECT: dict[str, Any] = {
    "type": "object", "properties": {"type": {}, "message": {}, "data": {}}}

#: How deep a schema is followed before it is taken to say nothing (a guard, not a limit
#: any real schema meets).
_MAX_DEPTH = 64


@frozen
class Omission:
    """One producer's view of a read: the key at ``depth`` of the read's path is not one
    of ``declared``; ``closed`` when the producer forbids other keys there."""

    depth: int
    declared: tuple[str, ...]
    closed: bool
    source: str
    #: The JSON types the producer declares the value above the key to be, when none of
    #: them can hold it (an array, a string...); empty when the value is an object.
    holds: tuple[str, ...] = ()


#: A producer's verdict: an :class:`Omission`, or how deep it declares the read's path
#: (every key above that depth is declared; it says nothing below).
Verdict = Omission | int


def check_unknown_fields(graph: PlanGraph) -> Iterator[Diagnostic]:
    """An ``unknown-field`` warning or error per read of a key no producer declares."""
    if graph.too_dense:
        return  # no edges to follow: too-dense is the one error about them
    schemas: dict[str, Any] = {}  # each tool's _output schema, thawed once
    context_schemas = _context_schemas(graph)
    # Reads of one path share one tuple of writers: decide once per tuple and reference,
    # not once per reader (a dense plan's thousand readers of what a thousand calls
    # write would otherwise cost a million walks).
    # (The key holds the reference's kind and path, not the reference: its span does
    # not matter here, and hashing a tuple is cheaper than hashing the attrs object.)
    memo: dict[tuple[int, str, Path, str | None], Omission | None] = {}
    for node in graph.nodes:
        for param in node.params:
            for read in param.reads:
                if read.provided or not read.writers:
                    continue  # provided; or dangling or external: that check says so
                ref = read.reference
                key = (id(read.writers), ref.kind, ref.path,
                       node.instance if context_schemas else None)
                if key not in memo:
                    memo[key] = _unknown([
                        *_writer_verdicts(graph, read, schemas),
                        *(_walk(schema, read.reference.path, 0, source)
                          for instance, kind, schema, source in context_schemas
                          if kind == read.reference.kind and visible(instance, node.instance))])
                found = memo[key]
                if found is not None:
                    yield _diagnostic(node, param, read.reference, found)


def _context_schemas(graph: PlanGraph) -> list[tuple[str | None, str, Any, str]]:
    # (instance, kind, schema, source) of every data message that declares a schema for
    # its kind (a message written to a path describes that path only: left out).
    found = []
    for message in graph.context.described():  # those with a schema among them
        schema = message.get("schema")
        if message.get("type") not in ("data", "input", "state") or "_outputPath" in message \
                or not isinstance(schema, PMap):
            continue
        kind = message.get("kind", message.get("type"))
        if isinstance(kind, str):
            found.append((message.get("_instance"), kind, thaw(schema),
                          f"the schema of the {kind} message"))
    return found


def _writer_verdicts(graph: PlanGraph, read: Read,
                     schemas: dict[str, Any]) -> Iterator[Verdict]:
    ref = read.reference
    for writer_id in read.writers:
        writer = graph.nodes[writer_id]
        if writer.output is None:
            continue
        alternatives = writer.output.alternatives
        for alt, group in enumerate(alternatives):
            for target in group.targets:
                if target.kind != ref.kind or not overlaps(target.path, ref.path):
                    continue
                if not is_prefix(target.path, ref.path) or len(target.path) >= len(ref.path):
                    yield len(ref.path)  # writes at or below the read: every key of it
                    continue
                schema = _schema_of(graph, writer, alt, len(alternatives), schemas)
                if schema is not None:
                    source = (f"the _output schema of {writer.tool} (call {writer.index})"
                              if alt == 0 else
                              f"the error object that call {writer.index} writes on failure")
                    yield _walk(schema, ref.path[len(target.path):], len(target.path),
                                source)


def _schema_of(graph: PlanGraph, writer: Node, alt: int, count: int,
               schemas: dict[str, Any]) -> Any:
    """The schema of what ``writer`` writes to alternative ``alt`` (None: unknown)."""
    if alt == count - 1 and count >= 2:
        return ERROR_OBJECT
    if alt != 0 or writer.method is not Method.SET or graph.tools is None or not writer.tool:
        return None
    if writer.tool not in schemas:
        tool = graph.tools.get(writer.tool)
        schemas[writer.tool] = tool.output_schema if tool is not None else None
    return schemas[writer.tool]


def _walk(schema: Any, rest: Path, depth: int, source: str) -> Verdict:
    """Follow ``rest`` down ``schema`` (found at ``depth`` of the read's path)."""
    for step, segment in enumerate(rest):
        if not isinstance(schema, Mapping) or step > _MAX_DEPTH or _composite(schema):
            return depth + step
        holds = _cannot_hold(schema, segment)
        if holds:
            return Omission(depth + step, (), False, source, holds)
        if isinstance(segment, int):
            items = schema.get("items")
            schema = items if isinstance(items, Mapping) else None
            continue
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            if segment in properties:
                schema = properties[segment]
                continue
            if not schema.get("patternProperties"):
                closed = (schema.get("additionalProperties") is False
                          or schema.get("unevaluatedProperties") is False)
                return Omission(depth + step, tuple(properties), closed, source)
        extra = schema.get("additionalProperties")
        schema = extra if isinstance(extra, Mapping) else None
    return depth + len(rest)


def _cannot_hold(schema: Mapping[str, Any], segment: str | int) -> tuple[str, ...]:
    """The types ``schema`` declares when none of them has ``segment`` below it (a key
    needs an object; an index an array, or an object when it is 0 or more), else ()."""
    declared = schema.get("type")
    types = (declared,) if isinstance(declared, str) else tuple(declared) \
        if isinstance(declared, Sequence) else ()
    if not types or not all(isinstance(t, str) for t in types):
        return ()  # no type, or not one this check reads: it says nothing
    if isinstance(segment, str):
        can = {"object"}
    else:
        can = {"object", "array"} if segment >= 0 else {"array"}
    return () if can & set(types) else types


def _composite(schema: Mapping[str, Any]) -> bool:
    # A $ref or a combination may add keys this walk does not follow: it says nothing.
    return any(k in schema for k in ("$ref", "$dynamicRef", "anyOf", "oneOf", "allOf",
                                     "if", "dependentSchemas"))


def _unknown(verdicts: Sequence[Verdict]) -> Omission | None:
    """The shallowest key every producer listing keys at its level omits (merged), or
    None. A producer that declares deeper (an int past the depth) knows the key."""
    omissions = sorted({v.depth for v in verdicts if isinstance(v, Omission)})
    for depth in omissions:
        if any(isinstance(v, int) and v > depth for v in verdicts) or any(
                isinstance(v, Omission) and v.depth > depth for v in verdicts):
            continue  # some producer declares this key
        here = [v for v in verdicts if isinstance(v, Omission) and v.depth == depth]
        declared = tuple(dict.fromkeys(k for v in here for k in v.declared))
        # The value has no keys only when every producer says so; otherwise the keys the
        # object producers list are the ones to name.
        holds = tuple(dict.fromkeys(t for v in here for t in v.holds)) \
            if all(v.holds for v in here) else ()
        return Omission(depth, declared, all(v.closed for v in here),
                        " and ".join(dict.fromkeys(v.source for v in here)), holds)
    return None


def _and(words: Sequence[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c`` (or ``a, b or c``)."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + f" {last} " + words[-1] \
        if words else ""


def _diagnostic(node: Node, param: Param, ref: Reference, found: Omission) -> Diagnostic:
    if found.holds:
        return _below_no_object(node, param, ref, found)
    key = ref.path[found.depth]
    assert isinstance(key, str)  # only an object key can be left out of properties
    near = close_match(key, found.declared, 0.6)
    listed = _and(found.declared)
    if near is not None:
        fixed = render_reference(ref.kind, (*ref.path[:found.depth], near,
                                            *ref.path[found.depth + 1:]))
        hint = f"did you mean {fixed}?"
    else:
        hint = (f"read one of the declared keys ({listed})" if found.declared
                else "read the value itself, or declare the key in the schema")
    where = render_reference(ref.kind, ref.path[:found.depth])
    declares = f"declares only {listed}" if found.declared else "declares no keys"
    return node.diagnostic(
        "unknown-field",
        f"{ref} reads the key {key!r}, but {found.source} {declares} at {where}"
        + (" and forbids other keys" if found.closed else ""),
        severity=Severity.ERROR if found.closed else Severity.WARNING,
        pointer=param.pointer, expression=param.text, span=ref.span, hint=hint,
        details=ReferenceDetails(node.id, str(ref)),
    )


def _below_no_object(node: Node, param: Param, ref: Reference, found: Omission) -> Diagnostic:
    """The warning for a read below a value declared as an array or a scalar."""
    segment = ref.path[found.depth]
    above = render_reference(ref.kind, ref.path[:found.depth])
    what = f"the key {segment!r}" if isinstance(segment, str) else f"the index {segment}"
    types = _and([article("null value" if t == "null" else t) for t in found.holds], "or")
    if found.holds == ("array",) and isinstance(segment, str):
        first = render_reference(ref.kind, (*ref.path[:found.depth], 0,
                                            *ref.path[found.depth:]))
        hint = f"did you mean {first}?"
    elif "array" in found.holds:
        hint = f"read an index of {above} (0 is the first item, -1 the last)"
    else:
        hint = f"read {above} itself"
    return node.diagnostic(
        "unknown-field",
        f"{ref} reads {what} below {above}, but {found.source} declares {above} as {types}, "
        "which has no such member: the read never has a value",
        severity=Severity.WARNING, pointer=param.pointer, expression=param.text, span=ref.span,
        hint=hint, details=ReferenceDetails(node.id, str(ref)),
    )

"""Tools: JSON Schemas that describe what an agent can call, and the registry that holds them.

A tool is a JSON Schema for one kind of call. It names itself with
``properties._tool.const``; properties whose names start with ``_`` are meta-fields
(``_tool``, ``_activity``, ``_output``, ...), every other property is a parameter. Tools
are only interfaces: the code that runs a call (an activity) lives in a second registry,
kept by the interpreters, and :func:`resolve_activity` joins the two by the seeds'
zero-configuration rule.

This module checks tool definitions (:meth:`ToolRegistry.of`). Schema composition for the
LLM lives in :mod:`obelisk.compiler.compose`, checking calls and results in
:mod:`obelisk.compiler.conform`, type questions about a schema in
:mod:`obelisk.compiler.schemas`. Every failure is a :class:`ToolError` or a returned
message: jsonschema's exceptions never escape.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from attrs import Factory, field, frozen
from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.compiler.schemas import JSON_TYPES, dig, schema_text
from obelisk.compiler.validation import shorten
from obelisk.core.errors import NotJSONError, ToolError
from obelisk.core.text import article
from obelisk.core.values import Frozen, freeze, json_type, pointer_of

if TYPE_CHECKING:
    from obelisk.compiler.shape import ToolShape

__all__ = ["Tool", "ToolRegistry", "resolve_activity"]

#: Plain JSON, as json.loads returns it (the alias keeps signatures short).
_Plain: TypeAlias = Any


# -- the tool ------------------------------------------------------------------------


@frozen
class Tool:
    """One tool: its name and its JSON Schema, frozen.

    Build tools with :meth:`of` or :meth:`ToolRegistry.of`, which check the definition;
    the constructor trusts its arguments. ``text`` is the schema as JSON text in the
    order it was written (frozen maps forget key order, and the order of properties is
    what an LLM sees); it is derived from ``schema`` when not given. Invariant:
    ``json.loads(text)`` equals ``thaw(schema)``.
    """

    name: str
    schema: Frozen = field(converter=freeze)
    text: str = field(
        default=Factory(lambda self: schema_text(self.schema), takes_self=True),
        eq=False, repr=False,
    )
    _shape: ToolShape = field(
        init=False, eq=False, repr=False,
        default=Factory(lambda self: _shape_of(self.text), takes_self=True),
    )

    @classmethod
    def of(cls, schema: Any, index: int | None = None) -> Tool:
        """A checked tool from a JSON Schema (plain or frozen); raises :class:`ToolError`.

        ``index`` is only used to locate errors (a position in a list of tools).
        """
        return _check_tool(schema, index)

    @property
    def explicit_activity(self) -> str | None:
        """The activity the tool names itself: a non-empty top-level ``_activity`` string,
        or a non-empty ``properties._activity.const``; None when it names none."""
        return self._shape.explicit_activity

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """``properties._output`` as plain JSON (a fresh copy), or None.

        A boolean schema comes out as an object: ``true`` as ``{}``, ``false`` as
        ``{"not": {}}``. The frozen form, ``schema["properties"]["_output"]``, is cheaper
        when a copy is not needed; :func:`schema_types_at` takes either.
        """
        text = self._shape.output_text
        return None if text is None else json.loads(text)

    @property
    def parameters(self) -> tuple[str, ...]:
        """Names of the tool's parameters (properties not starting with ``_``), in order."""
        return self._shape.parameters

    @property
    def meta_fields(self) -> tuple[str, ...]:
        """Names of the tool's declared meta-fields (properties starting with ``_``), in order."""
        return self._shape.meta

    def to_json(self) -> dict[str, Any]:
        """The tool's schema as plain JSON, keys in the order they were written (a copy)."""
        return json.loads(self.text)  # type: ignore[no-any-return]


def _shape_of(text: str) -> ToolShape:
    """The shape of the tool whose schema is ``text``. Its module (and jsonschema, for the
    validators) is imported with the first tool: a plan without tools needs neither."""
    from obelisk.compiler.shape import ToolShape

    return ToolShape.of(json.loads(text))


# -- checking definitions ------------------------------------------------------------

# jsonschema (with referencing and the metaschemas) is imported by the functions that
# check a definition, on first use: importing it takes tens of milliseconds, and a plan
# without tools checks none. jsonschema ships no type information; its values are Any.


@functools.cache
def _metaschema() -> Any:
    """The validator of tool definitions: Draft 2020-12's metaschema, formats checked."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    return Draft202012Validator(
        Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)


#: Extra advice for metaschema errors, by the keyword the error is on.
_SCHEMA_HINTS = {
    "type": "a type is one of " + ", ".join(sorted(JSON_TYPES)) + ", or a list of them",
    "required": "required is a list of property names",
    "properties": "properties maps each property name to its schema",
}


def _check_tool(schema: Any, index: int | None) -> Tool:
    """Every definition check, in order; the first failure is raised."""
    if isinstance(schema, Tool):
        return schema
    if not isinstance(schema, Mapping):
        raise ToolError(
            f"a tool must be a JSON object (a JSON Schema for its calls), not {_kind_of(schema)}",
            index=index)
    try:
        freeze(schema)  # for its errors: a non-string key or NaN would slip through json.dumps
    except NotJSONError as exc:
        raise ToolError(f"the tool is not JSON: {exc.reason}", index=index,
                        pointer=exc.pointer) from None
    outcome = _check_text(schema_text(schema))
    if isinstance(outcome, ToolError):
        raise outcome.at(index) from None
    return outcome


@functools.lru_cache(maxsize=1024)
def _check_text(text: str) -> Tool | ToolError:
    """The checks on a tool's JSON text, memoised: the metaschema check costs milliseconds
    and the same tools are registered again for every plan compiled with them. Tools are
    values, so sharing one between registries is safe."""
    plain = json.loads(text)
    name = dig(plain, "properties", "_tool", "const")
    shown = name if isinstance(name, str) and name else None

    def fail(reason: str, pointer: str = "") -> ToolError:
        return ToolError(reason, pointer=pointer, name=shown)

    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

    try:
        error = best_match(_metaschema().iter_errors(plain))
    except RecursionError:
        return fail("the schema is nested too deeply to check")
    if error is not None:
        where = [str(p) for p in error.absolute_path]
        reason = f"not a valid JSON Schema (Draft 2020-12): {shorten(error.message)}"
        hint = _SCHEMA_HINTS.get(where[-1]) if where else None
        return fail(reason + (f"; {hint}" if hint else ""), pointer_of(where))

    types = plain.get("type")
    if types is not None and "object" not in ([types] if isinstance(types, str) else types):
        return fail(f'a tool describes calls, which are objects, but its "type" is '
                    f"{json.dumps(types)}; use \"type\": \"object\"", "/type")
    for check in (_check_name, _check_activity, _check_refs):
        problem = check(plain, fail)
        if problem is not None:
            return problem
    assert shown is not None  # _check_name passed
    return Tool(shown, freeze(plain), text)


def _check_name(plain: _Plain, fail: Callable[[str, str], ToolError]) -> ToolError | None:
    example = 'name it with "properties": {"_tool": {"type": "string", "const": "<name>"}}'
    tool = dig(plain, "properties", "_tool")
    if tool is None:
        return fail(f"the tool has no name: {example}", "/properties/_tool")
    if not isinstance(tool, dict) or "const" not in tool:
        enum = tool.get("enum") if isinstance(tool, dict) else None
        if isinstance(enum, list) and len(enum) == 1:
            return fail('the name must be given with "const", not a one-value "enum": '
                            f'write "_tool": {{"const": {json.dumps(enum[0])}}}',
                        "/properties/_tool/enum")
        return fail(f"properties._tool has no const: {example}", "/properties/_tool")
    const = tool["const"]
    if not isinstance(const, str) or not const:
        return fail(f"the name (properties._tool.const) must be a non-empty string, not "
                    f"{json.dumps(const)}", "/properties/_tool/const")
    return None


def _check_activity(plain: _Plain, fail: Callable[[str, str], ToolError]) -> ToolError | None:
    top = plain.get("_activity", None)
    if "_activity" in plain and not isinstance(top, str):
        return fail(f'"_activity" names an activity and must be a string, not {json.dumps(top)}',
                    "/_activity")
    prop = dig(plain, "properties", "_activity")
    const = prop.get("const") if isinstance(prop, dict) else None
    if isinstance(prop, dict) and "const" in prop and not isinstance(const, str):
        return fail(f"properties._activity.const names an activity and must be a string, "
                    f"not {json.dumps(const)}", "/properties/_activity/const")
    if isinstance(top, str) and top and isinstance(const, str) and const and top != const:
        return fail(f'two different activities: "_activity" is {json.dumps(top)} but '
                    f"properties._activity.const is {json.dumps(const)}; keep one",
                    "/_activity")
    return None


#: Keywords whose values are data, not schemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _check_refs(plain: _Plain, fail: Callable[[str, str], ToolError]) -> ToolError | None:
    """Every ``$ref`` (and ``$dynamicRef``) must resolve within the tool: obelisk never
    fetches schemas."""
    from jsonschema_specifications import REGISTRY as METASCHEMAS  # type: ignore[import-untyped]
    from referencing.jsonschema import DRAFT202012

    root = METASCHEMAS.resolver_with_root(DRAFT202012.create_resource(plain))
    stack: list[tuple[_Plain, tuple[str | int, ...], Any]] = [(plain, (), root)]
    while stack:
        node, where, resolver = stack.pop()
        if isinstance(node, list):
            stack.extend((child, (*where, i), resolver) for i, child in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("$id"), str) and where:
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if isinstance(ref, str) and not _resolves(resolver, ref):
                return fail(f"{keyword} {json.dumps(ref)} does not resolve; obelisk resolves "
                            "references only inside the tool (for example "
                            '"#/$defs/name")', pointer_of((*where, keyword)))
        for key, child in node.items():
            if key not in _DATA_KEYWORDS:
                stack.append((child, (*where, key), resolver))
    return None


def _resolves(resolver: Any, ref: str) -> bool:
    from referencing.exceptions import Unresolvable

    try:
        resolver.lookup(ref)
    except Unresolvable:
        return False
    return True


def _kind_of(value: object) -> str:
    if isinstance(value, (list, tuple, PVector)):
        return "an array"
    if isinstance(value, str):
        return "a string"
    return article(json_type(value))


# -- the registry ----------------------------------------------------------------------


@frozen
class ToolRegistry:
    """The tools an agent may call, by name, in the order given.

    Invariant: ``positions[t.name] == i`` for the tool ``t`` at ``tools[i]``.
    """

    tools: PVector[Tool] = field(factory=pvector)
    positions: PMap[str, int] = field(factory=pmap, repr=False)
    # ``positions`` as a dict: a compile looks tools up several times per call, and a
    # dict lookup is several times cheaper than a PMap's.
    _lookup: dict[str, Tool] = field(init=False, eq=False, repr=False, default=Factory(
        lambda self: {name: self.tools[i] for name, i in self.positions.items()},
        takes_self=True))

    @classmethod
    def of(cls, schemas: Iterable[Any]) -> ToolRegistry:
        """A registry of checked tools (schemas, or :class:`Tool` values), in order.

        A later definition of a name replaces an earlier one, in the earlier one's place
        (so tools passed in, then the context's ``tool`` messages, give the newest
        definition of each name). Raises :class:`ToolError` for the first invalid tool,
        naming its index in ``schemas``.
        """
        if isinstance(schemas, (Mapping, str, bytes)) or not isinstance(schemas, Iterable):
            raise ToolError(f"tools are given as a list of schemas, not {_kind_of(schemas)}")
        tools: list[Tool] = []
        positions: dict[str, int] = {}
        for index, schema in enumerate(schemas):
            tool = _check_tool(schema, index)
            if tool.name in positions:
                tools[positions[tool.name]] = tool  # the newest definition wins
                continue
            positions[tool.name] = len(tools)
            tools.append(tool)
        return cls(pvector(tools), pmap(positions))

    @classmethod
    def merged(cls, passed: Iterable[Any], from_context: Iterable[Any]) -> ToolRegistry:
        """The tools of a run: ``passed`` (an API argument, a plan file's ``tools``) first,
        then the context's ``tool`` message payloads; a later definition replaces an
        earlier one (see :meth:`of`). The one place this order is decided."""
        return cls.of([*passed, *from_context])

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._lookup.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names, in the order given."""
        return tuple(tool.name for tool in self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __contains__(self, name: object) -> bool:
        return name in self._lookup


# -- activities and composition --------------------------------------------------------


def resolve_activity(tool: Tool, activity_names: Collection[str]) -> str:
    """The activity that executes calls of ``tool`` ("" for latent execution).

    The seeds' zero-configuration rule: the tool's explicit ``_activity`` if it names one;
    else the tool's own name when an activity of that name is registered; else "".
    """
    explicit = tool.explicit_activity
    if explicit is not None:
        return explicit
    return tool.name if tool.name in activity_names else ""

"""Tools: JSON Schemas that describe what an agent can call, and the registry that holds them.

A tool is a JSON Schema for one kind of call. It names itself with
``properties._tool.const``; properties whose names start with ``_`` are meta-fields
(``_tool``, ``_activity``, ``_output``, ...), every other property is a parameter. Tools
are only interfaces: the code that runs a call (an activity) lives in a second registry,
kept by the interpreters, and :func:`resolve_activity` joins the two by the seeds'
zero-configuration rule.

This module checks tool definitions (:meth:`ToolRegistry.of`), composes the ``calls``
schema an LLM request carries (:func:`compose_calls_schema`), validates the literal
parameters of a call (:func:`literal_param_errors`) and answers type questions about a
schema (:func:`schema_types_at`, :func:`types_compatible`). Every failure is a
:class:`ToolError` or a returned message: jsonschema's exceptions never escape.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeAlias

from attrs import Factory, field, frozen
# jsonschema ships no type information; its values are typed Any here.
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError, best_match  # type: ignore[import-untyped]
from jsonschema.validators import extend  # type: ignore[import-untyped]
from jsonschema_specifications import REGISTRY as METASCHEMAS  # type: ignore[import-untyped]
from pyrsistent import PMap, PVector, pmap, pvector
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from obelisk.core.errors import ObeliskError
from obelisk.core.paths import render_path
from obelisk.core.values import Frozen, NotJSONError, freeze, json_type, pointer_of

__all__ = [
    "JSON_TYPES",
    "LEADING_META",
    "REASONING_PROPERTY",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "compose_calls_schema",
    "literal_param_errors",
    "resolve_activity",
    "schema_types_at",
    "types_compatible",
    "validate_output",
    "validate_params",
]

#: The JSON types of JSON Schema.
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})

#: Meta-fields that composition puts first, in this order (then the tool's other meta-fields).
LEADING_META = ("_tool", "_activity", "_reasoningForCall")

#: The property composition adds to every tool that does not declare it.
REASONING_PROPERTY: Mapping[str, str] = MappingProxyType(
    {"type": "string", "description": "Why the agent makes this call."})

#: Longest message :func:`literal_param_errors` returns; longer values are elided.
MAX_MESSAGE = 300

#: Plain JSON, as json.loads returns it (the alias keeps signatures short).
_Plain: TypeAlias = Any


class ToolError(ObeliskError, ValueError):
    """A tool definition is invalid.

    ``index`` is the tool's position in the list given (None for a single tool),
    ``pointer`` a JSON Pointer into the tool's schema, ``reason`` says what is wrong and
    how to fix it, ``name`` is the tool's name when it could be read.
    """

    def __init__(
        self, reason: str, *, index: int | None = None, pointer: str = "",
        name: str | None = None,
    ) -> None:
        self.reason = reason
        self.index = index
        self.pointer = pointer
        self.name = name
        where = "tool" if index is None else f"tool {index}"
        if name is not None:
            where += f" ({name})"
        if pointer:
            where += f" at {pointer}"
        super().__init__(f"{where}: {reason}")

    def at(self, index: int | None) -> ToolError:
        """The same error, located at position ``index`` of a list of tools."""
        return ToolError(self.reason, index=index, pointer=self.pointer, name=self.name)


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
        default=Factory(lambda self: _dumps(self.schema), takes_self=True),
        eq=False, repr=False,
    )
    _shape: _Shape = field(
        init=False, eq=False, repr=False,
        default=Factory(lambda self: _Shape.of(json.loads(self.text)), takes_self=True),
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


@frozen
class _Shape:
    """What a tool's schema says, computed once per tool: names in order, the activity,
    and the validators for calls and results (jsonschema's validators are immutable and
    reusable, so they are built once per tool)."""

    parameters: tuple[str, ...]
    meta: tuple[str, ...]
    declared: frozenset[str]  # top-level meta keys a call may carry into validation
    explicit_activity: str | None
    output_text: str | None
    validator: Any  # for calls
    output_validator: Any  # for results, None without _output

    @classmethod
    def of(cls, plain: _Plain) -> _Shape:
        props = plain.get("properties") if isinstance(plain, dict) else None
        props = props if isinstance(props, dict) else {}
        required = plain.get("required") if isinstance(plain, dict) else None
        required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        meta = tuple(k for k in props if k.startswith("_"))
        output = props.get("_output")
        validator = _Validator(_call_schema(plain), registry=_NO_REMOTE)
        return cls(
            parameters=tuple(k for k in props if not k.startswith("_")),
            meta=meta,
            declared=frozenset(meta) | frozenset(r for r in required if r.startswith("_")),
            explicit_activity=_explicit_activity(plain),
            output_text=None if output is None else _dumps(_as_object_schema(output)),
            validator=validator,
            output_validator=_output_validator(validator, plain),
        )


def _as_object_schema(schema: _Plain) -> _Plain:
    """``true`` and ``false`` as object schemas, so that ``output_schema`` is a mapping."""
    if schema is True:
        return {}
    return {"not": {}} if schema is False else schema


def _explicit_activity(plain: _Plain) -> str | None:
    if not isinstance(plain, dict):
        return None
    top = plain.get("_activity")
    if isinstance(top, str) and top:
        return top
    const = _get(plain, "properties", "_activity", "const")
    return const if isinstance(const, str) and const else None


def _get(value: _Plain, *keys: str) -> _Plain:
    """``value[k1][k2]...`` through plain objects, or None where a step is missing."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _dumps(value: Any) -> str:
    """Compact JSON text of a plain or frozen value; frozen maps come out with sorted keys."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=_plain_container)


def _plain_container(value: Any) -> Any:
    # json.dumps calls this for what it cannot encode itself: frozen (or other) containers.
    if isinstance(value, PMap):
        return dict(sorted(value.items()))
    if isinstance(value, Mapping):
        return dict(value.items())
    if isinstance(value, (PVector, tuple)):
        return list(value)
    raise TypeError(f"a {type(value).__name__} is not JSON")


# -- checking definitions ------------------------------------------------------------

_META = Draft202012Validator(
    Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)

#: An empty registry: ``$ref`` resolves inside the tool (and to the metaschemas), never
#: over the network. Passing it also silences jsonschema's remote-retrieval fallback.
_NO_REMOTE: Registry[Any] = Registry()

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
    outcome = _check_text(_dumps(schema))
    if isinstance(outcome, ToolError):
        raise outcome.at(index) from None
    return outcome


@functools.lru_cache(maxsize=1024)
def _check_text(text: str) -> Tool | ToolError:
    """The checks on a tool's JSON text, memoised: the metaschema check costs milliseconds
    and the same tools are registered again for every plan compiled with them. Tools are
    values, so sharing one between registries is safe."""
    plain = json.loads(text)
    name = _get(plain, "properties", "_tool", "const")
    shown = name if isinstance(name, str) and name else None

    def fail(reason: str, pointer: str = "") -> ToolError:
        return ToolError(reason, pointer=pointer, name=shown)

    try:
        error = best_match(_META.iter_errors(plain))
    except RecursionError:
        return fail("the schema is nested too deeply to check")
    if error is not None:
        where = [str(p) for p in error.absolute_path]
        reason = f"not a valid JSON Schema (Draft 2020-12): {_short(error.message)}"
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
    tool = _get(plain, "properties", "_tool")
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
    prop = _get(plain, "properties", "_activity")
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
    name = json_type(value)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


# -- the registry ----------------------------------------------------------------------


@frozen
class ToolRegistry:
    """The tools an agent may call, by name, in the order given.

    Invariant: ``positions[t.name] == i`` for the tool ``t`` at ``tools[i]``.
    """

    tools: PVector[Tool] = field(factory=pvector)
    positions: PMap[str, int] = field(factory=pmap, repr=False)

    @classmethod
    def of(cls, schemas: Iterable[Any]) -> ToolRegistry:
        """A registry of checked tools (schemas, or :class:`Tool` values).

        Raises :class:`ToolError` for the first invalid tool, naming its index, or for two
        tools with the same name.
        """
        if isinstance(schemas, (Mapping, str, bytes)) or not isinstance(schemas, Iterable):
            raise ToolError(f"tools are given as a list of schemas, not {_kind_of(schemas)}")
        tools: list[Tool] = []
        positions: dict[str, int] = {}
        for index, schema in enumerate(schemas):
            tool = _check_tool(schema, index)
            if tool.name in positions:
                first = positions[tool.name]
                raise ToolError(
                    f"tool {first} already has this name; tool names must be unique "
                    "(rename one, or drop the duplicate)",
                    index=index, pointer="/properties/_tool/const", name=tool.name)
            positions[tool.name] = index
            tools.append(tool)
        return cls(pvector(tools), pmap(positions))

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        position = self.positions.get(name)
        return None if position is None else self.tools[position]

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names, in the order given."""
        return tuple(tool.name for tool in self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __contains__(self, name: object) -> bool:
        return name in self.positions


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


def compose_calls_schema(registry: ToolRegistry,
                         activity_names: Collection[str] = ()) -> dict[str, Any]:
    """The JSON Schema of an LLM's ``calls`` array: one ``anyOf`` branch per tool, in order.

    Each branch is the tool's schema with its meta-fields first (``_tool``, ``_activity``,
    ``_reasoningForCall``, then the tool's other meta-fields), ``_activity`` fixed to the
    resolved activity, ``_reasoningForCall`` added, and ``_output`` no longer required.
    The result is plain JSON and the same for the same arguments. With no tools, the
    array must be empty.
    """
    branches = [_compose_tool(tool, activity_names) for tool in registry]
    items: dict[str, Any] = (
        {"type": "array", "items": {"anyOf": branches}} if branches
        else {"type": "array", "maxItems": 0})
    return {"type": "object", "properties": {"calls": items}, "required": ["calls"]}


def _compose_tool(tool: Tool, activity_names: Collection[str]) -> dict[str, Any]:
    schema = tool.to_json()
    schema.pop("_activity", None)  # now stated as properties._activity
    props: dict[str, Any] = schema.get("properties", {})
    fixed = {
        "_activity": {"type": "string", "const": resolve_activity(tool, activity_names)},
        "_reasoningForCall": props.get("_reasoningForCall", dict(REASONING_PROPERTY)),
    }
    ordered: dict[str, Any] = {}
    for key in LEADING_META:
        if key in props or key in fixed:
            ordered[key] = fixed.get(key, props.get(key))
    for key in tool.meta_fields:
        ordered.setdefault(key, props[key])
    for key in tool.parameters:
        ordered[key] = props[key]
    schema["properties"] = ordered
    required = schema.get("required")
    if isinstance(required, list) and "_output" in required:
        required = [name for name in required if name != "_output"]
        if required:
            schema["required"] = required
        else:
            del schema["required"]
    return schema


# -- validating calls and results ---------------------------------------------------------


class _Reference(str):
    """A parameter string that is an expression (starts with ``†``): its value is unknown
    until run time, so for validation it satisfies every schema."""

    __slots__ = ()


def _exempting_references(check: Callable[..., Any]) -> Callable[..., Any]:
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if type(instance) is _Reference:
            return None  # checked by type against its producer instead
        return check(validator, value, instance, schema)
    return keyword


def _unless_holding_references(check: Callable[..., Any]) -> Callable[..., Any]:
    # For keywords where a reference counted as valid could *cause* an error that its
    # real value would avoid (not, if/then/else, const, enum, uniqueItems): skip them on
    # any value that holds a reference. The interpreters validate the resolved call.
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if _holds_reference(instance):
            return None
        return check(validator, value, instance, schema)
    return keyword


def _one_of(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    # "Exactly one" could fail because references make two branches pass at once; with
    # references inside, only "at least one" is checked.
    check = _BASE["anyOf"] if _holds_reference(instance) else _BASE["oneOf"]
    return check(validator, value, instance, schema)


def _contains(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    # maxContains could fail because references match; minContains cannot.
    if "maxContains" in schema and _holds_reference(instance):
        schema = {k: v for k, v in schema.items() if k != "maxContains"}
    return _BASE["contains"](validator, value, instance, schema)


def _holds_reference(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Reference:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


_BASE: dict[str, Callable[..., Any]] = dict(Draft202012Validator.VALIDATORS)

#: How each keyword treats references, where it differs from "a reference is valid".
_REFERENCE_AWARE: dict[str, Callable[..., Any]] = {
    **{k: _unless_holding_references(_BASE[k])
       for k in ("not", "if", "const", "enum", "uniqueItems")},
    "oneOf": _one_of,
    "contains": _contains,
}

#: Draft 2020-12 where a reference satisfies every schema. Wrapping the keywords (rather
#: than dropping errors at references afterwards) keeps anyOf, oneOf, contains and not
#: right: a branch that holds a reference is not wrongly counted as failing. Values
#: without references validate exactly as under Draft202012Validator.
_Validator = extend(Draft202012Validator, validators={
    keyword: _exempting_references(_REFERENCE_AWARE.get(keyword, check))
    for keyword, check in _BASE.items()
})


def _call_schema(plain: _Plain) -> _Plain:
    """The schema calls are validated against: ``_output`` is never required of a call."""
    if not isinstance(plain, dict):
        return plain
    required = plain.get("required")
    if isinstance(required, list) and "_output" in required:
        return {**plain, "required": [r for r in required if r != "_output"]}
    return plain


def _output_validator(calls: Any, plain: _Plain) -> Any:
    output = _get(plain, "properties", "_output")
    # evolve keeps the resolver, so a "$ref": "#/$defs/x" inside _output still means the
    # tool's own $defs.
    return None if output is None else calls.evolve(schema=output)


def literal_param_errors(tool: Tool, call: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where a call's literal parameters break the tool's schema (Draft 2020-12).

    For the compiler, before anything is resolved. Returns ``(pointer, message)`` pairs
    sorted by pointer, then message: the pointer is a JSON Pointer into the call, the
    message names the parameter. A missing required parameter is reported at
    ``/<name>``. A string starting with ``†`` (a reference) satisfies any schema, wherever
    it is; ``\\†`` at the start of a string is a literal ``†``. Top-level meta-properties
    the tool does not declare are ignored; declared ones are validated as written
    (meta-properties are never resolved). ``call`` may be plain or frozen.
    """
    shape = tool._shape  # noqa: SLF001
    return _errors(shape.validator, lambda: _instance(call, shape.declared, True), "parameter")


def validate_params(tool: Tool, call: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where a resolved call breaks the tool's schema: :func:`literal_param_errors` for a
    call whose values are final, so every string is literal (``†`` means nothing here)."""
    shape = tool._shape  # noqa: SLF001
    return _errors(shape.validator, lambda: _instance(call, shape.declared, False), "parameter")


def validate_output(tool: Tool, value: Any) -> list[tuple[str, str]]:
    """Where an activity's result breaks the tool's ``_output`` schema (none without one).

    Pointers are into the result; ``value`` may be plain or frozen.
    """
    validator = tool._shape.output_validator  # noqa: SLF001
    if validator is None:
        return []
    return _errors(validator, lambda: _literal(value), "property")


def _errors(validator: Any, instance: Callable[[], Any], noun: str) -> list[tuple[str, str]]:
    """Every error as (pointer, message), sorted and without duplicates. jsonschema's
    exceptions stop here: what it raises while validating becomes a message."""
    try:
        errors = list(validator.iter_errors(instance()))
    except RecursionError:
        return [("", "the value is nested too deeply to validate (or the schema's $ref "
                     "loops back on itself)")]
    except Exception as exc:  # noqa: BLE001 - checked tools cannot get here; never leak
        return [("", _short(f"the tool's schema cannot be applied: {exc}"))]
    found: set[tuple[str, str]] = set()
    for error in errors:
        path = tuple(error.absolute_path)
        describe = _DESCRIBE.get(str(error.validator), _describe_default)
        found.update(describe(error, path, noun))
    return sorted(found)


def _instance(call: Mapping[str, Any], declared: frozenset[str],
              expressions: bool) -> dict[str, Any]:
    """The call as plain JSON to validate: undeclared meta-properties dropped. With
    ``expressions``, references in parameters are marked and ``\\†`` literals unescaped;
    meta-properties are always literal."""
    out: dict[str, Any] = {}
    for key, value in call.items():
        if not key.startswith("_"):
            out[key] = _parameter(value) if expressions else _literal(value)
        elif key in declared:
            out[key] = _literal(value)
    return out


def _parameter(value: Any) -> Any:
    if isinstance(value, str):
        if value.startswith("†"):
            return _Reference(value)
        return value[1:] if value.startswith("\\†") else value
    if isinstance(value, Mapping):
        return {key: _parameter(child) for key, child in value.items()}
    if isinstance(value, (list, tuple, PVector)):
        return [_parameter(child) for child in value]
    return value


def _literal(value: Any) -> Any:
    # jsonschema's object and array are dict and list: frozen containers (at any depth,
    # a resolved call mixes the two) are made plain.
    if isinstance(value, Mapping):
        return {key: _literal(child) for key, child in value.items()}
    if isinstance(value, (list, tuple, PVector)):
        return [_literal(child) for child in value]
    return value


_Describe: TypeAlias = Callable[
    [ValidationError, tuple[str | int, ...], str], list[tuple[str, str]]]


def _describe_required(error: ValidationError, path: tuple[str | int, ...],
                       noun: str) -> list[tuple[str, str]]:
    # jsonschema reports one error per absent name; the instance tells which ones.
    instance, names = error.instance, error.validator_value
    out = []
    for name in names if isinstance(names, list) else ():
        if isinstance(instance, dict) and name not in instance:
            pointer = pointer_of((*path, name))
            if path:
                out.append((pointer, f"{render_path(path)}: missing required property {name!r}"))
            else:
                what = "meta-property" if name.startswith("_") else noun
                out.append((pointer, f"missing required {what} {name!r}"))
    return out or _describe_default(error, path, noun)


def _describe_additional(error: ValidationError, path: tuple[str | int, ...],
                         noun: str) -> list[tuple[str, str]]:
    if error.validator_value is not False or not isinstance(error.instance, dict):
        return _describe_default(error, path, noun)
    schema = error.schema if isinstance(error.schema, dict) else {}
    declared = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    out = []
    for name in error.instance:
        if name in declared or any(re.search(p, name) for p in patterns):
            continue
        pointer = pointer_of((*path, name))
        if path:
            out.append((pointer, f"{render_path(path)}: unexpected property {name!r}"))
        else:
            what = "meta-property" if name.startswith("_") else noun
            out.append((pointer, f"unexpected {what} {name!r}: the schema does not declare it"))
    return out or _describe_default(error, path, noun)


def _describe_default(error: ValidationError, path: tuple[str | int, ...],
                      noun: str) -> list[tuple[str, str]]:
    message = error.message
    shown = repr(error.instance)
    if len(message) > MAX_MESSAGE and message.startswith(shown):
        message = _short(shown, 60) + message[len(shown):]
    where = render_path(path) if path else ("call" if noun == "parameter" else "result")
    return [(pointer_of(path), _short(f"{where}: {message}"))]


#: How each keyword's error is put to the user; the rest use jsonschema's own message.
_DESCRIBE: dict[str, _Describe] = {
    "required": _describe_required,
    "additionalProperties": _describe_additional,
}


def _short(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- types -------------------------------------------------------------------------------

#: Deepest schema nesting :func:`schema_types_at` follows before answering "unknown".
_MAX_SCHEMA_DEPTH = 200


def schema_types_at(schema: Mapping[str, Any] | None,
                    path: Sequence[str | int]) -> frozenset[str] | None:
    """The JSON types a value at ``path`` can have inside a value valid against ``schema``.

    String segments follow ``properties`` (then ``additionalProperties``), integer
    segments ``prefixItems`` and ``items``; at the end, ``type``, ``const`` and ``enum``
    give the types, ``anyOf``/``oneOf`` the union of their branches and ``allOf`` the
    intersection. None means unknown: no schema, no type information, a ``$ref``, or a
    branch that says nothing. ``schema`` may be plain or frozen.
    """
    if schema is None:
        return None
    try:
        return _types_at(schema, tuple(path), 0)
    except RecursionError:
        return None


def _types_at(schema: Any, path: tuple[str | int, ...], depth: int) -> frozenset[str] | None:
    if not isinstance(schema, Mapping) or depth > _MAX_SCHEMA_DEPTH:
        return None  # true, false, or too deep: nothing said here
    if "$ref" in schema or "$dynamicRef" in schema:
        return None
    known: list[frozenset[str] | None] = [
        _own_types(schema) if not path else _types_at(_child(schema, path[0]), path[1:], depth + 1)
    ]
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, Sequence) and not isinstance(branches, str) and branches:
            union: frozenset[str] | None = frozenset()
            for branch in branches:
                types = _types_at(branch, path, depth + 1)
                if types is None:
                    union = None
                    break
                union = union | types if union is not None else None
            known.append(union)
    all_of = schema.get("allOf")
    if isinstance(all_of, Sequence) and not isinstance(all_of, str):
        known.extend(_types_at(branch, path, depth + 1) for branch in all_of)
    result: frozenset[str] | None = None
    for types in known:
        if types is not None:
            result = types if result is None else _meet(result, types)
    return result


def _own_types(schema: Mapping[str, Any]) -> frozenset[str] | None:
    known: list[frozenset[str]] = []
    declared = schema.get("type")
    if isinstance(declared, str):
        known.append(frozenset({declared}) & JSON_TYPES)
    elif isinstance(declared, Sequence) and declared:
        known.append(frozenset(t for t in declared if isinstance(t, str)) & JSON_TYPES)
    if "const" in schema:
        known.append(frozenset({json_type(schema["const"])}))
    enum = schema.get("enum")
    if isinstance(enum, Sequence) and not isinstance(enum, str):
        known.append(frozenset(json_type(v) for v in enum))
    if not known:
        return None
    result = known[0]
    for types in known[1:]:
        result = _meet(result, types)
    return result


def _child(schema: Mapping[str, Any], segment: str | int) -> Any:
    """The subschema for one path segment, or None when the schema does not say."""
    if isinstance(segment, int) and not isinstance(segment, bool):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, Sequence) and not isinstance(items, (str, Mapping)):
            prefix, items = items, schema.get("additionalItems")  # draft-07 tuple form
        if isinstance(prefix, Sequence) and not isinstance(prefix, str) and prefix:
            if segment < 0:
                return None  # which element -1 is depends on the length
            if segment < len(prefix):
                return prefix[segment]
        if items is not None:
            return items
        if segment < 0:
            return None
        segment = str(segment)  # on an object an index reads the key spelled as it
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and segment in properties:
        return properties[segment]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping) and patterns:
        return None  # which pattern applies is not worth guessing
    return schema.get("additionalProperties")


def _meet(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """Types a value can have when it must have a type in ``a`` and one in ``b``."""
    both = set(a & b)
    if ("integer" in a and "number" in b) or ("number" in a and "integer" in b):
        both.add("integer")
    return frozenset(both)


def types_compatible(produced: frozenset[str], accepted: frozenset[str]) -> bool:
    """True when some value of a produced type can satisfy some accepted type.

    ``integer`` and ``number`` meet both ways: every integer is a number, and a value
    typed ``number`` may be whole (JSON Schema counts 1.0 as an integer).
    """
    return any(p == a or {p, a} == {"integer", "number"} for p in produced for a in accepted)

"""Validating calls and results against a tool's schema, with messages people can act on.

The validator is Draft 2020-12 made *reference-aware*: a parameter that is an expression
(``†...``) is unknown until run time, so it satisfies every schema (and the keywords where
a reference could cause an error its real value would avoid are skipped on values that
hold one). :func:`literal_param_errors` is the compiler's check of a call as written;
:func:`validate_params` and :func:`validate_output` are the interpreters' checks of a
resolved call and of an activity's result. Every failure is a returned ``(pointer,
message)`` pair: jsonschema's exceptions never escape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from pyrsistent import PMap, PVector

from obelisk.compiler.patterns import search
from obelisk.compiler.schemas import dig
from obelisk.core.paths import render_path
from obelisk.core.values import SCALAR_TYPES, pointer_of, thaw

if TYPE_CHECKING:
    # jsonschema ships no type information; its values are typed Any here.
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]
    from referencing import Registry

    from obelisk.compiler.shape import Split, ToolShape
    from obelisk.compiler.tools import Tool

__all__ = ["MAX_MESSAGE", "call_schema", "call_validator", "literal_param_errors",
           "output_validator", "reference_aware", "shorten", "validate_output", "validate_params"]

#: Longest message :func:`literal_param_errors` returns; longer values are elided.
MAX_MESSAGE = 300

#: Plain JSON, as json.loads returns it (the alias keeps signatures short).
_Plain: TypeAlias = Any



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


def _one_of(base: Mapping[str, Callable[..., Any]]) -> Callable[..., Any]:
    # "Exactly one" could fail because references make two branches pass at once; with
    # references inside, only "at least one" is checked.
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        check = base["anyOf"] if _holds_reference(instance) else base["oneOf"]
        return check(validator, value, instance, schema)
    return keyword


def _contains(base: Mapping[str, Callable[..., Any]]) -> Callable[..., Any]:
    # maxContains could fail because references match; minContains cannot.
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if "maxContains" in schema and _holds_reference(instance):
            schema = {k: v for k, v in schema.items() if k != "maxContains"}
        return base["contains"](validator, value, instance, schema)
    return keyword


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


@functools.cache
def reference_aware() -> Any:
    """The validator class of calls: Draft 2020-12 where a reference satisfies every schema.

    Wrapping the keywords (rather than dropping errors at references afterwards) keeps
    anyOf, oneOf, contains and not right: a branch that holds a reference is not wrongly
    counted as failing. Values without references validate exactly as under
    Draft202012Validator, whose patterns are matched in linear time
    (:mod:`obelisk.compiler.patterns`). Built on first use, like everything here that
    needs jsonschema: importing it takes tens of milliseconds, and a plan without tools
    validates nothing.
    """
    from jsonschema.validators import extend  # type: ignore[import-untyped]

    from obelisk.compiler.patterns import linear_validator

    base: dict[str, Callable[..., Any]] = dict(linear_validator().VALIDATORS)
    # How each keyword treats references, where it differs from "a reference is valid".
    aware: dict[str, Callable[..., Any]] = {
        **{k: _unless_holding_references(base[k])
           for k in ("not", "if", "const", "enum", "uniqueItems")},
        "oneOf": _one_of(base),
        "contains": _contains(base),
    }
    return extend(linear_validator(), validators={
        keyword: _exempting_references(aware.get(keyword, check))
        for keyword, check in base.items()
    })


@functools.cache
def _no_remote() -> Registry[Any]:
    """An empty registry: ``$ref`` resolves inside the tool (and to the metaschemas), never
    over the network. Passing it also silences jsonschema's remote-retrieval fallback."""
    from referencing import Registry

    return Registry()


def call_validator(plain: _Plain) -> Any:
    """The validator of calls to the tool whose schema is ``plain``: reference-aware (see
    :func:`reference_aware`), ``_output`` not required, ``$ref`` resolved only inside it."""
    return reference_aware()(call_schema(plain), registry=_no_remote())


def call_schema(plain: _Plain) -> _Plain:
    """The schema calls are validated against: ``_output`` is never required of a call."""
    if not isinstance(plain, dict):
        return plain
    required = plain.get("required")
    if isinstance(required, list) and "_output" in required:
        return {**plain, "required": [r for r in required if r != "_output"]}
    return plain


def output_validator(calls: Any, plain: _Plain) -> Any:
    """The validator of a tool's results (None without ``_output``), from its calls'."""
    output = dig(plain, "properties", "_output")
    # evolve keeps the resolver, so a "$ref": "#/$defs/x" inside _output still means the
    # tool's own $defs.
    return None if output is None else calls.evolve(schema=output)


def literal_param_errors(tool: Tool, call: Mapping[str, Any],
                         memo: dict[Any, list[tuple[str, str]]] | None = None
                         ) -> list[tuple[str, str]]:
    """Where a call's literal parameters break the tool's schema (Draft 2020-12).

    For the compiler, before anything is resolved. Returns ``(pointer, message)`` pairs
    sorted by pointer, then message: the pointer is a JSON Pointer into the call, the
    message names the parameter. A missing required parameter is reported at
    ``/<name>``. A string starting with ``†`` (a reference) satisfies any schema, wherever
    it is; ``\\†`` at the start of a string is a literal ``†``. Top-level meta-properties
    the tool does not declare are ignored; declared ones are validated as written
    (meta-properties are never resolved). ``call`` may be plain or frozen.

    ``memo``: a dict kept across the calls of one compile (then dropped), so a literal
    value checked once against a parameter's schema is not checked again; with it, a
    call holding frozen values is read as its :func:`~obelisk.core.values.thaw`
    (objects' keys sorted), without thawing the whole call.
    """
    shape = tool._shape  # noqa: SLF001
    if memo is not None:
        if shape.split is not None:
            found = _errors_by_property(shape, shape.split, call, memo)
            if found is not None:
                return found
        call = {key: thaw(value) for key, value in sorted(call.items())}
    return _errors(shape.validator, lambda: _instance(call, shape.declared, True), "parameter")


def _errors_by_property(shape: ToolShape, split: Split, call: Mapping[str, Any],
                        memo: dict[Any, list[tuple[str, str]]]) -> list[tuple[str, str]] | None:
    """:func:`literal_param_errors` one property at a time, each value's errors memoised;
    None when the whole-call check must decide (a required property missing, or
    jsonschema failing).

    Only for a schema whose top level validates nothing but ``type: object``,
    ``properties`` and ``required`` (:attr:`ToolShape.split`): then the call's errors are
    exactly the union of each property's, which jsonschema's ``properties`` keyword finds
    with the same ``descend`` called here. A value that is a reference has none.
    """
    # Every declared or required meta-property is validated, like a parameter.
    for name in split.required:  # a loop, not any(): no generator made for every call
        if name not in call:
            return None
    found: set[tuple[str, str]] = set()
    for name, value in call.items():
        schema = split.properties.get(name, _UNDECLARED)
        if schema is _UNDECLARED:
            continue
        meta = name.startswith("_")
        kind = type(value)
        if kind is str and not meta and value.startswith("†") and schema is not False:
            continue  # a reference satisfies every schema but false
        # bool is not int and 1.0 prints unlike 1: the key keeps the type (and a float's
        # text, so -0.0 and 0.0 stay apart); containers are checked every time.
        key = (id(shape), name, kind, repr(value) if kind is float else value) if (
            kind in SCALAR_TYPES) else None
        errors = memo.get(key) if key is not None else None
        if errors is None:
            if isinstance(value, (PMap, PVector)):
                value = thaw(value)  # as a frozen call has always been read: keys sorted
            instance = _literal(value) if meta else _parameter(value)
            try:
                raw = list(shape.validator.descend(instance, schema, path=name, schema_path=name))
            except Exception:  # noqa: BLE001 - the whole-call check says what went wrong
                return None
            errors = _described(raw, "parameter")
            if key is not None:
                memo[key] = errors
        if errors:  # most values have none
            found.update(errors)
    return sorted(found) if found else []


_UNDECLARED = object()


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
        return [("", shorten(f"the tool's schema cannot be applied: {exc}"))]
    return sorted(set(_described(errors, noun)))


def _described(errors: list[Any], noun: str) -> list[tuple[str, str]]:
    """jsonschema's errors as (pointer, message) pairs, as the user reads them."""
    found: list[tuple[str, str]] = []
    for error in errors:
        path = tuple(error.absolute_path)
        describe = _DESCRIBE.get(str(error.validator), _describe_default)
        found.extend(describe(error, path, noun))
    for error in errors:
        _release(error)
    return found


def _release(error: Any) -> None:
    # An anyOf/oneOf error and the errors in its context refer to each other (a cycle
    # per error, left for the collector, which is off while a plan compiles): cut them.
    stack = [error]
    while stack:
        current = stack.pop()
        stack.extend(current.context)
        current.context, current.parent = [], None


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


# A string: ValidationError is imported only for the type checker (see reference_aware).
_Describe: TypeAlias = (
    "Callable[[ValidationError, tuple[str | int, ...], str], list[tuple[str, str]]]")


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
        if name in declared or any(search(p, name) is not False for p in patterns):
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
        message = shorten(shown, 60) + message[len(shown):]
    where = render_path(path) if path else ("call" if noun == "parameter" else "result")
    return [(pointer_of(path), shorten(f"{where}: {message}"))]


#: How each keyword's error is put to the user; the rest use jsonschema's own message.
_DESCRIBE: dict[str, _Describe] = {
    "required": _describe_required,
    "additionalProperties": _describe_additional,
}


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"

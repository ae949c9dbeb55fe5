"""Validating calls and results against a tool's schema, with messages people can act on.

The validator is Draft 2020-12 made *reference-aware*: a parameter that is an expression
(``†...``) is unknown until run time, so it satisfies every schema (and the keywords where
a reference could cause an error its real value would avoid are skipped on values that
hold one). :mod:`obelisk.compiler.conform` checks calls and results with it. Every
failure is a returned ``(pointer, message)`` pair: jsonschema's exceptions never escape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from pyrsistent import PVector

from obelisk.compiler.patterns import search
from obelisk.compiler.schemas import dig
from obelisk.core.pathtext import render_path
from obelisk.core.values import pointer_of

if TYPE_CHECKING:
    # jsonschema ships no type information; its values are typed Any here.
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]
    from referencing import Registry


__all__ = ["MAX_MESSAGE", "call_instance", "call_schema", "call_validator", "described",
           "errors_of", "literal", "output_validator", "parameter", "reference_aware",
           "shorten"]

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


def errors_of(validator: Any, instance: Callable[[], Any], noun: str) -> list[tuple[str, str]]:
    """Every error as (pointer, message), sorted and without duplicates. jsonschema's
    exceptions stop here: what it raises while validating becomes a message."""
    try:
        errors = list(validator.iter_errors(instance()))
    except RecursionError:
        return [("", "the value is nested too deeply to validate (or the schema's $ref "
                     "loops back on itself)")]
    except Exception as exc:  # noqa: BLE001 - checked tools cannot get here; never leak
        return [("", shorten(f"the tool's schema cannot be applied: {exc}"))]
    return sorted(set(described(errors, noun)))


def described(errors: list[Any], noun: str) -> list[tuple[str, str]]:
    """jsonschema's errors as (pointer, message) pairs, as the user reads them."""
    found: list[tuple[str, str]] = []
    for error in errors:
        path = tuple(error.absolute_path)
        describe = _DESCRIBE.get(str(error.validator), _describe_default)
        found.extend(describe(error, path, noun))
    return found


def call_instance(call: Mapping[str, Any], declared: frozenset[str],
              expressions: bool) -> dict[str, Any]:
    """The call as plain JSON to validate: undeclared meta-properties dropped. With
    ``expressions``, references in parameters are marked and ``\\†`` literals unescaped;
    meta-properties are always literal."""
    out: dict[str, Any] = {}
    for key, value in call.items():
        if not key.startswith("_"):
            out[key] = parameter(value) if expressions else literal(value)
        elif key in declared:
            out[key] = literal(value)
    return out


def parameter(value: Any) -> Any:
    if isinstance(value, str):
        if value.startswith("†"):
            return _Reference(value)
        return value[1:] if value.startswith("\\†") else value
    if isinstance(value, Mapping):
        return {key: parameter(child) for key, child in value.items()}
    if isinstance(value, (list, tuple, PVector)):
        return [parameter(child) for child in value]
    return value


def literal(value: Any) -> Any:
    # jsonschema's object and array are dict and list: frozen containers (at any depth,
    # a resolved call mixes the two) are made plain.
    if isinstance(value, Mapping):
        return {key: literal(child) for key, child in value.items()}
    if isinstance(value, (list, tuple, PVector)):
        return [literal(child) for child in value]
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

"""Whether a call and a result conform to their tool's schema, with messages people can
act on: :func:`literal_param_errors` is the compiler's check of a call as written;
:func:`validate_params` and :func:`validate_output` are the interpreters' checks of a
resolved call and of an activity's result. Each failure is a ``(pointer, message)`` pair.
The reference-aware validator they use is :mod:`obelisk.compiler.validation`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyrsistent import PMap, PVector

from obelisk.compiler.validation import (
    call_instance,
    described,
    errors_of,
    literal,
    parameter,
)
from obelisk.core.plain import thaw
from obelisk.core.values import SCALAR_TYPES

if TYPE_CHECKING:
    from obelisk.compiler.shape import Split, ToolShape
    from obelisk.compiler.tools import Tool

__all__ = ["literal_param_errors", "validate_output", "validate_params"]


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
    return errors_of(shape.validator, lambda: call_instance(call, shape.declared, True), "parameter")


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
            instance = literal(value) if meta else parameter(value)
            try:
                raw = list(shape.validator.descend(instance, schema, path=name, schema_path=name))
            except Exception:  # noqa: BLE001 - the whole-call check says what went wrong
                return None
            errors = described(raw, "parameter")
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
    return errors_of(shape.validator, lambda: call_instance(call, shape.declared, False),
                     "parameter")


def validate_output(tool: Tool, value: Any) -> list[tuple[str, str]]:
    """Where an activity's result breaks the tool's ``_output`` schema (none without one).

    Pointers are into the result; ``value`` may be plain or frozen.
    """
    validator = tool._shape.output_validator  # noqa: SLF001
    if validator is None:
        return []
    return errors_of(validator, lambda: literal(value), "property")

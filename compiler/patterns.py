"""JSON Schema ``pattern``s matched in linear time, never by a backtracking engine.

A tool's schema comes from a plan file or a context, and the strings checked against its
patterns from a plan or an LLM: with Python's ``re``, ``^(a|a)+$`` took 13 s on 29
characters, four times longer per two more, and nothing could interrupt it. Every
pattern obelisk checks (``pattern``, and the keys of ``patternProperties`` wherever
``additionalProperties`` or ``unevaluatedProperties`` look at them) is matched by RE2
(the ``google-re2`` package), whose time is linear in the text whatever the pattern.

RE2 takes no backreferences (``\\1``), no lookaround (``(?=``, ``(?<=``...), no ``\\Z``,
and no repetition over 1000. Such a pattern is *not checked*: it constrains nothing (a
``pattern`` passes every string, a ``patternProperties`` key matches no property and
makes none extra), it is never handed to a backtracking engine, and the compiler reports
it with an ``unchecked-pattern`` warning (:func:`unsupported` says why).

:func:`linear_validator` is Draft 2020-12 with those keywords matched this way; every
validator obelisk applies to input is built on it. Pure: no I/O, no clock (whether a
pattern is taken depends on the pattern alone, never on how long it takes).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["linear_validator", "search", "unsupported"]


@functools.cache
def _options() -> Any:
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern on standard error
    return options


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> tuple[Any, str | None]:
    """(the compiled pattern, None) or (None, why RE2 cannot take it)."""
    import re2

    try:
        return re2.compile(pattern, _options()), None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return None, reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    except Exception as exc:  # noqa: BLE001 - a pattern that is not text RE2 can read
        return None, f"{type(exc).__name__}: {exc}"


def unsupported(pattern: str) -> str | None:
    """Why RE2 cannot take ``pattern`` (``"invalid perl operator: (?<"``), or None."""
    return _compiled(pattern)[1]


def search(pattern: str, text: str) -> bool | None:
    """Whether ``pattern`` matches somewhere in ``text`` (JSON Schema's ``pattern`` is
    not anchored), in time linear in ``text``; None when the pattern is not checked."""
    compiled, _ = _compiled(pattern)
    if compiled is None:
        return None
    # Bytes: a lone surrogate (a string from Python, not from JSON) cannot be UTF-8.
    return compiled.search(text.encode("utf-8", "surrogatepass")) is not None


@functools.cache
def linear_validator() -> Any:
    """The Draft 2020-12 validator class whose patterns are matched by :func:`search`."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.validators import extend  # type: ignore[import-untyped]

    return extend(Draft202012Validator, validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_properties,
    })


# -- the keywords: jsonschema's own, with search() for re.search ---------------------------


def _error(message: str) -> Any:
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

    return ValidationError(message)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and search(pattern, instance) is False:
        yield _error(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _matched(key: str, patterns: Iterable[str]) -> bool:
    """Whether a key is one of ``patternProperties``' (an unchecked pattern matches all,
    so that it makes no key extra)."""
    return any(search(pattern, key) is not False for pattern in patterns)


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = {key for key in instance if key not in properties and not _matched(key, patterns)}
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            shown = ", ".join(repr(each) for each in sorted(patterns))
            yield _error(f"{joined} {verb} not match any of the regexes: {shown}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield _error("Additional properties are not allowed "
                         f"({', '.join(repr(e) for e in sorted(extras))} {verb} unexpected)")


def _unevaluated_properties(validator: Any, unevaluated: Any, instance: Any,
                            schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    invalid = [key for key in instance if key not in evaluated and not _valid(
        validator.descend(instance[key], unevaluated, path=key, schema_path=key))]
    if invalid:
        verb = "was" if len(invalid) == 1 else "were"
        listed = ", ".join(repr(key) for key in (sorted(invalid) if unevaluated is False
                                                  else invalid))
        if unevaluated is False:
            yield _error(f"Unevaluated properties are not allowed ({listed} {verb} unexpected)")
        else:
            yield _error("Unevaluated properties are not valid under the given schema "
                         f"({listed} {verb} unevaluated and invalid)")


def _valid(errors: Iterable[Any]) -> bool:
    return next(iter(errors), None) is None


def _evaluated_keys(validator: Any, instance: Any, schema: Any) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates (jsonschema's
    ``find_evaluated_property_keys_by_schema``, patterns matched by :func:`search`)."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)  # noqa: SLF001 - as jsonschema does
            keys |= _evaluated_keys(
                validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                instance, resolved.contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys |= {key for key, value in instance.items()
                     if _valid(validator.descend(value, subschema))}
    if "patternProperties" in schema:
        keys |= {key for key in instance if _matched(key, schema["patternProperties"])}
    for name, subschema in schema.get("dependentSchemas", {}).items():
        if name in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys |= _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys |= _evaluated_keys(validator, instance, schema["else"])
    return keys

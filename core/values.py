"""JSON values, their frozen persistent form, and the MISSING sentinel.

Inside obelisk a JSON value is *frozen*: objects are ``PMap``, arrays ``PVector``, scalars
are ``None``, ``bool``, ``int``, ``float`` and ``str``. Frozen values share structure, so
the context's materialised views cost O(change) per write. At the API boundary values are
thawed back to plain ``dict`` and ``list``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, TypeGuard, Union, cast

from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.core.errors import NotJSONError as NotJSONError  # re-exported: its old home

#: A plain JSON value, as ``json.loads`` makes it.
Json: TypeAlias = None | bool | int | float | str | list["Json"] | dict[str, "Json"]

#: A JSON scalar (what a literal in an expression can be).
Scalar: TypeAlias = None | bool | int | float | str

#: A frozen JSON value (objects are PMap, arrays PVector), recursively.
Frozen: TypeAlias = Union[None, bool, int, float, str, "PMap[str, Frozen]", "PVector[Frozen]"]


class _Missing(enum.Enum):
    """The type of :data:`MISSING` (an enum so that mypy narrows ``is MISSING``)."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"

    __str__ = __repr__

    def __bool__(self) -> Literal[False]:
        return False


#: The value of a path that does not exist. Distinct from JSON ``null``.
MISSING: Final = _Missing.MISSING
Missing: TypeAlias = Literal[_Missing.MISSING]


#: Deepest nesting of a JSON value obelisk accepts (objects and arrays inside each other).
MAX_JSON_DEPTH = 512


def freeze(value: Any, pointer: str = "") -> Frozen:
    """The frozen form of a plain JSON value; raises :class:`NotJSONError` for non-JSON.

    Values nested deeper than :data:`MAX_JSON_DEPTH` are refused (which also catches a
    container that contains itself), so freezing can never exhaust the Python stack, and
    later recursive operations on frozen values (deep merge) are bounded too.
    """
    try:
        return _freeze(value, 0)
    except NotJSONError as exc:
        raise NotJSONError(exc.reason, pointer + exc.pointer) from None


def _freeze(value: Any, depth: int) -> Frozen:
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return cast(Scalar, value)
    if t is dict or (t is not PMap and isinstance(value, Mapping)):
        if depth >= MAX_JSON_DEPTH:
            raise NotJSONError(f"nested deeper than {MAX_JSON_DEPTH} levels", "")
        out = {}
        for key, child in value.items():
            if type(key) is not str:
                raise NotJSONError(f"object key {key!r} is not a string", "")
            try:
                out[key] = _freeze(child, depth + 1)
            except NotJSONError as exc:
                raise NotJSONError(exc.reason, "/" + _escape(key) + exc.pointer) from None
        return pmap(out)
    if t is list or t is tuple:
        if depth >= MAX_JSON_DEPTH:
            raise NotJSONError(f"nested deeper than {MAX_JSON_DEPTH} levels", "")
        items = []
        for index, child in enumerate(value):
            try:
                items.append(_freeze(child, depth + 1))
            except NotJSONError as exc:
                raise NotJSONError(exc.reason, f"/{index}{exc.pointer}") from None
        return pvector(items)
    return _freeze_scalar(value, "")


def _freeze_scalar(value: Any, pointer: str) -> Frozen:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise NotJSONError(f"{value!r} is not a JSON number", pointer)
        return value
    if isinstance(value, (PMap, PVector)):
        return value
    raise NotJSONError(f"a {type(value).__name__} is not JSON", pointer)


def thaw(value: Frozen) -> Json:
    """The plain JSON form of a frozen value (dict and list), iteratively.

    Object keys come out in sorted order, whatever order they were written in.
    """
    if isinstance(value, PMap):
        out: Any = {}
    elif isinstance(value, PVector):
        out = []
    else:
        return value
    root = out
    stack: list[tuple[PMap[str, Frozen] | PVector[Frozen], Any]] = [(value, out)]
    while stack:
        src, dst = stack.pop()
        # PMap iterates in hash order, which changes with PYTHONHASHSEED; thawed objects
        # list their keys sorted so every output is deterministic.
        items = sorted(src.items()) if isinstance(src, PMap) else enumerate(src)
        for key, child in items:
            if isinstance(child, PMap):
                new: Any = {}
            elif isinstance(child, PVector):
                new = []
            else:
                new = child
            if isinstance(dst, dict):
                dst[key] = new
            else:
                dst.append(new)
            if isinstance(child, (PMap, PVector)):
                stack.append((child, new))
    return root  # type: ignore[no-any-return]


def is_object(value: object) -> bool:
    """True for a JSON object, frozen or plain."""
    return isinstance(value, (PMap, dict))


def is_array(value: object) -> bool:
    """True for a JSON array, frozen or plain."""
    return isinstance(value, (PVector, list))


def present(value: Frozen | Missing) -> TypeGuard[Frozen]:
    """True when a value is neither MISSING nor null (the test of ``||`` and ``&&``)."""
    return value is not MISSING and value is not None


def json_type(value: object) -> str:
    """The JSON Schema type name of a value: object, array, string, integer, number..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if is_object(value):
        return "object"
    if is_array(value):
        return "array"
    return type(value).__name__


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def pointer_of(parts: Sequence[str | int]) -> str:
    """The JSON Pointer (RFC 6901) for a sequence of keys and indexes."""
    return "".join("/" + _escape(str(p)) for p in parts)

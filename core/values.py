"""JSON values, their frozen persistent form, and the MISSING sentinel.

Inside obelisk a JSON value is *frozen*: objects are ``PMap``, arrays ``PVector``, scalars
are ``None``, ``bool``, ``int``, ``float`` and ``str``. Frozen values share structure, so
the context's materialised views cost O(change) per write. At the API boundary values are
thawed back to plain ``dict`` and ``list`` (:mod:`obelisk.core.plain`).
"""

from __future__ import annotations

import enum
import math
import operator
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, TypeGuard, Union, cast

from pyrsistent import PMap, PVector, pvector

from obelisk.core.errors import NotJSONError, ValueTooLarge
from obelisk.core.pmaps import compact as compact_map
from obelisk.core.pmaps import from_dict

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

#: The default size limit of a value a run hands out or takes in (a result, a written
#: value, a resolved call): this many JSON values, each object, array and scalar counting
#: one. Runs take ``max_value_nodes=`` to change it.
MAX_VALUE_NODES = 250_000

#: No limit on the size of a value (what :func:`freeze` and ``thaw`` use by default).
UNLIMITED = sys.maxsize

# Any code point of the surrogate range in a Python string is a *lone* surrogate: JSON
# readers join a valid pair into one character, and UTF-8 cannot encode a lone one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _int_limit() -> int:
    """Python's limit on the digits of an integer turned into text (0: none)."""
    get = getattr(sys, "get_int_max_str_digits", None)  # Python 3.11+
    return int(get()) if get is not None else 0


# The bound an integer's absolute value must stay under to be printable, for the limit in
# force when it was computed: (limit, 10 ** limit), or (0, None) without a limit. Reread
# once per freeze() so that the common case costs one comparison per integer.
_INT_BOUND: tuple[int, int | None] = (0, None)


def _int_bound() -> int | None:
    global _INT_BOUND
    limit = _int_limit()
    if limit != _INT_BOUND[0]:
        _INT_BOUND = (limit, 10 ** limit if limit else None)
    return _INT_BOUND[1]


def plainly_json(value: Any) -> bool:
    """True for the commonest values :func:`freeze` accepts, told without freezing: a
    ``None``, ``bool``, small ``int`` or ASCII ``str``, or a plain ``dict`` of ASCII keys
    holding only those. False means "ask :func:`freeze`", not "not JSON"."""
    kind = type(value)
    if kind is dict:
        if len(value) > 64:
            return False
        for key, child in value.items():
            if type(key) is not str or not key.isascii() or not _plain_scalar(child):
                return False
        return True
    return _plain_scalar(value)


def _plain_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return value.isascii()  # type: ignore[no-any-return]
    if kind is int:
        return -_SMALL < value < _SMALL  # type: ignore[no-any-return]
    return kind is bool or value is None


#: Integers this small print under any digit limit Python allows (640 digits at least).
_SMALL = 10 ** 600


def freeze(value: Any, pointer: str = "", *, max_nodes: int = UNLIMITED,
           members: dict[str, Frozen] | None = None, compact: bool = False) -> Frozen:
    """The frozen form of a JSON value; raises :class:`NotJSONError` for non-JSON.

    The value is checked all the way down, even inside a ``PMap`` or ``PVector``: sets,
    NaN and infinities, non-string keys, other objects, strings holding a lone surrogate
    (they cannot be written as UTF-8) and integers too long for Python to print
    (``sys.get_int_max_str_digits()``, 4300 digits by default) are refused. ``str``,
    ``int`` and ``float`` subclasses become plain values, and mutable containers found
    inside frozen ones are frozen too; a frozen value that needs nothing is returned as it
    is, so structure stays shared.

    Values nested deeper than :data:`MAX_JSON_DEPTH` are refused (which also catches a
    container that contains itself), so freezing can never exhaust the Python stack, and
    later recursive operations on frozen values (deep merge) are bounded too. A value of
    more than ``max_nodes`` JSON values raises :class:`ValueTooLarge`, counted as it is
    frozen (the walk stops there).

    ``members``: when ``value`` is an object, its frozen members are also put in this
    dict, for a caller that then reads many of them (a dict is cheaper to read than a
    PMap, and building it here costs no second walk). ``compact``: an object of at most
    :data:`COMPACT_MAX` members made anew is laid out as :func:`compact_object` lays it
    out (the compiler's calls: each is kept as long as its plan, and its members are
    read in key order on every run).
    """
    kind = type(value)  # the commonest results first, told as _plain_scalar tells them
    if (kind is int and -_SMALL < value < _SMALL) or (kind is str and value.isascii()) \
            or kind is bool or value is None:
        return value  # type: ignore[no-any-return]  # a scalar (no cast: a call at run time)
    bound = _int_bound()
    try:
        return _freeze(value, 0, [max_nodes - 1], bound, members, compact)
    except NotJSONError as exc:
        raise NotJSONError(exc.reason, pointer + exc.pointer) from None
    except _TooLarge:
        raise ValueTooLarge(max_nodes) from None


class _TooLarge(Exception):
    """Raised inside the walk; :func:`freeze` turns it into ValueTooLarge."""


def _freeze(value: Any, depth: int, left: list[int], bound: int | None,
            members: dict[str, Frozen] | None = None, compact: bool = False) -> Frozen:
    # One frame per level of nesting (MAX_JSON_DEPTH frames must fit in the stack: so
    # the containers are walked here, and only what does not recurse is a helper).
    # ``left`` counts down the values this one may still hold; each container takes its
    # length from it, so the count costs one subtraction per container.
    t = type(value)
    if t is str:
        if not value.isascii() and _SURROGATE.search(value):
            raise NotJSONError(_surrogate_reason(value, "a string"), "")
        return value  # type: ignore[no-any-return]  # (typing.cast is a call at run time)
    if t is int:
        if bound is not None and (value >= bound or value <= -bound):
            raise NotJSONError(_long_reason(), "")
        return value  # type: ignore[no-any-return]
    if t is bool or value is None:
        return value  # type: ignore[no-any-return]
    if t is dict or t is PMap or isinstance(value, Mapping):
        _taken(value, depth, left)
        changed = t is not PMap  # a PMap that needs nothing is kept (structure sharing)
        out: dict[str, Frozen] = {} if members is None else members
        for key, child in value.items():
            if type(key) is not str or not key.isascii():
                key, renamed = _key(key)
                changed = changed or renamed
            # The commonest children, a string, a bool, null or a small int (as
            # _plain_scalar tells them), are their own frozen form: taken here without a
            # call (a reference's ``†`` makes a string non-ASCII). The others go to
            # _freeze, which says why when they are refused.
            kind = type(child)
            if kind is str:
                if child.isascii() or _SURROGATE.search(child) is None:
                    out[key] = child
                    continue
            elif kind is bool or child is None or (kind is int and -_SMALL < child < _SMALL):
                out[key] = child
                continue
            try:
                frozen = _freeze(child, depth + 1, left, bound)
            except NotJSONError as exc:
                raise NotJSONError(exc.reason, "/" + _escape(key) + exc.pointer) from None
            changed = changed or frozen is not child
            out[key] = frozen
        if not changed:
            return value  # type: ignore[no-any-return]
        return compact_object(out) if compact and 0 < len(out) <= COMPACT_MAX else from_dict(out)
    if t is list or t is tuple or t is _PVECTOR or isinstance(value, PVector):
        _taken(value, depth, left)
        items = []
        for index, child in enumerate(value):
            try:
                frozen = _freeze(child, depth + 1, left, bound)
            except NotJSONError as exc:
                raise NotJSONError(exc.reason, f"/{index}{exc.pointer}") from None
            items.append(frozen)
        changed = t is not _PVECTOR or any(map(operator.is_not, items, value))
        return pvector(items) if changed else cast(Frozen, value)
    return _freeze_scalar(value, bound)


def _taken(value: Any, depth: int, left: list[int]) -> None:
    # A container's place in the bounds: its depth, and its members counted.
    if depth >= MAX_JSON_DEPTH:
        raise NotJSONError(f"nested deeper than {MAX_JSON_DEPTH} levels", "")
    left[0] -= len(value)
    if left[0] < 0:
        raise _TooLarge


def _key(key: Any) -> tuple[str, bool]:
    # An object key that is not a plain ASCII str, and whether it changed: a str
    # subclass is made plain; refused when it is not a string or holds a lone surrogate.
    changed = type(key) is not str
    if changed:
        if not isinstance(key, str):
            raise NotJSONError(f"object key {_shown(key)} is not a string", "")
        key = str.__str__(key)
    if not key.isascii() and _SURROGATE.search(key):
        raise NotJSONError(_surrogate_reason(key, "an object key"),
                           "/" + _escape(without_surrogates(key)))
    return key, changed


_PVECTOR: type = type(pvector())  # the C type behind PVector (an abstract class)


def _freeze_scalar(value: Any, bound: int | None) -> Frozen:
    # Floats, and subclasses of str, int and float (an IntEnum, a str subclass with its own
    # methods) stored as the plain value they stand for.
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, float):
        number = float.__float__(value)
        if not math.isfinite(number):
            raise NotJSONError(f"{number!r} is not a JSON number", "")
        return number
    if isinstance(value, str):
        return _freeze(str.__str__(value), 0, [0], bound)
    if isinstance(value, int):
        return _freeze(int.__int__(value), 0, [0], bound)
    raise NotJSONError(f"a {type(value).__name__} is not JSON", "")


def _surrogate_reason(text: str, what: str) -> str:
    found = _SURROGATE.search(text)
    code = ord(found.group()) if found else 0xD800
    return (f"{what} holds a lone surrogate (U+{code:04X}), which is not text: it cannot be "
            "written as UTF-8")


def _long_reason() -> str:
    limit = _int_limit()
    return (f"an integer of more than {limit} digits, which Python cannot turn into text; "
            "write it as a string")


def _shown(key: Any) -> str:
    try:
        text = repr(key)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real problem
        return f"of type {type(key).__name__}"
    return without_surrogates(text if len(text) <= 80 else text[:77] + "...")


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate written as a visible escape (``\\ud800``), so
    that it can go into a context and be written as UTF-8."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


#: The scalar types a frozen value holds (exact types: a subclass takes the general path).
SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
#: The same but strings: the scalars that never hold a reference (``†``) or need unescaping.
NON_STRING_SCALAR_TYPES = SCALAR_TYPES - {str}


#: Sorts a map's items by key (keys are unique, so the values are never compared).
_KEY = operator.itemgetter(0)


#: The most members an object laid out in one bucket may have (lookups scan the bucket).
COMPACT_MAX = 8


def compact_object(members: dict[str, Frozen]) -> PMap[str, Frozen]:
    """The frozen object of ``members`` (frozen values, at least one) as a PMap of one
    bucket holding its entries in key order: ``pmap(dict(sorted(members.items())),
    pre_size=1)``. Equal to, and hashing as, the map ``pmap(members)`` makes; it holds
    one bucket list where that holds one per key or so, and its items come out in key
    order (what :func:`~obelisk.core.plain.sorted_items` and ``thaw`` give). For small objects only:
    a lookup scans the bucket, and a later ``set`` spreads the map out as pmap does."""
    return compact_map(sorted(members.items(), key=_KEY))


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

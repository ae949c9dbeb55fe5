"""Hypothesis strategies for JSON values, messages, contexts, expressions and reads.

Published as :mod:`obelisk.testing` (with :mod:`obelisk.kit.planstrategies`); ``obelisk
fuzz`` draws its ``resolve`` cases from :func:`resolve_cases`. Every value drawn is plain
JSON, ready to send to any implementation. The vocabularies (kinds, keys, instance ids)
are small and shared, and the writes of a context meet (one or two kinds and paths, and
messages that write again where an earlier one wrote), so that reads see what several
writes made of a value: a deep merge or a shallow one, an instance's layer over the
global one, an array's first element or its last. Every strategy takes parameters
bounding its size.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

#: The data kinds drawn (``data`` is the canonical type; ``user`` only through it).
KINDS = ("state", "data", "user", "input")
#: The instance ids drawn.
INSTANCES = ("①", "②")
#: Object keys drawn: plain words, digits-as-keys, a space, non-ASCII.
KEYS = ("a", "b", "c", "0", "1", "x y", "имя")
INDEXES = (0, 1, 2, -1, -2)
METHODS = ("set", "merge", "assign", "push", "concat")

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                     st.sampled_from(["", "s", "t", "ж"]))


def _canonical(value: Any) -> str:
    # Equal JSON values have one text: the key lists are drawn unique by it.
    return json.dumps(value, sort_keys=True)


@functools.cache
def json_values(max_leaves: int = 5) -> st.SearchStrategy[Any]:
    """Small JSON values over the shared keys: scalars, arrays (of distinct elements, so
    that reading the first and the last element tell them apart), objects."""
    # Cached: building a recursive strategy costs far more than drawing from it, and the
    # composites below draw from these on every example.
    return st.recursive(
        _scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=3, unique_by=_canonical),
                                st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
        max_leaves=max_leaves)


def _render_key(key: int | str) -> str:
    """A path segment as an expression writes it: a word, an index, or a quoted key."""
    if isinstance(key, int):
        return str(key)
    assert isinstance(key, str)
    if key.isidentifier() and key.isascii():
        return key
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _reference(kind: str, path: Sequence[Any]) -> str:
    return "†" + kind + "".join("." + _render_key(seg) for seg in path)


def _nest(path: Sequence[Any], value: Any) -> Any:
    """The value nested along ``path``, each segment an object key (an index as text)."""
    for seg in reversed(path):
        value = {str(seg): value}
    return value


_segments = st.one_of(st.sampled_from(KEYS), st.sampled_from(KEYS), st.sampled_from(INDEXES))
_WHERE = st.lists(_segments, max_size=2)
#: The keys of nested objects and of the paths a context writes: few, so that two writes
#: meet at one path and share keys at every level below it (a deep merge and a shallow
#: one then differ).
_NESTED_KEYS = ("a", "b", "c")
_LISTS = st.lists(json_values(2), min_size=2, max_size=4, unique_by=_canonical)
_INNER = st.dictionaries(st.sampled_from(_NESTED_KEYS), st.one_of(_scalars, _scalars, _LISTS),
                         min_size=1, max_size=3)
#: Objects two levels deep, mostly.
_NESTED = st.dictionaries(st.sampled_from(_NESTED_KEYS), st.one_of(_INNER, _INNER, _scalars),
                          min_size=1, max_size=3)
#: The paths a context writes at: one or two keys (``x y`` needs quoting).
_POOL_PATHS = st.lists(st.sampled_from((*_NESTED_KEYS, "x y")), min_size=1,
                       max_size=2).map(tuple)
_ARRAY_OR_NOT = st.one_of(_LISTS, st.lists(json_values(), max_size=3, unique_by=_canonical),
                          json_values())
_OBJECT_OR_NOT = st.one_of(_NESTED, _NESTED, _NESTED, _NESTED, _NESTED, _NESTED,
                           st.dictionaries(st.sampled_from(KEYS), json_values(), max_size=3),
                           _LISTS, json_values())


@st.composite
def data_messages(draw: st.DrawFn, kinds: Sequence[str] = KINDS,
                  instances: Sequence[str] = INSTANCES,
                  paths: Sequence[Sequence[Any]] = ()) -> dict[str, Any]:
    """One data message in any of its spellings, with any write method (some of the
    writes it makes cannot be applied: a push onto an object, a path through a scalar).
    With ``paths``, it writes at the root or at one of them, mostly."""
    kind = draw(st.sampled_from(list(kinds)))
    instance = draw(st.sampled_from([None, None, *instances]))
    method = draw(st.sampled_from([None, *METHODS]))
    if paths and draw(st.integers(0, 4)) > 0:
        choices: list[tuple[Any, ...]] = [(), *map(tuple, paths)]
        where = list(draw(st.sampled_from(choices)))
    else:
        where = draw(_WHERE) if draw(st.booleans()) else []
    if method == "concat":  # mostly arrays, sometimes not (a write that fails)
        value = draw(_ARRAY_OR_NOT)
    elif method in (None, "merge", "assign"):
        value = draw(_OBJECT_OR_NOT)
    else:
        value = draw(st.one_of(json_values(), _LISTS))
    data = _nest(where, value)
    forms = ["canonical"] if kind in ("data", "user") else ["canonical", "payload"]
    if isinstance(data, dict) and data and kind not in ("data", "user"):
        forms.append("inline")
    form = draw(st.sampled_from(forms))
    message: dict[str, Any]
    if form == "canonical":
        message = {"type": "data", "data": data}
        if kind != "data" or draw(st.booleans()):
            message["kind"] = kind
    elif form == "payload":
        message = {"type": kind, kind: data}
    else:
        message = {"type": kind, **data}
    if where:
        message["_outputPath"] = _reference(kind, where)
    if method is not None:
        message["_outputMethod"] = method
    if instance is not None:
        message["_instance"] = instance
    if draw(st.integers(0, 9)) == 9:  # rare, and gone once shrunk (it changes no read)
        message["_call"] = {"_tool": "t"}
    return message


_other_messages = st.sampled_from([
    {"type": "text", "text": "hello"},
    {"type": "system", "state": {"a": [1]}},
])


def contexts(max_messages: int = 8, kinds: Sequence[str] = KINDS,
             instances: Sequence[str] = INSTANCES,
             min_messages: int = 0) -> st.SearchStrategy[list[Any]]:
    """Contexts (lists of messages) using every message form, kind, instance and write
    method, including writes that cannot be applied, with a few non-data messages. The
    writes of one context meet: they use one or two of ``kinds`` and write at one or two
    paths (and at the root) mostly, global and instance writes alike."""
    return _contexts(max_messages, tuple(kinds), tuple(instances), min(min_messages,
                                                                          max_messages))


@functools.cache
def _contexts(max_messages: int, kinds: tuple[str, ...], instances: tuple[str, ...],
              min_messages: int) -> st.SearchStrategy[list[Any]]:
    @st.composite
    def draw_context(draw: st.DrawFn) -> list[Any]:
        here = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=2, unique=True))
        paths = draw(st.lists(_POOL_PATHS, min_size=1, max_size=2))
        fresh = data_messages(here, instances, paths)
        context: list[Any] = []
        for _ in range(draw(st.integers(min_messages, max_messages))):
            written = [m for m in context if _kind_of(m) is not None]
            choice = draw(st.integers(0, 5))
            if written and choice in (1, 2):  # again where an earlier message wrote
                # An object, most often: writes over an object are where methods differ.
                objects = [m for m in written if isinstance(_written(m), dict)]
                earlier = draw(st.sampled_from(objects or written))
                context.append(_revisit(draw, earlier, instances))
            else:
                context.append(draw(_other_messages if choice == 5 else fresh))
        return context

    return draw_context()


def _written(message: dict[str, Any]) -> Any:
    """The value a generated data message writes (its payload, down its path)."""
    if message.get("type") == "data":
        value = message.get("data")
    elif message["type"] in message:
        value = message[message["type"]]
    else:
        value = {k: v for k, v in message.items() if k != "type" and not k.startswith("_")}
    for segment in _path_of(message):
        value = value.get(str(segment)) if isinstance(value, dict) else None
    return value


@st.composite
def _variant(draw: st.DrawFn, value: Any) -> Any:
    """A value like ``value``, but not quite: an object less a key, or with one key's value
    changed (an inner object's, too), or with a key more; another array; null."""
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        # Changing an inner object is what a deep merge and a shallow one tell apart.
        change = draw(st.sampled_from(["inner", "drop", "inner", "null", "add", "other"]))
        if change == "drop" and len(value) > 1:
            return {k: v for k, v in value.items() if k != key}
        if change == "inner" and isinstance(value[key], dict):
            return {**value, key: draw(_variant(value[key]))}
        if change == "null":
            return {**value, key: None}
        if change == "add":
            return {**value, draw(st.sampled_from(_NESTED_KEYS)): draw(_NESTED)}
        return draw(_NESTED)
    if isinstance(value, list):
        return draw(st.one_of(_LISTS, st.just(value[::-1]), st.none()))
    return draw(st.one_of(st.none(), _NESTED, _scalars))


def _revisit(draw: st.DrawFn, earlier: dict[str, Any], instances: Sequence[str]) -> Any:
    """A data message writing again where ``earlier`` wrote (the same kind and path), a
    variant of its value, with another method and maybe in another layer (global or an
    instance): the writes that tell a deep merge from a shallow one, or the layers' order."""
    kind, path = _kind_of(earlier), _path_of(earlier)
    assert kind is not None
    message: dict[str, Any] = {"type": "data", "kind": kind,
                               "data": _nest(path, draw(_variant(_written(earlier))))}
    if path:
        message["_outputPath"] = _reference(kind, path)
    method = draw(st.sampled_from([None, "merge", "merge", "merge", "assign", "set"]))
    if method is not None:
        message["_outputMethod"] = method
    instance = draw(st.sampled_from([earlier.get("_instance"), earlier.get("_instance"), None,
                                     *instances]))
    if instance is not None:
        message["_instance"] = instance
    return message


_STRINGS = ["'s'", '"t"', "'it\\'s'", '"a\\"b"', "'x\\ny'", '"\\u00e9"', "''", '"||"']
_NUMBERS = ["0", "1", "-2", "0.5", "1e2", "-0"]
_CONSTANTS = ["true", "false", "null"]


@st.composite
def _references(draw: st.DrawFn, kinds: Sequence[str], max_path: int) -> str:
    kind = draw(st.sampled_from([*kinds, "nokind"]))
    path = draw(st.lists(_segments, max_size=max_path))
    text = _reference(kind, path)
    if path and draw(st.integers(0, 4)) == 0:  # a key written quoted though it need not be
        last = path[-1]
        quote = draw(st.sampled_from(["'", '"']))
        text = text.rsplit(".", 1)[0] + "." + quote + str(last) + quote
    return text


def expressions(kinds: Sequence[str] = KINDS, max_operands: int = 4, max_path: int = 3,
                invalid: bool = True) -> st.SearchStrategy[str]:
    """Input expressions: references with keys, quoted keys and negative indexes;
    literals with quoting and escapes; ``||``, ``&&`` and parentheses. With ``invalid``,
    a few are broken, to compare syntax errors."""
    return _expressions(tuple(kinds), max_operands, max_path, invalid)


@functools.cache
def _expressions(kinds: tuple[str, ...], max_operands: int, max_path: int,
                 invalid: bool) -> st.SearchStrategy[str]:
    atoms = st.one_of(_references(kinds, max_path), _references(kinds, max_path),
                      st.sampled_from(_STRINGS + _NUMBERS + _CONSTANTS))

    def combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        ops = st.sampled_from([" || ", "||", " && ", "&&"])
        pairs = st.tuples(inner, ops, inner).map(lambda t: t[0] + t[1] + t[2])
        return st.one_of(pairs, inner.map(lambda e: f"({e})"))

    expr = st.recursive(atoms, combine, max_leaves=max_operands)
    if not invalid:
        return expr
    broken = st.tuples(expr, st.sampled_from([".", " ||", "(", ")", " x", "'"])).map("".join)
    return st.one_of(expr, expr, expr, expr, expr, expr, broken)


def _kind_of(message: dict[str, Any]) -> str | None:
    if message.get("type") == "data":
        return str(message.get("kind", "data"))
    return str(message["type"]) if message.get("type") in KINDS else None


def _path_of(message: dict[str, Any]) -> list[Any]:
    """The path a generated data message writes, from its ``_outputPath`` (or the root)."""
    text = message.get("_outputPath")
    if not isinstance(text, str):
        return []
    segments: list[Any] = []
    for part in text.split(".")[1:]:
        if part.startswith('"'):
            segments.append(part[1:-1].replace('\\"', '"').replace("\\\\", "\\"))
        elif part.lstrip("-").isdigit():
            segments.append(int(part))
        else:
            segments.append(part)
    return segments


#: What :func:`_value_at` gives for a read obelisk refuses (a write that cannot be applied).
_UNREADABLE = object()


def _value_at(context: Any, kind: str, path: Sequence[Any], instance: str | None) -> Any:
    """What obelisk reads at ``†kind.path`` (MISSING included), or :data:`_UNREADABLE`."""
    from obelisk import ObeliskError, resolve

    try:
        return resolve(context, _reference(kind, path), instance)
    except ObeliskError:
        return _UNREADABLE


def _into(value: Any) -> st.SearchStrategy[list[Any]]:
    """One step further into ``value``, or none: an array's first or last element (or
    another index), an object's key (or one it does not have), any segment below a scalar."""
    if isinstance(value, list):
        return st.sampled_from([[-1], [0], [], [1], [-2], [-1]])
    if isinstance(value, dict):  # the whole object, mostly: it shows every difference below
        keys = [[k] for k in sorted(value)]
        return st.sampled_from([[], *([[]] * max(1, len(keys))), *keys, ["c"]])
    return st.one_of(st.just([]), st.lists(_segments, min_size=1, max_size=1))


@st.composite
def resolve_cases(draw: st.DrawFn, max_messages: int = 8) -> tuple[list[Any], str, str | None]:
    """(context, expression, instance): three reads in four aim at what a message of the
    context writes: a prefix of its path (mostly for its instance), then one step into
    the value there (an array's first or last element, an object's key); read alone,
    with a fallback (``||``, most often when the value is null) or behind a gate
    (``&&``). The others are any expression."""
    from obelisk import Context, ObeliskError

    # At least two messages: most differences take two writes that meet (the pruning
    # of a difference found removes the messages it does not need).
    context = draw(contexts(max_messages, min_messages=2))
    written = [m for m in context if _kind_of(m) is not None]
    try:
        built = Context.of(context) if written else None
    except ObeliskError:
        built = None
    if built is None or draw(st.integers(0, 3)) == 3:
        return context, draw(expressions()), draw(st.sampled_from([None, None, *INSTANCES]))
    message = draw(st.sampled_from(written))
    kind = _kind_of(message)
    assert kind is not None
    # Its instance, or (a global message) one an instance write of the context names: an
    # instance's view is the global one with that instance's writes on top.
    layers = [message.get("_instance")] if message.get("_instance") is not None else [
        None, *sorted({m["_instance"] for m in written if isinstance(m.get("_instance"), str)})]
    instance = draw(st.sampled_from(layers)) if draw(st.integers(0, 3)) else None
    path = _path_of(message)
    path = path[:draw(st.integers(0, len(path)))]
    path += draw(_into(_value_at(built, kind, path, instance)))
    ref = _reference(kind, path)
    shapes = ["plain", "or", "and"]
    if _value_at(built, kind, path, instance) is None:
        shapes = ["or", "plain", "or", "and"]  # null: the fallback is what to check
    shape = draw(st.sampled_from(shapes))
    if shape == "or":
        ref = f"{ref} || {draw(st.sampled_from(_STRINGS + _NUMBERS))}"
    elif shape == "and":  # the aimed read last: its value is the expression's
        ref = f"{draw(expressions(invalid=False, max_operands=2))} && {ref}"
    return context, ref, instance

"""Hypothesis strategies for contexts, expressions, output paths, mocks and plans.

Published as :mod:`obelisk.testing`; ``obelisk fuzz`` draws its cases from them. Every
value drawn is plain JSON, ready to send to any implementation. The vocabularies (kinds,
keys, instance ids) are small and shared, so that expressions read what contexts write
and plans read what earlier calls write. Every strategy takes parameters bounding its size.
"""

from __future__ import annotations

import functools
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


@functools.cache
def json_values(max_leaves: int = 5) -> st.SearchStrategy[Any]:
    """Small JSON values over the shared keys: scalars, arrays, objects."""
    # Cached: building a recursive strategy costs far more than drawing from it, and the
    # composites below draw from these on every example.
    return st.recursive(
        _scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=3),
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
_ARRAY_OR_NOT = st.one_of(st.lists(json_values(), max_size=3), json_values())
_OBJECT_OR_NOT = st.one_of(st.dictionaries(st.sampled_from(KEYS), json_values(), max_size=3),
                           json_values())


@st.composite
def data_messages(draw: st.DrawFn, kinds: Sequence[str] = KINDS,
                  instances: Sequence[str] = INSTANCES) -> dict[str, Any]:
    """One data message in any of its spellings, with any write method (some of the
    writes it makes cannot be applied: a push onto an object, a path through a scalar)."""
    kind = draw(st.sampled_from(list(kinds)))
    instance = draw(st.sampled_from([None, None, *instances]))
    method = draw(st.sampled_from([None, *METHODS]))
    where: list[Any] = draw(_WHERE) if draw(st.booleans()) else []
    if method == "concat":  # mostly arrays, sometimes not (a write that fails)
        value = draw(_ARRAY_OR_NOT)
    elif method in (None, "merge", "assign") and not where:
        value = draw(_OBJECT_OR_NOT)
    else:
        value = draw(json_values())
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
    if draw(st.integers(0, 9)) == 0:
        message["_call"] = {"_tool": "t"}
    return message


_other_messages = st.sampled_from([
    {"type": "text", "text": "hello"},
    {"type": "system", "state": {"a": [1]}},
])


def contexts(max_messages: int = 8, kinds: Sequence[str] = KINDS,
             instances: Sequence[str] = INSTANCES) -> st.SearchStrategy[list[Any]]:
    """Contexts (lists of messages) using every message form, kind, instance and write
    method, including writes that cannot be applied, with a few non-data messages."""
    return _contexts(max_messages, tuple(kinds), tuple(instances))


@functools.cache
def _contexts(max_messages: int, kinds: tuple[str, ...],
              instances: tuple[str, ...]) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.one_of(data_messages(kinds, instances), data_messages(kinds, instances),
                              data_messages(kinds, instances), _other_messages),
                    max_size=max_messages)


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


@st.composite
def resolve_cases(draw: st.DrawFn, max_messages: int = 8) -> tuple[list[Any], str, str | None]:
    """(context, expression, instance): two reads in three aim at a path a message of the
    context writes (a prefix of it, or one key further), mostly for that message's
    instance; the others are any expression."""
    context = draw(contexts(max_messages))
    written = [m for m in context if _kind_of(m) is not None]
    if not written or draw(st.integers(0, 2)) == 0:
        return context, draw(expressions()), draw(st.sampled_from([None, None, *INSTANCES]))
    message = draw(st.sampled_from(written))
    kind = _kind_of(message)
    assert kind is not None
    path = _path_of(message)
    path = path[:draw(st.integers(0, len(path)))] + draw(st.lists(_segments, max_size=1))
    ref = _reference(kind, path)
    shape = draw(st.sampled_from(["plain", "plain", "or", "and"]))
    if shape == "or":
        ref = f"{ref} || {draw(st.sampled_from(_STRINGS + _NUMBERS))}"
    elif shape == "and":
        ref = f"{ref} && {draw(expressions(invalid=False, max_operands=2))}"
    instance = message.get("_instance") if draw(st.integers(0, 3)) else None
    return context, ref, instance


def output_paths(kinds: Sequence[str] = ("state", "data"), max_alternatives: int = 3,
                 max_targets: int = 2) -> st.SearchStrategy[str]:
    """Output expressions: one target, a fan-out (``&&``), or alternatives (``||``)."""
    target = st.builds(lambda kind, key: f"†{kind}.{key}", st.sampled_from(list(kinds)),
                       st.sampled_from(["a", "b", "c", "r", "err"]))
    group = st.lists(target, min_size=1, max_size=max_targets, unique=True)

    def render(groups: list[list[str]]) -> str:
        return " || ".join(" && ".join(g) if len(groups) == 1 or len(g) == 1
                           else "(" + " && ".join(g) + ")" for g in groups)

    return st.lists(group, min_size=1, max_size=max_alternatives).map(render)


@st.composite
def mock_for(draw: st.DrawFn, index: int, alternatives: Sequence[Sequence[str]] = (),
             scopes: bool = False) -> dict[str, Any]:
    """One mock for the tool of call ``index``: return, raise (a failing mock), echo, an
    explicit branch among ``alternatives`` (or to an undeclared one), echo_scopes."""
    # echo twice: a result that shows the resolved parameters catches reading bugs.
    forms = ["return", "return", "raise", "echo", "echo"]
    if len(alternatives) >= 2:
        forms += ["branch", "branch"]
    if scopes:
        forms.append("echo_scopes")
    form = draw(st.sampled_from(forms))
    if form == "return":
        return {"return": draw(json_values(4))}
    if form == "raise":
        error: dict[str, Any] = {"type": f"E{index}", "message": "m"}
        if draw(st.booleans()):
            error["data"] = draw(json_values(3))
        return {"raise": error}
    if form == "branch":
        targets = [t for group in alternatives for t in group] + ["†state.undeclared"]
        return {"branch": draw(st.sampled_from(targets)), "value": draw(json_values(3))}
    return {form: True}


def mocks(tools: Sequence[str], max_leaves: int = 4) -> st.SearchStrategy[dict[str, Any]]:
    """An explicit mock for every tool in ``tools`` (so that no result depends on an
    implementation's example generator)."""
    del max_leaves  # the mock values are bounded by json_values
    return st.fixed_dictionaries({tool: mock_for(number) for number, tool in enumerate(tools)})


@st.composite
def plans(draw: st.DrawFn, max_calls: int = 6, instances: bool = True, scopes: bool = True,
          wild: bool = False) -> dict[str, Any]:
    """A plan file: ``context``, ``plan``, ``mocks`` (one per tool) and ``instances``.

    Chains, fan-out, fan-in, ``||`` branches, ``&&`` groups, instances (mapped, and calls
    with their own ``_instance``), ``_scopes``, fire-and-forget calls and failing mocks.
    Plans are race-free by construction (every call writes its own paths). With ``wild``,
    some calls have compile errors: a dangling read, a cycle, an invalid output method,
    an invalid scope, a broken expression.
    """
    ids = list(draw(st.sampled_from([[], list(INSTANCES)]))) if instances else []
    context = _plan_context(draw, ids)
    plan: list[Any] = []
    mock_table: dict[str, Any] = {}
    readable: list[str] = []  # targets of earlier calls: reading one orders the calls
    count = max_calls
    for index in range(count):
        # Each slot may stay empty, and shrinks to empty: the shrinker can then drop any
        # call, not only the last ones, and the other calls keep their names.
        if draw(st.integers(0, 2)) == 0:
            continue
        call: dict[str, Any] = {"_tool": f"t{index}"}
        for number in range(draw(st.integers(0, 2))):
            call[f"p{number}"] = _param(draw, readable)
        shape = draw(st.sampled_from(["none", "one", "fanout", "two", "three"]))
        sizes = {"none": [], "one": [1], "fanout": [2], "two": [1, 2], "three": [2, 1, 1]}[shape]
        alternatives = [[f"†{'state' if (alt + k) % 2 == 0 else 'data'}.c{index}_{alt}_{k}"
                         for k in range(size)] for alt, size in enumerate(sizes)]
        own_instance = bool(ids) and draw(st.integers(0, 4)) == 0
        if own_instance:
            call["_instance"] = draw(st.sampled_from(ids))  # runs once, in one instance
        if alternatives:
            call["_outputPath"] = " || ".join(
                " && ".join(g) if len(alternatives) == 1 or len(g) == 1
                else "(" + " && ".join(g) + ")" for g in alternatives)
            if draw(st.booleans()):
                call["_outputMethod"] = draw(st.sampled_from(list(METHODS)))
            if not own_instance:  # what one instance writes, the others cannot read
                readable += [t for group in alternatives for t in group]
        has_scopes = scopes and draw(st.integers(0, 3)) == 0
        if has_scopes:
            # Only kinds no call writes: a scope over †state would show a call whatever
            # unordered calls wrote before it (a scope-race), which is timing, not semantics.
            call["_scopes"] = draw(st.sampled_from([["input"], ["input", "user"], []]))
        if wild and draw(st.integers(0, 3)) == 0:
            _break(draw, call, count)
        if ids and draw(st.integers(0, 2)) == 0:
            mock_table[call["_tool"]] = {"by_instance": {
                i: draw(mock_for(index, alternatives, has_scopes)) for i in ids}}
        else:
            mock_table[call["_tool"]] = draw(mock_for(index, alternatives, has_scopes))
        plan.append(call)
    return {"context": context, "plan": plan, "mocks": mock_table, "instances": bool(ids)}


def _plan_context(draw: st.DrawFn, ids: list[str]) -> list[Any]:
    """A plan's context: an input message, one per instance, maybe some state."""
    context: list[Any] = [{"type": "input", "input": {"x": 1, "s": "text", "list": [1]}}]
    for instance in ids:
        context.append({"type": "input", "_instance": instance, "x": draw(st.integers(2, 9))})
    if draw(st.booleans()):
        context.append({"type": "state", "state": {"shared": draw(json_values(3))}})
    return context


def _param(draw: st.DrawFn, readable: list[str]) -> Any:
    """A parameter: an input read, a read of an earlier call's target (alone, with a
    fallback, gating another, nested in a value), or a literal."""
    shape = draw(st.sampled_from(["input", "read", "fallback", "fallback", "gate",
                                  "literal", "nested"]))
    if shape in ("read", "fallback", "gate", "nested") and not readable:
        shape = "input"
    if shape == "input":
        return draw(st.sampled_from(["†input.x", "†input.s", "†input.list.-1",
                                     "†input.nothing || 'dflt'"]))
    if shape == "read":
        return draw(st.sampled_from(readable))
    if shape == "fallback":
        return f"{draw(st.sampled_from(readable))} || 'fallback'"
    if shape == "gate":
        return f"{draw(st.sampled_from(readable))} && {draw(st.sampled_from(readable))}"
    if shape == "nested":
        return {"deep": [draw(st.sampled_from(readable)), 1]}
    return draw(json_values(3))


def _break(draw: st.DrawFn, call: dict[str, Any], count: int) -> None:
    """Give ``call`` one compile error (for fuzzing ``check``)."""
    fault = draw(st.sampled_from(["dangling", "cycle", "method", "scope", "syntax"]))
    if fault == "dangling":
        call["dangling"] = "†state.nothing_writes_this"
    elif fault == "cycle" and count > 1:
        other = draw(st.integers(0, count - 1))
        # Read what a call (maybe itself, maybe a later one) writes first: a cycle when
        # that call also reads this one's output.
        call["loop"] = f"†state.c{other}_0_0"
    elif fault == "method":
        call["_outputMethod"] = "append"
    elif fault == "scope":
        call["_scopes"] = ["system"]
    else:
        call["broken"] = "†state.("

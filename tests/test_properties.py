"""Hypothesis properties for the laws of SEMANTICS §1–4.

- The parser raises nothing but ExpressionSyntaxError, on any text.
- Rendering a reference and parsing it back gives the same kind and path.
- The main law: the context's materialised views answer every read exactly as the plain
  fold (``fold_value``) does, including raising WriteError, however the context was built
  (at once, by appends interleaved with reads, by branching), and old contexts keep
  answering as before.
- The write methods do what §2 says, and a write never changes a path it does not overlap.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from obelisk.compiler.parse import parse_input, parse_output, parse_reference
from obelisk.core.ast import Expr, references
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, WriteError
from obelisk.core.messages import normalise
from obelisk.core.methods import Method, apply_write
from obelisk.core.paths import get_in, overlaps
from obelisk.core.pathtext import render_reference
from obelisk.core.plain import thaw
from obelisk.core.resolve import fold_value
from obelisk.core.values import MISSING, freeze

FAST = settings(deadline=None, max_examples=300)
LAW = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])


def strict(value: Any) -> str:
    """JSON text of a frozen value (or MISSING), telling true from 1 and 1 from 1.0."""
    return "MISSING" if value is MISSING else json.dumps(thaw(value), sort_keys=True)


# -- the parser raises nothing but its own error ----------------------------------------

ALPHABET = ["†", ".", "||", "&&", "|", "&", "(", ")", "'", '"', "\\", "0", "1", "9", "-",
            "a", "b", "я", "$", "_", " ", "\t", "\n", "true", "null", "false", "e", "state"]
grammar_text = st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join)
any_text = st.one_of(st.text(max_size=60), grammar_text, grammar_text.map(lambda t: "†" + t))


def check_parse(parse: Any, text: str) -> Any:
    try:
        return parse(text)
    except ExpressionSyntaxError as error:
        assert 1 <= error.column <= len(text) + 1, (text, error.column)
        assert error.end > error.column
        assert error.expression == text
        rendered = error.render()
        assert "^" in rendered and f"column {error.column}" in rendered
        return None


@pytest.mark.slow
@FAST
@given(any_text)
def test_parse_raises_nothing_but_syntax_errors(text: str) -> None:
    for parse in (parse_input, parse_output, parse_reference):
        check_parse(parse, text)


@pytest.mark.slow
@FAST
@given(any_text)
def test_every_output_expression_is_an_input_expression(text: str) -> None:
    out = check_parse(parse_output, text)
    if out is None:
        return
    expr: Expr = parse_input(text)
    read = [(r.kind, r.path) for r in references(expr)]
    assert [(t.kind, t.path) for t in out.targets] == read
    event("parsed an output expression")


# -- render / parse round trip ------------------------------------------------------------

kinds = st.one_of(
    st.sampled_from(["state", "data", "input", "user", "пользователь", "$k", "_k", "a-b"]),
    st.from_regex(r"[A-Za-z_\u0430-\u044f][A-Za-z0-9_$\-\u0430-\u044f]{0,6}", fullmatch=True),
)
key_text = st.one_of(
    st.text(
        alphabet=st.sampled_from(list("ab z09-$_.'\"\\†|&()я ЖёÉ\n\t")), max_size=8
    ),
    st.sampled_from(["0", "-1", "01", "true", "null", "false", "my key", "имя", "a-b", "$ref", ""]),
    st.text(max_size=6),
)
segments = st.one_of(key_text, st.integers(min_value=-10**6, max_value=10**6))
paths = st.lists(segments, max_size=6).map(tuple)


@pytest.mark.slow
@FAST
@given(kinds, paths)
def test_render_parse_round_trip(kind: str, path: tuple[Any, ...]) -> None:
    text = render_reference(kind, path)
    ref = parse_reference(text)
    assert (ref.kind, ref.path) == (kind, path)
    assert all(type(a) is type(b) for a, b in zip(ref.path, path, strict=True))
    assert str(ref) == text
    expr = parse_input(text)  # a rendered reference is also a valid input expression
    assert (expr.kind, expr.path) == (kind, path)  # type: ignore[union-attr]


# -- generated contexts --------------------------------------------------------------------

KINDS = ["state", "data", "user", "input"]
INSTANCES = [None, None, "①", "②"]
KEYS = ["a", "b", "c", "0", "1", "x y", "имя"]
INDEXES = [0, 1, 2, -1, -2]

segment = st.one_of(st.sampled_from(KEYS), st.sampled_from(KEYS), st.sampled_from(INDEXES))
path = st.lists(segment, max_size=3).map(tuple)
scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "s", "t"]))
json_value = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    ),
    max_leaves=6,
)
METHODS = [None, "set", "merge", "assign", "push", "concat"]


def nest(path: tuple[Any, ...], value: Any) -> Any:
    """The value nested along ``path``, each segment an object key (index as decimal text)."""
    for seg in reversed(path):
        value = {str(seg): value}
    return value


@st.composite
def data_messages(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(KINDS))
    instance = draw(st.sampled_from(INSTANCES))
    method = draw(st.sampled_from(METHODS))
    with_path = draw(st.booleans())
    if method == "concat":  # mostly arrays, sometimes not (a write that fails)
        value = draw(st.one_of(st.lists(json_value, max_size=3), st.lists(json_value, max_size=3),
                               json_value))
    elif method in (None, "merge", "assign") and not with_path:
        value = draw(st.one_of(st.dictionaries(st.sampled_from(KEYS), json_value, max_size=3),
                               json_value))
    else:
        value = draw(json_value)
    where: tuple[Any, ...] = draw(path) if with_path else ()
    data = nest(where, value)
    # Every spelling of a data message: payload key, inline fields, canonical type data.
    forms = ["payload", "canonical"]
    if isinstance(data, dict) and data:
        forms.append("inline")
    form = draw(st.sampled_from(forms))
    if form == "canonical" or kind in ("data", "user"):
        message: dict[str, Any] = {"type": "data", "data": data}
        if kind != "data" or draw(st.booleans()):
            message["kind"] = kind
        if form == "inline":
            message.pop("data")
            message.update(data)
    elif form == "payload":
        message = {"type": kind, kind: data}
    else:
        message = {"type": kind, **data}
    if with_path:
        message["_outputPath"] = render_reference(kind, where)
    if method is not None:
        message["_outputMethod"] = method
    if instance is not None:
        message["_instance"] = instance
    if draw(st.integers(0, 9)) == 0:
        message["_call"] = {"_tool": "t"}
    return message


non_data = st.sampled_from([
    {"type": "text", "text": "hello"},
    {"type": "tool", "data": {"a": 1}, "_instance": "①"},
    {"type": "system", "state": {"a": [1]}},
])
messages = st.one_of(data_messages(), data_messages(), data_messages(), data_messages(), non_data)
read_path = st.lists(st.sampled_from(["a", "b", "0", 0, -1, "x y", "имя"]), max_size=2).map(tuple)
reads = st.tuples(
    st.sampled_from([*KINDS, *KINDS, "text", "nokind"]),
    st.one_of(read_path, path),
    st.sampled_from([None, "①", "②", "③"]),
)


def fast(context: Context, read: tuple[str, tuple[Any, ...], str | None]) -> tuple[str, str]:
    kind, where, instance = read
    try:
        return ("value", strict(context.value(kind, where, instance)))
    except WriteError as error:
        return ("error", str(error))


def slow(msgs: list[Any], read: tuple[str, tuple[Any, ...], str | None]) -> tuple[str, str]:
    kind, where, instance = read
    try:
        return ("value", strict(fold_value(msgs, kind, where, instance)))
    except WriteError as error:
        return ("error", str(error))


def classify(outcome: tuple[str, str]) -> None:
    event("read: write error" if outcome[0] == "error"
          else "read: MISSING" if outcome[1] == "MISSING" else "read: a value")


@pytest.mark.slow
@LAW
@given(st.lists(messages, max_size=14), st.lists(reads, min_size=1, max_size=12))
def test_context_reads_equal_the_fold(msgs: list[Any], reads_: list[Any]) -> None:
    context = Context.of(msgs)
    # Besides the generated reads, read at every written path and its parent, for the
    # writer's instance and for global data, so that reads land on data.
    written = [read_of_last(msgs[: n + 1], depth, instance)
               for n in range(len(msgs)) for depth in (1, 3) for instance in (None, "①")]
    for read in [*reads_, *written]:
        outcome = fast(context, read)
        classify(outcome)
        assert outcome == slow(msgs, read), read


# Steps for building a context one append at a time: append a message, read, read an older
# context, or go back to an older context and grow a new branch from it.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), messages),
        st.tuples(st.just("append and read"), messages),
        st.tuples(st.just("append checked"), messages),  # the engine's paths
        st.tuples(st.just("append write"), messages),
        st.tuples(st.just("read"), reads),
        st.tuples(st.just("read old"), st.tuples(st.integers(0, 10**6), reads)),
        st.tuples(st.just("read last"), st.tuples(st.integers(0, 3), st.sampled_from(INSTANCES))),
        st.tuples(st.just("branch"), st.integers(0, 10**6)),
    ),
    min_size=4,
    max_size=30,
)


def read_of_last(msgs: list[Any], depth: int, instance: str | None) -> Any:
    """A read at (a prefix of) the path the newest data message wrote, so reads hit data."""
    for message in reversed(msgs):
        if message["type"] in ("data", "state", "input"):
            kind = message.get("kind", message["type"])
            where = parse_reference(message.get("_outputPath", "†" + kind)).path
            return (kind, where[:depth], instance)
    return ("state", (), instance)


@pytest.mark.slow
@LAW
@given(steps)
def test_context_built_by_appends_and_branches_equals_the_fold(steps_: list[Any]) -> None:
    # Every context made, with the messages it holds.
    made: list[tuple[Context, list[Any]]] = [(Context.of(), [])]
    current = 0
    answers: list[tuple[int, Any, tuple[str, str]]] = []
    for op, arg in steps_:
        if op in ("append", "append and read"):
            context, msgs = made[current]
            made.append((context.append(arg), [*msgs, arg]))
            current = len(made) - 1
            if op == "append and read":  # read the new data for its writer's instance
                context, msgs = made[current]
                read = read_of_last(msgs, 1, arg.get("_instance"))
                outcome = fast(context, read)
                classify(outcome)
                assert outcome == slow(msgs, read), read
                answers.append((current, read, outcome))
        elif op in ("append checked", "append write"):
            context, msgs = made[current]
            if op == "append checked":
                new, error = context.append_checked(arg)
            else:
                write = normalise(freeze(arg))
                if write is None:
                    continue
                new, error = context.append_write(arg, write)
            if error is None:
                made.append((new, [*msgs, arg]))
                current = len(made) - 1
            else:  # refused: nothing appended, and the refusal is the error a read would give
                event("engine append refused")
                assert new is context
                grown = [*msgs, arg]
                read = read_of_last(grown, 0, arg.get("_instance"))
                assert ("error", str(error)) == slow(grown, read)
        elif op in ("read", "read last"):
            context, msgs = made[current]
            read = arg if op == "read" else read_of_last(msgs, *arg)
            outcome = fast(context, read)
            classify(outcome)
            assert outcome == slow(msgs, read), read
            answers.append((current, read, outcome))
        elif op == "read old":
            index, read = arg
            index %= len(made)
            context, msgs = made[index]
            outcome = fast(context, read)
            assert outcome == slow(msgs, read), read
            answers.append((index, read, outcome))
        else:  # branch: continue from an older context
            current = arg % len(made)
    # Old contexts still answer as they did, after every newer append and branch.
    for index, read, outcome in answers:
        assert fast(made[index][0], read) == outcome
    # And a context built at once from the same messages agrees with each of them.
    for context, msgs in made[-3:]:
        rebuilt = Context.of(msgs)
        assert rebuilt == context
        for _, read, _ in answers[-5:]:
            assert fast(rebuilt, read) == fast(context, read)


@pytest.mark.slow
@LAW
@given(
    st.lists(messages, max_size=8),
    data_messages(),
    st.lists(st.tuples(path, st.sampled_from([None, "①", "②"])), min_size=1, max_size=8),
)
def test_a_write_changes_only_paths_it_overlaps(
    msgs: list[Any], message: dict[str, Any], reads_: list[Any]
) -> None:
    before = Context.of(msgs)
    after = before.append(message)
    write_path = parse_reference(message["_outputPath"]).path if "_outputPath" in message else ()
    kind = message.get("kind", message["type"])
    for where, instance in reads_:
        read = (kind, where, instance)
        old, new = fast(before, read), fast(after, read)
        if old[0] == "error" or new[0] == "error":
            continue
        if old != new:
            event("a write changed a read")
            assert overlaps(write_path, where), (write_path, where)


# -- the write methods (§2) ----------------------------------------------------------------


@pytest.mark.slow
@FAST
@given(st.one_of(st.just(MISSING), json_value.map(freeze)), path,
       st.sampled_from(list(Method)), json_value)
def test_write_methods(root: Any, where: tuple[Any, ...], method: Method, plain: Any) -> None:
    value = freeze(plain)
    try:
        new = apply_write(root, where, method, value)
    except WriteError:
        event("write refused")
        return
    old_at: Any = get_in(root, where)
    new_at: Any = get_in(new, where)
    if method is Method.SET:
        assert strict(new_at) == strict(value)
    elif method is Method.PUSH:
        before = list(old_at) if old_at is not MISSING else []
        assert strict(new_at) == strict(freeze([*map(thaw, before), plain]))
    elif method is Method.CONCAT:
        before = list(old_at) if old_at is not MISSING else []
        assert strict(new_at) == strict(freeze([*map(thaw, before), *plain]))
    elif isinstance(plain, dict) and old_at is not MISSING and hasattr(old_at, "keys"):
        for key in old_at:  # merge and assign keep keys the new value lacks
            if key not in plain:
                assert strict(new_at[key]) == strict(old_at[key])
        for key, item in plain.items():
            if method is Method.ASSIGN or not isinstance(item, dict):
                assert strict(new_at[key]) == strict(freeze(item))
    else:  # merge or assign of anything else: the new value replaces
        assert strict(new_at) == strict(value)
    # writes below MISSING create objects; every path the write does not overlap is unchanged
    for other in [(), ("a",), ("b",), ("a", "b"), ("a", 0), ("0",), (0,), (-1,), ("x y", 1)]:
        if not overlaps(where, other):
            assert strict(get_in(new, other)) == strict(get_in(root, other))


@pytest.mark.slow
@FAST
@given(json_value)
def test_freeze_thaw_round_trip(plain: Any) -> None:
    frozen = freeze(plain)
    assert json.dumps(thaw(frozen), sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert freeze(thaw(frozen)) == frozen

"""core/context.py: the persistent context and its read index (SEMANTICS §1, §3)."""

from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import PMap, PVector, pmap

import obelisk.compiler  # noqa: F401 - plugs the reference parser into core
from obelisk.core.context import Context
from obelisk.core.errors import MessageError, WriteError
from obelisk.core.messages import Write, normalise
from obelisk.core.plain import thaw
from obelisk.core.resolve import fold_value
from obelisk.core.values import MISSING, freeze
from obelisk.kit.strategies import data_messages

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = json.loads((ROOT / "examples/context.json").read_text(encoding="utf-8"))


def plain(value: Any) -> Any:
    return MISSING if value is MISSING else thaw(value)


def state(data: Any, path: str | None = None, method: str | None = None,
          instance: str | None = None, kind: str = "state") -> dict[str, Any]:
    """A data message of ``kind`` (``data`` holds the value nested along ``path``)."""
    message: dict[str, Any] = (
        {"type": kind, kind: data} if kind in ("state", "input")
        else {"type": "data", "kind": kind, "data": data}
    )
    if path is not None:
        message["_outputPath"] = path
    if method is not None:
        message["_outputMethod"] = method
    if instance is not None:
        message["_instance"] = instance
    return message


# -- building ----------------------------------------------------------------------------


def test_empty_context() -> None:
    context = Context.of()
    assert len(context) == 0
    assert list(context) == []
    assert context.to_json() == []
    assert context.kinds == ()
    assert context.instances == ()
    assert context.value("state") is MISSING
    assert context.value("state", ("a",), "①") is MISSING
    assert context.view("state") == (MISSING, None)


def test_of_keeps_every_message_in_order() -> None:
    context = Context.of(EXAMPLE)
    assert len(context) == len(EXAMPLE)
    assert context.to_json() == EXAMPLE
    assert [thaw(m) for m in context] == EXAMPLE
    assert isinstance(context.messages, PVector)
    assert all(isinstance(m, PMap) for m in context.messages)
    assert Context.of(iter(EXAMPLE)) == context  # any iterable


def test_to_json_is_plain_and_sorted() -> None:
    context = Context.of([{"type": "text", "z": 1, "a": {"y": [1], "b": 2}}])
    message: Any
    [message] = context.to_json()
    assert list(message) == ["a", "type", "z"]
    assert list(message["a"]) == ["b", "y"]
    assert type(message["a"]["y"]) is list


def test_non_data_messages_are_carried_but_never_read() -> None:
    context = Context.of([
        {"type": "text", "text": "hello"},
        {"type": "tool", "data": {"a": 1}},
        {"type": "system", "state": {"a": 1}},
    ])
    assert len(context) == 3
    assert context.kinds == ()
    for kind in ("text", "tool", "system", "data", "state"):
        assert context.value(kind) is MISSING


def test_example_context() -> None:
    context = Context.of(EXAMPLE)
    assert plain(context.value("state", ("user",))) == {
        "name": "Alex", "status": "inactive", "tags": ["new", "vip"],
    }
    assert context.value("state", ("user", "status"), "②") == "suspended"
    assert context.value("billing", ("history", -1, "amount")) == 50
    assert context.value("input", ("orderId",)) == "A-1009"
    assert context.kinds == ("input", "state", "billing")
    assert context.instances == ("②",)


def test_extend() -> None:
    context = Context.of(EXAMPLE[:3]).extend(EXAMPLE[3:])
    assert context == Context.of(EXAMPLE)


def test_equality_and_hash_follow_the_messages() -> None:
    a = Context.of(EXAMPLE)
    b = Context.of(EXAMPLE)
    assert a == b and hash(a) == hash(b)
    assert a != Context.of(EXAMPLE[:-1])
    assert a != EXAMPLE
    assert repr(a) == f"Context(<{len(EXAMPLE)} messages>)"


# -- persistence -------------------------------------------------------------------------


def test_append_returns_a_new_context_and_leaves_the_old_one_unchanged() -> None:
    old = Context.of([state({"user": {"status": "active"}})])
    before = old.to_json()
    new = old.append(state({"user": {"status": "inactive"}}, "†state.user.status"))
    assert new is not old
    assert (len(old), len(new)) == (1, 2)
    assert old.to_json() == before
    assert old.value("state", ("user", "status")) == "active"
    assert new.value("state", ("user", "status")) == "inactive"


def test_branching_two_appends_from_one_context() -> None:
    base = Context.of([state({"n": 0, "tags": ["a"]})])
    left = base.append(state({"n": 1}, "†state.n"))
    right = base.append(state({"tags": "b"}, "†state.tags", "push"))
    assert plain(base.value("state")) == {"n": 0, "tags": ["a"]}
    assert plain(left.value("state")) == {"n": 1, "tags": ["a"]}
    assert plain(right.value("state")) == {"n": 0, "tags": ["a", "b"]}
    # and each branch grows on its own
    left2 = left.append(state({"tags": "c"}, "†state.tags", "push"))
    assert plain(left2.value("state")) == {"n": 1, "tags": ["a", "c"]}
    assert plain(right.value("state")) == {"n": 0, "tags": ["a", "b"]}
    assert len(base) == 1


def test_branching_instance_views() -> None:
    base = Context.of([state({"a": 1}), state({"a": 2}, instance="①")])
    assert base.value("state", ("a",), "①") == 2  # memoised on base
    left = base.append(state({"b": 1}, instance="①"))  # carried forward
    right = base.append(state({"a": 3}))  # global change: instance view is stale
    assert plain(left.value("state", (), "①")) == {"a": 2, "b": 1}
    assert plain(right.value("state", (), "①")) == {"a": 2}
    assert plain(right.value("state")) == {"a": 3}
    assert plain(base.value("state", (), "①")) == {"a": 2}
    right2 = right.append(state({"c": 1}, instance="①"))
    assert plain(right2.value("state", (), "①")) == {"a": 2, "c": 1}
    left2 = left.append(state({"a": 9}))
    assert plain(left2.value("state", (), "①")) == {"a": 2, "b": 1}
    assert plain(left2.value("state")) == {"a": 9}


def test_appending_does_not_change_a_message_the_caller_still_holds() -> None:
    message = state({"a": [1]})
    context = Context.of([message])
    message["state"]["a"].append(2)
    assert plain(context.value("state", ("a",))) == [1]


# -- reading: instance overlay (SEMANTICS §3) --------------------------------------------

G_THEN_I = [
    state({"user": {"status": "active", "name": "Alex"}}),
    state({"user": {"status": "suspended"}}, instance="①"),
]
I_THEN_G = [G_THEN_I[1], G_THEN_I[0]]
LATER_GLOBAL = [
    state({"user": {"status": "suspended"}}, instance="①"),
    state({"user": {"status": "active"}}),
    state({"user": {"status": "inactive"}}, "†state.user.status"),
    state({"user": {"name": "Sam"}}, "†state.user.name"),
]

# (messages, kind, path, instance, expected)
OVERLAY = [
    (G_THEN_I, "state", ("user", "status"), "①", "suspended"),
    (I_THEN_G, "state", ("user", "status"), "①", "suspended"),  # whatever the arrival order
    (LATER_GLOBAL, "state", ("user", "status"), "①", "suspended"),
    (G_THEN_I, "state", ("user", "name"), "①", "Alex"),  # shadowing is path by path
    (I_THEN_G, "state", ("user", "name"), "①", "Alex"),
    (LATER_GLOBAL, "state", ("user", "name"), "①", "Sam"),
    (G_THEN_I, "state", ("user", "status"), None, "active"),  # no instance: global only
    (I_THEN_G, "state", ("user", "status"), None, "active"),
    (LATER_GLOBAL, "state", ("user", "status"), None, "inactive"),
    (G_THEN_I, "state", ("user", "status"), "②", "active"),  # another instance: global
    ([G_THEN_I[1]], "state", ("user", "status"), None, MISSING),
    ([G_THEN_I[1]], "state", ("user", "name"), "①", MISSING),
    ([G_THEN_I[1]], "state", ("user",), "①", {"status": "suspended"}),
    (G_THEN_I, "data", ("user",), "①", MISSING),  # other kinds are separate
    # instance pushes land on the global array, seen only by that instance
    ([state({"tags": ["a"]}), state({"tags": "b"}, "†state.tags", "push", "①"),
      state({"tags": "c"}, "†state.tags", "push")],
     "state", ("tags",), "①", ["a", "c", "b"]),
    ([state({"tags": ["a"]}), state({"tags": "b"}, "†state.tags", "push", "①"),
      state({"tags": "c"}, "†state.tags", "push")],
     "state", ("tags",), None, ["a", "c"]),
    # a global set below the instance's write does not reach the instance view's value
    ([state({"u": {"a": 1}}, instance="①"), state({"u": 5}, "†state.u")],
     "state", ("u",), "①", {"a": 1}),
    # kinds of type data overlay the same way
    ([state({"x": 1}, kind="user", instance="i"), state({"x": 2, "y": 3}, kind="user")],
     "user", (), "i", {"x": 1, "y": 3}),
]


@pytest.mark.parametrize(("messages", "kind", "path", "instance", "expected"), OVERLAY)
def test_instance_overlay(
    messages: list[Any], kind: str, path: tuple[Any, ...], instance: str | None, expected: Any
) -> None:
    context = Context.of(messages)
    assert plain(context.value(kind, path, instance)) == expected
    # and the fast read agrees with the definition
    assert plain(fold_value(messages, kind, path, instance)) == expected


def test_instances_and_kinds_in_order_of_first_appearance() -> None:
    context = Context.of([
        state({"a": 1}, kind="user", instance="②"),
        {"type": "text", "text": "x", "_instance": "⓪"},  # not a data message
        state({"a": 1}, instance="①"),
        state({"a": 1}, instance="②"),
        state({"a": 1}, kind="input"),
        state({"a": 1}, kind="billing", instance="③"),
    ])
    assert context.instances == ("②", "①", "③")
    assert context.kinds == ("user", "state", "input", "billing")


def test_instance_view_is_carried_and_rebuilt_correctly() -> None:
    # Walk the carry/memo paths one append at a time, reading at every step.
    steps: list[tuple[dict[str, Any], Any]] = [
        (state({"a": 1, "b": 1}), {"a": 1, "b": 1}),
        (state({"a": 2}, instance="①"), {"a": 2, "b": 1}),
        (state({"c": 3}, instance="①"), {"a": 2, "b": 1, "c": 3}),  # carried
        (state({"b": 5}), {"a": 2, "b": 5, "c": 3}),  # global: rebuilt
        (state({"d": 4}, instance="①"), {"a": 2, "b": 5, "c": 3, "d": 4}),
        (state({"d": 0}, instance="②"), {"a": 2, "b": 5, "c": 3, "d": 4}),
        (state({"a": 7}, "†state.a"), {"a": 2, "b": 5, "c": 3, "d": 4}),
        (state({"e": 1}), {"a": 2, "b": 5, "c": 3, "d": 4, "e": 1}),
    ]
    contexts = [Context.of()]
    for message, expected in steps:
        contexts.append(contexts[-1].append(message))
        assert plain(contexts[-1].value("state", (), "①")) == expected
    # every older context still answers as before
    for n, (_, expected) in enumerate(steps, start=1):
        assert plain(contexts[n].value("state", (), "①")) == expected
    # and a context never read before agrees too
    unread = Context.of([m for m, _ in steps])
    assert plain(unread.value("state", (), "①")) == steps[-1][1]


# -- writes that cannot be applied (sticky errors) ---------------------------------------

BAD_GLOBAL = state({"user": "x"}, "†state.user", "push")
BAD_INSTANCE = state({"user": "x"}, "†state.user", "push", "①")


def test_a_bad_global_write_breaks_every_read_of_its_kind() -> None:
    context = Context.of([
        state({"user": {"name": "Alex"}}),
        state({"other": 1}, instance="②"),
        state({"n": 1}, kind="user"),
        BAD_GLOBAL,
    ])
    for path in [(), ("user",), ("other",), ("nothing", "here")]:
        for instance in [None, "①", "②", "unknown"]:
            with pytest.raises(WriteError) as info:
                context.value("state", path, instance)
            error = info.value
            assert (error.kind, error.path, error.method) == ("state", ("user",), "push")
            assert (error.message_index, error.instance) == (3, None)
            assert "push needs an array there, found an object" in str(error)
            assert str(error).startswith("cannot push at †state.user in message 3")
    assert context.value("user", ("n",)) == 1  # other kinds are unaffected
    _, broken = context.view("state")
    assert isinstance(broken, WriteError)


def test_a_broken_kind_stays_broken() -> None:
    context = Context.of([state({"user": {"name": "Alex"}}), BAD_GLOBAL])
    repaired = context.append(state({"user": []}, "†state.user"))
    repaired = repaired.append(state({"fresh": 1}, "†state", "set"))
    with pytest.raises(WriteError) as info:
        repaired.value("state", ("fresh",))
    assert info.value.message_index == 1
    with pytest.raises(WriteError):
        repaired.value("state", (), "①")


def test_a_bad_instance_write_breaks_only_that_instance() -> None:
    context = Context.of([
        state({"user": {"name": "Alex"}}),
        state({"user": {"status": "x"}}, instance="②"),
        BAD_INSTANCE,
        state({"user": {"name": "Sam"}}),
    ])
    with pytest.raises(WriteError) as info:
        context.value("state", ("user", "name"), "①")
    assert (info.value.message_index, info.value.instance) == (2, "①")
    assert "(instance '①') in message 2" in str(info.value)
    assert context.value("state", ("user", "name")) == "Sam"
    assert context.value("state", ("user", "status"), "②") == "x"
    assert context.value("state", ("user", "name"), "③") == "Sam"
    later = context.append(state({"user": []}, "†state.user", instance="①"))
    with pytest.raises(WriteError):
        later.value("state", (), "①")


@pytest.mark.parametrize(
    "bad",
    [
        state({"a": "x"}, "†state.a", "push"),  # push onto a non-array
        state({"a": {}}, "†state.a", "concat"),  # concat of a non-array value
        state({"s": [1]}, "†state.s", "concat"),  # concat onto a non-array
        state({"s": {"x": 1}}, "†state.s.x"),  # through a scalar
        state({"list": {"k": 1}}, "†state.list.k"),  # a string key in an array
        state({"list": {"5": 1}}, "†state.list.5"),  # out of range
        state({"nothing": {"0": 1}}, "†state.nothing.0"),  # element through MISSING
        state({"a": {"-1": 1}}, "†state.a.-1"),  # a negative index on an object
    ],
)
def test_every_kind_of_bad_write_is_accepted_then_raised_on_read(bad: dict[str, Any]) -> None:
    base = Context.of([state({"a": {"b": 1}, "s": "text", "list": [1]})])
    assert base.write_error(bad) is not None
    context = base.append(bad)  # accepted
    with pytest.raises(WriteError):
        context.value("state", ("a",))
    with pytest.raises(WriteError):
        fold_value(context.to_json(), "state", ("a",))


def test_write_error_predicts_without_appending() -> None:
    context = Context.of([state({"user": {"name": "Alex", "tags": []}})])
    predicted = context.write_error(state({"user": "x"}, "†state.user", "push"))
    assert isinstance(predicted, WriteError)
    assert predicted.message_index == 1  # where it would land
    assert context.write_error(state({"user": {"tags": "x"}}, "†state.user.tags", "push")) is None
    assert context.write_error({"type": "text", "text": "x"}) is None
    assert context.write_error(state({"u": 1}, kind="user")) is None
    assert len(context) == 1
    instance_error = context.write_error(state({"user": "x"}, "†state.user", "push", "①"))
    assert instance_error is not None and instance_error.instance == "①"


def test_write_error_reports_an_existing_break() -> None:
    context = Context.of([state({"user": {}}), BAD_GLOBAL])
    error = context.write_error(state({"ok": 1}))
    assert error is not None and error.message_index == 1


def test_write_error_rejects_a_malformed_message() -> None:
    with pytest.raises(MessageError):
        Context.of().write_error({"type": "state", "state": 1, "x": 2})


# -- malformed messages ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "pointer"),
    [
        ({"type": "state", "state": {"a": 1}, "x": 2}, "/state"),
        ({"type": "state", "state": {"a": float("nan")}}, "/state/a"),
        ({"type": "text", "text": float("inf")}, "/text"),  # every message must be JSON
        ({"type": "tool", "x": {1, 2}}, "/x"),
        ({"type": "state", "state": 1, "_outputMethod": "bogus"}, "/_outputMethod"),
        ({"no": "type"}, "/type"),
        ("not an object", ""),
    ],
)
def test_a_malformed_message_is_refused_with_its_index(message: Any, pointer: str) -> None:
    good = [{"type": "text", "text": "x"}, state({"a": 1})]
    with pytest.raises(MessageError) as info:
        Context.of([*good, message])
    assert info.value.index == 2
    assert info.value.pointer == pointer
    assert str(info.value).startswith("message 2")
    base = Context.of(good)
    with pytest.raises(MessageError) as again:
        base.append(message)
    assert again.value.index == 2
    assert len(base) == 2  # unchanged


# -- the messages that can describe data ---------------------------------------------------

DESCRIBING = st.sampled_from([
    {"type": "input", "input": {"a": 1}},
    {"type": "input", "input": {"a": 1}, "schema": {"type": "object"}},
    {"type": "data", "kind": "input", "data": {"a": 1}},
    {"type": "data", "data": {"a": 1}, "schema": {"type": "object"}},
    {"type": "state", "state": {"a": 1}, "schema": {"properties": {"a": {}}}},
    {"type": "data", "kind": "state", "data": {"a": 1}, "_outputPath": "†state.a",
     "schema": {"type": "object"}},
    {"type": "text", "text": "hi", "schema": "not an object"},
    {"type": "text", "text": "hi"},
    {"type": "data", "data": {"a": 1}},
])


def _describes_plainly(message: Any) -> bool:
    # The rule of Context.described, spelled out on plain JSON.
    return "schema" in message or message.get("type") == "input" or (
        message.get("type") == "data" and message.get("kind") == "input")


@pytest.mark.slow
@settings(deadline=None, max_examples=200)
@given(st.lists(st.one_of(DESCRIBING, data_messages()), max_size=12))
def test_described_is_the_messages_that_can_describe_data(messages: list[Any]) -> None:
    # Kept as the context grows: built message by message, or through the engine's
    # append_write, it is always the filter over every message, in order.
    context = Context.of(messages)
    expected = [m for m in context.to_json() if _describes_plainly(m)]
    assert [thaw(m) for m in context.described()] == expected
    engine = Context()
    for message in messages:
        frozen = freeze(message)
        write = normalise(frozen)
        engine = engine.append_checked(message)[0] if write is None else (
            engine.append_write(frozen, write)[0])
    assert [thaw(m) for m in engine.described()] == [
        m for m in engine.to_json() if _describes_plainly(m)]


def test_the_compiler_reads_a_long_context_through_described() -> None:
    # What the checks read of a context (its schemas, its input messages) is the same
    # as a walk over every message would find.
    from obelisk.compiler.checks.fields import _context_schemas
    from obelisk.compiler.plan import compile_plan
    from obelisk.compiler.plangraph import Inputs

    history = [{"type": "data", "kind": "state", "data": {f"s{i % 7}": i}} for i in range(500)]
    history[10:10] = [{"type": "input", "input": {"q": 1}, "schema": {
        "type": "object", "properties": {"q": {}}}}]
    history[300:300] = [{"type": "state", "state": {"a": 1}, "schema": {
        "type": "object", "properties": {"a": {}}}}]
    context = Context.of(history)
    assert len(list(context.described())) == 2
    inputs = Inputs.of(context)
    assert inputs.present and len(inputs.schemas) == 1
    graph = SimpleNamespace(context=context)  # all _context_schemas reads of a graph
    assert [kind for _, kind, _, _ in _context_schemas(graph)] == ["input", "state"]  # type: ignore[arg-type]
    plan = compile_plan([{"_tool": "t", "x": "†state.a", "q": "†input.q"}], context=context)
    assert plan.ok


def test_a_context_made_by_append_output_has_every_field_its_copy_would_have() -> None:
    # append_output copies the context's fields itself (inlined for speed): every slot
    # must be set, and hold what the general route's context holds.
    from obelisk.core.messages import output_message
    from obelisk.core.methods import Method

    base = Context.of([{"type": "data", "kind": "state", "data": {"a": 1}},
                       {"type": "data", "kind": "input", "data": {"b": 1}}])
    fast_outputs = []
    for kind in ("state", "input"):
        message = output_message(kind, ("x",), f"†{kind}.x", Method.SET, None, pmap(), 2, "d")
        fast, error = base.append_output(message, kind, None, ("x",), Method.SET, 2)
        slow, slow_error = base.append_write(message, Write(kind, None, ("x",), Method.SET, 2),
                                             output=True)
        assert error is None and slow_error is None
        for name in Context.__slots__:
            assert getattr(fast, name) == getattr(slow, name), name
        fast_outputs.append(fast)
    assert list(fast_outputs[1].described()) == list(base.described()) + [
        fast_outputs[1].messages[-1]]

"""core/messages.py: every message form normalises to one write (SEMANTICS §1, §2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import obelisk.compiler  # noqa: F401 - plugs the reference parser into core
from obelisk.core.errors import MessageError, ObeliskError
from obelisk.core.messages import Write, normalise
from obelisk.core.methods import Method
from obelisk.core.plain import thaw
from obelisk.core.values import freeze

SET, MERGE, ASSIGN, PUSH, CONCAT = Method.SET, Method.MERGE, Method.ASSIGN, Method.PUSH, Method.CONCAT


def as_tuple(write: Write) -> tuple[Any, ...]:
    value = json.dumps(thaw(write.value), sort_keys=True)
    return (write.kind, write.instance, write.path, write.method, value)


NON_DATA = [
    {"type": "text", "text": "hello"},
    {"type": "system", "text": "You help."},
    {"type": "tool", "name": "x", "schema": {}},
    {"type": "plan", "plan": []},
    {"type": "error", "data": {"call": {}, "error": {"type": "X", "message": "m"}}},
    {"type": "meta", "anything": [1, 2]},
    {"type": "output", "output": "done"},
    {"type": "call", "_tool": "x"},
    {"type": "something-new", "state": {"a": 1}},  # unknown types are carried through too
    # a non-data type is never checked as data: these would be errors on a data type
    {"type": "text", "_outputMethod": "bogus", "_instance": 5, "_outputPath": "nonsense"},
]


@pytest.mark.parametrize("message", NON_DATA)
def test_non_data_messages_make_no_write(message: Any) -> None:
    assert normalise(message) is None
    assert normalise(freeze(message)) is None


# (message, (kind, instance, path, method, value))
FORMS = [
    # payload forms
    ({"type": "data", "data": {"a": 1}}, ("data", None, (), MERGE, {"a": 1})),
    ({"type": "data", "kind": "user", "data": {"a": 1}}, ("user", None, (), MERGE, {"a": 1})),
    ({"type": "input", "input": {"userId": "u-1"}}, ("input", None, (), MERGE, {"userId": "u-1"})),
    ({"type": "state", "state": {"a": 1}}, ("state", None, (), MERGE, {"a": 1})),
    ({"type": "state", "state": 5}, ("state", None, (), MERGE, 5)),
    ({"type": "state", "state": None}, ("state", None, (), MERGE, None)),
    ({"type": "state", "state": [1, 2]}, ("state", None, (), MERGE, [1, 2])),
    # the canonical form may name input/state explicitly
    ({"type": "data", "kind": "state", "data": {"a": 1}}, ("state", None, (), MERGE, {"a": 1})),
    ({"type": "data", "kind": "input", "data": {"a": 1}}, ("input", None, (), MERGE, {"a": 1})),
    ({"type": "data", "kind": "data", "data": 1}, ("data", None, (), MERGE, 1)),
    ({"type": "state", "kind": "state", "state": 1}, ("state", None, (), MERGE, 1)),
    ({"type": "input", "kind": "input", "input": 1}, ("input", None, (), MERGE, 1)),
    # schema, description and _-keys sit beside the payload
    ({"type": "input", "input": {"a": 1}, "schema": {"type": "object"}, "description": "d",
      "_call": {"_tool": "t"}, "_date": "2026-01-01T00:00:00Z", "_custom": 1},
     ("input", None, (), MERGE, {"a": 1})),
    # inline forms: every non-reserved key is data
    ({"type": "state", "billing": {"x": 1}, "status": "x"},
     ("state", None, (), MERGE, {"billing": {"x": 1}, "status": "x"})),
    ({"type": "state", "status": "x", "schema": {}, "description": "d", "_call": {}, "_date": "t",
      "_whatever": 1, "kind": "state"},
     ("state", None, (), MERGE, {"status": "x"})),
    ({"type": "data", "kind": "user", "name": "Alex"}, ("user", None, (), MERGE, {"name": "Alex"})),
    ({"type": "data", "kind": "user", "user": {"x": 1}},  # "user" is not the payload key
     ("user", None, (), MERGE, {"user": {"x": 1}})),
    ({"type": "input", "userId": "u"}, ("input", None, (), MERGE, {"userId": "u"})),
    ({"type": "state"}, ("state", None, (), MERGE, {})),  # no fields: an empty object
    ({"type": "state", "пользователь": {"имя": "Алекс"}},
     ("state", None, (), MERGE, {"пользователь": {"имя": "Алекс"}})),
    # _instance
    ({"type": "state", "state": {"a": 1}, "_instance": "①"}, ("state", "①", (), MERGE, {"a": 1})),
    ({"type": "data", "kind": "u", "x": 1, "_instance": ""}, ("u", "", (), MERGE, {"x": 1})),
    # _outputMethod without _outputPath: at the root with that method
    ({"type": "state", "state": [1], "_outputMethod": "concat"}, ("state", None, (), CONCAT, [1])),
    ({"type": "state", "state": 1, "_outputMethod": "push"}, ("state", None, (), PUSH, 1)),
    ({"type": "state", "state": {"a": 1}, "_outputMethod": "set"}, ("state", None, (), SET, {"a": 1})),
    ({"type": "state", "state": {"a": 1}, "_outputMethod": "assign"},
     ("state", None, (), ASSIGN, {"a": 1})),
    # _outputPath: the data holds the value nested along the path; default method set
    ({"type": "state", "state": {"user": {"status": "inactive"}}, "_outputPath": "†state.user.status"},
     ("state", None, ("user", "status"), SET, "inactive")),
    ({"type": "data", "data": {"user": {"status": "inactive"}}, "_outputPath": "†data.user.status"},
     ("data", None, ("user", "status"), SET, "inactive")),
    ({"type": "state", "state": {"user": {"tags": "vip"}}, "_outputPath": "†state.user.tags",
      "_outputMethod": "push"},
     ("state", None, ("user", "tags"), PUSH, "vip")),
    ({"type": "state", "state": {"a": {"b": 1, "extra": 2}}, "_outputPath": "†state.a.b"},
     ("state", None, ("a", "b"), SET, 1)),  # siblings along the path are not written
    ({"type": "state", "state": {"x": 1}, "_outputPath": "†state"}, ("state", None, (), SET, {"x": 1})),
    ({"type": "state", "state": {"items": {"0": "a"}}, "_outputPath": "†state.items.0"},
     ("state", None, ("items", 0), SET, "a")),  # an index is held under its decimal text
    ({"type": "state", "state": {"items": {"-1": {"x": 1}}}, "_outputPath": "†state.items.-1",
      "_outputMethod": "merge"},
     ("state", None, ("items", -1), MERGE, {"x": 1})),
    ({"type": "state", "state": {"my key": {"a.b": 1}}, "_outputPath": '†state."my key"."a.b"'},
     ("state", None, ("my key", "a.b"), SET, 1)),
    ({"type": "state", "state": {"пользователь": {"имя": "Алекс"}},
      "_outputPath": "†state.пользователь.имя", "_instance": "②"},
     ("state", "②", ("пользователь", "имя"), SET, "Алекс")),
    ({"type": "data", "kind": "user", "data": {"a": None}, "_outputPath": "†user.a"},
     ("user", None, ("a",), SET, None)),
    ({"type": "state", "a": {"b": 1}, "_outputPath": "†state.a.b"},  # inline, with a path
     ("state", None, ("a", "b"), SET, 1)),
    ({"type": "input", "input": {"a": [1]}, "_outputPath": "†input.a", "_outputMethod": "concat"},
     ("input", None, ("a",), CONCAT, [1])),
]


@pytest.mark.parametrize(("message", "expected"), FORMS)
def test_normalise(message: Any, expected: tuple[Any, ...]) -> None:
    kind, instance, path, method, value = expected
    want = (kind, instance, path, method, json.dumps(value, sort_keys=True))
    write = normalise(message)
    assert write is not None
    assert as_tuple(write) == want
    frozen = normalise(freeze(message))  # contexts normalise frozen messages
    assert frozen is not None and as_tuple(frozen) == want


# (message, JSON Pointer of the field, words the error text contains)
REJECTED = [
    # not a message
    ([1], "", ["JSON object", "list"]),
    ("text", "", ["JSON object", "str"]),
    (None, "", ["JSON object"]),
    ({"text": "no type"}, "/type", ['"type"']),
    ({"type": 5, "data": 1}, "/type", ['"type"']),
    ({"type": None}, "/type", ['"type"']),
    # both a payload and inline fields
    ({"type": "state", "state": {"a": 1}, "x": 2}, "/state", ['"state"', "inline", "'x'"]),
    ({"type": "input", "input": {}, "b": 1, "a": 2}, "/input", ['"input"', "['a', 'b']"]),
    ({"type": "data", "kind": "user", "data": {}, "name": "x"}, "/data", ['"data"', "'name'"]),
    # kind
    ({"type": "state", "kind": "user", "state": {}}, "/kind", ['"user"', "type\": \"data\""]),
    ({"type": "input", "kind": "state", "input": {}}, "/kind", ['"state"']),
    ({"type": "state", "kind": "data", "x": 1}, "/kind", ['"data"']),
    ({"type": "data", "kind": "", "data": 1}, "/kind", ['"kind"']),
    ({"type": "data", "kind": 3, "data": 1}, "/kind", ['"kind"']),
    ({"type": "data", "kind": None, "data": 1}, "/kind", ['"kind"']),
    ({"type": "data", "kind": ["user"], "data": 1}, "/kind", ['"kind"']),
    # kinds that are message types and cannot hold data
    *[({"type": "data", "kind": k, "data": {"a": 1}}, "/kind", [f'"{k}"', "cannot hold data"])
      for k in ["text", "system", "tool", "plan", "error", "meta", "output", "call"]],
    # _outputMethod
    ({"type": "state", "state": 1, "_outputMethod": "append"}, "/_outputMethod",
     ["_outputMethod", "'append'", "set, merge, assign, push, concat"]),
    ({"type": "state", "state": 1, "_outputMethod": "SET"}, "/_outputMethod", ["_outputMethod"]),
    ({"type": "state", "state": 1, "_outputMethod": 1}, "/_outputMethod", ["_outputMethod"]),
    ({"type": "state", "state": {"a": 1}, "_outputPath": "†state.a", "_outputMethod": ""},
     "/_outputMethod", ["_outputMethod"]),
    # _instance
    ({"type": "state", "state": 1, "_instance": 3}, "/_instance", ["_instance", "string"]),
    ({"type": "state", "state": 1, "_instance": ["a"]}, "/_instance", ["_instance"]),
    ({"type": "state", "state": 1, "_instance": True}, "/_instance", ["_instance"]),
    # _outputPath: one concrete reference of the message's own kind...
    ({"type": "state", "state": {"a": 1}, "_outputPath": 5}, "/_outputPath", ["_outputPath"]),
    ({"type": "state", "state": {"a": 1}, "_outputPath": ["†state.a"]}, "/_outputPath",
     ["_outputPath"]),
    ({"type": "state", "state": {"a": 1}, "_outputPath": "state.a"}, "/_outputPath",
     ["_outputPath", "column 1", "^"]),
    ({"type": "state", "state": {"a": 1}, "_outputPath": "†state.a.'"}, "/_outputPath",
     ["_outputPath", "^"]),
    ({"type": "state", "state": {"a": 1}, "_outputPath": ""}, "/_outputPath", ["_outputPath"]),
    ({"type": "state", "state": {"a": 1, "b": 1}, "_outputPath": "†state.a || †state.b"},
     "/_outputPath", ["_outputPath", "one concrete reference"]),
    ({"type": "state", "state": {"a": 1, "b": 1}, "_outputPath": "†state.a && †state.b"},
     "/_outputPath", ["_outputPath", "one concrete reference"]),
    ({"type": "state", "state": {"a": 1}, "_outputPath": "(†state.a)"}, "/_outputPath",
     ["_outputPath"]),
    ({"type": "state", "state": {"a": 1}, "_outputPath": "†data.a"}, "/_outputPath",
     ["_outputPath", '"data"', '"state"']),
    ({"type": "data", "kind": "user", "data": {"a": 1}, "_outputPath": "†data.a"}, "/_outputPath",
     ["_outputPath", '"data"', '"user"']),
    # ... and the data must hold the value nested along it
    ({"type": "state", "state": {"a": 1}, "_outputPath": "†state.b"}, "/state",
     ["_outputPath", '"b"']),
    ({"type": "state", "state": {"user": {}}, "_outputPath": "†state.user.status"}, "/state",
     ["_outputPath", '"status"', "data.user"]),
    ({"type": "state", "state": {"user": "x"}, "_outputPath": "†state.user.status"}, "/state",
     ["_outputPath", '"status"']),
    ({"type": "state", "state": {"a": [5]}, "_outputPath": "†state.a.0"}, "/state",
     ["_outputPath", '"0"']),  # an index is an object key in the message, not an array slot
    ({"type": "state", "state": 5, "_outputPath": "†state.a"}, "/state", ["_outputPath"]),
    ({"type": "state", "a": 1, "_outputPath": "†state.b"}, "", ["_outputPath", '"b"']),
    # non-JSON payloads
    ({"type": "state", "state": {"a": float("nan")}}, "/state/a", ["nan"]),
    ({"type": "state", "a": [float("inf")]}, "/a/0", ["inf"]),
    ({"type": "state", "state": {1: "x"}}, "/state", ["key"]),
]


@pytest.mark.parametrize(("message", "pointer", "words"), REJECTED)
def test_normalise_rejects(message: Any, pointer: str, words: list[str]) -> None:
    with pytest.raises(MessageError) as info:
        normalise(message)
    error = info.value
    assert isinstance(error, ObeliskError)
    assert error.pointer == pointer
    text = str(error)
    for word in words:
        assert word in text, text
    if pointer:
        assert f"at {pointer}" in text  # the field is named in the text too


def test_a_located_message_error_names_its_index() -> None:
    with pytest.raises(MessageError) as info:
        normalise({"type": "state", "state": 1, "_instance": 3})
    located = info.value.at(4)
    assert located.index == 4
    assert located.pointer == "/_instance"
    assert str(located).startswith("message 4 at /_instance: ")


def test_normalise_does_not_change_its_input() -> None:
    message = {"type": "state", "billing": {"x": [1]}, "_outputPath": "†state.billing.x"}
    before = json.dumps(message, sort_keys=True)
    normalise(message)
    assert json.dumps(message, sort_keys=True) == before

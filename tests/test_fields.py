"""compiler/checks/fields.py: the unknown-field check, as a table.

A read below a path whose producer's schema lists its keys, naming a key the schema does
not list: a warning, an error when the schema forbids other keys, with a did-you-mean.
"""

from __future__ import annotations

from typing import Any

import pytest

from obelisk import compile_plan


def producer(output: dict[str, Any], name: str = "pick") -> dict[str, Any]:
    return {"type": "object", "properties": {"_tool": {"const": name}, "_output": output},
            "required": ["_tool"]}


OPEN = {"type": "object", "properties": {"id": {"type": "string"}, "price": {}}}
CLOSED = {**OPEN, "additionalProperties": False}
NESTED = {"type": "object", "properties": {"item": CLOSED}}
USE = {"type": "object", "properties": {"_tool": {"const": "use"}, "x": {}},
       "required": ["_tool"]}


def use(ref: str) -> dict[str, Any]:
    return {"_tool": "use", "x": ref, "_outputPath": "†state.used"}


PICK = {"_tool": "pick", "_outputPath": "†state.chosen"}
#: A news tool's output (a plan of a public corpus read †state.n.news.webUrl from it).
NEWS = {"type": "object", "properties": {
    "news": {"type": "array", "items": {"type": "object", "properties": {
        "webUrl": {"type": "string"}}}},
    "title": {"type": "string"}, "count": {"type": ["number", "null"]},
    "meta": {"type": "object"}, "either": {"type": ["array", "object"]},
    "list_or_text": {"type": ["array", "string"]}, "anything": {}}}
NEWS_CALL = {"_tool": "pick", "_outputPath": "†state.n"}

# (name, tools, plan, context, [(severity, hint)] of the unknown-field diagnostics)
TABLE: list[tuple[str, list[Any], list[Any], list[Any], list[tuple[str, str]]]] = [
    ("open schema: a warning with a did-you-mean",
     [producer(OPEN), USE], [PICK, use("†state.chosen.idd")], [],
     [("warning", "did you mean †state.chosen.id?")]),
    ("closed schema: an error",
     [producer(CLOSED), USE], [PICK, use("†state.chosen.idd")], [],
     [("error", "did you mean †state.chosen.id?")]),
    ("no close key: the declared keys are listed",
     [producer(CLOSED), USE], [PICK, use("†state.chosen.zzzzz")], [],
     [("error", "read one of the declared keys (id and price)")]),
    ("nested: the key is found where it is missing, the rest of the path kept",
     [producer(NESTED), USE], [PICK, use("†state.chosen.item.pirce.x")], [],
     [("error", "did you mean †state.chosen.item.price.x?")]),
    ("a declared key is known",
     [producer(CLOSED), USE], [PICK, use("†state.chosen.price")], [], []),
    ("a read above what is written is not checked",
     [producer(CLOSED), USE], [PICK, use("†state")], [], []),
    ("another call writing the key makes it known",
     [producer(CLOSED), USE],
     [PICK, {"_tool": "x", "_outputPath": "†state.chosen.idd"}, use("†state.chosen.idd")], [],
     []),
    ("a producer that lists the key makes it known",
     [producer(CLOSED), producer({"type": "object", "properties": {"idd": {}}}, "other"), USE],
     [PICK, {"_tool": "other", "_outputPath": "†state.chosen"}, use("†state.chosen.idd")], [],
     []),
    ("error only when every producer forbids other keys",
     [producer(CLOSED), producer(OPEN, "other"), USE],
     [PICK, {"_tool": "other", "_outputPath": "†state.chosen"}, use("†state.chosen.idd")], [],
     [("warning", "did you mean †state.chosen.id?")]),
    ("a producer without _output says nothing",
     [producer(CLOSED), {"type": "object", "properties": {"_tool": {"const": "free"}}}, USE],
     [PICK, {"_tool": "free", "_outputPath": "†state.chosen"}, use("†state.chosen.idd")], [],
     [("error", "did you mean †state.chosen.id?")]),
    ("push, merge and other methods are not checked",
     [producer(CLOSED), USE],
     [{**PICK, "_outputMethod": "merge"}, use("†state.chosen.idd")], [], []),
    ("a middle alternative is not checked",
     [producer(CLOSED), USE],
     [{"_tool": "pick", "_outputPath": "†state.a || †state.chosen || †state.e"},
      use("†state.chosen.idd")], [], []),
    ("the last alternative holds the error object",
     [producer(CLOSED), USE],
     [{"_tool": "pick", "_outputPath": "†state.ok || †state.chosen"},
      use("†state.chosen.mesage")], [], [("warning", "did you mean †state.chosen.message?")]),
    ("the fan-out group of the first alternative is checked",
     [producer(CLOSED), USE],
     [{"_tool": "pick", "_outputPath": "†state.a && †state.chosen"}, use("†state.chosen.idd")],
     [], [("error", "did you mean †state.chosen.id?")]),
    ("a read the context provides is never unknown",
     [producer(CLOSED), USE], [PICK, use("†state.chosen.idd")],
     [{"type": "state", "state": {"chosen": {"idd": 1}}}], []),
    ("a $ref or a combination says nothing",
     [producer({"anyOf": [CLOSED, {"type": "object"}]}), USE],
     [PICK, use("†state.chosen.idd")], [], []),
    ("pattern properties say nothing",
     [producer({**CLOSED, "patternProperties": {"^i": {}}}), USE],
     [PICK, use("†state.chosen.idd")], [], []),
    ("array items are followed",
     [producer({"type": "array", "items": CLOSED}), USE],
     [PICK, use("†state.chosen.0.idd")], [], [("error", "did you mean †state.chosen.0.id?")]),
    ("a state message's schema is a producer",
     [USE], [{"_tool": "load", "_outputPath": "†state.chosen"}, use("†state.chosen.idd")],
     [{"type": "state", "state": {}, "schema": {"type": "object",
                                                "properties": {"chosen": CLOSED}}}],
     [("error", "did you mean †state.chosen.id?")]),
    ("a key below an array never has a value: read its first item",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.news.webUrl")], [],
     [("warning", "did you mean †state.n.news.0.webUrl?")]),
    ("an index below an array is read",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.news.-1.webUrl")], [], []),
    ("a key below a string",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.title.text")], [],
     [("warning", "read †state.n.title itself")]),
    ("an index below a number or null",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.count.0")], [],
     [("warning", "read †state.n.count itself")]),
    ("a negative index below an object",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.meta.-1")], [],
     [("warning", "read †state.n.meta itself")]),
    ("an index 0 below an object reads the key 0",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.meta.0")], [], []),
    ("a key below an array or an object",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.either.x")], [], []),
    ("a key below an array or a string: read an index",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.list_or_text.x")], [],
     [("warning", "read an index of †state.n.list_or_text (0 is the first item, -1 the "
                  "last)")]),
    ("a schema without a type says nothing",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.anything.x.y")], [], []),
    ("a read the context provides below an array is not checked",
     [producer(NEWS), USE], [NEWS_CALL, use("†state.n.news.webUrl")],
     [{"type": "state", "state": {"n": {"news": {"webUrl": "u"}}}}], []),
    ("a producer declaring an object there makes the key possible",
     [producer(NEWS), producer({"type": "object", "properties": {"news": {"type": "object"}}},
                               "other"), USE],
     [NEWS_CALL, {"_tool": "other", "_outputPath": "†state.n"}, use("†state.n.news.webUrl")],
     [], []),
    ("a context schema declaring an array",
     [USE], [{"_tool": "load", "_outputPath": "†state.n"}, use("†state.n.news.webUrl")],
     [{"type": "state", "state": {}, "schema": {"type": "object", "properties": {
         "n": NEWS}}}], [("warning", "did you mean †state.n.news.0.webUrl?")]),
    ("another instance's schema is not",
     [USE], [{"_tool": "load", "_outputPath": "†state.chosen"}, use("†state.chosen.idd")],
     [{"type": "state", "state": {}, "_instance": "②", "schema": {
         "type": "object", "properties": {"chosen": CLOSED}}}], []),
]


@pytest.mark.parametrize(("name", "tools", "plan", "context", "expected"), TABLE,
                         ids=[row[0] for row in TABLE])
def test_unknown_field(name: str, tools: list[Any], plan: list[Any], context: list[Any],
                       expected: list[tuple[str, str]]) -> None:
    compiled = compile_plan(plan, tools=tools, context=context)
    found = [(d.severity.value, d.hint) for d in compiled.diagnostics
             if d.code == "unknown-field"]
    assert found == expected


def test_the_message_names_the_key_the_producer_and_what_it_declares() -> None:
    compiled = compile_plan([PICK, use("†state.chosen.idd")], tools=[producer(CLOSED), USE])
    (diagnostic,) = [d for d in compiled.diagnostics if d.code == "unknown-field"]
    assert diagnostic.message == (
        "†state.chosen.idd reads the key 'idd', but the _output schema of pick (call 0) "
        "declares only id and price at †state.chosen and forbids other keys")
    assert (diagnostic.call, diagnostic.pointer) == (1, "/x")
    assert not compiled.ok  # an error stops the plan


def test_a_read_below_an_array_says_it_never_has_a_value() -> None:
    compiled = compile_plan([NEWS_CALL, use("†state.n.news.webUrl")],
                            tools=[producer(NEWS), USE])
    (diagnostic,) = [d for d in compiled.diagnostics if d.code == "unknown-field"]
    assert diagnostic.message == (
        "†state.n.news.webUrl reads the key 'webUrl' below †state.n.news, but the _output "
        "schema of pick (call 0) declares †state.n.news as an array, which has no such "
        "member: the read never has a value")
    assert (diagnostic.call, diagnostic.pointer) == (1, "/x")
    assert compiled.ok  # a warning: the plan may still run (and skips the reader)
    compiled = compile_plan([NEWS_CALL, use("†state.n.count.0")], tools=[producer(NEWS), USE])
    (diagnostic,) = [d for d in compiled.diagnostics if d.code == "unknown-field"]
    assert "reads the index 0 below †state.n.count, but the _output schema of pick (call 0) " \
        "declares †state.n.count as a number or a null value" in diagnostic.message

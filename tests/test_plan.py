"""compiler/plan.py: compiling a plan into its dataflow graph, and every check (SEMANTICS
§5-6, CONFORMANCE.md "Diagnostic codes").

Tables of (plan, expected) for each diagnostic code, the edges and their instance
visibility, the branch guards, every dangling-reference rule, instancing, and the
deterministic order of everything the compiler returns.
"""

from __future__ import annotations

import json
import pathlib
import time
from typing import Any

import pytest

from obelisk.compiler import compile_plan, render_text
from obelisk.compiler import plan as plan_module
from obelisk.compiler.diagnostics import CODES
from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.tools import ToolError, ToolRegistry
from obelisk.core.context import Context
from obelisk.core.errors import PlanError
from obelisk.core.plain import thaw
from obelisk.kit.conformance import check_vector


def tool(name: str, params: dict[str, Any] | None = None, output: Any = None,
         required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A tool schema: ``_tool`` const ``name``, the given parameters and ``_output``."""
    properties: dict[str, Any] = {"_tool": {"type": "string", "const": name}}
    properties.update(params or {})
    if output is not None:
        properties["_output"] = output
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


TOOLS = [
    tool("getUser", {"id": {"type": "string"}},
         {"type": "object", "properties": {"age": {"type": "integer"},
                                           "name": {"type": "string"}}}, ("id",)),
    tool("sendEmail", {"to": {"type": "string"}, "retries": {"type": "integer", "minimum": 0}}),
    tool("count", {"n": {"type": "integer"}}),
    tool("ratio", {"x": {"type": "number"}}),
    tool("flag", {"on": {"type": "boolean"}}),
    tool("anything", {"v": {}}),
    tool("listTags", {}, {"type": "string"}),
    tool("noOutput", {}),
    tool("options", {"opts": {"type": "object", "properties": {"n": {"type": "integer"}},
                              "additionalProperties": False},
                     "list": {"type": "array", "items": {"type": "string"}}}, None, ("opts",)),
]

Found = list[tuple[str, str, "int | None", str]]


def found(plan: list[Any], **options: Any) -> Found:
    """(code, severity, call, pointer) of every diagnostic, in the compiler's order."""
    return [(d.code, d.severity.value, d.call, d.pointer)
            for d in compile_plan(plan, **options).diagnostics]


def edges(compiled: CompiledPlan) -> list[tuple[int, int]]:
    """Edges as (writer call, reader call) for a plan without instances."""
    return [(compiled.nodes[e.writer].index, compiled.nodes[e.reader].index)
            for e in compiled.edges]


# -- every code: plan -> exact diagnostics ------------------------------------------------

# (id, plan, compile options, every diagnostic as (code, severity, call, pointer))
DIAGNOSTICS: list[tuple[str, list[Any], dict[str, Any], Found]] = [
    ("clean-chain", [
        {"_tool": "a", "_outputPath": "†state.x"},
        {"_tool": "b", "p": "†state.x", "_outputPath": "†state.y"}], {}, []),
    # syntax
    ("syntax/param", [{"_tool": "a", "p": "†state.user."}], {},
     [("syntax", "error", 0, "/p")]),
    ("syntax/nested-param", [{"_tool": "a", "q": {"list": ["ok", "†state.a ||"]}}], {},
     [("syntax", "error", 0, "/q/list/1")]),
    ("syntax/pointer-escapes", [{"_tool": "a", "a/b": "†state.", "t~": "†"}], {},
     [("syntax", "error", 0, "/a~1b"), ("syntax", "error", 0, "/t~0")]),
    ("syntax/output-path", [{"_tool": "a", "_outputPath": "†state.x ||"}], {},
     [("syntax", "error", 0, "/_outputPath")]),
    ("syntax/output-literal", [{"_tool": "a", "_outputPath": "†state.x || 'x'"}], {},
     [("syntax", "error", 0, "/_outputPath")]),
    ("syntax/output-not-a-string", [{"_tool": "a", "_outputPath": ["†state.x"]}], {},
     [("syntax", "error", 0, "/_outputPath")]),
    ("syntax/nesting-limit", [{"_tool": "a", "p": "†state.x || " + "(" * 65 + "†state.y" + ")" * 65}],
     {"context": [{"type": "state", "x": 1}]}, [("syntax", "error", 0, "/p")]),
    ("syntax/length-limit", [{"_tool": "a", "p": "†state." + ".".join(["k"] * 3000)}], {},
     [("syntax", "error", 0, "/p")]),
    ("syntax/escaped-dagger-is-literal", [{"_tool": "a", "p": "\\†state.", "q": "a †state."}], {},
     []),
    ("syntax/meta-is-never-parsed", [{"_tool": "a", "_output": "†state.", "_note": "†("}], {},
     []),
    # unknown-tool
    ("unknown-tool/not-in-tools", [{"_tool": "sendEmial", "to": "x"}], {"tools": TOOLS},
     [("unknown-tool", "error", 0, "/_tool")]),
    ("unknown-tool/missing", [{"p": 1}], {}, [("unknown-tool", "error", 0, "/_tool")]),
    ("unknown-tool/not-a-string", [{"_tool": 7}], {}, [("unknown-tool", "error", 0, "/_tool")]),
    ("unknown-tool/empty", [{"_tool": ""}], {}, [("unknown-tool", "error", 0, "/_tool")]),
    ("unknown-tool/any-name-without-tools", [{"_tool": "whatever"}], {}, []),
    ("unknown-tool/any-name-with-empty-tools", [{"_tool": "whatever"}], {"tools": []}, []),
    # param-schema
    ("param-schema/minimum", [{"_tool": "sendEmail", "to": "a@b.c", "retries": -1}],
     {"tools": TOOLS}, [("param-schema", "error", 0, "/retries")]),
    ("param-schema/required", [{"_tool": "getUser"}], {"tools": TOOLS},
     [("param-schema", "error", 0, "/id")]),
    ("param-schema/nested", [{"_tool": "options", "opts": {"n": "x", "m": 1}, "list": [1]}],
     {"tools": TOOLS}, [("param-schema", "error", 0, "/list/0"),
                        ("param-schema", "error", 0, "/opts/m"),
                        ("param-schema", "error", 0, "/opts/n")]),
    ("param-schema/references-are-exempt",
     [{"_tool": "options", "opts": {"n": "†state.n"}, "list": ["†state.l"]},
      {"_tool": "sendEmail", "retries": "†state.n"}],
     {"tools": TOOLS, "context": [{"type": "state", "n": 1, "l": "x"}]}, []),
    ("param-schema/escaped-dagger-is-checked", [{"_tool": "count", "n": "\\†state.n"}],
     {"tools": TOOLS}, [("param-schema", "error", 0, "/n")]),
    ("param-schema/not-without-tools", [{"_tool": "sendEmail", "retries": -1}], {}, []),
    # invalid-output-method
    ("invalid-output-method/name",
     [{"_tool": "a", "_outputPath": "†state.log", "_outputMethod": "append"}], {},
     [("invalid-output-method", "error", 0, "/_outputMethod")]),
    ("invalid-output-method/not-a-string",
     [{"_tool": "a", "_outputPath": "†state.log", "_outputMethod": 3}], {},
     [("invalid-output-method", "error", 0, "/_outputMethod")]),
    ("invalid-output-method/all-five", [
        {"_tool": "a", "_outputPath": f"†state.{m}", "_outputMethod": m}
        for m in ("set", "merge", "assign", "push", "concat")], {}, []),
    # invalid-output-target
    ("invalid-output-target/one", [{"_tool": "a", "_outputPath": "†text.x"}], {},
     [("invalid-output-target", "error", 0, "/_outputPath")]),
    ("invalid-output-target/each-bad-alternative",
     [{"_tool": "a", "_outputPath": "†plan.x || †state.ok || †error"}], {},
     [("invalid-output-target", "error", 0, "/_outputPath"),
      ("invalid-output-target", "error", 0, "/_outputPath")]),
    ("invalid-output-target/any-data-kind",
     [{"_tool": "a", "_outputPath": "†state.a && †data.b && †input.c && †user.d"}], {}, []),
    # dangling-reference
    ("dangling-reference/nothing-writes", [
        {"_tool": "pay", "_outputPath": "†state.receipt"},
        {"_tool": "confirm", "receipt": "†state.reciept"}], {},
     [("dangling-reference", "error", 1, "/receipt")]),
    ("dangling-reference/other-kind", [
        {"_tool": "a", "_outputPath": "†data.x"}, {"_tool": "b", "p": "†state.x"}], {},
     [("dangling-reference", "error", 1, "/p")]),
    ("dangling-reference/provided-by-context", [{"_tool": "b", "p": "†state.x"}],
     {"context": [{"type": "state", "x": 0}]}, []),
    # cycle
    ("cycle/two", [
        {"_tool": "a", "p": "†state.b", "_outputPath": "†state.a"},
        {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b"}], {},
     [("cycle", "error", 0, "")]),
    ("cycle/read-own-output-is-no-cycle",
     [{"_tool": "a", "p": "†state.n", "_outputPath": "†state.n"}],
     {"context": [{"type": "state", "n": 1}]}, []),
    # type-mismatch
    ("type-mismatch/output-schema", [
        {"_tool": "getUser", "id": "u1", "_outputPath": "†state.user"},
        {"_tool": "sendEmail", "to": "†state.user.age"}], {"tools": TOOLS},
     [("type-mismatch", "error", 1, "/to")]),
    # unknown-field
    ("unknown-field/open-schema", [
        {"_tool": "getUser", "id": "u1", "_outputPath": "†state.user"},
        {"_tool": "anything", "v": "†state.user.nmae"}], {"tools": TOOLS},
     [("unknown-field", "warning", 1, "/v")]),
    ("unknown-field/closed-schema", [
        {"_tool": "getUser", "id": "u1", "_outputPath": "†state.user"},
        {"_tool": "anything", "v": "†state.user.age.x"}], {"tools": [
            tool("getUser", {"id": {"type": "string"}},
                 {"type": "object", "properties": {"age": {
                     "type": "object", "properties": {"y": {}}, "additionalProperties": False}}},
                 ("id",)), *TOOLS[1:]]},
     [("unknown-field", "error", 1, "/v")]),
    # write-race
    ("write-race/same-path", [
        {"_tool": "a", "_outputPath": "†state.result"},
        {"_tool": "b", "_outputPath": "†state.result"}], {},
     [("write-race", "warning", 0, "/_outputPath")]),
    # unreachable
    ("unreachable/both-alternatives", [
        {"_tool": "check", "_outputPath": "†state.yes || †state.no"},
        {"_tool": "both", "a": "†state.yes", "b": "†state.no"}], {},
     [("unreachable", "warning", 1, "")]),
    # scope-race
    ("scope-race/unordered-writer", [
        {"_tool": "log", "_scopes": ["state"]},
        {"_tool": "fetch", "_outputPath": "†state.user"}], {},
     [("scope-race", "warning", 0, "/_scopes")]),
    # external-reference
    ("external-reference/no-input-message", [{"_tool": "a", "p": "†input.city"}], {},
     [("external-reference", "info", 0, "/p")]),
    # obelisk's own codes
    ("invalid-call/not-an-object", ["fetch", None, [1], {"_tool": "a"}], {},
     [("invalid-call", "error", 0, ""), ("invalid-call", "error", 1, ""),
      ("invalid-call", "error", 2, "")]),
    ("invalid-meta/instance", [{"_tool": "a", "_instance": 1}], {},
     [("invalid-meta", "error", 0, "/_instance")]),
    ("invalid-meta/scopes-not-a-list", [{"_tool": "a", "_scopes": "state"}], {},
     [("invalid-meta", "error", 0, "/_scopes")]),
    ("invalid-meta/scope-names", [{"_tool": "a", "_scopes": ["state", "†input", 3, "1x", ""]}],
     {}, [("invalid-meta", "error", 0, "/_scopes/2"), ("invalid-meta", "error", 0, "/_scopes/3"),
          ("invalid-meta", "error", 0, "/_scopes/4")]),
    ("no-instances", [{"_tool": "a", "p": "†state.nothing"}], {"instances": True},
     [("no-instances", "info", None, "")]),
    ("invalid-scope/non-data-kinds",
     [{"_tool": "a", "_scopes": ["system", "state", "†tool", "error", "plan", "meta", "text"]}],
     {}, [("invalid-scope", "error", 0, f"/_scopes/{i}") for i in (0, 2, 3, 4, 5, 6)]),
    ("confusable-kind/cyrillic-s", [{"_tool": "a", "p": "†\u0455tate.x"}], {},
     [("confusable-kind", "warning", 0, "/p"), ("dangling-reference", "error", 0, "/p")]),
    ("slow-pattern/nested-quantifiers", [{"_tool": "t"}],
     {"tools": [{"type": "object", "properties": {
         "_tool": {"const": "t"}, "id": {"type": "string", "pattern": "^(a+)+$"}}}]},
     [("slow-pattern", "warning", None, "")]),
    ("unchecked-pattern/lookahead", [{"_tool": "t"}],
     {"tools": [{"type": "object", "properties": {
         "_tool": {"const": "t"}, "id": {"type": "string", "pattern": "^(?=x)"}}}]},
     [("unchecked-pattern", "warning", None, "")]),
    ("null-meta-properties-are-absent",
     [{"_tool": "a", "_outputPath": None, "_outputMethod": None, "_instance": None,
       "_scopes": None}], {}, []),
    ("every-problem-of-a-call", [{
        "_tool": 1, "p": "†state.", "q": "†state.nope", "_outputPath": "†error.x",
        "_outputMethod": "put", "_instance": [], "_scopes": {}}], {},
     [("invalid-meta", "error", 0, "/_instance"),           # in the order of the pointers
      ("invalid-output-method", "error", 0, "/_outputMethod"),
      ("invalid-output-target", "error", 0, "/_outputPath"),
      ("invalid-meta", "error", 0, "/_scopes"),
      ("unknown-tool", "error", 0, "/_tool"),
      ("syntax", "error", 0, "/p"),
      ("dangling-reference", "error", 0, "/q")]),
]


@pytest.mark.parametrize(("plan", "options", "expected"),
                         [pytest.param(p, o, e, id=i) for i, p, o, e in DIAGNOSTICS])
def test_diagnostics(plan: list[Any], options: dict[str, Any], expected: Found) -> None:
    assert found(plan, **options) == expected


def test_every_code_has_a_case() -> None:
    covered = {code for *_, expected in DIAGNOSTICS for code, *_ in expected}
    covered |= {"too-many"}  # below: needs a larger plan
    covered |= {"too-dense"}  # needs millions of edges: tests/hostile/test_compiler.py
    covered |= {"no-tools"}  # the command line's, not the compiler's: tests/test_cli_inputs.py
    assert covered == set(CODES)


# -- every code: the text obelisk prints ---------------------------------------------------

# (code, plan, compile options, the rendered text of the first diagnostic with that code)
RENDERED: list[tuple[str, list[Any], dict[str, Any], str]] = [
    ("syntax", [{"_tool": "a", "p": "†state.user."}], {},
     "plan: call 0 (a) /p: error[syntax]: the expression ends too early\n"
     "    †state.user.\n"
     "                ^\n"
     "    hint: expected one of: a key or an index, a quoted string; a '.' must be followed "
     "by a key or an index"),
    ("unknown-tool", [{"_tool": "sendEmial", "to": "x"}], {"tools": TOOLS},
     "plan: call 0 (sendEmial) /_tool: error[unknown-tool]: no tool named 'sendEmial'\n"
     "    hint: did you mean 'sendEmail'?"),
    ("param-schema", [{"_tool": "sendEmail", "to": "a@b.c", "retries": -1}], {"tools": TOOLS},
     "plan: call 0 (sendEmail) /retries: error[param-schema]: retries: -1 is less than the "
     "minimum of 0"),
    ("invalid-output-method",
     [{"_tool": "a", "_outputPath": "†state.log", "_outputMethod": "append"}], {},
     "plan: call 0 (a) /_outputMethod: error[invalid-output-method]: _outputMethod 'append' "
     "is not set, merge, assign, push or concat\n"
     "    hint: did you mean 'push'?"),  # the amended hint: append means push
    ("invalid-output-target", [{"_tool": "a", "_outputPath": "†state.ok || †error.x"}], {},
     "plan: call 0 (a) /_outputPath: error[invalid-output-target]: kind \"error\" is a "
     "message type that cannot hold data\n"
     "    †state.ok || †error.x\n"
     "                 ^^^^^^^^\n"
     "    hint: write to a data kind such as †state or †data"),
    ("dangling-reference", [{"_tool": "pay", "_outputPath": "†state.receipt"},
                            {"_tool": "confirm", "receipt": "†state.reciept"}], {},
     "plan: call 1 (confirm) /receipt: error[dangling-reference]: †state.reciept is read "
     "here, but no call writes it and the context does not provide it\n"
     "    †state.reciept\n"
     "    ^^^^^^^^^^^^^^\n"
     "    hint: did you mean †state.receipt (written by call 0 (pay))?"),
    ("cycle", [{"_tool": "a", "p": "†state.b", "_outputPath": "†state.a"},
               {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b"}], {},
     "plan: call 0 (a): error[cycle]: calls 0, 1 depend on each other in a loop: call 1 (b) "
     "reads †state.a, written by call 0 (a); call 0 (a) reads †state.b, written by call 1 (b)\n"
     "    calls: 0, 1\n"
     "    hint: break the loop: let one of these calls read its value from the context or "
     "from a call outside the loop, or split the plan in two"),
    ("type-mismatch", [{"_tool": "getUser", "id": "u1", "_outputPath": "†state.user"},
                       {"_tool": "sendEmail", "to": "†state.user.age"}], {"tools": TOOLS},
     "plan: call 1 (sendEmail) /to: error[type-mismatch]: †state.user.age can only be an "
     "integer (the _output schema of getUser, call 0), but parameter 'to' of sendEmail needs "
     "a string\n"
     "    †state.user.age\n"
     "    ^^^^^^^^^^^^^^^\n"
     "    hint: read a path that holds the right type, or change the producer's _output"),
    ("write-race", [{"_tool": "a", "_outputPath": "†state.result"},
                    {"_tool": "b", "_outputPath": "†state.result"}], {},
     "plan: call 0 (a) /_outputPath: warning[write-race]: call 0 (a) writes †state.result and "
     "call 1 (b) writes †state.result; neither waits for the other, so the result depends on "
     "which finishes last\n"
     "    †state.result\n"
     "    ^^^^^^^^^^^^^\n"
     "    calls: 0, 1\n"
     "    hint: make one call read the other's result, write to different paths, or put them "
     "on different alternatives of one branching call"),
    ("unreachable", [{"_tool": "check", "_outputPath": "†state.yes || †state.no"},
                     {"_tool": "both", "a": "†state.yes", "b": "†state.no"}], {},
     "plan: call 1 (both): warning[unreachable]: this call needs both alternative 1 "
     "(†state.yes) and alternative 2 (†state.no) of call 0 (check)'s _outputPath, but only "
     "one of them is ever written, so it can never run\n"
     "    calls: 0, 1\n"
     "    hint: read the alternatives with || instead, or from different calls"),
    ("scope-race", [{"_tool": "log", "_scopes": ["state"]},
                    {"_tool": "fetch", "_outputPath": "†state.user"}], {},
     "plan: call 0 (log) /_scopes: warning[scope-race]: _scopes shows this call a snapshot of "
     "state taken when it starts, and calls it does not wait for may write there: call 1 "
     "(fetch) writes †state.user\n"
     "    calls: 0, 1\n"
     "    hint: read the values it needs through parameters (†state.x), which wait for their "
     "writers, instead of relying on the scoped snapshot"),
    ("external-reference", [{"_tool": "a", "p": "†input.city || 'Paris'"}], {},
     "plan: call 0 (a) /p: info[external-reference]: †input.city is an input to be supplied "
     "at run time\n"
     "    †input.city || 'Paris'\n"
     "    ^^^^^^^^^^^"),
    ("invalid-call", ["fetch"], {},
     "plan: call 0: error[invalid-call]: a call must be a JSON object, got string\n"
     '    hint: write it as {"_tool": "name", "param": value, ...}'),
    ("invalid-meta", [{"_tool": "a", "_scopes": ["state", 3]}], {},
     "plan: call 0 (a) /_scopes/1: error[invalid-meta]: _scopes[1] is not a kind name: 3\n"
     '    hint: kind names look like "state"'),
    ("no-instances", [{"_tool": "a"}], {"instances": True},
     "plan: info[no-instances]: instancing was asked for, but no data message in the context "
     "has an _instance, so only calls with an explicit _instance run\n"
     '    hint: instances come from data messages such as {"type": "data", "_instance": "①", '
     '...}'),
    ("invalid-scope", [{"_tool": "a", "_scopes": ["state", "system"]}], {},
     "plan: call 0 (a) /_scopes/1: error[invalid-scope]: _scopes[1] names 'system', a "
     "message type that holds no data; only data kinds can be scoped\n"
     '    hint: scope data kinds such as "state", "data" or "input"'),
    ("confusable-kind", [{"_tool": "a", "_outputPath": "†\u0455tate.x"}], {},
     "plan: call 0 (a) /_outputPath: warning[confusable-kind]: kind \\u0455tate looks like "
     "state but is spelt with other characters, so it is a different kind\n"
     "    hint: spell it state if that is meant, or choose a name that cannot be mistaken "
     "for it"),
    ("too-many", [{"_tool": "w", "_outputPath": "†state.x"}] * 46, {},
     "plan: info[too-many]: 35 more write races not reported"),
]


@pytest.mark.parametrize(("code", "plan", "options", "text"),
                         [pytest.param(*case, id=case[0]) for case in RENDERED])
def test_rendered_text(code: str, plan: list[Any], options: dict[str, Any], text: str) -> None:
    diagnostics = [d for d in compile_plan(plan, **options).diagnostics if d.code == code]
    assert diagnostics, f"no {code} diagnostic"
    assert render_text(diagnostics[0]) == text


def test_rendered_text_names_the_instance() -> None:
    plan = [{"_tool": "r", "p": "†state.missing"}]
    context = [{"type": "state", "_instance": "①", "a": 1}]
    (diagnostic,) = compile_plan(plan, context=context, instances=True).diagnostics
    assert render_text(diagnostic, "plan.json").split("\n")[0] == (
        "plan.json: call 0 (r) [instance ①] /p: error[dangling-reference]: †state.missing is "
        "read here, but no call writes it and the context does not provide it")


# -- diagnostic fields ----------------------------------------------------------------------


def test_diagnostics_carry_span_expression_and_calls() -> None:
    compiled = compile_plan([
        {"_tool": "w", "_outputPath": "†state.ok || †state.err"},
        {"_tool": "r", "p": "†state.ok && †state.nope"},
        {"_tool": "w2", "_outputPath": "†state.ok"},
    ])
    by_code = {d.code: d for d in compiled.diagnostics}
    dangling = by_code["dangling-reference"]
    assert (dangling.call, dangling.pointer, dangling.expression) == (
        1, "/p", "†state.ok && †state.nope")
    assert dangling.span is not None and (dangling.span.start, dangling.span.end) == (13, 24)
    assert dangling.tool == "r"
    race = by_code["write-race"]
    assert (race.call, race.calls, race.expression) == (0, (0, 2), "†state.ok || †state.err")
    assert race.span is not None and (race.span.start, race.span.end) == (0, 9)


# -- edges ------------------------------------------------------------------------------------

# (written, read, an edge)
EDGES = [
    ("†state.x", "†state.x", True),
    ("†state.user", "†state.user.name", True),      # written above the read
    ("†state.user.name", "†state.user", True),      # written below the read
    ("†state", "†state.x", True),
    ("†state.x", "†state", True),
    ("†state.ab", "†state.a", False),               # segments, not text
    ("†state.a.b", "†state.a.c", False),
    ("†data.x", "†state.x", False),                 # another kind
    ("†state.items.-1", "†state.items.3", True),    # negative indexes alias others
    ("†state.items.2", "†state.items.-1", True),
    ("†state.items.-1", "†state.items.-2", False),
    ("†state.items.1", "†state.items.2", False),
    ("†state.items.0", '†state.items."0"', True),   # index n aliases key "n"
    ('†state."0"', "†state.0", True),
    ('†state."00"', "†state.0", False),
    ("†state.a && †data.b", "†data.b.c", True),     # any target of a fan-out
    ("†state.a || †data.b", "†data.b.c", True),     # any alternative
    ("(†state.a && †state.b) || †state.c", "†state.b", True),
]


@pytest.mark.parametrize(("written", "read", "edge"), EDGES)
def test_edges(written: str, read: str, edge: bool) -> None:
    compiled = compile_plan([{"_tool": "r", "p": read}, {"_tool": "w", "_outputPath": written}],
                            context=[{"type": "state", "other": 1}])
    assert edges(compiled) == ([(1, 0)] if edge else [])


def test_an_edge_names_its_alternatives_and_paths() -> None:
    compiled = compile_plan([
        {"_tool": "w", "_outputPath": "(†state.a && †state.log) || †state.b || †state.log"},
        {"_tool": "r", "p": "†state.log", "q": {"deep": ["†state.a.x"]}},
    ])
    (edge,) = compiled.edges
    assert (edge.writer, edge.reader) == (0, 1)
    assert edge.alternatives == (0, 2)
    assert edge.paths == (("†state.a", "†state.a.x"), ("†state.log", "†state.log"))
    (node_w, node_r) = compiled.nodes
    assert node_w.reads == ()
    assert [(p.pointer, p.path, p.text) for p in node_r.params] == [
        ("/p", ("p",), "†state.log"), ("/q/deep/0", ("q", "deep", 0), "†state.a.x")]
    assert [r.writers for r in node_r.reads] == [(0,), (0,)]
    assert compiled.successors == ((1,), ()) and compiled.predecessors == ((), (0,))


def test_list_order_creates_no_edges() -> None:
    # The reader comes first in the list; the data decides the order.
    compiled = compile_plan([
        {"_tool": "c", "p": "†state.b", "_outputPath": "†state.c"},
        {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b"},
        {"_tool": "a", "_outputPath": "†state.a"},
        {"_tool": "z", "_outputPath": "†state.z"},
    ])
    assert edges(compiled) == [(1, 0), (2, 1)]
    assert compiled.order == (2, 1, 0, 3)
    assert compiled.ok


def test_no_self_edges() -> None:
    compiled = compile_plan([{"_tool": "inc", "n": "†state.n", "_outputPath": "†state.n"}],
                            context=[{"type": "state", "n": 1}])
    assert compiled.edges == () and compiled.diagnostics == ()
    assert compiled.nodes[0].reads[0].writers == ()


def test_scopes_create_no_edges() -> None:
    compiled = compile_plan([{"_tool": "a", "_outputPath": "†state.x"},
                             {"_tool": "b", "_scopes": ["state"], "_outputPath": "†data.y"}])
    assert compiled.edges == ()
    assert compiled.nodes[1].scopes == ("state",)


def test_meta_properties_are_not_read() -> None:
    compiled = compile_plan([
        {"_tool": "w", "_outputPath": "†state.x"},
        {"_tool": "r", "_output": "†state.x", "_note": "†state.x", "p": "\\†state.x",
         "q": "see †state.x"}])
    assert compiled.edges == () and compiled.nodes[1].params == ()
    assert compiled.diagnostics == ()


# (writer's _instance, reader's _instance, an edge): a global write is visible to every
# instance, an instance write only to that instance.
VISIBILITY = [
    (None, None, True),
    (None, "①", True),
    ("①", None, False),
    ("①", "①", True),
    ("①", "②", False),
]


@pytest.mark.parametrize(("writer", "reader", "edge"), VISIBILITY)
def test_instance_visibility(writer: str | None, reader: str | None, edge: bool) -> None:
    w: dict[str, Any] = {"_tool": "w", "_outputPath": "†state.x"}
    r: dict[str, Any] = {"_tool": "r", "p": "†state.x"}
    if writer:
        w["_instance"] = writer
    if reader:
        r["_instance"] = reader
    compiled = compile_plan([w, r])
    assert edges(compiled) == ([(0, 1)] if edge else [])
    assert [d.code for d in compiled.diagnostics] == ([] if edge else ["dangling-reference"])


# -- dangling references ----------------------------------------------------------------------

# (expression, context, references that dangle, references that are external inputs)
DANGLING: list[tuple[str, list[Any], list[str], list[str]]] = [
    ("†state.a", [], ["†state.a"], []),
    ("†state.a || 'x'", [], [], []),                       # an || with a literal
    ("†state.a || 3", [], [], []),
    ("†state.a || null", [], [], []),
    ("†state.a || false", [], [], []),
    ("†state.a || †state.b || 'x'", [], [], []),
    ("†state.a || †state.b", [{"type": "state", "b": 1}], [], []),  # one provided operand
    ("†state.a || †state.w", [], [], []),                  # one written operand
    ("†state.a || †state.b", [], ["†state.a", "†state.b"], []),
    ("†state.a && †state.b", [{"type": "state", "b": 1}], ["†state.a"], []),
    ("†state.a && 'x'", [], ["†state.a"], []),
    ("†state.a && †state.b", [], ["†state.a", "†state.b"], []),
    ("(†state.a && †state.b) || 'x'", [], [], []),
    ("†state.a || (†state.b && †state.c)", [{"type": "state", "b": 1}],
     ["†state.a", "†state.c"], []),
    ("†state.c && (†state.a || 'x') && †state.b", [{"type": "state", "c": 1}],
     ["†state.b"], []),
    ("'x' && †state.a", [], [], []),                       # not an expression: a literal
    # provided means present: a null that no call writes is not provided...
    ("†state.x", [{"type": "state", "x": None}], ["†state.x"], []),
    ("†state.x.y", [{"type": "state", "x": None}], ["†state.x.y"], []),
    ("†state.x || 'd'", [{"type": "state", "x": None}], [], []),  # ...but a default is
    ("†state.w", [{"type": "state", "w": None}], [], []),   # and so is a written path
    ("†state.x.y", [{"type": "state", "x": {"y": False}}], [], []),
    ("†state.w.deep", [], [], []),                         # written above the read
    ("†data.a", [{"type": "state", "a": 1}], ["†data.a"], []),
    # input: supplied at run time when the context has no input message...
    ("†input.x", [], [], ["†input.x"]),
    ("†input.x || †state.a", [], [], ["†input.x"]),
    ("†input.x && †state.a", [], ["†state.a"], ["†input.x"]),
    # ...or when an input message's schema declares the path
    ("†input.x", [{"type": "input", "input": {"y": 1}}], ["†input.x"], []),
    ("†input.x", [{"type": "input", "input": {"x": 1}}], [], []),
    ("†input.x", [{"type": "input", "input": {"x": None}}], ["†input.x"], []),  # not present
    ("†input.x", [{"type": "input", "input": {},
                   "schema": {"type": "object", "properties": {"x": {"type": "string"}}}}],
     [], ["†input.x"]),
    ("†input.x.y", [{"type": "input", "input": {},
                     "schema": {"properties": {"x": {"properties": {"y": {}}}}}}],
     [], ["†input.x.y"]),
    ("†input.x.z", [{"type": "input", "input": {},
                     "schema": {"properties": {"x": {"properties": {"y": {}}}}}}],
     ["†input.x.z"], []),
    ("†input.items.0", [{"type": "input", "input": {},
                         "schema": {"properties": {"items": {"items": {}}}}}],
     [], ["†input.items.0"]),
    ("†input.x", [{"type": "data", "kind": "input", "data": {}}], ["†input.x"], []),
    ("†input.x", [{"type": "input", "input": {}},
                  {"type": "input", "input": {},
                   "schema": {"properties": {"x": {}}}}], [], ["†input.x"]),
]


@pytest.mark.parametrize(("expression", "context", "dangling", "external"), DANGLING)
def test_dangling_rules(expression: str, context: list[Any], dangling: list[str],
                        external: list[str]) -> None:
    compiled = compile_plan([{"_tool": "r", "p": expression},
                             {"_tool": "w", "_outputPath": "†state.w"}], context=context)
    by_code: dict[str, list[str]] = {}
    for d in compiled.diagnostics:
        assert d.call == 0 and d.pointer == "/p" and d.expression == expression
        assert d.span is not None
        by_code.setdefault(d.code, []).append(expression[d.span.start:d.span.end])
    assert by_code.pop("dangling-reference", []) == dangling
    assert by_code.pop("external-reference", []) == external
    assert by_code == {}


# (reads, plan writes, context, the hint)
HINTS = [
    ("†state.reciept", ["†state.receipt"], [],
     "did you mean †state.receipt (written by call 1 (w))?"),
    ("†state.usr.name", [], [{"type": "state", "user": {"name": "A"}}],
     "did you mean †state.user.name (present in the context)?"),
    ("†state.user.address.city", [],
     [{"type": "state", "user": {"name": "A", "email": "a@b.c", "id": 7}}],
     "nearby: †state.user.email (present in the context), †state.user.id (present in the "
     "context), †state.user.name (present in the context)"),
    ("†state.order.total.net", ["†state.order.id"], [],
     "nearby: †state.order.id (written by call 1 (w))"),
    ("†data.x", [], [],
     "write it with an earlier call's _outputPath, or add a data message to the context"),
    ("†data", ["†state.x"], [],
     "write it with an earlier call's _outputPath, or add a data message to the context"),
]


@pytest.mark.parametrize(("read", "written", "context", "hint"), HINTS)
def test_dangling_hints(read: str, written: list[str], context: list[Any], hint: str) -> None:
    plan: list[Any] = [{"_tool": "r", "p": read}]
    plan += [{"_tool": "w", "_outputPath": w} for w in written]
    (diagnostic,) = compile_plan(plan, context=context).diagnostics
    assert diagnostic.code == "dangling-reference"
    assert diagnostic.hint == hint


def test_hints_name_only_writers_the_reader_can_see() -> None:
    plan = [{"_tool": "w", "_instance": "②", "_outputPath": "†state.receipt"},
            {"_tool": "r", "_instance": "①", "p": "†state.reciept"}]
    (diagnostic,) = compile_plan(plan).diagnostics
    assert diagnostic.hint == (
        "write it with an earlier call's _outputPath, or add a state message to the context")


def test_hint_searches_share_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each search compares the reference with every candidate path; past the budget the
    # generic hint keeps a plan with thousands of dangling references fast.
    monkeypatch.setattr(plan_module, "HINT_BUDGET", 3)
    plan = [{"_tool": "w", "_outputPath": "†state.receipt"},
            {"_tool": "w", "_outputPath": "†state.total"},
            {"_tool": "r", "p": "†state.reciept"},
            {"_tool": "r", "p": "†state.totl"}]
    hints = [d.hint for d in compile_plan(plan).diagnostics]
    assert hints == [
        "did you mean †state.receipt (written by call 0 (w))?",
        "write it with an earlier call's _outputPath, or add a state message to the context"]


@pytest.mark.slow
def test_many_dangling_references_compile_quickly() -> None:
    n = 3000
    plan = [{"_tool": "t", "p": f"†state.missing{i}", "_outputPath": f"†state.s{i}"}
            for i in range(n)]
    start = time.perf_counter()
    compiled = compile_plan(plan)
    assert time.perf_counter() - start < 30
    assert [d.code for d in compiled.diagnostics] == ["dangling-reference"] * n


def test_a_kind_the_context_cannot_fold_is_not_dangling() -> None:
    # The context holds a write that cannot be applied (push onto an object): every read of
    # the kind fails at run time with that write's error, so the compiler neither calls
    # reads of it dangling nor guesses their types nor offers its paths as hints.
    context = [{"type": "state", "state": {"obj": {"k": "v"}}},
               {"type": "state", "state": {"obj": 1}, "_outputPath": "†state.obj",
                "_outputMethod": "push"}]
    plan = [{"_tool": "count", "n": "†state.obj"}, {"_tool": "count", "n": "†state.nope"},
            {"_tool": "count", "n": "†data.nope"}]
    compiled = compile_plan(plan, context=context, tools=TOOLS)
    assert [(d.code, d.call, d.hint) for d in compiled.diagnostics] == [
        ("dangling-reference", 2, "write it with an earlier call's _outputPath, or add a data "
                                  "message to the context")]


# -- cycles ------------------------------------------------------------------------------------


def test_one_cycle_diagnostic_per_component() -> None:
    plan = [
        {"_tool": "a", "p": "†state.c", "_outputPath": "†state.a"},   # 0 -> 1 -> 3 -> 0
        {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b"},
        {"_tool": "x", "p": "†state.y", "_outputPath": "†state.x"},   # 2 <-> 4
        {"_tool": "c", "p": "†state.b", "_outputPath": "†state.c"},
        {"_tool": "y", "p": "†state.x", "_outputPath": "†state.y"},
        {"_tool": "tail", "p": "†state.c", "_outputPath": "†state.t"},  # after the loop
        {"_tool": "head", "_outputPath": "†state.h"},
    ]
    compiled = compile_plan(plan)
    cycles = [d for d in compiled.diagnostics if d.code == "cycle"]
    assert [(d.call, d.calls) for d in cycles] == [(0, (0, 1, 3)), (2, (2, 4))]
    assert [d.code for d in compiled.diagnostics] == ["cycle", "cycle"]
    assert cycles[0].message.startswith("calls 0, 1, 3 depend on each other in a loop: ")
    for step in ("call 1 (b) reads †state.a, written by call 0 (a)",
                 "call 3 (c) reads †state.b, written by call 1 (b)",
                 "call 0 (a) reads †state.c, written by call 3 (c)"):
        assert step in cycles[0].message
    # The order keeps each loop together, after what it reads, before what reads it.
    order = list(compiled.order)
    assert order.index(3) < order.index(5)
    assert sorted(order[order.index(0):order.index(0) + 3]) == [0, 1, 3]


@pytest.mark.slow
def test_a_long_cycle_lists_every_call_and_needs_no_recursion() -> None:
    n = 5000
    plan = [{"_tool": "t", "p": f"†state.s{(i - 1) % n}", "_outputPath": f"†state.s{i}"}
            for i in range(n)]
    (cycle,) = compile_plan(plan).diagnostics
    assert cycle.code == "cycle" and cycle.call == 0 and cycle.calls == tuple(range(n))
    assert cycle.message.endswith("; ...")


def test_calls_of_a_cycle_do_not_race() -> None:
    plan = [{"_tool": "a", "p": "†state.b", "_outputPath": "†state.c && †state.z"},
            {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b && †state.z"},
            {"_tool": "c", "p": "†state.c", "_outputPath": "†state.a"}]
    assert found(plan) == [("cycle", "error", 0, "")]


# -- branch guards and exclusivity -----------------------------------------------------------

WEATHER = {"_tool": "weather", "_outputPath": "†state.sunny || †state.rainy"}


def guards(plan: list[Any], **options: Any) -> list[list[tuple[int, int]]]:
    return [sorted(n.guards) for n in compile_plan(plan, **options).nodes]


# (plan, each node's guards)
GUARDS: list[tuple[str, list[Any], dict[str, Any], list[list[tuple[int, int]]]]] = [
    ("bare-reference", [WEATHER, {"_tool": "park", "w": "†state.sunny"},
                        {"_tool": "movie", "w": "†state.rainy"}], {},
     [[], [(0, 0)], [(0, 1)]]),
    ("inherited", [WEATHER, {"_tool": "park", "w": "†state.sunny", "_outputPath": "†state.p"},
                   {"_tool": "book", "p": "†state.p"}], {},
     [[], [(0, 0)], [(0, 0)]]),
    ("every-operand-of-and", [WEATHER, {"_tool": "x", "w": "†state.other && †state.rainy"}],
     {"context": [{"type": "state", "other": 1}]}, [[], [(0, 1)]]),
    ("no-operand-of-or", [WEATHER, {"_tool": "x", "w": "†state.sunny || 'no'"}], {},
     [[], []]),
    ("provided-by-context", [WEATHER, {"_tool": "x", "w": "†state.sunny"}],
     {"context": [{"type": "state", "sunny": True}]}, [[], []]),
    ("two-writers", [WEATHER, {"_tool": "w2", "_outputPath": "†state.sunny"},
                     {"_tool": "x", "w": "†state.sunny"}], {}, [[], [], []]),
    ("written-in-every-alternative", [WEATHER, {"_tool": "x", "w": "†state"}], {}, [[], []]),
    ("one-alternative-writes-no-guard",
     [{"_tool": "w", "_outputPath": "†state.x"}, {"_tool": "x", "w": "†state.x"}], {},
     [[], []]),
    ("fan-out-group", [{"_tool": "w", "_outputPath": "(†state.a && †state.log) || †state.b"},
                       {"_tool": "x", "w": "†state.log"}], {}, [[], [(0, 0)]]),
    ("both-alternatives", [WEATHER, {"_tool": "x", "a": "†state.sunny", "b": "†state.rainy"}],
     {}, [[], [(0, 0), (0, 1)]]),
]


@pytest.mark.parametrize(("plan", "options", "expected"),
                         [pytest.param(p, o, e, id=i) for i, p, o, e in GUARDS])
def test_guards(plan: list[Any], options: dict[str, Any],
                expected: list[list[tuple[int, int]]]) -> None:
    assert guards(plan, **options) == expected


def test_a_call_needing_two_alternatives_through_its_inputs_is_unreachable() -> None:
    plan = [WEATHER,
            {"_tool": "park", "w": "†state.sunny", "_outputPath": "†state.p"},
            {"_tool": "movie", "w": "†state.rainy", "_outputPath": "†state.m"},
            {"_tool": "both", "a": "†state.p && †state.m"}]
    compiled = compile_plan(plan)
    assert [(d.code, d.call, d.calls) for d in compiled.diagnostics] == [
        ("unreachable", 3, (0, 3))]
    assert compiled.ok  # a warning, not an error


# -- write races -------------------------------------------------------------------------------

# (plan, the race diagnostics as (call, calls, instance))
RACES: list[tuple[str, list[Any], list[tuple[int, tuple[int, ...], str | None]]]] = [
    ("same-path", [{"_tool": "a", "_outputPath": "†state.x"},
                   {"_tool": "b", "_outputPath": "†state.x"}], [(0, (0, 1), None)]),
    ("overlapping-paths", [{"_tool": "a", "_outputPath": "†state.user"},
                           {"_tool": "b", "_outputPath": "†state.user.name"}],
     [(0, (0, 1), None)]),
    ("aliased-index", [{"_tool": "a", "_outputPath": "†state.items.-1"},
                       {"_tool": "b", "_outputPath": "†state.items.2"}], [(0, (0, 1), None)]),
    ("disjoint-paths", [{"_tool": "a", "_outputPath": "†state.items.1"},
                        {"_tool": "b", "_outputPath": "†state.items.2"}], []),
    ("other-kind", [{"_tool": "a", "_outputPath": "†state.x"},
                    {"_tool": "b", "_outputPath": "†data.x"}], []),
    ("pushes", [{"_tool": "a", "_outputPath": "†state.log", "_outputMethod": "push"},
                {"_tool": "b", "_outputPath": "†state.log", "_outputMethod": "push"}],
     [(0, (0, 1), None)]),
    ("ordered", [{"_tool": "a", "_outputPath": "†state.x"},
                 {"_tool": "b", "p": "†state.x", "_outputPath": "†state.x"}], []),
    ("ordered-transitively", [{"_tool": "a", "_outputPath": "†state.x && †state.m"},
                              {"_tool": "m", "p": "†state.m", "_outputPath": "†state.n"},
                              {"_tool": "b", "p": "†state.n", "_outputPath": "†state.x"}], []),
    ("common-ancestor-does-not-order", [
        {"_tool": "a", "_outputPath": "†state.in"},
        {"_tool": "b", "p": "†state.in", "_outputPath": "†state.x"},
        {"_tool": "c", "p": "†state.in", "_outputPath": "†state.x"}], [(1, (1, 2), None)]),
    ("exclusive-branches", [WEATHER,
                            {"_tool": "park", "w": "†state.sunny", "_outputPath": "†state.s"},
                            {"_tool": "movie", "w": "†state.rainy", "_outputPath": "†state.s"}],
     []),
    ("exclusive-inherited", [WEATHER,
                             {"_tool": "park", "w": "†state.sunny", "_outputPath": "†state.p"},
                             {"_tool": "book", "p": "†state.p", "_outputPath": "†state.s"},
                             {"_tool": "movie", "w": "†state.rainy", "_outputPath": "†state.s"}],
     []),
    ("same-branch", [WEATHER,
                     {"_tool": "park", "w": "†state.sunny", "_outputPath": "†state.s"},
                     {"_tool": "beach", "w": "†state.sunny", "_outputPath": "†state.s"}],
     [(1, (1, 2), None)]),
    ("or-read-is-not-exclusive", [WEATHER,
                                  {"_tool": "a", "w": "†state.sunny || †state.rainy",
                                   "_outputPath": "†state.s"},
                                  {"_tool": "b", "w": "†state.rainy", "_outputPath": "†state.s"}],
     [(1, (1, 2), None)]),
    ("global-and-instance-never-race", [{"_tool": "a", "_outputPath": "†state.x"},
                                        {"_tool": "b", "_instance": "①",
                                         "_outputPath": "†state.x"}], []),
    ("same-instance", [{"_tool": "a", "_instance": "①", "_outputPath": "†state.x"},
                       {"_tool": "b", "_instance": "①", "_outputPath": "†state.x"}],
     [(0, (0, 1), "①")]),
    ("different-instances", [{"_tool": "a", "_instance": "②", "_outputPath": "†state.x"},
                             {"_tool": "b", "_instance": "①", "_outputPath": "†state.x"}], []),
    ("no-output", [{"_tool": "a"}, {"_tool": "b"}], []),
]


@pytest.mark.parametrize(("plan", "expected"),
                         [pytest.param(p, e, id=i) for i, p, e in RACES])
def test_write_races(plan: list[Any],
                     expected: list[tuple[int, tuple[int, ...], str | None]]) -> None:
    compiled = compile_plan(plan)
    races = [(d.call, d.calls, d.instance) for d in compiled.diagnostics
             if d.code == "write-race"]
    assert races == expected
    assert all(d.severity.value == "warning" for d in compiled.diagnostics
               if d.code == "write-race")


def test_races_per_instance_when_instancing() -> None:
    context = [{"type": "state", "_instance": "①", "a": 1},
               {"type": "state", "_instance": "②", "a": 2}]
    plan = [{"_tool": "a", "_outputPath": "†state.x"}, {"_tool": "b", "_outputPath": "†state.x"}]
    compiled = compile_plan(plan, context=context, instances=True)
    assert [(d.code, d.call, d.calls, d.instance) for d in compiled.diagnostics] == [
        ("write-race", 0, (0, 1), "①"), ("write-race", 0, (0, 1), "②")]


def test_at_most_max_races_then_one_too_many() -> None:
    # 46 calls writing one path make 46 * 45 / 2 = 1035 pairs.
    compiled = compile_plan([{"_tool": "w", "_outputPath": "†state.x"}] * 46)
    codes = [d.code for d in compiled.diagnostics]
    assert codes.count("write-race") == plan_module.MAX_RACES == 1000
    assert codes.count("too-many") == 1
    too_many = compiled.diagnostics[0]
    assert (too_many.code, too_many.call, too_many.message) == (
        "too-many", None, "35 more write races not reported")
    # The first races reported are the first pairs.
    races = [d.calls for d in compiled.diagnostics if d.code == "write-race"]
    assert races[:3] == [(0, 1), (0, 2), (0, 3)]


def test_the_race_search_stops_after_max_race_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "MAX_RACES", 2)
    monkeypatch.setattr(plan_module, "MAX_RACE_PAIRS", 5)
    compiled = compile_plan([{"_tool": "w", "_outputPath": "†state.x"}] * 10)
    assert [(d.code, d.calls) for d in compiled.diagnostics] == [
        ("too-many", ()), ("write-race", (0, 1)), ("write-race", (0, 2))]
    assert compiled.diagnostics[0].message == (
        "at least 3 more write races not reported: the search stopped after 5 pairs of calls "
        "writing overlapping paths")


@pytest.mark.slow
def test_thousands_of_writers_of_one_path_compile_quickly() -> None:
    start = time.perf_counter()
    compiled = compile_plan([{"_tool": "w", "_outputPath": "†state.x"}] * 3000)
    assert time.perf_counter() - start < 30
    assert [d.code for d in compiled.diagnostics].count("write-race") == 1000


# -- scope races ----------------------------------------------------------------------------

# (plan, scope races as (call, calls))
SCOPE_RACES: list[tuple[str, list[Any], list[tuple[int, tuple[int, ...]]]]] = [
    ("unordered-writer", [{"_tool": "log", "_scopes": ["state"]},
                          {"_tool": "w", "_outputPath": "†state.x"}], [(0, (0, 1))]),
    ("every-racing-writer", [{"_tool": "log", "_scopes": ["state", "data"]},
                             {"_tool": "w", "_outputPath": "†state.x"},
                             {"_tool": "v", "_outputPath": "†data.y"},
                             {"_tool": "u", "_outputPath": "†user.z"}], [(0, (0, 1, 2))]),
    ("ancestor", [{"_tool": "w", "_outputPath": "†state.x"},
                  {"_tool": "log", "p": "†state.x", "_scopes": ["state"]}], []),
    ("descendant", [{"_tool": "log", "_scopes": ["state"], "_outputPath": "†data.done"},
                    {"_tool": "w", "p": "†data.done", "_outputPath": "†state.x"}], []),
    ("its-own-write", [{"_tool": "log", "_scopes": ["state"], "_outputPath": "†state.x"}], []),
    ("other-kind", [{"_tool": "log", "_scopes": ["input"]},
                    {"_tool": "w", "_outputPath": "†state.x"}], []),
    ("other-instance", [{"_tool": "log", "_instance": "①", "_scopes": ["state"]},
                        {"_tool": "w", "_instance": "②", "_outputPath": "†state.x"}], []),
    ("global-writer-is-visible", [{"_tool": "log", "_instance": "①", "_scopes": ["state"]},
                                  {"_tool": "w", "_outputPath": "†state.x"}], [(0, (0, 1))]),
    ("instance-writer-is-not-visible-to-global", [
        {"_tool": "log", "_scopes": ["state"]},
        {"_tool": "w", "_instance": "①", "_outputPath": "†state.x"}], []),
    ("exclusive", [WEATHER,
                   {"_tool": "park", "w": "†state.sunny", "_outputPath": "†state.p"},
                   {"_tool": "log", "w": "†state.rainy", "_scopes": ["state"]}], []),
    ("scope-name-with-dagger", [{"_tool": "log", "_scopes": ["†state"]},
                                {"_tool": "w", "_outputPath": "†state.x"}], [(0, (0, 1))]),
]


@pytest.mark.parametrize(("plan", "expected"),
                         [pytest.param(p, e, id=i) for i, p, e in SCOPE_RACES])
def test_scope_races(plan: list[Any], expected: list[tuple[int, tuple[int, ...]]]) -> None:
    compiled = compile_plan(plan)
    assert [(d.call, d.calls) for d in compiled.diagnostics if d.code == "scope-race"] == expected


# -- types ------------------------------------------------------------------------------------

GET_USER = {"_tool": "getUser", "id": "u1", "_outputPath": "†state.user"}

# (plan, context, type-mismatch diagnostics as (call, pointer, message))
TYPES: list[tuple[str, list[Any], list[Any], list[tuple[int, str, str]]]] = [
    ("below-the-written-path", [GET_USER, {"_tool": "sendEmail", "to": "†state.user.age"}], [],
     [(1, "/to", "†state.user.age can only be an integer (the _output schema of getUser, "
                 "call 0), but parameter 'to' of sendEmail needs a string")]),
    ("compatible", [GET_USER, {"_tool": "sendEmail", "to": "†state.user.name"}], [], []),
    ("integer-meets-number", [GET_USER, {"_tool": "ratio", "x": "†state.user.age"}], [], []),
    ("or-with-a-fitting-literal",
     [GET_USER, {"_tool": "sendEmail", "to": "†state.user.age || 'x'"}], [], []),
    ("or-where-nothing-fits",
     [GET_USER, {"_tool": "flag", "on": "†state.user.age || 'x'"}], [],
     [(1, "/on", "†state.user.age || 'x' can only be an integer or a string (the _output "
                 "schema of getUser, call 0), but parameter 'on' of flag needs a boolean")]),
    ("and-takes-the-last", [GET_USER, {"_tool": "count", "n": "†state.user.name && †state.user.age"}],
     [], []),
    ("and-last-mismatch", [GET_USER, {"_tool": "count", "n": "†state.user.age && †state.user.name"}],
     [], [(1, "/n", "†state.user.age && †state.user.name can only be a string (the _output "
                    "schema of getUser, call 0), but parameter 'n' of count needs an integer")]),
    ("unknown-below-schema", [GET_USER, {"_tool": "count", "n": "†state.user.other"}], [], []),
    ("read-above-the-written-path",
     [{"_tool": "getUser", "id": "u", "_outputPath": "†state.user.profile"},
      {"_tool": "count", "n": "†state.user"}], [], []),
    ("writer-without-output-schema",
     [{"_tool": "noOutput", "_outputPath": "†state.v"}, {"_tool": "count", "n": "†state.v"}],
     [], []),
    ("push-is-an-array",
     [{"_tool": "listTags", "_outputPath": "†state.tags", "_outputMethod": "push"},
      {"_tool": "count", "n": "†state.tags"}], [],
     [(1, "/n", "†state.tags can only be an array (written with push by call 0), but "
                "parameter 'n' of count needs an integer")]),
    ("concat-is-an-array",
     [{"_tool": "noOutput", "_outputPath": "†state.tags", "_outputMethod": "concat"},
      {"_tool": "sendEmail", "to": "†state.tags"}], [],
     [(1, "/to", "†state.tags can only be an array (written with concat by call 0), but "
                 "parameter 'to' of sendEmail needs a string")]),
    ("below-a-push-is-unknown",
     [{"_tool": "listTags", "_outputPath": "†state.tags", "_outputMethod": "push"},
      {"_tool": "count", "n": "†state.tags.0"}], [], []),
    ("context-value", [{"_tool": "count", "n": "†state.name"}],
     [{"type": "state", "name": "Alex"}],
     [(0, "/n", "†state.name can only be a string (the value in the context), but parameter "
                "'n' of count needs an integer")]),
    ("context-and-unknown-writer",
     [{"_tool": "count", "n": "†state.name"}, {"_tool": "noOutput", "_outputPath": "†state.name"}],
     [{"type": "state", "name": "Alex"}], []),
    ("parameter-without-type", [GET_USER, {"_tool": "anything", "v": "†state.user.age"}], [], []),
    ("two-writers-one-fits",
     [GET_USER, {"_tool": "listTags", "_outputPath": "†state.user.age"},
      {"_tool": "count", "n": "†state.user.age"}], [], []),
    ("two-writers-none-fits",
     [GET_USER, {"_tool": "listTags", "_outputPath": "†state.user.age"},
      {"_tool": "flag", "on": "†state.user.age"}], [],
     [(2, "/on", "†state.user.age can only be an integer or a string (the _output schema of "
                 "getUser, call 0), but parameter 'on' of flag needs a boolean")]),
    ("nested-parameter",
     [GET_USER, {"_tool": "options", "opts": {"n": "†state.user.name"}}], [],
     [(1, "/opts/n", "†state.user.name can only be a string (the _output schema of getUser, "
                     "call 0), but parameter 'opts.n' of options needs an integer")]),
]


@pytest.mark.parametrize(("plan", "context", "expected"),
                         [pytest.param(p, c, e, id=i) for i, p, c, e in TYPES])
def test_type_mismatch(plan: list[Any], context: list[Any],
                       expected: list[tuple[int, str, str]]) -> None:
    compiled = compile_plan(plan, tools=TOOLS, context=context)
    assert [(d.call, d.pointer, d.message) for d in compiled.diagnostics
            if d.code == "type-mismatch"] == expected
    # A key the _output schema does not declare is also an unknown-field warning.
    assert all(d.code in ("type-mismatch", "write-race")
               or (d.code == "unknown-field" and not d.is_error) for d in compiled.diagnostics)


def test_no_type_checks_without_tools() -> None:
    plan = [{"_tool": "count", "n": "†state.name"}]
    assert found(plan, context=[{"type": "state", "name": "Alex"}]) == []


# -- instancing -------------------------------------------------------------------------------

INSTANCED_CONTEXT = [
    {"type": "state", "g": 0},
    {"type": "state", "_instance": "①", "a": 1},
    {"type": "input", "_instance": "②", "a": 2},
    {"type": "state", "_instance": "①", "b": 1},
]


def test_instancing_copies_each_call_per_instance() -> None:
    plan = [
        {"_tool": "w", "p": "†state.g", "_outputPath": "†state.b"},
        {"_tool": "r", "p": "†state.b"},
        {"_tool": "x", "_instance": "②", "p": "†state.b"},
    ]
    compiled = compile_plan(plan, context=INSTANCED_CONTEXT, instances=True)
    assert compiled.instanced
    assert [(n.id, n.index, n.instance) for n in compiled.nodes] == [
        (0, 0, "①"), (1, 0, "②"), (2, 1, "①"), (3, 1, "②"), (4, 2, "②")]
    # Each copy reads its own instance's writes (and the global layer).
    assert [(e.writer, e.reader) for e in compiled.edges] == [(0, 2), (1, 3), (1, 4)]
    assert compiled.diagnostics == ()
    assert compiled.order == (0, 1, 2, 3, 4)
    assert [n.label for n in compiled.nodes][:2] == ["call 0 (w) [①]", "call 0 (w) [②]"]


def test_instancing_checks_each_copy_against_its_instance() -> None:
    plan = [{"_tool": "r", "p": "†state.a"}]
    compiled = compile_plan(plan, context=INSTANCED_CONTEXT, instances=True)
    # ② has input.a, not state.a.
    assert [(d.code, d.call, d.instance) for d in compiled.diagnostics] == [
        ("dangling-reference", 0, "②")]


def test_without_instancing_a_call_reads_global_data_only() -> None:
    compiled = compile_plan([{"_tool": "r", "p": "†state.a"}], context=INSTANCED_CONTEXT)
    assert [n.instance for n in compiled.nodes] == [None]
    assert [d.code for d in compiled.diagnostics] == ["dangling-reference"]


def test_no_instances_keeps_only_explicit_instances() -> None:
    plan = [{"_tool": "a", "p": "†state.x"}, {"_tool": "b", "_instance": "①"}]
    compiled = compile_plan(plan, instances=True)
    assert [(n.index, n.instance) for n in compiled.nodes] == [(1, "①")]
    assert [d.code for d in compiled.diagnostics] == ["no-instances"]


def test_cycles_per_instance() -> None:
    plan = [{"_tool": "a", "p": "†state.b", "_outputPath": "†state.a"},
            {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b"}]
    compiled = compile_plan(plan, context=INSTANCED_CONTEXT, instances=True)
    assert [(d.code, d.call, d.calls, d.instance) for d in compiled.diagnostics] == [
        ("cycle", 0, (0, 1), "①"), ("cycle", 0, (0, 1), "②")]


# -- the compiled plan --------------------------------------------------------------------------


def test_compiled_plan_values() -> None:
    compiled = compile_plan([
        {"_tool": "getUser", "id": "†input.id", "_outputPath": "†state.user"},
        {"_tool": "sendEmail", "to": "†state.user.name"},
    ], tools=TOOLS)
    assert compiled.ok and compiled.errors == ()
    assert isinstance(compiled.tools, ToolRegistry)
    assert isinstance(compiled.context, Context)
    assert [thaw(c) for c in compiled.calls][0]["_tool"] == "getUser"
    tool_of = compiled.tool_of(compiled.nodes[1])
    assert tool_of is not None and tool_of.name == "sendEmail"
    node = compiled.nodes[0]
    assert (node.tool, node.output_text, node.method.value, node.scopes) == (
        "getUser", "†state.user", "set", ())
    assert node.label == "call 0 (getUser)"
    assert [d.code for d in compiled.diagnostics] == ["external-reference"]
    with pytest.raises(AttributeError):
        compiled.order = ()  # type: ignore[misc]


def test_without_tools_the_registry_is_none() -> None:
    compiled = compile_plan([{"_tool": "x"}], tools=[])
    assert compiled.tools is None and compiled.tool_of(compiled.nodes[0]) is None


def test_tools_as_a_registry() -> None:
    registry = ToolRegistry.of(TOOLS)
    compiled = compile_plan([{"_tool": "count", "n": "x"}], tools=registry)
    assert compiled.tools is registry
    assert [d.code for d in compiled.diagnostics] == ["param-schema"]


def test_errors_lists_error_diagnostics() -> None:
    compiled = compile_plan([{"_tool": "a", "p": "†state.x"}, {"_tool": "b", "q": "†input.x"}])
    assert not compiled.ok
    assert [d.code for d in compiled.errors] == ["dangling-reference"]


@pytest.mark.parametrize("calls", ["[]", {"plan": []}, 3, None, b"[]"])
def test_a_plan_that_is_not_a_list_raises(calls: Any) -> None:
    with pytest.raises(PlanError, match="a plan is a list of calls"):
        compile_plan(calls)


def test_invalid_tools_raise() -> None:
    with pytest.raises(ToolError):
        compile_plan([], tools=[{"type": "object", "properties": {"_tool": {"const": 3}}}])


def test_an_empty_plan() -> None:
    compiled = compile_plan([])
    assert (compiled.nodes, compiled.edges, compiled.order, compiled.diagnostics) == ((), (), (), ())
    assert compiled.ok


def test_a_tuple_of_calls_is_a_plan() -> None:
    assert compile_plan(({"_tool": "a"},)).ok


def test_to_json_is_plain_json() -> None:
    compiled = compile_plan([WEATHER, {"_tool": "park", "w": "†state.sunny"}])
    data = compiled.to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["edges"] == [{"from": 0, "to": 1, "alternatives": [0],
                              "paths": [{"written": "†state.sunny", "read": "†state.sunny"}]}]
    assert data["nodes"][1]["guards"] == [{"node": 0, "alternative": 0}]
    assert data["order"] == [0, 1] and data["ok"] is True


# -- determinism -----------------------------------------------------------------------------


def test_diagnostics_come_in_call_order_whatever_the_check() -> None:
    plan = [
        {"_tool": "a", "_outputPath": "†state.x"},
        {"_tool": "b", "_outputPath": "†state.x", "p": "†state.zz", "_outputMethod": "bad"},
        {"_tool": "c", "p": "†state.", "q": "†input.q"},
        "not a call",
    ]
    assert found(plan) == [
        ("write-race", "warning", 0, "/_outputPath"),
        ("invalid-output-method", "error", 1, "/_outputMethod"),
        ("dangling-reference", "error", 1, "/p"),
        ("syntax", "error", 2, "/p"),
        ("external-reference", "info", 2, "/q"),
        ("invalid-call", "error", 3, ""),
    ]


def test_compiling_twice_gives_equal_results() -> None:
    plan = [WEATHER,
            {"_tool": "park", "w": "†state.sunny", "_outputPath": "†state.s"},
            {"_tool": "movie", "w": "†state.rainy", "_outputPath": "†state.s"},
            {"_tool": "x", "p": "†state.s && †state.nope", "_scopes": ["state"]},
            {"_tool": "y", "_outputPath": "†state.s"}]
    first, second = compile_plan(plan), compile_plan(plan)
    assert first.diagnostics == second.diagnostics
    assert first.nodes == second.nodes and first.edges == second.edges
    assert first.order == second.order
    assert json.dumps(first.to_json()) == json.dumps(second.to_json())


def test_the_order_of_object_keys_does_not_matter() -> None:
    call = {"_tool": "a", "p": "†state.p", "q": "†state.q", "_outputPath": "†state.x"}
    reordered = dict(reversed(list(call.items())))
    a = compile_plan([call, {"_tool": "b", "_outputPath": "†state.x"}])
    b = compile_plan([reordered, {"_tool": "b", "_outputPath": "†state.x"}])
    assert a.diagnostics == b.diagnostics
    assert [d.pointer for d in a.diagnostics if d.code == "dangling-reference"] == ["/p", "/q"]


# -- the plan vectors -----------------------------------------------------------------------


def test_plan_vectors_cover_every_conformance_code() -> None:
    folder = pathlib.Path(__file__).resolve().parent / "conformance"
    vectors = [v for path in sorted(folder.glob("plans-*.json"))
               for v in json.loads(path.read_text(encoding="utf-8"))]
    assert len(vectors) >= 30
    listed = {m.get("code") for v in vectors for m in v["expect"].get("diagnostics", [])}
    assert set(list(CODES)[:14]) <= listed
    # Warnings and infos that must not be errors, matchers that must match nothing, and
    # vectors that check one error among several.
    assert any(m.get("severity") == "warning" for v in vectors
               for m in v["expect"].get("diagnostics", []))
    assert any(v["expect"].get("not_reported") for v in vectors)
    assert any(v["expect"].get("only_listed_errors") is False for v in vectors)
    for vector in vectors:
        assert check_vector(vector) == [], vector["id"]


def test_type_mismatch_uses_the_input_schema() -> None:
    """SEMANTICS §6: an input schema is a known producer type, like an _output schema."""
    tools = [{"type": "object", "properties": {"_tool": {"const": "pay"},
                                               "amount": {"type": "number"}}}]
    context = [{"type": "input", "schema": {"type": "object",
                                            "properties": {"amount": {"type": "string"}}}}]
    plan = compile_plan([{"_tool": "pay", "amount": "†input.amount"}], tools=tools, context=context)
    [mismatch] = [d for d in plan.diagnostics if d.code == "type-mismatch"]
    assert (mismatch.call, mismatch.pointer) == (0, "/amount")
    assert "the input message's schema" in mismatch.message
    assert mismatch.hint is not None and "declare the input" in mismatch.hint
    fitting = [{"type": "input", "schema": {"type": "object",
                                            "properties": {"amount": {"type": "integer"}}}}]
    assert compile_plan([{"_tool": "pay", "amount": "†input.amount"}], tools=tools,
                        context=fitting).ok

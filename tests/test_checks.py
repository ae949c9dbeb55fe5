"""compiler/checks, compiler/codes.py, compiler/plangraph.py: the table of checks, the table
of codes, and the structured details each check's diagnostics carry.

The details are tables of (plan, the details expected); the module-size figures of the
compiler are checked here too (one concept per module, short functions).
"""

from __future__ import annotations

import ast
import json
import pathlib
from typing import Any

import pytest

from obelisk.compiler import compile_plan
from obelisk.compiler.checks import CHECKS
from obelisk.compiler.codes import CODES, DiagnosticCode, Severity, code_of
from obelisk.compiler.diagnostics import (
    CycleDetails,
    CycleStep,
    Diagnostic,
    ReferenceDetails,
    ScopeRaceDetails,
    TypeMismatchDetails,
    UnreachableDetails,
    WriteRaceDetails,
    call_label,
)
from obelisk.compiler.plangraph import Limits, build_graph
from obelisk.compiler.reading import read_call
from obelisk.core.context import Context

COMPILER = pathlib.Path(__file__).resolve().parent.parent / "compiler"


# -- the codes table ------------------------------------------------------------------------


@pytest.mark.parametrize("code", list(DiagnosticCode))
def test_every_code_has_a_severity_and_one_line_of_help(code: DiagnosticCode) -> None:
    assert isinstance(code.severity, Severity)
    assert code.help and "\n" not in code.help and code.help.endswith(".")
    assert CODES[code.value] is code.severity
    assert code_of(code.value) is code


def test_a_code_is_its_name_wherever_text_is_made() -> None:
    code = DiagnosticCode.WRITE_RACE
    assert code == "write-race" and str(code) == "write-race" and f"[{code}]" == "[write-race]"
    assert json.dumps({"code": code}) == '{"code": "write-race"}'
    assert {"write-race": 1}[code] == 1
    assert Diagnostic("write-race", "m").code is code


def test_an_unknown_code_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        code_of("nope")


# -- the checks table -----------------------------------------------------------------------


def test_every_check_is_a_function_of_the_graph_alone() -> None:
    plan = [{"_tool": "a", "_outputPath": "†state.x"}, {"_tool": "b", "p": "†state.y"}]
    readings = [read_call(i, call, None) for i, call in enumerate(plan)]
    expanded = [(r.info, r.info.instance) for r in readings if r.info is not None]
    graph = build_graph(expanded, Context.of(()), None, Limits(10, 10, 10, 10))
    for check in CHECKS:
        first, second = list(check(graph)), list(check(graph))
        assert first == second  # no state kept between runs
    found = [d.code for check in CHECKS for d in check(graph)]
    assert found == ["dangling-reference"]


def test_the_call_label_has_one_format() -> None:
    assert call_label(3, "pay", None) == "call 3 (pay)"
    assert call_label(3, None, "①") == "call 3 [①]"
    assert call_label(3, "pay", "①", "instance ") == "call 3 (pay) [instance ①]"
    node = compile_plan([{"_tool": "a", "_instance": "i"}]).nodes[0]
    assert node.label == "call 0 (a) [i]"


# -- structured details -----------------------------------------------------------------------

TOOLS = [
    {"type": "object", "properties": {"_tool": {"const": "get"},
                                      "_output": {"type": "object", "properties": {
                                          "age": {"type": "integer"}}}}},
    {"type": "object", "properties": {"_tool": {"const": "mail"}, "to": {"type": "string"}}},
]

#: (plan, options, code, the details of the one diagnostic of that code)
DETAILS: list[tuple[str, list[Any], dict[str, Any], str, Any]] = [
    ("cycle", [{"_tool": "a", "p": "†state.b", "_outputPath": "†state.a"},
               {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b"}], {}, "cycle",
     CycleDetails((0, 1), (CycleStep(0, 1, "†state.a", "†state.a"),
                           CycleStep(1, 0, "†state.b", "†state.b")))),
    ("write-race", [{"_tool": "a", "_outputPath": "†state.r"},
                    {"_tool": "b", "_outputPath": "†state.r.x"}], {}, "write-race",
     WriteRaceDetails(0, 1, "†state.r", "†state.r.x")),
    ("scope-race", [{"_tool": "log", "_scopes": ["state"]},
                    {"_tool": "f", "_outputPath": "†state.u"}], {}, "scope-race",
     ScopeRaceDetails(0, ("state",), ((1, "†state.u"),))),
    ("unreachable", [{"_tool": "c", "_outputPath": "†state.y || †state.n"},
                     {"_tool": "both", "a": "†state.y", "b": "†state.n"}], {}, "unreachable",
     UnreachableDetails(1, 0, (0, 1))),
    ("dangling", [{"_tool": "a", "p": "†state.nope"}], {}, "dangling-reference",
     ReferenceDetails(0, "†state.nope")),
    ("external", [{"_tool": "a", "p": "†input.city"}], {}, "external-reference",
     ReferenceDetails(0, "†input.city")),
    ("type-mismatch", [{"_tool": "get", "_outputPath": "†state.user"},
                       {"_tool": "mail", "to": "†state.user.age"}], {"tools": TOOLS},
     "type-mismatch",
     TypeMismatchDetails(1, ("integer",), ("string",), "the _output schema of get, call 0")),
]


@pytest.mark.parametrize(("plan", "options", "code", "details"),
                         [pytest.param(p, o, c, d, id=i) for i, p, o, c, d in DETAILS])
def test_details(plan: list[Any], options: dict[str, Any], code: str, details: Any) -> None:
    (diagnostic,) = [d for d in compile_plan(plan, **options).diagnostics if d.code == code]
    assert diagnostic.details == details


def test_details_stay_out_of_the_json_and_of_equality() -> None:
    plain = Diagnostic("cycle", "m", call=0)
    detailed = Diagnostic("cycle", "m", call=0, details=CycleDetails((0,), ()))
    assert plain == detailed and plain.to_json() == detailed.to_json()
    assert "details" not in detailed.to_json()


# -- the compiler's figures: one concept per module, short functions --------------------------

#: Functions allowed past 60 lines, with why (none today).
LONG_FUNCTIONS: dict[str, str] = {}


@pytest.mark.parametrize("path", sorted(COMPILER.rglob("*.py")), ids=lambda p: p.name)
def test_compiler_modules_and_functions_are_short(path: pathlib.Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") < 400, f"{path.name} has grown past 400 lines: split it by concept"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            name = f"{path.name}:{node.name}"
            assert length <= 60 or name in LONG_FUNCTIONS, f"{name} is {length} lines long"

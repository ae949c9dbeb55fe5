"""obelisk/cli.py: ``validate`` (text, JSON, SARIF), ``graph`` (Mermaid, DOT, JSON) and
``schema``, with plan files (obelisk/planfile.py) and bad input of every kind.

Exit codes: validate 0 (no errors; warnings are fine), 1 (errors), 2 (unreadable, not
JSON, a plan that is not a list, a malformed context message, invalid tool definitions);
graph 0 whenever the file is readable. No input ever gives a traceback.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
from typing import Any

import pytest

from obelisk import __version__
from obelisk.cli import main
from obelisk.compiler.diagnostics import CODES

TOOL_PAY = {
    "type": "object",
    "properties": {
        "_tool": {"type": "string", "const": "processPayment"},
        "amount": {"type": "number", "minimum": 0},
        "_output": {"type": "object", "properties": {"id": {"type": "string"}}},
    },
    "required": ["amount"],
}
TOOL_CONFIRM = {
    "type": "object",
    "properties": {"_tool": {"type": "string", "const": "confirmOrder"},
                   "receipt": {"type": "object"}},
}

PAYMENT = {
    "context": [{"type": "input", "input": {"amount": 50}}],
    "plan": [
        {"_tool": "processPayment", "amount": "†input.amount",
         "_outputPath": "†state.receipt || †state.error"},
        {"_tool": "confirmOrder", "receipt": "†state.reciept"},
        {"_tool": "notify", "_outputPath": "†state.note"},
        {"_tool": "notify", "_outputPath": "†state.note"},
    ],
}

WEATHER = {
    "context": [{"type": "input", "input": {"city": "Paris"},
                 "schema": {"type": "object", "properties": {"date": {"type": "string"}}}}],
    "plan": [
        {"_tool": "weatherCheck", "location": "†input.city",
         "_outputPath": "†state.sunny || †state.rainy"},
        {"_tool": "findPark", "weather": "†state.sunny", "_outputPath": "†state.suggestion"},
        {"_tool": "findMovie", "weather": "†state.rainy", "_outputPath": "†state.suggestion"},
        {"_tool": "presentSuggestion", "suggestion": "†state.suggestion",
         "date": "†input.date"},
    ],
}


#: The info a plan file without tools gets: last, with no place in the file.
NO_TOOLS = {"code": "no-tools", "severity": "info",
            "message": "no tools given: tool names and parameters were not checked",
            "call": None, "pointer": "",
            "hint": 'give --tools FILE or a "tools" list in the plan file'}
NO_TOOLS_TEXT = ("info[no-tools]: no tools given: tool names and parameters were not checked\n"
                 '    hint: give --tools FILE or a "tools" list in the plan file\n')


def plan_diagnostics(out: str) -> list[Any]:
    """The diagnostics ``validate --format json`` printed for one plan file without tools:
    the plan's own, after checking that the no-tools info comes last."""
    *found, note = json.loads(out)
    assert note == {**NO_TOOLS, "file": note["file"]}
    return found


def run(*argv: str, stdin: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "internal error" not in err.getvalue()
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: pathlib.Path, content: Any, name: str = "plan.json") -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return str(path)


# -- validate: text -------------------------------------------------------------------------


def test_validate_text(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, PAYMENT)
    code, out, err = run("validate", path)
    assert (code, err) == (1, "")
    assert out == (
        f"{path}:1:211: error[dangling-reference]: †state.reciept is "
        "read here, but no call writes it and the context does not provide it\n"
        '    1 | …pt || †state.error"}, {"_tool": "confirmOrder", "receipt": "†state.reciept"}, '
        '{"_tool": "notify", "_outputPath": "†state…\n'
        "      |                                                              ^^^^^^^^^^^^^^\n"
        "    in call 1 (confirmOrder) at /receipt\n"
        "    hint: did you mean †state.receipt (written by call 0 (processPayment))?\n"
        f"{path}:1:265: warning[write-race]: call 2 (notify) writes "
        "†state.note and call 3 (notify) writes †state.note; neither waits for the other, so "
        "the result depends on which finishes last\n"
        '    1 | …pt": "†state.reciept"}, {"_tool": "notify", "_outputPath": "†state.note"}, '
        '{"_tool": "notify", "_outputPath": "†state.no…\n'
        "      |                                                              ^^^^^^^^^^^\n"
        "    in call 2 (notify) at /_outputPath\n"
        "    calls: 2, 3\n"
        "    hint: make one call read the other's result, write to different paths, or put "
        "them on different alternatives of one branching call\n"
        f"{path}: {NO_TOOLS_TEXT}"
        f"{path}: 4 calls, 0 edges: 1 error, 1 warning\n")


def test_validate_clean_plan_exits_0(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"plan": WEATHER["plan"][:3], "context": WEATHER["context"]})
    assert run("validate", path) == (
        0, f"{path}: {NO_TOOLS_TEXT}{path}: 3 calls, 2 edges: no problems\n", "")


def test_validate_warnings_and_infos_exit_0(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"plan": [{"_tool": "a", "p": "†input.x", "_outputPath": "†state.x"},
                                     {"_tool": "b", "_outputPath": "†state.x"}]})
    code, out, _ = run("validate", path)
    assert code == 0
    assert out.splitlines()[-1] == f"{path}: 2 calls, 0 edges: 1 warning, 1 info"
    assert "warning[write-race]" in out and "info[external-reference]" in out


def test_validate_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run("validate", "-", stdin=json.dumps(PAYMENT), monkeypatch=monkeypatch)
    assert code == 1
    assert out.startswith("standard input:1:226: error[dangling-reference]")
    assert "    in call 1 (confirmOrder) at /receipt\n" in out


# -- validate: JSON ---------------------------------------------------------------------------


def test_validate_json(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, PAYMENT)
    code, out, err = run("validate", "--format", "json", path)
    assert (code, err) == (1, "")
    assert plan_diagnostics(out) == [
        {"code": "dangling-reference", "severity": "error",
         "message": "†state.reciept is read here, but no call writes it and the context does "
                    "not provide it",
         "call": 1, "pointer": "/receipt", "tool": "confirmOrder",
         "span": {"start": 0, "end": 14, "column": 1}, "expression": "†state.reciept",
         "hint": "did you mean †state.receipt (written by call 0 (processPayment))?",
         "file": path, "line": 1, "column": 211, "endColumn": 225},
        {"code": "write-race", "severity": "warning",
         "message": "call 2 (notify) writes †state.note and call 3 (notify) writes "
                    "†state.note; neither waits for the other, so the result depends on "
                    "which finishes last",
         "call": 2, "pointer": "/_outputPath", "calls": [2, 3], "tool": "notify",
         "span": {"start": 0, "end": 11, "column": 1}, "expression": "†state.note",
         "hint": "make one call read the other's result, write to different paths, or put "
                 "them on different alternatives of one branching call",
         "file": path, "line": 1, "column": 265, "endColumn": 276},
    ]
    assert "†" in out  # UTF-8 kept, not \u escapes


def test_validate_json_of_a_clean_plan_is_an_empty_list(tmp_path: pathlib.Path) -> None:
    # Clean: with its tool given, so nothing was left unchecked.
    tool = {"type": "object", "properties": {"_tool": {"const": "a"}}}
    assert run("validate", "--format", "json", write(
        tmp_path, {"plan": [{"_tool": "a"}], "tools": [tool]})) == (0, "[]\n", "")


def test_validate_json_and_sarif_say_when_no_tools_were_given(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, [{"_tool": "a"}])
    code, out, err = run("validate", "--format", "json", path)
    assert (code, err) == (0, "") and json.loads(out) == [{**NO_TOOLS, "file": path}]
    code, out, _ = run("validate", "--format", "sarif", path)
    (result,) = json.loads(out)["runs"][0]["results"]
    assert (code, result["ruleId"], result["level"]) == (0, "no-tools", "note")
    assert result["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": path}}}]
    assert result["message"]["text"] == (f"{NO_TOOLS['message']} (hint: {NO_TOOLS['hint']})")
    # An info: hidden at --min-severity warning, and never a failure.
    assert run("validate", "--format", "json", "--min-severity", "warning", path) == (
        0, "[]\n", "")
    assert run("validate", "--fail-on", "warning", path)[0] == 0


# -- validate: SARIF ---------------------------------------------------------------------------


def test_validate_sarif(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, PAYMENT, "my plan.json")
    code, out, err = run("validate", "--format", "sarif", path)
    assert (code, err) == (1, "")
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (sarif_run,) = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("obelisk", __version__)
    rules = driver["rules"]
    assert [r["id"] for r in rules] == list(CODES)
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for rule in rules:
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] == levels[CODES[rule["id"]].value]
    uri = path.replace(" ", "%20")
    assert sarif_run["artifacts"] == [{"location": {"uri": uri}}]
    dangling, race, note = sarif_run["results"]
    assert (note["ruleId"], note["level"]) == ("no-tools", "note")
    assert (dangling["ruleId"], dangling["level"]) == ("dangling-reference", "error")
    assert (race["ruleId"], race["level"]) == ("write-race", "warning")
    for result in (dangling, race):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        (location,) = result["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == uri
    assert dangling["message"]["text"] == (
        "†state.reciept is read here, but no call writes it and the context does not provide "
        "it (hint: did you mean †state.receipt (written by call 0 (processPayment))?)")
    assert dangling["locations"][0]["logicalLocations"] == [
        {"name": "call 1", "kind": "object", "fullyQualifiedName": "/plan/1/receipt"}]
    assert dangling["properties"] == {"expression": "†state.reciept", "column": 1,
                                      "endColumn": 15}
    assert "relatedLocations" not in dangling
    assert race["relatedLocations"] == [
        {"id": 0, "logicalLocations": [{"name": "call 2", "fullyQualifiedName": "/plan/2"}]},
        {"id": 1, "logicalLocations": [{"name": "call 3", "fullyQualifiedName": "/plan/3"}]}]


def test_sarif_levels_and_plan_wide_results(tmp_path: pathlib.Path) -> None:
    plan = {"plan": [{"_tool": "a", "p": "†input.x"}], "instances": True}
    code, out, _ = run("validate", "--format", "sarif", write(tmp_path, plan))
    assert code == 0
    results = json.loads(out)["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("no-instances", "note"),
                                                            ("no-tools", "note")]
    # A plan-wide result has the file as its only location.
    assert results[0]["locations"] == [
        {"physicalLocation": {"artifactLocation": {"uri": results[0]["locations"][0][
            "physicalLocation"]["artifactLocation"]["uri"]}}}]


def test_sarif_names_the_instance(tmp_path: pathlib.Path) -> None:
    plan = {"plan": [{"_tool": "a", "p": "†state.nope"}], "instances": True,
            "context": [{"type": "state", "_instance": "①", "a": 1}]}
    _, out, _ = run("validate", "--format", "sarif", write(tmp_path, plan))
    result, note = json.loads(out)["runs"][0]["results"]
    assert note["ruleId"] == "no-tools"
    assert result["locations"][0]["logicalLocations"][0]["name"] == "call 0 [①]"


# -- plan files ---------------------------------------------------------------------------------


def test_a_bare_array_is_a_plan(tmp_path: pathlib.Path) -> None:
    code, out, _ = run("validate", write(tmp_path, [{"_tool": "a", "p": "†state.x"}]))
    assert code == 1 and "error[dangling-reference]" in out


def test_the_plan_is_the_last_plan_message_of_the_context(tmp_path: pathlib.Path) -> None:
    data = {"context": [
        {"type": "plan", "plan": [{"_tool": "old", "p": "†state.x"}]},
        {"type": "tool", "tool": TOOL_PAY},
        {"type": "plan", "plan": [{"_tool": "processPayment", "amount": -1}]},
    ]}
    code, out, _ = run("validate", write(tmp_path, data))
    assert code == 1
    assert "error[param-schema]" in out and "in call 0 (processPayment) at /amount" in out
    assert "old" not in out


def test_the_plan_field_wins_over_plan_messages(tmp_path: pathlib.Path) -> None:
    data = {"plan": [{"_tool": "a"}],
            "context": [{"type": "plan", "plan": [{"_tool": "b", "p": "†state.x"}]}]}
    assert run("validate", write(tmp_path, data))[0] == 0


def test_tools_are_the_tools_field_plus_tool_messages(tmp_path: pathlib.Path) -> None:
    data = {"tools": [TOOL_PAY], "context": [{"type": "tool", "tool": TOOL_CONFIRM}],
            "plan": [{"_tool": "processPayment", "amount": 5, "_outputPath": "†state.r"},
                     {"_tool": "confirmOrder", "receipt": "†state.r"},
                     {"_tool": "confirmOrdr"}]}
    code, out, _ = run("validate", write(tmp_path, data))
    assert code == 1
    assert out.count("error[") == 1
    assert "error[unknown-tool]: no tool named 'confirmOrdr'" in out
    assert "in call 2 (confirmOrdr) at /_tool" in out
    assert "hint: did you mean 'confirmOrder'?" in out


def test_instances_field_maps_the_plan(tmp_path: pathlib.Path) -> None:
    data = {"instances": True, "plan": [{"_tool": "a", "p": "†state.x"}],
            "context": [{"type": "state", "_instance": "①", "x": 1},
                        {"type": "state", "_instance": "②", "y": 1}]}
    code, out, _ = run("validate", write(tmp_path, data))
    assert code == 1
    assert "error[dangling-reference]" in out and "in call 0 (a) [instance ②] at /p" in out
    assert "[instance ①]" not in out
    # One call, copied for two instances: two nodes.
    assert out.splitlines()[-1].endswith(": 1 call, 2 nodes, 0 edges: 1 error")


def test_summary_counts_calls_and_nodes(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, [{"_tool": "a"}, "not a call"])
    code, out, _ = run("validate", path)
    assert code == 1
    assert out.splitlines()[-1] == f"{path}: 2 calls, 1 node, 0 edges: 1 error"


# -- graph -----------------------------------------------------------------------------------

MERMAID = """flowchart LR
  n0["0: weatherCheck"]
  n1["1: findPark"]
  n2["2: findMovie"]
  n3["3: presentSuggestion"]
  k0(["†input"])
  k0 --o|"†input.city"| n0
  k0 --o|"†input.date"| n3
  n0 -.->|"alt 1: †state.sunny"| n1
  n0 -.->|"alt 2: †state.rainy"| n2
  n1 -->|"†state.suggestion"| n3
  n2 -->|"†state.suggestion"| n3
  subgraph legend [legend]
    direction LR
    L0["N: tool, a call"] -->|"a path one call writes and the other reads"| L1["N: tool"]
    L2["N: tool"] -.->|"alt k: one alternative of ||, exclusive"| L3["N: tool"]
    L8(["†kind: read from the context or inputs"])
  end
"""

DOT = """digraph plan {
  rankdir=LR;
  node [shape=box, fontname="Helvetica"];
  edge [fontname="Helvetica", fontsize=10];
  n0 [label="0: weatherCheck"];
  n1 [label="1: findPark"];
  n2 [label="2: findMovie"];
  n3 [label="3: presentSuggestion"];
  k0 [label="†input", shape=ellipse, style=dashed];
  k0 -> n0 [label="†input.city", style=dotted, arrowhead=odot];
  k0 -> n3 [label="†input.date", style=dotted, arrowhead=odot];
  n0 -> n1 [label="alt 1: †state.sunny", style=dashed];
  n0 -> n2 [label="alt 2: †state.rainy", style=dashed];
  n1 -> n3 [label="†state.suggestion"];
  n2 -> n3 [label="†state.suggestion"];
  subgraph cluster_legend {
    label="legend"; fontname="Helvetica"; style=dashed;
    L0 [label="N: tool, a call"]; L1 [label="N: tool"];
    L0 -> L1 [label="a path one call writes and the other reads"];
    L2 [label="N: tool"]; L3 [label="N: tool"];
    L2 -> L3 [label="alt k: one alternative of ||, exclusive", style=dashed];
    L8 [label="†kind: read from the context or inputs", shape=ellipse, style=dashed];
  }
}
"""


def no_tools(path: str) -> str:
    """What a command given no tools says on stderr (the graph on stdout stays clean)."""
    return (f"{path}: info[no-tools]: no tools given: tool names and parameters were not "
            f'checked\n    hint: give --tools FILE or a "tools" list in the plan file\n')


def test_graph_mermaid_is_the_default(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, WEATHER)
    assert run("graph", path) == (0, MERMAID, no_tools(path))
    assert run("graph", "--format", "mermaid", path) == (0, MERMAID, no_tools(path))


def test_graph_dot(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, WEATHER)
    assert run("graph", "--format", "dot", path) == (0, DOT, no_tools(path))


def test_graph_no_legend(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, WEATHER)
    assert run("graph", "--no-legend", path) == (
        0, MERMAID.split("  subgraph legend")[0], no_tools(path))
    assert run("graph", "--format", "dot", "--no-legend", path) == (
        0, DOT.split("  subgraph cluster_legend")[0] + "}\n", no_tools(path))


def test_graph_svg_is_drawn_by_graphviz(tmp_path: pathlib.Path) -> None:
    _require_dot()
    path = write(tmp_path, WEATHER)
    code, svg, err = run("graph", "--format", "svg", path)
    assert (code, err) == (0, no_tools(path))
    assert svg.startswith("<?xml") and "<svg" in svg and svg.rstrip().endswith("</svg>")
    assert "0: weatherCheck" in svg and "alt 1: †state.sunny" in svg and "legend" in svg
    code, svg, _ = run("graph", "--format", "svg", "--no-legend", path)
    assert code == 0 and "legend" not in svg and "0: weatherCheck" in svg


def test_graph_svg_without_graphviz_says_what_to_install(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on it
    path = write(tmp_path, WEATHER)
    code, out, err = run("graph", "--format", "svg", path)
    assert (code, out) == (2, "")
    assert err.endswith("error: --format svg draws the graph with Graphviz's dot program, "
                        "which is not on PATH: install Graphviz (Debian and Ubuntu: apt "
                        "install graphviz; macOS: brew install graphviz), or print --format "
                        "dot or --format mermaid instead\n")


def test_graph_json(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, WEATHER)
    code, out, err = run("graph", "--format", "json", path)
    assert (code, err) == (0, no_tools(path))
    graph = json.loads(out)
    assert graph["ok"] is True
    assert [(e["from"], e["to"], e["alternatives"]) for e in graph["edges"]] == [
        (0, 1, [0]), (0, 2, [1]), (1, 3, [0]), (2, 3, [0])]
    assert graph["sources"] == [{"reference": "†input.city", "readers": [0]},
                                {"reference": "†input.date", "readers": [3]}]
    assert graph["order"] == [0, 1, 2, 3]
    assert [n["guards"] for n in graph["nodes"]] == [
        [], [{"node": 0, "alternative": 0}], [{"node": 0, "alternative": 1}], []]
    assert graph["nodes"][0]["alternatives"] == [["†state.sunny"], ["†state.rainy"]]
    assert [d["code"] for d in graph["diagnostics"]] == ["external-reference"]


def test_graph_of_an_invalid_plan_exits_0_with_a_note(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, PAYMENT)
    code, out, err = run("graph", path)
    assert code == 0
    assert out.startswith("flowchart LR\n")
    assert err == no_tools(path) + (
        f"note: the plan has errors (1 error, 1 warning); see obelisk validate {path}\n")


def test_graph_escapes_quotes_in_labels(tmp_path: pathlib.Path) -> None:
    plan = [{"_tool": 'say "hi"', "_outputPath": '†state."a \\"b\\""'},
            {"_tool": "r", "p": '†state."a \\"b\\""'}]
    path = write(tmp_path, plan)
    _, mermaid, _ = run("graph", path)
    assert 'n0["0: say #quot;hi#quot;"]' in mermaid
    _, dot, _ = run("graph", "--format", "dot", path)
    assert 'n0 [label="0: say \\"hi\\""];' in dot
    assert r'n0 -> n1 [label="†state.\"a \\\"b\\\"\""];' in dot


def test_mermaid_labels_keep_to_one_line_and_no_stray_entities(tmp_path: pathlib.Path) -> None:
    plan = [{"_tool": "a#quot;\nb", "_outputPath": '†state."x\ny"'},
            {"_tool": "r", "p": '†state."x\ny"'}]
    _, mermaid, _ = run("graph", write(tmp_path, plan))
    assert mermaid.split("  subgraph legend")[0] == ("flowchart LR\n"
                                                     '  n0["0: a#35;quot; b"]\n'
                                                     '  n1["1: r"]\n'
                                                     '  n0 -->|"†state.#quot;x y#quot;"| n1\n')


def _require_dot() -> str:
    dot = shutil.which("dot")
    if dot is None:
        if os.environ.get("OBELISK_REQUIRE_DOT"):
            pytest.fail("OBELISK_REQUIRE_DOT is set but Graphviz's dot is not installed")
        pytest.skip("Graphviz's dot is not installed (apt-get install graphviz)")
    return dot


@pytest.mark.parametrize("plan", [WEATHER, PAYMENT, {"plan": [
    {"_tool": 'q"uote\\', "p": '†state."we\\"ird" && †state.'},
    {"_tool": "x", "_outputPath": '†state."we\\"ird"'}, "not a call"]}, {"plan": [
    {"_tool": "a#\nb", "_outputPath": '†state."x\ny"'}, {"_tool": "r", "p": '†state."x\ny"'}]}])
def test_dot_renders_with_graphviz(tmp_path: pathlib.Path, plan: Any) -> None:
    dot = _require_dot()
    _, text, _ = run("graph", "--format", "dot", write(tmp_path, plan))
    result = subprocess.run([dot, "-Tsvg"], input=text.encode("utf-8"), capture_output=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    assert b"<svg" in result.stdout


# -- schema ------------------------------------------------------------------------------------


def test_schema_composes_the_tools(tmp_path: pathlib.Path) -> None:
    data = {"tools": [TOOL_PAY], "context": [{"type": "tool", "tool": TOOL_CONFIRM}],
            "plan": []}
    code, out, err = run("schema", write(tmp_path, data))
    assert (code, err) == (0, "")
    schema = json.loads(out)
    assert schema["required"] == ["calls"]
    variants = schema["properties"]["calls"]["items"]["anyOf"]
    assert [v["properties"]["_tool"]["const"] for v in variants] == [
        "processPayment", "confirmOrder"]


def test_schema_without_tools_allows_no_calls(tmp_path: pathlib.Path) -> None:
    code, out, _ = run("schema", write(tmp_path, [{"_tool": "a"}]))
    assert code == 0
    assert json.loads(out)["properties"]["calls"] == {"type": "array", "maxItems": 0}


def test_schema_with_invalid_tools_exits_2(tmp_path: pathlib.Path) -> None:
    data = {"plan": [], "tools": [{"type": "object", "properties": {"_tool": {"const": 1}}}]}
    code, out, err = run("schema", write(tmp_path, data))
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {tmp_path / 'plan.json'}: tool 0")


# -- bad input ----------------------------------------------------------------------------------

# (file content, exit code of validate, what stderr says)
BAD_INPUT: list[tuple[str, Any, int, str]] = [
    ("plan-not-a-list", {"plan": {"_tool": "a"}}, 2,
     "the plan must be an array of calls, got dict"),
    ("plan-message-not-a-list", {"context": [{"type": "plan", "plan": "x"}]}, 2,
     "the plan must be an array of calls, got str"),
    ("no-plan", {"context": []}, 2, 'no plan: give a "plan" field'),
    ("a-json-string", '"just text"', 2, "a plan file is a JSON object (or an array of calls)"),
    ("unknown-field", {"plan": [], "expect": {}}, 2, "unknown field(s) 'expect'"),
    ("context-not-a-list", {"plan": [], "context": {}}, 2,
     '"context" must be an array of messages'),
    ("tools-not-a-list", {"plan": [], "tools": {}}, 2, '"tools" must be an array'),
    ("instances-not-a-bool", {"plan": [], "instances": "yes"}, 2,
     '"instances" must be true or false'),
    ("malformed-context-message", {"plan": [], "context": [{"type": "state", "state": 1,
                                                            "x": 2}]}, 2, "context"),
    ("context-message-not-an-object", {"plan": [], "context": [3]}, 2, "context"),
    ("tool-message-without-tool", {"plan": [], "context": [{"type": "tool"}]}, 2,
     'context message 0 has type "tool" but no "tool"'),
    ("tools-not-schemas", {"plan": [], "tools": [{"type": "object", "properties": {
        "_tool": {"const": "t"}, "a": {"type": "nope"}}}]}, 2,
     "not a valid JSON Schema (Draft 2020-12)"),
    ("tool-without-name", {"plan": [], "tools": [{"type": "object"}]}, 2,
     "the tool has no name"),
    ("not-json", "plan: [1, 2]", 2, "is not valid JSON: Expecting value at line 1, column 1"),
    ("truncated-json", '{"plan": [{"_tool": "a", "p": "†sta', 2,
     "is not valid JSON: Unterminated string"),
    ("truncated-after-comma", '{"plan": [{"_tool": "a"},', 2, "is not valid JSON"),
    ("empty-file", "", 2, "is not valid JSON: Expecting value"),
    ("nan", '{"plan": [{"_tool": "a", "n": NaN}]}', 2, "NaN is not a JSON number"),
    ("not-utf8", b'{"plan": [{"_tool": "\xff"}]}', 2, "is not UTF-8 text"),
    ("deeply-nested-json", "[" * 100_000 + "]" * 100_000, 2, "nested too deeply to read as JSON"),
    ("deep-object-json", '{"a":' * 50_000 + "1" + "}" * 50_000, 2, "nested too deeply"),
]


@pytest.mark.parametrize(("content", "code", "message"),
                         [pytest.param(c, e, m, id=i) for i, c, e, m in BAD_INPUT])
@pytest.mark.parametrize("command", ["validate", "graph", "schema"])
def test_bad_input(tmp_path: pathlib.Path, command: str, content: Any, code: int,
                   message: str) -> None:
    path = write(tmp_path, content)
    got, out, err = run(command, path)
    if command == "schema" and message == "context":
        # schema reads the plan file the same way, but composes the tools without
        # compiling anything, so a malformed context message does not concern it.
        assert (got, err) == (0, "")
        return
    assert (got, out) == (code, "")
    assert err.startswith("error: ")
    assert message in err
    assert err.count("\n") < 30  # a clear message, not a dump


def test_limit_cases_have_the_lengths_they_say() -> None:
    lengths = {name: len(expression) for name, expression, _ in LIMITS}
    assert (lengths["4096-characters"], lengths["4097-characters"]) == (4096, 4097)


def test_validate_a_missing_file_exits_2(tmp_path: pathlib.Path) -> None:
    code, out, err = run("validate", str(tmp_path / "nope.json"))
    assert (code, out) == (2, "")
    assert err.startswith("error: cannot read ") and "No such file" in err


def test_validate_a_directory_exits_2(tmp_path: pathlib.Path) -> None:
    code, _, err = run("validate", str(tmp_path))
    assert code == 2 and err.startswith("error: cannot read ")


def test_truncated_json_shows_where(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, '{"plan": [\n  {"_tool": "a",\n   "p": 1,,}\n]}')
    code, _, err = run("validate", path)
    assert code == 2
    assert err == (f"error: {path} is not valid JSON: Expecting property name enclosed in "
                   "double quotes at line 3, column 11\n"
                   '     "p": 1,,}\n'
                   "            ^\n")


# (plan, compile errors it must report): the plan is read; its calls are wrong.
BAD_CALLS: list[tuple[str, list[Any], list[tuple[str, int, str]]]] = [
    ("call-not-an-object", [{"_tool": "a"}, 1, "x", None, [], True],
     [("invalid-call", i, "") for i in range(1, 6)]),
    ("tool-not-a-string", [{"_tool": {"name": "a"}}], [("unknown-tool", 0, "/_tool")]),
    ("output-path-not-a-string", [{"_tool": "a", "_outputPath": 1}],
     [("syntax", 0, "/_outputPath")]),
]


@pytest.mark.parametrize(("plan", "expected"),
                         [pytest.param(p, e, id=i) for i, p, e in BAD_CALLS])
def test_bad_calls_are_diagnostics(tmp_path: pathlib.Path, plan: list[Any],
                                   expected: list[tuple[str, int, str]]) -> None:
    path = write(tmp_path, plan)
    code, out, err = run("validate", "--format", "json", path)
    assert (code, err) == (1, "")
    assert [(d["code"], d["call"], d["pointer"]) for d in plan_diagnostics(out)] == expected
    code, out, err = run("graph", path)
    assert code == 0 and out.startswith("flowchart LR")
    assert err.startswith(no_tools(path) + "note: ")


# -- limits: long and deep references, deep values, big plans ----------------------------------


def _nested(depth: int) -> str:
    return "†state.x || " + "(" * depth + "†state.y" + ")" * depth


LIMITS: list[tuple[str, str, list[str]]] = [
    ("depth-64", _nested(64), []),
    ("depth-65", _nested(65), ["parentheses nest deeper than the limit of 64"]),
    ("depth-1000", _nested(1000), ["parentheses nest deeper than the limit of 64"]),
    ("depth-100000", _nested(100_000),
     ["expression is 200020 characters long, over the limit of 4096"]),
    ("4096-characters", "†state.x || †state." + "k" * 4077, []),
    ("4097-characters", "†state." + "k" * 4090, ["expression is 4097 characters long, over the "
                                                 "limit of 4096"]),
    ("many-segments", "†state.x || †state." + ".".join(["k"] * 2000), []),
    ("many-operators", " && ".join(["†state.x"] * 300), []),
    ("deep-output", "†state.z || " + "(" * 70 + "†state.w" + ")" * 70,
     ["parentheses nest deeper than the limit of 64"]),
]


@pytest.mark.parametrize(("expression", "messages"),
                         [pytest.param(e, m, id=i) for i, e, m in LIMITS])
def test_expression_limits_are_diagnostics(tmp_path: pathlib.Path, expression: str,
                                           messages: list[str]) -> None:
    key = "_outputPath" if expression.startswith("†state.z") else "p"
    plan = {"plan": [{"_tool": "a", key: expression}],
            "context": [{"type": "state", "x": 1, "y": 2}]}
    code, out, err = run("validate", "--format", "json", write(tmp_path, plan))
    assert err == ""
    diagnostics = plan_diagnostics(out)
    assert [d["message"] for d in diagnostics] == messages
    assert all(d["code"] == "syntax" and d["pointer"] == f"/{key}" for d in diagnostics)
    assert code == (1 if messages else 0)


def test_a_deep_parameter_value(tmp_path: pathlib.Path) -> None:
    # 500 levels: walked without recursion; the pointer names every level.
    value: Any = "†state.nope"
    for _ in range(500):
        value = {"k": value}
    code, out, err = run("validate", "--format", "json",
                         write(tmp_path, [{"_tool": "a", "p": value}]))
    (diagnostic,) = plan_diagnostics(out)
    assert code == 1 and err == ""
    assert (diagnostic["code"], diagnostic["pointer"]) == (
        "dangling-reference", "/p" + "/k" * 500)


def test_a_value_deeper_than_the_value_limit_is_an_invalid_call(tmp_path: pathlib.Path) -> None:
    value: Any = 1
    for _ in range(900):
        value = [value]
    code, out, err = run("validate", "--format", "json",
                         write(tmp_path, [{"_tool": "a"}, {"_tool": "b", "p": value}]))
    assert code == 1 and err == ""
    (diagnostic,) = plan_diagnostics(out)
    assert (diagnostic["code"], diagnostic["call"]) == ("invalid-call", 1)
    assert "nested deeper than" in diagnostic["message"]


def test_a_deep_context_value_is_a_clear_error(tmp_path: pathlib.Path) -> None:
    value: Any = 1
    for _ in range(900):
        value = {"k": value}
    code, out, err = run("validate", write(tmp_path, {"plan": [], "context": [
        {"type": "state", "x": value}]}))
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {tmp_path / 'plan.json'}: context message 0")


def _big_plan(megabytes: int) -> dict[str, Any]:
    """A plan of about ``megabytes`` MB: a chain of calls, a fan-out and a fan-in, each
    call carrying a large literal parameter; the last call reads a path nobody writes."""
    payload = "x" * 4000
    n = megabytes * 1_000_000 // 4100
    calls: list[Any] = [{"_tool": "start", "_outputPath": "†state.s0", "text": payload}]
    for i in range(1, n - 2):
        calls.append({"_tool": "step", "prev": f"†state.s{i - 1}", "root": "†state.s0",
                      "_outputPath": f"†state.s{i}", "text": payload})
    calls.append({"_tool": "join", "all": "†state", "_outputPath": "†data.all",
                  "text": payload})
    calls.append({"_tool": "last", "p": "†state.nowhere", "text": payload})
    return {"plan": calls}


@pytest.mark.slow
def test_a_10_mb_plan_validates_in_seconds(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_big_plan(10)), encoding="utf-8")
    assert path.stat().st_size > 10_000_000
    start = time.perf_counter()
    code, out, err = run("validate", "--format", "json", str(path))
    elapsed = time.perf_counter() - start
    assert (code, err) == (1, "")
    assert [d["code"] for d in plan_diagnostics(out)] == ["dangling-reference"]
    assert elapsed < 30, f"validate took {elapsed:.1f} s"
    start = time.perf_counter()
    code, out, _ = run("graph", "--format", "dot", str(path))
    assert code == 0 and out.count(" -> ") > 7000
    assert time.perf_counter() - start < 30


@pytest.mark.slow
def test_validate_as_a_process_never_shows_a_traceback(tmp_path: pathlib.Path) -> None:
    cases = {"deep.json": "[" * 100_000, "bad.json": "{", "ok.json": json.dumps(PAYMENT),
             "limits.json": json.dumps([{"_tool": "a", "p": _nested(100_000)}])}
    for name, content in cases.items():
        path = write(tmp_path, content, name)
        for command in (["validate", path], ["graph", path], ["validate", "--format",
                                                               "sarif", path]):
            result = subprocess.run([sys.executable, "-m", "obelisk", *command],
                                    capture_output=True, text=True, encoding="utf-8",
                                    timeout=120)
            assert "Traceback" not in result.stderr + result.stdout, name
            assert "internal error" not in result.stderr, name
            assert result.returncode in (0, 1, 2)


# -- docs/validation.md ----------------------------------------------------------------------

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "validation.md"
_BLOCK = re.compile(r"```(json|console|mermaid)\n(.*?)```", re.S)


def _doc_examples() -> list[tuple[str, str, list[str]]]:
    """(the JSON block before it, the command, the printed lines) of every console block."""
    examples = []
    last_json = ""
    for match in _BLOCK.finditer(DOCS.read_text(encoding="utf-8")):
        kind, body = match.groups()
        if kind == "json":
            last_json = body
        elif kind == "console":
            command, *printed = body.splitlines()
            examples.append((last_json, command, printed))
    return examples


@pytest.mark.slow
@pytest.mark.parametrize(("content", "command", "printed"),
                         [pytest.param(*e, id=e[1]) for e in _doc_examples()])
def test_docs_examples_are_what_obelisk_prints(tmp_path: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch, content: str,
                                               command: str, printed: list[str]) -> None:
    assert command.startswith("$ obelisk ")
    argv = command.removeprefix("$ obelisk ").split()
    (tmp_path / argv[-1]).write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _, out, err = run(*argv)
    from test_docs import assert_transcript  # standard error shown too, as every page's

    assert_transcript(printed, out, err)


def test_docs_cover_every_code_and_show_each_output(tmp_path: pathlib.Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    text = DOCS.read_text(encoding="utf-8")
    for code in CODES:
        assert f"### `{code}`" in text
        if code == "too-dense":  # needs millions of edges: tests/hostile/test_compiler.py
            continue
        assert any(f"[{code}]" in "\n".join(printed) for _, _, printed in _doc_examples()), code
    blocks = {kind: [b for k, b in _BLOCK.findall(text) if k == kind]
              for kind in ("json", "mermaid")}
    # The Mermaid block is the weather graph as printed.
    (mermaid,) = blocks["mermaid"]
    weather = next(e for e in _doc_examples() if e[1] == "$ obelisk graph weather.json")
    assert mermaid.splitlines() == weather[2][:-2]  # the last two: the no-tools note
    # The SARIF block is the write race's log, its rules cut to the first.
    (sarif,) = [b for b in blocks["json"] if '"$schema"' in b]
    race = next(e for e in _doc_examples() if e[1] == "$ obelisk validate write-race.json")
    (tmp_path / "write-race.json").write_text(race[0], encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _, out, _ = run("validate", "--format", "sarif", "write-race.json")
    log = json.loads(out)
    log["runs"][0]["tool"]["driver"]["rules"] = log["runs"][0]["tool"]["driver"]["rules"][:1]
    log["runs"][0]["tool"]["driver"]["version"] = "0.1.0"  # as printed on the page
    assert json.loads(sarif) == log

"""The command line's inputs: ``--tools`` and ``--context`` files, ``--mocks`` given twice,
several files and directories for ``validate``, ``--min-severity``, ``--fail-on``,
``--version``, ``--activities`` from the current directory, ``schema --plan-file``."""

from __future__ import annotations

import io
import json
import pathlib
import sys

import jsonschema
import pytest

from obelisk import __version__
from obelisk.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOL = {"type": "object",
        "properties": {"_tool": {"const": "pay"}, "amount": {"type": "integer", "minimum": 0}},
        "required": ["amount"]}
NO_TOOLS = "info[no-tools]: no tools given: tool names and parameters were not checked"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: pathlib.Path, name: str, content: object) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", ["validate", "graph", "dry-run"])
def test_tools_file_checks_the_plan(tmp_path: pathlib.Path, command: str) -> None:
    plan = write(tmp_path, "p.json", {"plan": [{"_tool": "pay", "amount": -1}],
                                      "mocks": {"pay": {"return": 1}}})
    tools = write(tmp_path, "tools.json", [TOOL])
    assert run(command, plan)[0] == 0
    code, out, err = run(command, plan, "--tools", tools)
    if command == "graph":  # graph draws an invalid plan, and says so
        assert code == 0 and "the plan has errors" in err
    else:
        assert code == 1 and "error[param-schema]" in out + err


def test_tools_file_may_be_an_object_with_tools(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, "p.json", [{"_tool": "pya", "amount": 1}])
    tools = write(tmp_path, "tools.json", {"tools": [TOOL]})
    code, out, _ = run("validate", plan, "--tools", tools)
    assert code == 1 and "error[unknown-tool]" in out and NO_TOOLS not in out


def test_context_file_provides_reads_and_tools(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, "p.json", [{"_tool": "pay", "amount": "†state.n"}])
    context = write(tmp_path, "c.json", [{"type": "state", "n": 3},
                                         {"type": "tool", "tool": TOOL}])
    assert run("validate", plan)[0] == 1  # †state.n dangles
    code, out, _ = run("validate", plan, "--context", context)
    assert code == 0 and NO_TOOLS not in out


def test_schema_takes_tools_without_a_plan(tmp_path: pathlib.Path) -> None:
    tools = write(tmp_path, "tools.json", [TOOL])
    code, out, _ = run("schema", "--tools", tools)
    assert code == 0 and "pay" in out
    assert run("schema")[0] == 2


def test_no_tools_says_nothing_was_checked(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, "p.json", [{"_tool": "anything"}])
    code, out, _ = run("validate", plan)
    assert code == 0 and out.splitlines()[:2] == [
        f"{plan}: {NO_TOOLS}", '    hint: give --tools FILE or a "tools" list in the plan file']


@pytest.mark.parametrize("form", ["mermaid", "dot", "json"])
def test_graph_says_on_stderr_that_no_tools_were_given(tmp_path: pathlib.Path,
                                                       form: str) -> None:
    plan = write(tmp_path, "p.json", [{"_tool": "echo", "_outputPath": "†state.a"}])
    code, out, err = run("graph", plan, "--format", form)
    assert code == 0 and err.count("[no-tools]") == 1 and "no-tools" not in out
    assert err.startswith(f"{plan}: {NO_TOOLS}\n    hint: give --tools FILE")
    tools = write(tmp_path, "tools.json", [
        {"type": "object", "properties": {"_tool": {"const": "echo"}}}])
    code, _, err = run("graph", plan, "--format", form, "--tools", tools)
    assert code == 0 and err == ""


@pytest.mark.parametrize("command", ["dry-run", "run"])
def test_dry_run_and_run_say_once_that_no_tools_were_given(tmp_path: pathlib.Path,
                                                           command: str) -> None:
    plan = write(tmp_path, "p.json", {"plan": [{"_tool": "echo", "_outputPath": "†state.a"}],
                                      "mocks": {"echo": {"return": 1}}})
    extra = ["--activities", "sample_activities:ACTIVITIES"] if command == "run" else []
    code, _, err = run(command, plan, *extra)
    assert code == 0 and err.count("[no-tools]") == 1
    assert err.startswith(f"{plan}: {NO_TOOLS}\n    hint: give --tools FILE")
    # Invalid too: said once, beside the plan's own diagnostics.
    bad = write(tmp_path, "bad.json", [{"_tool": "echo", "p": "†state.nowhere"}])
    code, _, err = run(command, bad, *extra)
    assert code == 1 and err.count("[no-tools]") == 1 and "[dangling-reference]" in err
    # With tools given, nothing is said.
    tools = write(tmp_path, "tools.json", [
        {"type": "object", "properties": {"_tool": {"const": "echo"}}}])
    code, _, err = run(command, plan, *extra, "--tools", tools)
    assert code == 0 and "no-tools" not in err


def test_mocks_given_twice_merge(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, "p.json", [{"_tool": "a", "_outputPath": "†state.a"},
                                      {"_tool": "b", "_outputPath": "†state.b"}])
    one = write(tmp_path, "m1.json", {"a": {"return": 1}})
    two = write(tmp_path, "m2.json", {"b": {"return": 2}})
    code, out, _ = run("dry-run", plan, "--mocks", one, "--mocks", two, "--json")
    assert code == 0
    assert json.loads(out)["views"]["state"]["global"] == {"a": 1, "b": 2}


def test_mocks_given_twice_for_one_tool_are_refused(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, "p.json", [{"_tool": "a", "_outputPath": "†state.a"}])
    one = write(tmp_path, "m1.json", {"a": {"return": 1}})
    two = write(tmp_path, "m2.json", {"a": {"return": 2}})
    code, _, err = run("dry-run", plan, "--mocks", one, "--mocks", two)
    assert code == 2 and "both mock 'a'" in err
    # The same mock twice is no conflict.
    assert run("dry-run", plan, "--mocks", one, "--mocks", one)[0] == 0


def test_validate_reports_several_files_and_directories(tmp_path: pathlib.Path) -> None:
    good = write(tmp_path, "good.json", [{"_tool": "a"}])
    bad = write(tmp_path, "dir/sub/bad.json", [{"_tool": "a", "p": "†state.x"}])
    also = write(tmp_path, "dir/also.json", [{"_tool": "b"}])
    code, out, _ = run("validate", good, str(tmp_path / "dir"))
    assert code == 1
    summaries = [line for line in out.splitlines() if " call" in line and "edge" in line]
    assert summaries == [f"{good}: 1 call, 0 edges: no problems",
                         f"{also}: 1 call, 0 edges: no problems",
                         f"{bad}: 1 call, 0 edges: 1 error"]
    # Files after an option are files too; JSON output names each diagnostic's file.
    code, out, _ = run("validate", good, "--format", "json", bad)
    # (each file without tools gets its own no-tools info, after its plan's diagnostics)
    assert code == 1 and [(d["file"], d["code"]) for d in json.loads(out)] == [
        (good, "no-tools"), (bad, "dangling-reference"), (bad, "no-tools")]
    code, out, _ = run("validate", "--format", "sarif", good, bad)
    log = json.loads(out)
    assert [a["location"]["uri"] for a in log["runs"][0]["artifacts"]] == [good, bad]


def test_an_unreadable_file_among_several_exits_2_after_the_others(
        tmp_path: pathlib.Path) -> None:
    good = write(tmp_path, "good.json", [{"_tool": "a"}])
    code, out, err = run("validate", str(tmp_path / "missing.json"), good)
    assert code == 2 and "cannot read" in err and f"{good}: 1 call" in out


def test_min_severity_and_fail_on(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, "p.json", [{"_tool": "a", "p": "†input.x", "_outputPath": "†state.x"},
                                      {"_tool": "b", "_outputPath": "†state.x"}])
    code, out, _ = run("validate", plan)
    assert code == 0 and "warning[write-race]" in out and "info[external-reference]" in out
    code, out, _ = run("validate", plan, "--min-severity", "warning")
    assert code == 0 and "warning[write-race]" in out and "external-reference" not in out
    code, out, _ = run("validate", plan, "--min-severity", "error", "--format", "json")
    assert json.loads(out) == []
    assert run("validate", plan, "--fail-on", "warning")[0] == 1
    assert run("validate", plan, "--fail-on", "error")[0] == 0


def test_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse's version action prints to sys.stdout itself.
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"obelisk {__version__}"


def test_activities_are_found_in_the_current_directory(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_acts_cwd.py").write_text(
        "ACTS = {'a': lambda call, tool, context: {'ok': True}}\n", encoding="utf-8")
    plan = write(tmp_path, "p.json", [{"_tool": "a", "_outputPath": "†state.r"}])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "my_acts_cwd", raising=False)
    code, out, err = run("run", plan, "--activities", "my_acts_cwd:ACTS")
    assert code == 0, err
    assert "status: completed" in out


def test_plan_file_schema_accepts_every_example_and_refuses_a_typo() -> None:
    code, out, _ = run("schema", "--plan-file")
    assert code == 0
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in sorted((ROOT / "examples").glob("*.json")):
        if path.name == "context.json":  # a context for --context, not a plan file
            continue
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"plan": [], "tool": []}, schema)

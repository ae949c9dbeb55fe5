"""Tool patterns never run in a backtracking engine on untrusted text (issue 26, item 4).

With Python's ``re``, ``^(a|a)+$`` took 13 s on 29 characters from an LLM, four times longer
per two more, and ``timeout=`` could not interrupt it. Every place obelisk checks a value
against a schema now matches patterns with RE2, in linear time. The tests never time
anything: a spy on ``re.search`` (what jsonschema called) fails the test the moment a
tool's pattern reaches the backtracking engine, and the verdicts are checked on strings
that took seconds to minutes before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from obelisk import compile_plan, dry_run, run_sync
from obelisk.agent import run_agent_sync
from obelisk.agent.judging import Validators
from obelisk.compiler.patterns import linear_validator, search, unsupported
from obelisk.core.plain import thaw
from obelisk.llm import ScriptedLLM

SLOW = "^(a|a)+$"  # 2^n ways to reject "a" * n + "b" by backtracking
HOSTILE = "a" * 10_000 + "b"  # hours for Python's re; RE2 rejects it at once


@pytest.fixture(autouse=True)
def no_backtracking(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail at once if a test's pattern reaches Python's re.search or re.match."""
    seen: list[str] = []
    for name in ("search", "match", "fullmatch"):
        original = getattr(re, name)

        def spy(pattern: Any, string: Any, flags: int = 0, *, _original: Any = original) -> Any:
            text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
            if isinstance(text, str) and ("(a|a)" in text or "(?=" in text or "\\1" in text):
                seen.append(text)
                raise AssertionError(f"{text!r} reached a backtracking engine")
            return _original(pattern, string, flags)

        monkeypatch.setattr(re, name, spy)
    yield seen
    assert not seen


def tool(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"_tool": {"const": "t"}, **props}}


CODE = tool(code={"type": "string", "pattern": SLOW}, _output={"type": "string",
                                                               "pattern": SLOW})


def errors(compiled: Any) -> list[tuple[str, str]]:
    return [(str(d.code), d.pointer) for d in compiled.diagnostics if d.is_error]


def test_a_literal_parameter_is_checked_in_linear_time() -> None:
    compiled = compile_plan([{"_tool": "t", "code": HOSTILE}, {"_tool": "t", "code": "aaa"}],
                            tools=[CODE])
    (error,) = [d for d in compiled.diagnostics if d.is_error]
    assert (str(error.code), error.call, error.pointer) == ("param-schema", 0, "/code")
    assert "does not match" in error.message


def test_a_resolved_parameter_and_a_result_are_checked_in_linear_time() -> None:
    plan = [{"_tool": "t", "code": "†input.code", "_outputPath": "†state.out"}]
    result = run_sync(plan, tools=[CODE], context=[{"type": "input", "input": {
        "code": HOSTILE}}], activities={"t": lambda c, t, x: "aa"})
    assert [thaw(m)["data"]["error"]["type"] for m in result.context.messages
            if m.get("type") == "error"] == ["ParamSchema"]
    result = run_sync(plan, tools=[CODE], context=[{"type": "input", "input": {"code": "a"}}],
                      activities={"t": lambda c, t, x: HOSTILE})
    assert [thaw(m)["data"]["error"]["type"] for m in result.context.messages
            if m.get("type") == "error"] == ["OutputSchema"]


def test_an_llms_solution_and_output_are_checked_in_linear_time() -> None:
    llm = ScriptedLLM([{"calls": [{"_tool": "t", "code": HOSTILE}], "output": None},
                       {"calls": [], "output": "†state.v"}, {"calls": [], "output": "aa"}])
    result = run_agent_sync([{"type": "state", "state": {"v": HOSTILE}}], llm, tools=[CODE],
                            output_schema={"type": "string", "pattern": SLOW},
                            mocks={"t": {"return": "a"}}, max_ticks=3)
    kinds = [thaw(m)["data"]["error"]["type"] for m in result.context.messages
             if m.get("type") == "error"]
    # The call failing its pattern is Invalid alone (§8.2 step 2), judged in linear time.
    assert kinds == ["Invalid", "OutputSchema"] and result.output == "aa"


@pytest.mark.parametrize(("schema", "instance", "valid"), [
    ({"patternProperties": {SLOW: {"type": "integer"}}}, {HOSTILE: "x", "aa": 1}, True),
    ({"patternProperties": {SLOW: {"type": "integer"}}}, {"aa": "x"}, False),
    ({"patternProperties": {SLOW: {}}, "additionalProperties": False}, {HOSTILE: 1}, False),
    ({"patternProperties": {SLOW: {}}, "additionalProperties": False}, {"aaa": 1}, True),
    ({"patternProperties": {SLOW: {}}, "unevaluatedProperties": False}, {HOSTILE: 1}, False),
    ({"allOf": [{"patternProperties": {SLOW: {}}}], "unevaluatedProperties": False},
     {"a": 1}, True),
    ({"propertyNames": {"pattern": SLOW}}, {HOSTILE: 1}, False),
])
def test_pattern_properties_are_matched_in_linear_time(schema: dict[str, Any], instance: Any,
                                                       valid: bool) -> None:
    assert linear_validator()(schema).is_valid(instance) is valid
    compiled = compile_plan([{"_tool": "t", "p": instance}], tools=[tool(p=schema)])
    assert {(code, pointer[:2]) for code, pointer in errors(compiled)} == (
        set() if valid else {("param-schema", "/p")})


@pytest.mark.parametrize("pattern", ["^(?=x)", "(a)\\1", "(?<!a)b", "a\\Z", "a{1001}"])
def test_a_pattern_re2_cannot_take_is_not_checked_and_says_so(
        pattern: str, capfd: pytest.CaptureFixture[str]) -> None:
    compiled = compile_plan([{"_tool": "t", "code": "zzz"}],
                            tools=[tool(code={"type": "string", "pattern": pattern})])
    assert errors(compiled) == []  # every value passes it
    (warning,) = [d for d in compiled.diagnostics if d.code == "unchecked-pattern"]
    assert warning.severity.value == "warning" and "/properties/code/pattern" in warning.message
    assert unsupported(pattern) and search(pattern, "zzz") is None
    assert capfd.readouterr().err == ""  # RE2 logs nothing of its own


def test_a_dry_run_of_a_latent_tool_checks_its_example_in_linear_time() -> None:
    plan = [{"_tool": "t", "code": "a", "_outputPath": "†state.x"}]
    result = dry_run(plan, tools=[CODE], mocks={"t": {"return": HOSTILE}})
    assert [thaw(m)["data"]["error"]["type"] for m in result.context.messages
            if m.get("type") == "error"] == ["OutputSchema"]


def test_patterns_mean_what_json_schema_patterns_mean() -> None:
    assert search("b", "abc") and not search("^b", "abc")  # not anchored
    assert search("^\\d+$", "123") and not search("^\\d+$", "\u0663")  # ASCII digits
    assert search("é", "café") and search("^.$", "\U0001f600")  # characters, not bytes
    assert search("a", "\ud800a") is True  # a lone surrogate (from Python) is no crash
    validator = Validators({"type": "string", "pattern": "^x"})
    assert validator.output_problems("y") and not validator.output_problems("x")

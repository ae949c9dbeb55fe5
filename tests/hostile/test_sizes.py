"""Size limits count bytes as they will be written, not values (issue 26 item 6).

Values share structure: a frozen object read twice is one object in memory and two
copies in JSON text. Every test here failed before the byte limits: a 99 KB plan of echo
calls ended ``dry-run`` in a MemoryError, and a 1.4 KB LLM answer made the next request
tens of megabytes.

- ``json_size`` is the length of the compact JSON text, shared structure counted each
  time it appears; ``fits`` agrees with it (a property);
- a result whose JSON text is over ``max_value_bytes`` fails its call with
  ``ValueTooLarge`` naming the call, under every interpreter;
- an agent's request over ``max_request_bytes`` is never sent: the run ends ``failed``
  with a ``RequestTooLarge`` error naming the kind and the call that wrote most of it; a
  latent sub-request over it fails its call.
"""

from __future__ import annotations

import json
import pathlib
import resource
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap

from obelisk import dry_run, run_async, run_sync
from obelisk.agent import AgentStatus, run_agent_sync
from obelisk.core.size import MAX_REQUEST_BYTES, MAX_VALUE_BYTES, fits, json_size
from obelisk.core.values import freeze
from obelisk.llm import ScriptedLLM

ECHO = {"type": "object", "properties": {"_tool": {"const": "echo"}, "a": {}, "b": {}}}
LIMIT = 4096

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(), lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=30)


def text_of(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@settings(deadline=None)
@given(json_values, st.integers(min_value=0, max_value=200))
def test_json_size_is_the_length_of_the_compact_text(value: Any, limit: int) -> None:
    size = text_of(value)
    assert json_size(value) == size == json_size(freeze(value))
    # With a limit: exact when within it, else some number over it; fits agrees.
    assert (json_size(freeze(value), limit) > limit) == (size > limit)
    assert fits(freeze(value), limit) == (size <= limit)


def test_shared_structure_counts_as_written_and_costs_the_distinct_objects() -> None:
    value: Any = pmap({"s": "x" * 1000})
    for _ in range(60):  # 2**60 copies of the string in the text, 61 objects in memory
        value = pmap({"a": value, "b": value})
    assert json_size(value) > 2 ** 60 * 1000
    assert json_size(value, LIMIT) > LIMIT and not fits(value, LIMIT)
    with pytest.raises(ValueError, match="contains itself"):
        looped: list[Any] = []
        looped.append(looped)
        json_size(looped)


def echo_plan(steps: int, text: str) -> list[Any]:
    """Call 0 writes ``text``; each next call reads the previous value twice."""
    plan: list[Any] = [{"_tool": "echo", "a": text, "_outputPath": "†state.v0"}]
    plan += [{"_tool": "echo", "a": f"†state.v{i - 1}", "b": f"†state.v{i - 1}",
              "_outputPath": f"†state.v{i}"} for i in range(1, steps)]
    return plan


def echo(call: dict[str, Any], tool: Any, context: Any) -> Any:
    return {k: v for k, v in call.items() if not k.startswith("_")}


@pytest.mark.parametrize("runner", ["sync", "asyncio", "dry-sync", "dry-asyncio"])
def test_a_result_over_max_value_bytes_fails_its_call(runner: str) -> None:
    import asyncio

    plan = echo_plan(12, "x" * 100)  # call k writes about 2**k * 100 bytes
    if runner == "sync":
        result = run_sync(plan, activities={"echo": echo}, max_value_bytes=LIMIT)
    elif runner == "asyncio":
        result = asyncio.run(run_async(plan, activities={"echo": echo}, max_value_bytes=LIMIT))
    else:
        result = dry_run(plan, mocks={"echo": {"echo": True}}, max_value_bytes=LIMIT,
                         interpreter=runner.removeprefix("dry-")).run
    (error,) = result.errors
    assert error["data"]["error"]["type"] == "ValueTooLarge"
    message = error["data"]["error"]["message"]
    assert message.startswith("call 6 (echo): the result is ") and "max_value_bytes=4096" in message
    assert [c.outcome.value for c in result.calls][5:8] == ["executed", "failed", "skipped"]
    assert all(text_of(m["state"]) <= LIMIT for m in result.context.to_json()
               if m.get("type") == "state")


@pytest.mark.slow
def test_the_default_byte_limit_stops_a_99_kb_plan_of_echo_calls(tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "echo.json"
    plan.write_text(json.dumps({"plan": echo_plan(19, "x" * 96_000),
                                "mocks": {"echo": {"echo": True}}}))
    assert 95_000 < plan.stat().st_size < 100_000

    def bounded() -> None:  # a run that needs gigabytes fails here instead of swapping
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([sys.executable, "-m", "obelisk", "dry-run", str(plan), "--json"],
                          capture_output=True, text=True, timeout=120, preexec_fn=bounded,
                          check=False)
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr and "MemoryError" not in done.stderr
    report = json.loads(done.stdout)
    assert [e["data"]["error"]["type"] for e in report["errors"]] == ["ValueTooLarge"]
    assert report["errors"][0]["data"]["error"]["message"].startswith("call 8 (echo)")
    assert len(done.stdout) < 40 * MAX_VALUE_BYTES // 16  # megabytes, not gigabytes


def doubling(calls: int) -> dict[str, Any]:
    """An answer whose call 0 writes 1 KB and each next call doubles it."""
    return {"calls": echo_plan(calls, "x" * 1000), "output": None}


@pytest.mark.parametrize(("calls", "limit"), [
    (11, 1 << 19),  # 2 MB of data after tick 1, over a 512 KiB limit
    pytest.param(25, None, marks=pytest.mark.slow),  # the issue's: the defaults
])
def test_a_small_answer_never_makes_a_huge_request(calls: int, limit: int | None) -> None:
    solution = doubling(calls)
    assert len(json.dumps(solution)) < 3500  # the answer was 1.4 KB
    llm = ScriptedLLM([solution, {"calls": [], "output": "done"}])
    options = {} if limit is None else {"max_request_bytes": limit}
    result = run_agent_sync([], llm, tools=[ECHO], mocks={"echo": {"echo": True}}, **options)
    assert result.status is AgentStatus.FAILED
    assert len(llm.requests) == 1  # the second request was never sent
    assert result.reason.startswith("the request for tick 2 would hold ")
    assert f"over max_request_bytes ({limit or MAX_REQUEST_BYTES:,}): ¶state holds" in result.reason
    assert 'by the call {"_tool": "echo", "_outputPath": "†state.v' in result.reason
    errors = [m["data"]["error"]["type"] for m in result.context.to_json()
              if m["type"] == "error"]
    assert errors[-1] == "RequestTooLarge" and list(result.ticks[-1].errors) == ["RequestTooLarge"]


def test_a_rendered_request_over_the_limit_is_not_sent() -> None:
    context = [{"type": "text", "text": "y" * 5000}]  # no data: the text alone is too long
    llm = ScriptedLLM([{"calls": [], "output": "done"}])
    result = run_agent_sync(context, llm, max_request_bytes=LIMIT)
    assert result.status is AgentStatus.FAILED and not llm.requests
    assert result.reason.startswith("the request for tick 1 is ")
    assert MAX_REQUEST_BYTES == 8 << 20  # the documented default


def test_a_latent_sub_request_over_the_limit_fails_its_call() -> None:
    think = {"type": "object", "properties": {"_tool": {"const": "think"}, "q": {"type": "string"}}}
    solution = {"calls": [{"_tool": "think", "q": "z" * 5000, "_outputPath": "†state.t"}],
                "output": "†state.t || 'no thought'"}
    llm = ScriptedLLM([solution], latent={"think": ["deep"]})
    result = run_agent_sync([], llm, tools=[think], max_request_bytes=LIMIT)
    assert result.status is AgentStatus.COMPLETED and result.output == "no thought"
    (error,) = [m["data"]["error"] for m in result.context.to_json() if m["type"] == "error"]
    assert error["type"] == "RequestTooLarge"
    assert error["message"].startswith("the call's sub-request is ")
    assert len(llm.requests) == 1  # the sub-request was never sent


def test_the_cli_takes_max_request_bytes_and_refuses_a_bad_one(tmp_path: pathlib.Path) -> None:
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"context": [{"type": "text", "text": "y" * 5000}]}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [], "output": "done"}]))
    command = [sys.executable, "-m", "obelisk", "agent", str(agent), "--llm", f"script:{script}"]
    done = subprocess.run([*command, "--max-request-bytes", "4096"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    assert "failed: the request for tick 1 is " in done.stdout
    assert "over max_request_bytes (4,096)" in done.stdout
    bad = subprocess.run([*command, "--max-request-bytes", "0"], capture_output=True,
                         text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "--max-request-bytes must be a positive" in bad.stderr
    assert "Traceback" not in bad.stderr

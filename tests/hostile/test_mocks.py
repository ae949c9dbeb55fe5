"""A mock's ``delay_ms`` is bounded (issue 26, item 13).

Before, ``{"return": 1, "delay_ms": 1e12}`` in a plan, a vector or an agent file made a
dry run, the conformance runner or ``obelisk agent`` wait for ever. A mock's delay is now
at most ``MAX_DELAY_MS`` (1 s), refused past it with every such mock named, and the
delays of nested mocks add up to at most that much an invocation. Nothing here sleeps
for long: a refused mock never runs, and the capped delay is read, not waited for.
"""

from __future__ import annotations

import io
import json
import math
import pathlib
from typing import Any

import pytest

from obelisk import MockError, compile_plan, dry_run
from obelisk.agent import run_agent_sync
from obelisk.cli import main
from obelisk.interpreters.mocks import MAX_DELAY_MS, Turn, check_mocks, interpret
from obelisk.llm import ScriptedLLM

HUGE = 10**12  # about 32 years


@pytest.mark.parametrize("delay", [HUGE, MAX_DELAY_MS + 1, 1e300, math.inf, math.nan, -1,
                                   "5", True])
def test_a_delay_past_the_cap_or_not_a_number_of_ms_is_refused(delay: Any) -> None:
    with pytest.raises(MockError) as caught:
        check_mocks({"a": {"return": 1, "delay_ms": delay}})
    assert list(caught.value.problems) == [
        f"mocks.a.delay_ms: a number of milliseconds from 0 to {MAX_DELAY_MS}, got {delay!r}"]


def test_every_nested_delay_past_the_cap_is_named() -> None:
    mocks = {"a": {"sequence": [{"return": 1, "delay_ms": HUGE},
                                {"by_instance": {"①": {"return": 2, "delay_ms": HUGE}}}]}}
    with pytest.raises(MockError) as caught:
        check_mocks(mocks)
    assert [p.split(":")[0] for p in caught.value.problems] == [
        "mocks.a.sequence[0].delay_ms", "mocks.a.sequence[1].by_instance.①.delay_ms"]


def test_nested_delays_add_up_to_the_cap_at_most() -> None:
    mock = {"delay_ms": MAX_DELAY_MS, "by_instance": {
        "①": {"delay_ms": MAX_DELAY_MS, "sequence": [{"return": 1, "delay_ms": MAX_DELAY_MS}]}}}
    check_mocks({"a": mock})
    node = compile_plan([{"_tool": "a", "_instance": "①"}]).nodes[0]
    turn = Turn(node, None, 0, 0)  # type: ignore[arg-type]  # (no form here reads it)
    assert interpret(mock, turn).delay == MAX_DELAY_MS / 1000


def test_a_plan_files_huge_delay_is_refused_before_anything_runs(tmp_path: pathlib.Path
                                                                 ) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan": [{"_tool": "a", "_outputPath": "†state.x"}],
                                "mocks": {"a": {"return": 1, "delay_ms": HUGE}}}))
    out, err = io.StringIO(), io.StringIO()
    code = main(["dry-run", str(plan), "--interpreter", "asyncio"], out=out, err=err)
    assert code == 2 and "mocks.a.delay_ms: a number of milliseconds from 0 to 1000" in (
        err.getvalue())


def test_a_vectors_huge_delay_fails_that_vector(tmp_path: pathlib.Path) -> None:
    vector = tmp_path / "slow.json"
    vector.write_text(json.dumps({
        "id": "slow", "plan": [{"_tool": "a", "_outputPath": "†state.x"}],
        "mocks": {"a": {"return": 1, "delay_ms": HUGE}},
        "expect": {"values": [{"ref": "†state.x", "value": 1}]}}))
    out = io.StringIO()
    assert main(["conformance", str(vector), "--interpreter", "asyncio"], out=out,
                err=io.StringIO()) == 1
    assert "FAIL slow" in out.getvalue() and "delay_ms" in out.getvalue()
    assert "0 passed, 1 failed" in out.getvalue()


def test_an_agents_mocks_are_bounded_too() -> None:
    with pytest.raises(MockError, match="delay_ms"):
        run_agent_sync([], ScriptedLLM([{"calls": [], "output": 1}]),
                       mocks={"a": {"return": 1, "delay_ms": HUGE}})


def test_a_delay_within_the_cap_still_reorders_an_asyncio_dry_run() -> None:
    plan = [{"_tool": "slow", "_outputPath": "†state.log", "_outputMethod": "push"},
            {"_tool": "fast", "_outputPath": "†state.log", "_outputMethod": "push"}]
    result = dry_run(plan, interpreter="asyncio", mocks={
        "slow": {"return": "slow", "delay_ms": 50}, "fast": {"return": "fast"}})
    assert list(result.context.value("state", ("log",))) == ["fast", "slow"]

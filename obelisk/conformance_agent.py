"""Agent vectors for the conformance runner: the agent loop run with a scripted LLM, each
tick a dry run with the vector's mocks (the runner, :mod:`obelisk.conformance`, sends
every vector with ``solutions`` here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from obelisk.conformance import check_case, json_equal
from obelisk.core.context import Context
from obelisk.core.errors import MessageError
from obelisk.jsonio import dumps

__all__ = ["AGENT_FIELDS", "agent_errors", "check_agent"]

#: An agent vector's fields: the loop run with a scripted LLM (see :func:`check_agent`).
AGENT_FIELDS = frozenset({"id", "description", "context", "tools", "output_schema", "mode",
                          "max_ticks", "solutions", "latent", "mocks", "expect"})
AGENT_EXPECT_FIELDS = frozenset({"status", "ticks", "output", "values", "errors"})
AGENT_ERROR_FIELDS = frozenset({"tick", "call", "instance", "type"})


def agent_errors(result: Any) -> list[dict[str, Any]]:
    """The error messages of an agent run as ``{tick, call?, instance?, type}``, in order:
    each tick's call errors (by call and instance), then its errors without a call."""
    found: list[dict[str, Any]] = []
    for tick in result.ticks:
        for outcome in tick.outcomes:
            if outcome.error is not None:
                entry: dict[str, Any] = {"tick": tick.number, "call": outcome.call,
                                         "type": outcome.error}
                if outcome.instance is not None:
                    entry["instance"] = outcome.instance
                found.append(entry)
        found.extend({"tick": tick.number, "type": etype} for etype in tick.errors)
    return found


def _agent_shape_problems(vector: Mapping[str, Any]) -> list[str]:
    problems = [f"unknown field {k!r} (fields: {', '.join(sorted(AGENT_FIELDS))})"
                for k in vector if k not in AGENT_FIELDS]
    if not isinstance(vector.get("id"), str) or not vector.get("id"):
        problems.append('"id" must be a non-empty string')
    if not isinstance(vector.get("solutions"), list):
        problems.append('"solutions" must be an array of solutions')
    if not isinstance(vector.get("context", []), list):
        problems.append('"context" must be an array of messages')
    if vector.get("mode", "eager") not in ("eager", "lazy"):
        problems.append('"mode" must be "eager" or "lazy"')
    max_ticks = vector.get("max_ticks", 25)
    if not isinstance(max_ticks, int) or isinstance(max_ticks, bool) or max_ticks < 1:
        problems.append('"max_ticks" must be a positive integer')
    latent = vector.get("latent", {})
    if not isinstance(latent, Mapping) or not all(isinstance(v, list) for v in latent.values()):
        problems.append('"latent" must map tool names to arrays of answers')
    expect = vector.get("expect")
    if not isinstance(expect, Mapping):
        return problems + ['an agent vector needs an "expect" object']
    problems += [f"expect: unknown field {k!r} (fields: {', '.join(sorted(AGENT_EXPECT_FIELDS))})"
                 for k in expect if k not in AGENT_EXPECT_FIELDS]
    for number, error in enumerate(expect.get("errors", [])):
        if not isinstance(error, Mapping) or not isinstance(error.get("type"), str) \
                or not isinstance(error.get("tick"), int):
            problems.append(f"expect.errors[{number}] needs a tick and a string type")
        elif any(k not in AGENT_ERROR_FIELDS for k in error):
            problems.append(f"expect.errors[{number}]: fields are "
                            f"{', '.join(sorted(AGENT_ERROR_FIELDS))}")
    return problems


def check_agent(vector: Mapping[str, Any]) -> list[str]:
    """How an agent vector fails: the loop run with its solutions, each tick a dry run
    with its mocks, latent calls answered from ``latent`` (per tool) when it names the tool."""
    from obelisk.agent import run_agent_sync
    from obelisk.compiler.tools import ToolError
    from obelisk.core.errors import ObeliskError
    from obelisk.llm import ScriptedLLM

    problems = _agent_shape_problems(vector)
    if problems:
        return problems
    expect: Mapping[str, Any] = vector["expect"]
    latent: Mapping[str, Any] = vector.get("latent", {})
    mocks = {k: v for k, v in (vector.get("mocks") or {}).items() if k not in latent}
    try:
        context = Context.of(vector.get("context", []))
        result = run_agent_sync(
            context, ScriptedLLM(vector["solutions"], latent=dict(latent)),
            tools=vector.get("tools") or (), output_schema=vector.get("output_schema"),
            mode=vector.get("mode"), max_ticks=vector.get("max_ticks", 25),
            mocks=mocks, latent_tools=latent.keys())
    except (MessageError, ToolError, ObeliskError) as exc:
        return [f"the agent cannot run: {exc}"]
    if "status" in expect and expect["status"] != result.status.value:
        problems.append(f"status: expected {expect['status']}, got {result.status.value} "
                        f"({result.reason})")
    if "ticks" in expect and expect["ticks"] != len(result.ticks):
        problems.append(f"ticks: expected {expect['ticks']}, got {len(result.ticks)}")
    if "output" in expect and not json_equal(expect["output"], result.output):
        problems.append(f"output: expected {dumps(expect['output'], indent=None)}, "
                        f"got {dumps(result.output, indent=None)}")
    for number, case in enumerate(expect.get("values", [])):
        problems.extend(f"values[{number}]: {p}" for p in check_case(case, result.context))
    if "errors" in expect:
        want = [dict(e) for e in expect["errors"]]
        got = agent_errors(result)
        if not json_equal(want, got):
            problems.append(f"errors: expected {dumps(want, indent=None)}, "
                            f"got {dumps(got, indent=None)}")
    return problems

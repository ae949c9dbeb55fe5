"""The Dask interpreter (obelisk.dask) on a real cluster: a LocalCluster of two worker
processes that import the activities by path (tests/dask_activities.py).

The same report as run_sync; calls placed on the cluster run in a worker, the others (by
``"x-obelisk-executor"`` or the run's default) in the client; what a worker is given (the
idempotency key, the tool, the scoped context only, the trace context); failures a worker
cannot send back as they are; cancelling the run cancels its futures; a durable run on the
cluster, resumed; the agent loop with the Dask interpreter.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import sys
import uuid
from typing import Any

import dask_activities as acts
import pytest
from daskcluster import local_cluster, on_cluster

from obelisk import (
    ActivityPath,
    Journal,
    JournalUnreadable,
    ToolError,
    recorded,
    report,
    resume,
    run_sync,
)
from obelisk.interpreters.dryrun import DRY_RUN_DATE

pytestmark = pytest.mark.slow  # a cluster of two processes, started once for the module


@pytest.fixture(scope="module")
def cluster() -> Any:
    yield from local_cluster()


def dask(cluster: Any, plan: Any, context: Any = None, **kw: Any) -> Any:
    """``run_dask`` of ``plan`` on the cluster (activities: tests/dask_activities.py)."""
    from obelisk import run_dask

    kw.setdefault("activities", acts.ACTIVITIES)
    kw.setdefault("clock", lambda: DRY_RUN_DATE)
    return on_cluster(cluster, lambda client: run_dask(plan, context, client=client, **kw))


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"_tool": {"const": name}}, **extra}


CONTEXT = [{"type": "input", "input": {"x": 5}}, {"type": "secret", "secret": {"k": 1}},
           {"type": "input", "_instance": "a", "x": 1}, {"type": "input", "_instance": "b", "x": 2}]
PLAN = [
    {"_tool": "step", "i": 1, "_outputPath": "†s.a"},
    {"_tool": "step", "i": 2, "prev": "†s.a", "_outputPath": "†s.b"},
    {"_tool": "step", "i": 13, "prev": "†s.b", "_outputPath": "†s.c || †e.c"},
    {"_tool": "step", "i": 4, "prev": "†s.c", "_outputPath": "†s.d"},
    {"_tool": "step", "i": 13, "_outputPath": "†s.f"},
    {"_tool": "choose", "to": "right", "_outputPath": "†s.left || †s.right"},
    {"_tool": "awaited", "x": "†input.x", "_outputPath": "†s.aw"},
    {"_tool": "seen", "_scopes": ["input"], "_instance": "a", "_outputPath": "†s.seen"},
    {"_tool": "seen", "_outputPath": "†s.unscoped"},
    {"_tool": "odd", "_outputPath": "†s.odd || †e.odd"},
    {"_tool": "nothing", "_outputPath": "†s.none"},
]


def test_a_plan_on_the_cluster_reports_what_run_sync_reports(cluster: Any) -> None:
    found = report(dask(cluster, PLAN, CONTEXT))
    expected = report(run_sync(PLAN, CONTEXT, activities=acts.ACTIVITIES,
                               clock=lambda: DRY_RUN_DATE))
    assert found == expected  # (the order calls finish in, the trace's, may differ)
    data = {c["call"]: c for c in found["calls"]}
    assert "routed" in data[2]["reason"] and data[3]["outcome"] == "skipped"
    assert [e["data"]["error"]["type"] for e in found["errors"]] == ["Unlucky", "NoActivity"]


def test_the_scoped_context_only_reaches_the_worker(cluster: Any) -> None:
    result = dask(cluster, PLAN[7:9], CONTEXT)
    seen = result.context.value("s", ("seen",), "a")
    assert {m["type"] for m in seen["context"]} == {"input"}  # no secret, no instance b
    assert all(m.get("_instance") in (None, "a") for m in seen["context"])
    assert list(result.context.value("s", ("unscoped", "context"))) == []


def test_calls_run_where_their_tool_is_placed(cluster: Any) -> None:
    plan = [{"_tool": "where", "_outputPath": "†s.remote"},
            {"_tool": "here", "_outputPath": "†s.local"}]
    tools = [tool("where"), tool("here", **{"x-obelisk-executor": "local"})]
    activities = {"where": acts.where, "here": acts.where}
    result = dask(cluster, plan, tools=tools, activities=activities)
    assert result.context.value("s", ("local", "pid")) == os.getpid()
    assert result.context.value("s", ("remote", "pid")) != os.getpid()
    # The run's default: local; a tool that says "dask" still goes to the cluster.
    tools = [tool("where", **{"x-obelisk-executor": "dask"}), tool("here")]
    result = dask(cluster, plan, tools=tools, activities=activities, executor="local")
    assert result.context.value("s", ("local", "pid")) == os.getpid()
    assert result.context.value("s", ("remote", "pid")) != os.getpid()


def test_each_call_carries_an_idempotency_key(cluster: Any) -> None:
    plan = [{"_tool": "where", "_outputPath": "†s.a"}, {"_tool": "where", "_outputPath": "†s.b"}]
    result = dask(cluster, plan)
    keys = [result.context.value("s", (p, "key")) for p in ("a", "b")]
    assert all(isinstance(k, str) and len(k) == 32 for k in keys) and keys[0] != keys[1]
    assert "_idempotencyKey" not in result.context.to_json()[0]["_call"]


def test_a_result_too_large_for_the_run_fails_as_under_run_sync(cluster: Any) -> None:
    plan = [{"_tool": "big", "n": 50, "_outputPath": "†s.b || †e.b"}]
    found = dask(cluster, plan, max_value_nodes=20)
    expected = run_sync(plan, activities=acts.ACTIVITIES, max_value_nodes=20,
                        clock=lambda: DRY_RUN_DATE)
    assert report(found) == report(expected)
    assert [e["data"]["error"]["type"] for e in report(found)["errors"]] == ["ValueTooLarge"]


class Session:
    """An activity bound to the client, as an MCP tool's is."""

    resident = True

    def __call__(self, call: dict[str, Any], tool: Any, context: Any) -> Any:
        return os.getpid()


def test_a_resident_activity_stays_in_the_client(cluster: Any) -> None:
    session = Session()
    result = dask(cluster, [{"_tool": "s", "_outputPath": "†s.s"}], activities={"s": session})
    assert result.context.value("s", ("s",)) == os.getpid()

    async def wrapped(client: Any) -> Any:
        from obelisk import DaskInterpreter

        return DaskInterpreter(client).wrap({"s": session, "w": acts.where})

    activities = on_cluster(cluster, wrapped)
    assert activities["s"] is session and activities["w"] is not acts.where


def test_the_trace_context_reaches_the_worker(cluster: Any) -> None:
    header = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    result = dask(cluster, [{"_tool": "traced", "_outputPath": "†s.t"}],
                  trace_context=lambda: header)
    assert result.context.value("s", ("t",)) == header


def test_a_traced_run_sends_the_calls_span_to_the_worker(
        cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # With a tracer provider set and no trace_context given, each call carries its
    # execute_tool span's context (issue 30): the worker's spans can join the run's trace.
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    with provider.get_tracer("t").start_as_current_span("caller") as caller:
        result = dask(cluster, [{"_tool": "traced", "_outputPath": "†s.t"}])
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool traced"]
    _, trace_id, span_id, _ = result.context.value("s", ("t",))["traceparent"].split("-")
    assert int(trace_id, 16) == caller.get_span_context().trace_id == span.context.trace_id
    assert int(span_id, 16) == span.context.span_id


def told(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a run's events say of its calls, in an order concurrency does not change."""
    return sorted((e["type"], e.get("call", -1), e.get("outcome", ""), e.get("reason", ""))
                  for e in events)


def test_a_run_on_the_cluster_tells_the_events_run_async_tells(cluster: Any) -> None:
    from obelisk import run_async

    events: list[dict[str, Any]] = []
    result = dask(cluster, PLAN, CONTEXT, on_event=events.append, max_value_bytes=10**6)
    here: list[dict[str, Any]] = []
    asyncio.run(run_async(PLAN, CONTEXT, activities=acts.ACTIVITIES,
                          clock=lambda: DRY_RUN_DATE, on_event=here.append))
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert told(events) == told(here)
    assert events[-1]["status"] == result.status == "completed"


def test_a_callback_raising_on_the_cluster_changes_nothing(cluster: Any) -> None:
    unobserved = report(dask(cluster, PLAN, CONTEXT))
    count: list[dict[str, Any]] = []
    dask(cluster, PLAN, CONTEXT, on_event=count.append)
    for at in (1, len(count) // 2, len(count)):
        seen: list[int] = []

        def raising(event: dict[str, Any], at: int = at, seen: list[int] = seen) -> None:
            seen.append(event["seq"])
            if len(seen) == at:
                raise RuntimeError("observer down")

        assert report(dask(cluster, PLAN, CONTEXT, on_event=raising)) == unobserved
        assert len(seen) == at


def test_a_traced_run_on_the_cluster_has_a_span_per_call_under_its_root(
        cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    plan = [{"_tool": "step", "i": 1, "_outputPath": "†s.a"},
            {"_tool": "traced", "after": "†s.a", "_outputPath": "†s.t"}]
    result = dask(cluster, plan)
    spans = exporter.get_finished_spans()
    [root] = [s for s in spans if s.name == "invoke_workflow obelisk"]
    calls = sorted((s for s in spans if s.name.startswith("execute_tool")),
                   key=lambda s: s.attributes["obelisk.call"])  # type: ignore[index]
    assert [s.name for s in calls] == ["execute_tool step", "execute_tool traced"]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for s in calls)
    _, _, span_id, _ = result.context.value("s", ("t",))["traceparent"].split("-")
    assert int(span_id, 16) == calls[1].context.span_id  # the payload carried its span


def test_a_tool_placed_nowhere_is_refused_before_the_run(cluster: Any) -> None:
    with pytest.raises(ToolError, match=r"tool 0 \(where\) at /x-obelisk-executor: 'gpu' is "
                                        r"not an executor: use \"local\""):
        dask(cluster, [{"_tool": "where"}], tools=[tool("where", **{"x-obelisk-executor": "gpu"})])
    with pytest.raises(ValueError, match="executor is 'gpu'"):
        dask(cluster, [{"_tool": "where"}], executor="gpu")


def test_a_function_workers_cannot_import_fails_only_on_the_cluster(cluster: Any) -> None:
    plan = [{"_tool": "lam", "_outputPath": "†s.l || †e.l"},
            {"_tool": "near", "_outputPath": "†s.n"}]
    tools = [tool("lam"), tool("near", **{"x-obelisk-executor": "local"})]
    result = dask(cluster, plan, tools=tools,
                  activities={"lam": lambda c, t, x: 1, "near": lambda c, t, x: 2})
    error = result.context.value("e", ("l",))
    assert error["type"] == "NoActivity"
    assert error["message"].startswith("activity 'lam': test_dask:test_a_function_workers_")
    assert "<lambda> is defined inside a function (or is a lambda)" in error["message"]
    assert 'give its tool "x-obelisk-executor": "local"' in error["message"]
    assert result.context.value("s", ("n",)) == 2


def test_a_module_the_workers_lack_fails_the_call_clearly(cluster: Any,
                                                          tmp_path: pathlib.Path) -> None:
    name = f"only_here_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("def act(call, tool, context):\n    return 1\n")
    sys.path.insert(0, str(tmp_path))  # the client imports it; the workers cannot
    try:
        result = dask(cluster, [{"_tool": "t", "_outputPath": "†s.t || †e.t"}],
                      activities={"t": f"{name}:act"})
    finally:
        sys.path.remove(str(tmp_path))
    error = result.context.value("e", ("t",))
    assert error["type"] == "NoActivity"
    assert error["message"].startswith(f"a Dask worker cannot import the activity {name}:act "
                                       "(ModuleNotFoundError")
    assert "put its folder on their PYTHONPATH" in error["message"]


def test_an_activity_asking_its_worker_to_exit_stops_the_run(cluster: Any) -> None:
    with pytest.raises(SystemExit) as stopped:
        dask(cluster, [{"_tool": "exits"}])
    assert stopped.value.code == 3


def test_the_interpreter_takes_an_asynchronous_client_only() -> None:
    from obelisk import DaskInterpreter

    with pytest.raises(TypeError, match="takes an asynchronous distributed.Client"):
        DaskInterpreter(object())  # type: ignore[arg-type]


def scheduler_keys(dask_scheduler: Any = None) -> list[str]:
    """Run in the scheduler: the keys of the tasks it holds."""
    return [f"{key} {ts.state}" for key, ts in dask_scheduler.tasks.items()]


def test_cancelling_the_run_cancels_its_futures(cluster: Any, tmp_path: pathlib.Path) -> None:
    from obelisk import run_dask

    log, go = tmp_path / "log", tmp_path / "go"
    plan = [{"_tool": "waits", "i": i, "log": str(log), "go": str(go),
             "_outputPath": f"†s.w{i}"} for i in range(2)]

    async def cancelled(client: Any) -> tuple[Any, list[str], list[str]]:
        run = asyncio.create_task(run_dask(plan, client=client, activities=acts.ACTIVITIES))
        while not log.exists() or len(log.read_text().splitlines()) < 2:
            await asyncio.sleep(0.01)
        before = await client.run_on_scheduler(scheduler_keys)
        run.cancel()
        result = await run
        for _ in range(500):  # the cancel is a message to the scheduler: until it is read
            after = await client.run_on_scheduler(scheduler_keys)
            if not after:
                break
            await asyncio.sleep(0.01)
        go.touch()  # frees the worker threads
        return result, before, after

    result, before, after = on_cluster(cluster, cancelled)
    assert result.status == "cancelled"
    assert len([k for k in before if k.startswith("waits-")]) == 2
    assert [k for k in after if k.startswith("waits-")] == []


def test_a_durable_run_on_the_cluster_resumes(cluster: Any, tmp_path: pathlib.Path) -> None:
    from obelisk import resume_dask, run_dask

    log, go = tmp_path / "log", tmp_path / "go"
    plan = [{"_tool": "step", "i": 1, "log": str(log), "_outputPath": "†s.a"},
            {"_tool": "waits", "i": 2, "log": str(log), "go": str(go), "after": "†s.a",
             "_outputPath": "†s.b"}]
    with Journal.open(tmp_path / "j.db") as journal:

        async def interrupted(client: Any) -> Any:
            run = asyncio.create_task(run_dask(plan, client=client, activities=acts.ACTIVITIES,
                                               journal=journal, run_id="r"))
            while not log.exists() or len(log.read_text().splitlines()) < 2:
                await asyncio.sleep(0.01)
            run.cancel()
            return await run

        assert on_cluster(cluster, interrupted).status == "cancelled"
        assert recorded(journal, "r").options["interpreter"] == "dask"
        with pytest.raises(JournalUnreadable, match="recorded with the Dask interpreter"):
            resume(journal, "r", activities=acts.ACTIVITIES)
        go.touch()
        events: list[dict[str, Any]] = []
        result = on_cluster(cluster, lambda client: resume_dask(
            journal, "r", client=client, activities=acts.ACTIVITIES, on_event=events.append))
    assert result.status == "completed"
    assert events[0]["resumed"] is True and events[-1]["status"] == "completed"
    finished = [(e["call"], e.get("replayed", False)) for e in events
                if e["type"] == "call_finished"]
    assert finished == [(0, True), (1, False)]  # call 0 retold from the journal, 1 run
    assert result.context.value("s", ("b",)) == {"waited": 2}
    starts = log.read_text().splitlines()
    assert len(starts) == 3 and starts[1].split()[1] == starts[2].split()[1] == "r//0/1/"


def test_the_agent_loop_runs_its_activities_on_the_cluster(cluster: Any) -> None:
    from obelisk import DaskInterpreter, run_agent
    from obelisk.llm import ScriptedLLM

    solutions = [{"calls": [{"_tool": "where", "_outputPath": "†s.w"},
                            {"_tool": "think", "_outputPath": "†s.t"}], "output": None},
                 {"calls": [], "output": "†s.w.pid"}]
    tools = [tool("where"), tool("think", properties={"_tool": {"const": "think"},
                                                      "_output": {"type": "string"}})]
    llm = ScriptedLLM(solutions, latent={"think": ["thought"]})
    result = on_cluster(cluster, lambda client: run_agent(
        [], llm, tools=tools, activities={"where": acts.where},
        interpreter=DaskInterpreter(client, paths={"where": ActivityPath(
            "dask_activities", "ACTIVITIES", "where")})))
    assert result.status.value == "completed"
    assert result.output != os.getpid()
    assert result.context.value("s", ("t",)) == "thought"  # the latent call, answered here

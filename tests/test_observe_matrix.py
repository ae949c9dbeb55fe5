"""Issue 30's acceptance matrix: spans and events over every kind of run.

Each kind of run (a plan run, sync and asyncio; a dry run; a durable run, sync and
asyncio; a resumed plan run; an agent run, whole and streamed; with a delegate; with a
latent call; with approvals) runs the same kinds of calls: one that fails and is routed
to its error branch, one skipped on the dead branch, one that runs with secrets in its
arguments and result, one that fails. The same checks hold for each, so a cell of the
matrix is a row of the table, not a test of its own:

- the events: every event valid under ``obelisk.event_schema()``, ``seq`` from 1 by one,
  ``call`` on every call event, the kinds the run must tell, each call ended once, skip
  reasons, no content unless opted in;
- the spans: one root per run, every span of the run in its trace, an ``execute_tool``
  span per call ended, under the root, with the call's outcome, status and
  ``error.type``, skip reason; a ``plan`` span per tick under the root, a ``chat`` span
  per LLM request under its tick's (a latent call's under the call's); the metrics; no
  content attributes unless opted in;
- content opted in: arguments, results, requests and answers recorded, every secret
  (``api_key``, ``Authorization``, ``Bearer``...) masked.

The agent resumed from its journal (issue 30's G1) is left to tests/test_spans.py and
the journal tests.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from test_events import cancelled_once_started
from test_spans import Telemetry, otel  # noqa: F401 - the fixture

import obelisk
from obelisk.interpreters.stream import CONTENT_VARIABLE, masked
from obelisk.llm.scripted import ScriptedLLM

VALIDATOR = jsonschema.Draft202012Validator(obelisk.event_schema())
CALL_EVENTS = {"call_admitted", "call_ready", "call_approved", "call_started", "call_finished",
               "call_skipped"}
ERROR_OUTCOMES = {"failed", "cancelled", "invalid"}
CONTENT_ATTRIBUTES = {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                      "gen_ai.input.messages", "gen_ai.output.messages"}
SECRETS = ("sk-matrix-key-0001", "matrix-bearer-0002", "matrix-token-0003")

#: a raises (routed to †err), so b (reading †r) is skipped; c runs with secrets in its
#: arguments and result; d raises (failed).
PLAN = [{"_tool": "a", "x": 1, "_outputPath": "†r || †err"},
        {"_tool": "b", "y": "†r", "_outputPath": "†s"},
        {"_tool": "c", "z": "†err", "api_key": SECRETS[0],
         "header": f"Bearer {SECRETS[1]}", "_outputPath": "†t"},
        {"_tool": "d", "_outputPath": "†u"}]
TOOLS = [{"type": "object", "properties": {"_tool": {"const": name}}} for name in "abcd"]


def boom(*_: Any) -> Any:
    raise ValueError("no")


ACTS: dict[str, Any] = {"a": boom, "b": lambda *_: 2,
                        "c": lambda *_: {"token": SECRETS[2], "v": 3}, "d": boom}
MOCKS = {"a": {"raise": {"type": "ValueError"}}, "b": {"return": 2},
         "c": {"return": {"token": SECRETS[2], "v": 3}}, "d": {"raise": {"type": "ValueError"}}}
TASK = [{"type": "input", "input": {"request": f"go (Authorization: Bearer {SECRETS[1]})",
                                    "api_key": SECRETS[0]}}]

Sink = Callable[[dict[str, Any]], None]


@dataclass
class Watch:
    """Where a run of the table keeps its journal, and its telemetry."""

    tmp: pathlib.Path
    telemetry: Telemetry


def plan_sync(sink: Sink, _: Watch) -> None:
    obelisk.run_sync(PLAN, [], activities=ACTS, on_event=sink)


def instanced(sink: Sink, _: Watch) -> None:
    context = [{"type": "input", "_instance": "①", "x": 1},
               {"type": "input", "_instance": "②", "x": 2}]
    obelisk.run_sync(PLAN, context, activities=ACTS, instances=True, on_event=sink)


def plan_asyncio(sink: Sink, _: Watch) -> None:
    asyncio.run(obelisk.run_async(PLAN, [], activities=ACTS, on_event=sink))


def dry(sink: Sink, _: Watch) -> None:
    obelisk.dry_run(PLAN, [], mocks=MOCKS, on_event=sink)


def dry_asyncio(sink: Sink, _: Watch) -> None:
    obelisk.dry_run(PLAN, [], mocks=MOCKS, interpreter="asyncio", on_event=sink)


def durable(sink: Sink, at: Watch) -> None:
    with obelisk.Journal.open(at.tmp / "run.db") as journal:
        obelisk.run_durable(PLAN, [], journal=journal, run_id="D", activities=ACTS,
                            on_event=sink)


def durable_asyncio(sink: Sink, at: Watch) -> None:
    with obelisk.Journal.open(at.tmp / "run.db") as journal:
        asyncio.run(obelisk.run_durable_async(PLAN, [], journal=journal, run_id="D",
                                              activities=ACTS, on_event=sink))


def stopped(at: Watch) -> Any:
    """A journal holding run D, stopped while c ran (its spans cleared)."""
    def stop(*_: Any) -> Any:
        raise KeyboardInterrupt

    journal = obelisk.Journal.open(at.tmp / "run.db")
    with pytest.raises(KeyboardInterrupt):
        obelisk.run_durable(PLAN, [], journal=journal, run_id="D",
                            activities={**ACTS, "c": stop})
    at.telemetry.exporter.clear()
    return journal


def resumed(sink: Sink, at: Watch) -> None:
    """The run stopped while c runs, then resumed: the resumed run's stream and spans."""
    with stopped(at) as journal:
        obelisk.resume(journal, "D", activities=ACTS, on_event=sink)


def resumed_asyncio(sink: Sink, at: Watch) -> None:
    with stopped(at) as journal:
        asyncio.run(obelisk.resume_async(journal, "D", activities=ACTS, on_event=sink))


def answers(*ticks: Any) -> list[Any]:
    return [*ticks, {"calls": [], "output": "done"}]


def agent(sink: Sink, _: Watch) -> None:
    obelisk.run_agent_sync(TASK, ScriptedLLM(answers({"calls": PLAN, "output": None})),
                           tools=TOOLS, activities=ACTS, on_event=sink)


def streamed(sink: Sink, _: Watch) -> None:
    obelisk.run_agent_sync(TASK, ScriptedLLM(answers({"calls": PLAN, "output": None}),
                                             delays=0.001),
                           tools=TOOLS, activities=ACTS, stream=True, on_event=sink)


SUMMARISE = {"type": "object", "properties": {
    "_tool": {"const": "summarise"}, "text": {"type": "string"},
    "_delegate": {"const": "anonymous"}, "_output": {"type": "string"}}}


def delegated(sink: Sink, _: Watch) -> None:
    tick = {"calls": [{"_tool": "summarise", "text": "long", "_outputPath": "†state.s"},
                      *PLAN], "output": None}
    llm = ScriptedLLM([tick, {"calls": [], "output": "short"}, {"calls": [], "output": "ok"}])
    obelisk.run_agent_sync(TASK, llm, tools=[*TOOLS, SUMMARISE], activities=ACTS,
                           on_event=sink)


THINK = {"type": "object", "properties": {"_tool": {"const": "think"}, "q": {"type": "string"},
                                          "_output": {"type": "string"}}}


def latent(sink: Sink, _: Watch) -> None:
    tick = {"calls": [{"_tool": "think", "q": "why", "_outputPath": "†state.t"}, *PLAN],
            "output": None}
    obelisk.run_agent_sync(TASK, ScriptedLLM(answers(tick), latent={"think": ["because"]}),
                           tools=[*TOOLS, THINK], activities=ACTS, on_event=sink)


def verdict(call: dict[str, Any]) -> Any:
    """Deny the call writing †denied, replace the one writing †replaced, approve others."""
    if call["_outputPath"] == "†replaced":
        return {**call, "x": 2}
    return call["_outputPath"] != "†denied" or "no"


def approvals(sink: Sink, _: Watch) -> None:
    plan = [*PLAN, {"_tool": "b", "_outputPath": "†denied"},
            {"_tool": "b", "x": 1, "_outputPath": "†replaced"}]
    obelisk.run_agent_sync(TASK, ScriptedLLM(answers({"calls": plan, "output": None})),
                           tools=TOOLS, activities=ACTS, on_event=sink, approve=verdict)


def durable_agent(sink: Sink, at: Watch) -> None:
    with obelisk.Journal.open(at.tmp / "run.db") as journal:
        obelisk.run_agent_sync(TASK, ScriptedLLM(answers({"calls": PLAN, "output": None})),
                               tools=TOOLS, activities=ACTS, on_event=sink, journal=journal,
                               run_id="A")


PLAN_TOLD = {"run_started", "plan", "call_ready", "call_started", "call_finished",
             "call_skipped", "run_ended"}
RESUMED_TOLD = {"run_started", "plan", "call_started", "call_finished", "run_ended"}
AGENT_TOLD = PLAN_TOLD | {"tick_started", "llm_request", "llm_answer", "tick_ended"}
#: kind of run: (how it runs, the event types it must tell)
KINDS: dict[str, tuple[Callable[[Sink, Watch], None], set[str]]] = {
    "plan run sync": (plan_sync, PLAN_TOLD),
    "plan run asyncio": (plan_asyncio, PLAN_TOLD),
    "plan run over instances": (instanced, PLAN_TOLD),
    "dry run": (dry, PLAN_TOLD),
    "dry run asyncio": (dry_asyncio, PLAN_TOLD),
    "durable run": (durable, PLAN_TOLD),
    "durable run asyncio": (durable_asyncio, PLAN_TOLD),
    "resumed plan run": (resumed, RESUMED_TOLD),
    "resumed plan run asyncio": (resumed_asyncio, RESUMED_TOLD),
    "agent run": (agent, AGENT_TOLD),
    "agent run streamed": (streamed, AGENT_TOLD | {"call_admitted"}),
    "agent with a delegate": (delegated, AGENT_TOLD),
    "agent with a latent call": (latent, AGENT_TOLD),
    "agent with approvals": (approvals, AGENT_TOLD | {"call_approved"}),
    "durable agent run": (durable_agent, AGENT_TOLD),
}


def watched(kind: str, telemetry: Telemetry, tmp: pathlib.Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    KINDS[kind][0](events.append, Watch(tmp, telemetry))
    return events


# -- the events ------------------------------------------------------------------------------


def own(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's own events (a delegate's, relayed, left out)."""
    return [e for e in events if "delegate" not in e]


def ends(events: list[dict[str, Any]]) -> dict[tuple[int | None, int], dict[str, Any]]:
    """Each call's end event (call_finished or call_skipped) by (tick, node): once."""
    found: dict[tuple[int | None, int], dict[str, Any]] = {}
    for event in own(events):
        if event["type"] in ("call_finished", "call_skipped"):
            key = (event.get("tick"), event["node"])
            assert key not in found, f"call {key} ended twice"
            found[key] = event
    return found


def check_order(mine: list[dict[str, Any]]) -> None:
    """A call is told after a ``plan`` event described it; a tick's events come between
    its ``tick_started`` and ``tick_ended``."""
    described: set[tuple[int | None, int]] = set()
    open_tick = None
    for event in mine:
        if event["type"] == "plan":
            described |= {(event.get("tick"), n["node"]) for n in event["nodes"]}
        elif event["type"] in CALL_EVENTS:
            assert (event.get("tick"), event["node"]) in described, event
        if event["type"] == "tick_started":
            assert open_tick is None
            open_tick = event["tick"]
        elif event["type"] == "tick_ended":
            assert open_tick == event["tick"]
            open_tick = None
        elif "tick" in event:
            assert event["tick"] == open_tick, event
    assert open_tick is None


def check_events(events: list[dict[str, Any]], told: set[str],
                 errors: tuple[str, ...] = ("ValueError", "Denied")) -> None:
    for event in events:
        VALIDATOR.validate(event)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all("call" in e for e in events if e["type"] in CALL_EVENTS)
    mine = own(events)
    assert mine[0]["type"] == "run_started" and mine[-1]["type"] == "run_ended"
    assert told <= {e["type"] for e in mine}, told - {e["type"] for e in mine}
    check_order(mine)
    ended = ends(events)
    begun = {(e.get("tick"), e["node"]) for e in mine if e["type"] in CALL_EVENTS}
    assert begun == set(ended)  # every call told ends, once
    for event in ended.values():
        if event["type"] == "call_skipped":
            assert event["reason"].startswith("dead branch: †r was not written")
        elif event["outcome"] == "failed":
            assert event["error"]["type"] in errors
    assert not any(name in e for e in events for name in ("params", "result", "content"))
    assert not any("calls" in e for e in events if e["type"] == "plan")


# -- the spans -------------------------------------------------------------------------------

OURS = ("invoke_workflow ", "invoke_agent ", "plan ", "chat ", "execute_tool ")


def children(spans: list[ReadableSpan], parent: ReadableSpan, prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix) and s.parent is not None
            and s.parent.span_id == parent.context.span_id]


def check_calls(spans: list[ReadableSpan], root: ReadableSpan,
                events: list[dict[str, Any]]) -> None:
    """An ended execute_tool span under the root per call, as the call ended."""
    calls = {(s.attributes.get("obelisk.tick"), s.attributes["obelisk.node"]): s
             for s in children(spans, root, "execute_tool ")}
    ended = {key: e for key, e in ends(events).items() if not e.get("replayed")}
    assert set(calls) == set(ended)  # a call retold from a journal was traced before
    for key, event in ended.items():
        span = calls[key]
        assert span.name == f"execute_tool {event['tool']}"
        assert span.attributes["obelisk.call"] == event["call"]
        assert span.attributes.get("obelisk.instance") == event.get("instance")
        verdicts = [e["verdict"] for e in own(events) if e["type"] == "call_approved"
                    and (e.get("tick"), e["node"]) == key]
        assert [e.attributes["obelisk.verdict"] for e in span.events
                if e.name == "obelisk.approval"] == verdicts
        if event["type"] == "call_skipped":
            assert span.attributes["obelisk.outcome"] == "skipped"
            assert span.attributes["obelisk.skip_reason"] == event["reason"]
            continue
        assert span.attributes["obelisk.outcome"] == event["outcome"]
        assert span.attributes["obelisk.alternative"] == event["alternative"]
        if event["outcome"] in ERROR_OUTCOMES:
            assert span.status.status_code is StatusCode.ERROR
            assert span.attributes["error.type"] == (
                (event.get("error") or {}).get("type") or event["outcome"])
        else:
            assert span.status.status_code is StatusCode.UNSET


def check_requests(spans: list[ReadableSpan], root: ReadableSpan,
                   events: list[dict[str, Any]]) -> None:
    """A plan span per tick under the root, a chat span per request under its tick's (a
    latent call's under the call's), with the answer's tokens."""
    ticks = {s.attributes["obelisk.tick"]: s for s in children(spans, root, "plan ")}
    assert sorted(ticks) == [e["tick"] for e in own(events) if e["type"] == "tick_started"]
    calls = {(s.attributes.get("obelisk.tick"), s.attributes["obelisk.node"]): s
             for s in children(spans, root, "execute_tool ")}
    answers = [e for e in own(events) if e["type"] == "llm_answer"]
    for answer in answers:
        parent = (calls[(answer["tick"], answer["node"])] if "node" in answer
                  else ticks[answer["tick"]])
        (chat,) = [s for s in children(spans, parent, "chat ")
                   if s.attributes["gen_ai.usage.input_tokens"] == answer["input_tokens"]]
        assert chat.attributes["gen_ai.usage.output_tokens"] == answer["output_tokens"]
        assert chat.attributes["gen_ai.provider.name"] == answer["provider"]
        assert chat.attributes.get("obelisk.response.time_to_first_call") == answer.get(
            "first_call")
        assert chat.attributes["obelisk.stream"] is ("node" not in answer and
                                                     any(e.get("stream") for e in events))
    assert len(children(spans, root, "chat ")) == 0  # none outside a tick or a call


def check_spans(telemetry: Telemetry, events: list[dict[str, Any]]) -> None:
    spans = [s for s in telemetry.spans() if s.name.startswith(OURS)]
    (root,) = [s for s in spans if s.parent is None]
    started, ended = own(events)[0], own(events)[-1]
    operation = "invoke_agent" if started["kind"] == "agent" else "invoke_workflow"
    assert root.name.startswith(operation) and root.attributes["gen_ai.operation.name"] == operation
    if "run" in started:
        assert root.attributes["obelisk.run.id"] == started["run"]
    assert all(s.context.trace_id == root.context.trace_id for s in spans)
    assert root.status.status_code is (StatusCode.UNSET if ended["status"] == "completed"
                                       else StatusCode.ERROR)
    check_calls(spans, root, events)
    check_requests(spans, root, events)
    answers = [e for e in events if e["type"] == "llm_answer"]  # a delegate's too
    usage = telemetry.metric("gen_ai.client.token.usage")
    for kind in ("input", "output"):
        assert sum(p.sum for p in usage if p.attributes["gen_ai.token.type"] == kind) == sum(
            e[f"{kind}_tokens"] for e in answers)
    duration = telemetry.metric("gen_ai.client.operation.duration")
    assert sum(p.count for p in duration) == len(answers)
    assert not any(CONTENT_ATTRIBUTES & set(s.attributes) for s in spans)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_run_is_told_and_traced(kind: str, otel: Telemetry,  # noqa: F811
                                              tmp_path: pathlib.Path) -> None:
    events = watched(kind, otel, tmp_path)
    check_events(events, KINDS[kind][1])
    check_spans(otel, events)


# -- content, opted in -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_content_is_recorded_when_opted_in_with_every_secret_masked(
        kind: str, otel: Telemetry, tmp_path: pathlib.Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    events = watched(kind, otel, tmp_path)
    spans = [s for s in otel.spans() if s.name.startswith(OURS)]
    recorded = json.dumps(events) + json.dumps([dict(s.attributes) for s in spans])
    assert not any(secret in recorded for secret in SECRETS)
    calls = {(s.attributes.get("obelisk.tick"), s.attributes["obelisk.node"]): s
             for s in spans if s.name.startswith("execute_tool ")}
    done = [e for e in own(events) if e["type"] == "call_finished" and e["tool"] == "c"]
    assert done
    for c in done:
        assert c["result"] == {"token": "***", "v": 3}
        span = calls[(c.get("tick"), c["node"])]
        assert json.loads(span.attributes["gen_ai.tool.call.result"]) == c["result"]
    ready = [e for e in own(events) if e["type"] == "call_ready" and e["tool"] == "c"]
    assert len(ready) == len(done)  # (resumed: made ready before the stop, and retold)
    for c in ready:
        if c.get("replayed"):  # retold from the journal, which holds no parameters
            continue
        assert c["params"]["api_key"] == "***" and c["params"]["header"] == "Bearer ***"
        span = calls[(c.get("tick"), c["node"])]
        assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == c["params"]
    if KINDS[kind][1] >= AGENT_TOLD:
        request = next(e for e in own(events) if e["type"] == "llm_request")
        assert r'Bearer ***)\"' in json.dumps(request["content"])
        chat = next(s for s in spans if s.name.startswith("chat "))
        assert chat.attributes["gen_ai.input.messages"] == json.dumps(request["content"])
        answer = next(e for e in own(events) if e["type"] == "llm_answer")
        assert '"api_key": "***"' in json.dumps(answer["content"])
        assert '"api_key": "***"' in chat.attributes["gen_ai.output.messages"]


def test_a_secret_written_as_json_text_is_masked() -> None:
    # A request's turns hold earlier ticks' calls and the input as JSON text (failed
    # before: only the values of dicts' keys were masked, so the text kept them).
    text = '{"api_key": "k1", "x_Token": "a\\"b", "password":"p", "n": "k1", "secret": 2}'
    assert masked(text) == (
        '{"api_key": "***", "x_Token": "***", "password":"***", "n": "k1", "secret": 2}')


@pytest.mark.parametrize("kind", ["durable run", "durable run asyncio", "resumed plan run",
                                  "resumed plan run asyncio"])
def test_a_durable_runs_call_spans_hold_the_key_and_journal_row_of_the_call(
        kind: str, otel: Telemetry, tmp_path: pathlib.Path) -> None:  # noqa: F811
    # Issue 30's obelisk.* attributes: the output path taken, the idempotency key and the
    # journal sequence (failed before: the spans had a place for them, no event told them).
    events = watched(kind, otel, tmp_path)
    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        rows = obelisk.journal.history(journal, "D")["events"]
    finished = {e["call"]: e for e in events if e["type"] == "call_finished"}
    spans = {s.attributes["obelisk.call"]: s for s in otel.named("execute_tool ")}
    # a call retold from the journal names its own finish row (failed before: the row
    # the resumed run's recorder wrote last), and has no span (it was traced before)
    live = {call for call, e in finished.items() if not e.get("replayed")}
    assert live <= set(spans) and not (set(finished) - live) & set(spans)
    for call, event in finished.items():
        assert event["key"] == obelisk.journal.idempotency_key("D", call)
        (row,) = [r for r in rows if r["seq"] == event["journal_seq"]]
        assert row["call"] == call and row["event"] == "finish"
        if call in spans:
            assert spans[call].attributes["obelisk.idempotency_key"] == event["key"]
            assert spans[call].attributes["obelisk.journal.seq"] == row["seq"]
            assert spans[call].attributes.get("obelisk.output_path") == event.get(
                "output_path")
    assert finished[0]["output_path"] == "†err"
    assert finished[2]["output_path"] == "†t"
    assert all(("output_path" in e) == (e["outcome"] == "executed") for e in finished.values())


def durable_streamed_agent(sink: Sink, at: Watch) -> None:
    with obelisk.Journal.open(at.tmp / "run.db") as journal:
        obelisk.run_agent_sync(TASK, ScriptedLLM(answers({"calls": PLAN, "output": None}),
                                                 delays=0.001),
                               tools=TOOLS, activities=ACTS, stream=True, on_event=sink,
                               journal=journal, run_id="A")


@pytest.mark.parametrize("run", [durable_agent, durable_streamed_agent],
                         ids=["whole", "streamed"])
def test_a_durable_agent_runs_call_events_name_their_key_and_journal_row(
        run: Callable[[Sink, Watch], None], otel: Telemetry,  # noqa: F811
        tmp_path: pathlib.Path) -> None:
    # As a durable plan run's (failed before: an agent tick's follower had no rows).
    events: list[dict[str, Any]] = []
    run(events.append, Watch(tmp_path, otel))
    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        rows = obelisk.journal.history(journal, "A")["events"]
    finished = [e for e in own(events) if e["type"] == "call_finished"]
    spans = {s.attributes["obelisk.call"]: s for s in otel.named("execute_tool ")}
    assert finished
    for event in finished:
        assert event["key"] == obelisk.journal.idempotency_key("A", event["call"], tick=1)
        (row,) = [r for r in rows if r["seq"] == event["journal_seq"]]
        assert row["call"] == event["call"] and row["event"] == "finish"
        span = spans[event["call"]]
        assert span.attributes["obelisk.idempotency_key"] == event["key"]
        assert span.attributes["obelisk.journal.seq"] == row["seq"]


# -- agent runs that fail or are cancelled ----------------------------------------------------


def test_an_agent_run_whose_llm_fails_ends_its_spans_in_error(otel: Telemetry) -> None:  # noqa: F811
    events: list[dict[str, Any]] = []
    result = obelisk.run_agent_sync(TASK, ScriptedLLM([]), on_event=events.append)
    assert result.status == "failed"
    check_events(events, {"run_started", "tick_started", "llm_request", "llm_answer",
                          "tick_ended", "run_ended"})
    answer = next(e for e in events if e["type"] == "llm_answer")
    assert answer["error"] == "ScriptExhausted" and events[-1]["status"] == "failed"
    (chat,) = otel.named("chat ")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "ScriptExhausted"
    (root,) = otel.named("invoke_agent")
    assert root.status.status_code is StatusCode.ERROR
    assert len(otel.named("plan ")) == 1  # closed
    (duration,) = otel.metric("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "ScriptExhausted"
    assert otel.metric("gen_ai.client.token.usage") == []


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_cancelled_agent_run_closes_its_spans_and_ends_its_calls(
        stream: bool, otel: Telemetry) -> None:  # noqa: F811
    async def hang(*_: Any) -> Any:
        await asyncio.sleep(60)

    events: list[dict[str, Any]] = []
    solution = {"calls": [{"_tool": "a", "_outputPath": "†x"}], "output": None}

    result = asyncio.run(cancelled_once_started(obelisk.run_agent(
        TASK, ScriptedLLM([solution]), tools=TOOLS, activities={"a": hang}, stream=stream,
        on_event=events.append), events))
    assert result.status == "cancelled"
    check_events(events, {"call_started", "call_finished", "tick_ended", "run_ended"})
    assert [e["outcome"] for e in events if e["type"] == "call_finished"] == ["cancelled"]
    assert events[-1]["status"] == "cancelled"
    check_spans(otel, events)
    (root,) = otel.named("invoke_agent")
    assert root.attributes["error.type"] == "cancelled"
    assert {s.name for s in otel.spans()} == {"invoke_agent obelisk", "plan obelisk",
                                              "chat ScriptedLLM", "execute_tool a"}

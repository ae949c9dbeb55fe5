"""The agent loop (obelisk/agent/loop.py): ticks, statuses, the plan message, lazy mode,
latent execution and cancellation, with the scripted adapter."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_agent_request import golden

from obelisk import Context
from obelisk.agent import (
    AgentError,
    AgentResult,
    AgentStatus,
    ApprovePlan,
    Asked,
    EditPlan,
    Ran,
    RejectPlan,
    TickEnded,
    run_agent,
    run_agent_sync,
)
from obelisk.core.plain import thaw
from obelisk.llm import ScriptedLLM

DATE = "2026-11-23T00:00:00Z"
REFUND = {"type": "object", "description": "Refund an order.",
          "properties": {"_tool": {"const": "refund"}, "orderId": {"type": "string"},
                         "amount": {"type": "number"},
                         "_output": {"type": "object", "properties": {"id": {"type": "string"}}}},
          "required": ["orderId"]}
THINK = {"type": "object", "properties": {"_tool": {"const": "think"},
                                          "q": {"type": "string"},
                                          "_output": {"type": "string"}}}
TOOLS = [REFUND, THINK]
CONTEXT = [{"type": "input", "input": {"orderId": "o-1", "amount": "20"}}]
CALL = {"_tool": "refund", "orderId": "†input.orderId", "_outputPath": "†state.refund"}


def refund(call: dict[str, Any], tool: Any, context: Any) -> dict[str, str]:
    return {"id": "r-" + call["orderId"]}


def agent(solutions: Any, **kw: Any) -> AgentResult:
    latent = kw.pop("latent", None)
    kw.setdefault("tools", TOOLS)
    kw.setdefault("activities", {"refund": refund})
    return run_agent_sync(CONTEXT, ScriptedLLM(solutions, latent=latent), clock=lambda: DATE,
                          **kw)


def plans(result: AgentResult) -> list[Any]:
    return [thaw(m) for m in result.context.messages if m.get("type") == "plan"]


def errors(result: AgentResult) -> list[Any]:
    return [thaw(m)["data"] for m in result.context.messages if m.get("type") == "error"]


# -- statuses, as a table ----------------------------------------------------------------------

S = [{"calls": [CALL], "output": None}, {"calls": [], "output": "†state.refund.id"}]
EMPTY = {"calls": [], "output": None}

STATUSES = [
    # (solutions, options, status, ticks, output)
    (S, {}, AgentStatus.COMPLETED, 2, "r-o-1"),
    ([{"calls": [CALL], "output": "†state.refund.id"}], {}, AgentStatus.COMPLETED, 1, "r-o-1"),
    ([EMPTY, EMPTY], {}, AgentStatus.STALLED, 2, None),
    ([EMPTY, EMPTY, EMPTY], {"max_stalls": 3}, AgentStatus.STALLED, 3, None),
    ([{"calls": [CALL], "output": None}] * 3, {"max_ticks": 3}, AgentStatus.MAX_TICKS, 3, None),
    (S, {"max_ticks": 2}, AgentStatus.COMPLETED, 2, "r-o-1"),  # completion before the budget
    (S[:1], {}, AgentStatus.FAILED, 2, None),  # the script runs out: the adapter failed
]


@pytest.mark.parametrize(("solutions", "options", "status", "ticks", "output"), STATUSES)
def test_statuses(solutions: Any, options: dict[str, Any], status: AgentStatus, ticks: int,
                  output: Any) -> None:
    result = agent(solutions, **options)
    assert (result.status, len(result.ticks), result.output) == (status, ticks, output)
    assert result.reason


@pytest.mark.parametrize(("budget", "reason"), [(1, "no output after 1 tick"),
                                                 (3, "no output after 3 ticks")])
def test_the_tick_budget_reason_counts_in_words(budget: int, reason: str) -> None:
    result = agent([{"calls": [CALL], "output": None}] * budget, max_ticks=budget)
    assert (result.status, result.reason) == (AgentStatus.MAX_TICKS, reason)


def test_a_tick_appends_its_writes_then_its_plan_message_with_outcomes() -> None:
    result = agent(S)
    (plan,) = plans(result)
    assert plan == {"type": "plan", "plan": [CALL], "mode": "eager",
                    "outcomes": [{"call": 0, "instance": None, "outcome": "executed"}]}
    kinds = [m.get("type") for m in result.context.messages]
    assert kinds == ["input", "data", "plan"]
    assert result.ticks[0].solution == S[0]
    assert result.ticks[0].usage.input_tokens > 0 and result.ticks[1].usage.output_tokens > 0
    assert result.usage.input_tokens == sum(t.usage.input_tokens for t in result.ticks)


def test_the_next_request_shows_the_plan_and_the_errors_fed_back() -> None:
    llm = ScriptedLLM([{"calls": [{**CALL, "amount": "†input.amount"}], "output": None},
                       {"calls": [], "output": None}, {"calls": [], "output": 1}])
    result = run_agent_sync(CONTEXT, llm, tools=TOOLS, activities={"refund": refund})
    assert result.status is AgentStatus.COMPLETED
    assert [e["error"]["type"] for e in errors(result)] == ["Invalid", "NoProgress"]
    second = llm.requests[1].render()  # the call's error is seen through the plan's outcomes
    assert "## Plan (mode: eager)" in second and '"outcome": "invalid"' in second
    assert '"error": "Invalid"' in second and "## Errors" not in second
    third = llm.requests[2].render()  # an error after the newest plan is listed
    assert "## Errors" in third and "NoProgress" in third


def test_a_plan_message_is_replaced_by_the_next_tick() -> None:
    llm = ScriptedLLM([{"calls": [CALL], "output": None},
                       {"calls": [{**CALL, "_outputPath": "†state.again"}], "output": None},
                       {"calls": [], "output": "†state.again.id"}])
    result = run_agent_sync(CONTEXT, llm, tools=TOOLS, activities={"refund": refund})
    assert [p["plan"][0]["_outputPath"] for p in plans(result)] == ["†state.refund",
                                                                    "†state.again"]
    third = llm.requests[2].render()
    assert "†state.again" in third and "†state.refund\"" not in third.split("## Plan")[1]


def test_invalid_solution_ends_the_tick_without_a_plan_message() -> None:
    result = agent([{"calls": [{"_tool": "refund"}]}, {"calls": [], "output": 1}])
    assert plans(result) == []
    (error,) = errors(result)
    assert error["error"]["type"] == "InvalidSolution"
    assert error["error"]["data"]["errors"]
    assert result.ticks[0].errors == ("InvalidSolution",) or list(result.ticks[0].errors) == [
        "InvalidSolution"]


def test_output_missing_then_output_schema_keep_the_loop_going() -> None:
    result = agent([{"calls": [], "output": "†state.none"},
                    {"calls": [CALL], "output": {"id": 3}},
                    {"calls": [CALL], "output": {"id": "†state.refund.id"}}],
                   output_schema={"type": "object", "properties": {"id": {"type": "string"}}})
    assert [e["error"]["type"] for e in errors(result)] == ["OutputMissing", "InvalidSolution"]
    assert result.output == {"id": "r-o-1"}


def test_mode_comes_from_the_newest_plan_message() -> None:
    llm = ScriptedLLM([{"calls": [], "output": 1}])
    context = [*CONTEXT, {"type": "plan", "plan": [], "mode": "lazy", "outcomes": []}]
    run_agent_sync(context, llm, tools=TOOLS)
    assert '"_output"' not in llm.requests[0].schema_text  # lazy: no tool shows _output


# -- lazy mode: on_plan approves, edits, rejects -------------------------------------------------


@pytest.mark.parametrize("answer", [ApprovePlan(), True, None])
def test_lazy_mode_runs_an_approved_plan(answer: Any) -> None:
    seen = []

    def on_plan(plan: Any) -> Any:
        seen.append(len(plan.nodes))
        return answer

    result = agent(S, mode="lazy", on_plan=on_plan)
    assert result.status is AgentStatus.COMPLETED and seen == [1]
    assert plans(result)[0]["mode"] == "lazy"


def test_lazy_mode_runs_an_edited_plan_compiled_again() -> None:
    edited = [{**CALL, "_outputPath": "†state.edited"}]
    result = agent([{"calls": [CALL], "output": None}, {"calls": [], "output": "†state.edited.id"}],
                   mode="lazy", on_plan=lambda plan: EditPlan(edited))
    assert result.output == "r-o-1"
    (plan,) = plans(result)
    assert plan["plan"] == edited and plan["edited"] is True
    assert result.ticks[0].edited


def test_lazy_mode_rejection_appends_denied_then_the_plan_all_denied() -> None:
    async def on_plan(plan: Any) -> Any:
        return RejectPlan("not today", by="alice")

    llm = ScriptedLLM([{"calls": [CALL, {**CALL, "_outputPath": "†state.again"}],
                        "output": None}, {"calls": [], "output": 1}])
    result = run_agent_sync(CONTEXT, llm, tools=TOOLS, activities={"refund": refund},
                            mode="lazy", on_plan=on_plan, clock=lambda: DATE)
    assert result.status is AgentStatus.COMPLETED and not result.context.view("state")[0]
    # The Denied error (the reviewer's reason, and who), then the plan message: the order
    # of §8.2 step 5, every outcome denied, nothing run.
    tail = [thaw(m) for m in result.context.messages][-2:]
    assert tail[0]["data"] == {"error": {"type": "Denied", "message": "not today",
                                         "data": {"by": "alice"}}}
    assert tail[1]["type"] == "plan" and tail[1]["mode"] == "lazy"
    assert [o["outcome"] for o in tail[1]["outcomes"]] == ["denied", "denied"]
    assert [o.outcome for o in result.ticks[0].outcomes] == ["denied", "denied"]
    assert list(result.ticks[0].errors) == ["Denied"]
    # The next request shows the plan refused and why.
    text = llm.requests[1].render()
    assert '"outcome": "denied"' in text and "not today" in text
    golden("after-a-rejection", "\n\n".join(turn.content for turn in llm.requests[1].messages))


def test_a_bad_on_plan_answer_is_an_agent_error() -> None:
    with pytest.raises(AgentError):
        agent(S, mode="lazy", on_plan=lambda plan: "yes")


# -- latent execution -----------------------------------------------------------------------


def test_a_latent_call_without_output_asks_the_llm_with_a_sub_request() -> None:
    llm = ScriptedLLM([{"calls": [{"_tool": "think", "q": "why", "_outputPath": "†state.t"}],
                        "output": "†state.t"}], latent={"think": ["because"]})
    result = run_agent_sync(CONTEXT, llm, tools=TOOLS)
    assert result.output == "because"
    sub = llm.requests[1]
    assert sub.name == "latent" and sub.tool == "think" and sub.schema == {"type": "string"}
    assert result.ticks[0].usage.input_tokens > llm.requests[0].render().count("") // 4 - 1


def test_a_latent_answer_is_checked_like_an_activity_result() -> None:
    result = agent([{"calls": [{"_tool": "think", "q": "why", "_outputPath": "†state.t"}],
                     "output": None}, {"calls": [], "output": 1}], latent={"think": [42]})
    assert [e["error"]["type"] for e in errors(result)] == ["OutputSchema"]


def test_a_latent_answer_chooses_a_branch_when_the_call_has_alternatives() -> None:
    call = {"_tool": "think", "q": "ok?", "_outputPath": "†state.yes || †state.no"}
    result = agent([{"calls": [call], "output": "†state.no"}],
                   latent={"think": [{"branch": "†state.no", "value": "nope"}]})
    assert result.output == "nope"


def test_a_latent_answer_of_the_wrong_shape_breaks_the_branch_contract() -> None:
    call = {"_tool": "think", "q": "ok?", "_outputPath": "†state.yes || †state.no"}
    result = agent([{"calls": [call], "output": None}, {"calls": [], "output": 1}],
                   latent={"think": ["just text"]})
    assert [e["error"]["type"] for e in errors(result)] == ["BranchContract"]


def test_a_latent_call_with_its_own_output_in_eager_mode_is_not_asked() -> None:
    llm = ScriptedLLM([{"calls": [{"_tool": "think", "q": "q", "_output": "mine",
                                   "_outputPath": "†state.t"}], "output": "†state.t"}])
    assert run_agent_sync(CONTEXT, llm, tools=TOOLS).output == "mine"
    assert len(llm.requests) == 1


# -- observer, approval, cancellation ----------------------------------------------------------


def test_the_observer_sees_each_tick_as_it_happens() -> None:
    events: list[Any] = []
    agent([{"calls": [{**CALL, "amount": "†input.amount"}], "output": None},
           {"calls": [], "output": 1}], observer=events.append)
    assert [type(e) for e in events] == [Asked, Ran, TickEnded, Asked, TickEnded]
    assert events[0].size > 0
    assert [m["data"]["error"]["type"] for m in events[2].errors] == ["Invalid"]


def test_the_approval_hook_is_asked_before_each_call() -> None:
    from obelisk import Deny

    result = agent([{"calls": [CALL], "output": None}, {"calls": [], "output": 1}],
                   approve=lambda call: Deny("no refunds"))
    assert plans(result)[0]["outcomes"][0]["outcome"] == "denied"


def test_cancelling_the_run_keeps_what_finished() -> None:
    started = asyncio.Event()

    async def slow(call: dict[str, Any], tool: Any, context: Any) -> Any:
        started.set()
        await asyncio.sleep(60)

    async def main() -> AgentResult:
        task = asyncio.create_task(run_agent(
            CONTEXT, ScriptedLLM([{"calls": [CALL], "output": None}]), tools=TOOLS,
            activities={"refund": slow}))
        await started.wait()
        task.cancel()
        return await task

    result = asyncio.run(main())
    assert result.status is AgentStatus.CANCELLED
    assert plans(result)[0]["outcomes"][0]["outcome"] == "cancelled"


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_cancelling_at_a_prompt_ends_the_tick_cancelled_with_its_tokens(mode: str) -> None:
    """A reviewer or approval hook stopped while it asks (Ctrl-C at the terminal's prompt
    turns into the run's cancellation): the tick the LLM answered is kept, with its tokens,
    and nothing ran."""
    def asking(_: Any) -> Any:
        raise asyncio.CancelledError

    hook = {"on_plan": asking} if mode == "lazy" else {"approve": asking}
    result = agent([{"calls": [CALL], "output": None}], mode=mode, **hook)
    assert (result.status, len(result.ticks)) == (AgentStatus.CANCELLED, 1)
    assert result.ticks[0].usage.input_tokens > 0
    assert result.reason == "cancelled during tick 1"


def test_bad_options_are_refused_before_the_first_tick() -> None:
    with pytest.raises(AgentError):
        agent(S, max_ticks=0)


def test_an_agent_runs_from_a_context_object_too() -> None:
    result = run_agent_sync(Context.of(CONTEXT), ScriptedLLM([{"calls": [], "output": 1}]))
    assert result.status is AgentStatus.COMPLETED

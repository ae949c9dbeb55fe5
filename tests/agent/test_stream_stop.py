"""A streamed agent tick cancelled while a plain activity runs keeps what finished (issue 25
item 1): as a whole tick does, it waits for the activity's worker thread, keeps its outcome
(in the tick's outcomes, the context and the journal), and a resume does not run it again;
a second cancel abandons the wait. The CLI's signals are tested in
tests/test_cli_interrupt.py. Before the fix the tick was cancelled as a whole: the result
had no tick, the refund was missing from the context, and a resume refunded again.
"""

from __future__ import annotations

import asyncio
import pathlib
import threading
from typing import Any

from obelisk import MISSING, Journal, RecordKind, resolve
from obelisk.agent import AgentResult, AgentStatus, run_agent
from obelisk.llm import ScriptedLLM

DATE = "2026-11-27T00:00:00Z"
TOOLS = [{"type": "object", "properties": {"_tool": {"const": "refund"}}},
         {"type": "object", "properties": {"_tool": {"const": "notify"}, "about": {}}}]
REFUND_THEN_NOTIFY: dict[str, Any] = {"calls": [{"_tool": "refund", "_outputPath": "†state.refund"},
                                {"_tool": "notify", "about": "†state.refund",
                                 "_outputPath": "†state.note"}],
                      "output": None}
DONE = {"calls": [], "output": "†state.note"}


class Shop:
    """A refund (a plain function: a worker thread) that waits for ``release``, and a
    notice; both count what they did."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.done: list[str] = []

    def refund(self, call: dict[str, Any], tool: Any, context: Any) -> Any:
        self.started.set()
        self.release.wait(10)
        self.done.append("refund")
        return {"refunded": 5}

    def notify(self, call: dict[str, Any], tool: Any, context: Any) -> Any:
        self.done.append("notify")
        return "sent"

    def run(self, solutions: list[Any], delays: Any = 0.0, **more: Any) -> Any:
        return run_agent([{"type": "text", "text": "refund order 42"}],
                         ScriptedLLM(solutions, delays=delays),
                         tools=TOOLS, activities={"refund": self.refund, "notify": self.notify},
                         clock=lambda: DATE, stream=True, **more)


async def _cancelled(shop: Shop, times: int, **more: Any) -> AgentResult:
    """Run tick 1 (refund, then notify), cancel it ``times`` while the refund runs, and
    let the refund end (after the run returned, when it was cancelled twice); the run's
    result."""
    return await _cancelled_with(shop, [REFUND_THEN_NOTIFY, DONE], times, **more)


async def _cancelled_with(shop: Shop, solutions: list[Any], times: int = 1,
                          **more: Any) -> AgentResult:
    task = asyncio.create_task(shop.run(solutions, **more))
    while not shop.started.is_set():
        await asyncio.sleep(0.01)
    for _ in range(times):
        task.cancel()
        await asyncio.sleep(0.1)  # the cancel reaches the tick, which waits for the thread
    if times == 1:
        assert not task.done()  # a plain activity cannot be interrupted: the tick waits
        shop.release.set()
    result: AgentResult = await task  # a second cancel does not wait for the refund
    shop.release.set()
    return result


def test_a_cancelled_streamed_tick_keeps_the_refund_that_finished() -> None:
    shop = Shop()
    result = asyncio.run(_cancelled(shop, 1))
    assert result.status is AgentStatus.CANCELLED
    assert result.reason == "cancelled during tick 1"
    assert [len(result.ticks)] == [1]
    assert [o.outcome for o in result.ticks[0].outcomes] == ["executed", "pending"]
    assert resolve(result.context, "†state.refund") == {"refunded": 5}
    plans = [m for m in result.context.messages if m.get("type") == "plan"]
    assert [o["outcome"] for o in plans[-1]["outcomes"]] == ["executed", "pending"]
    assert shop.done == ["refund"]


def test_a_second_cancel_abandons_the_refund() -> None:
    shop = Shop()
    result = asyncio.run(_cancelled(shop, 2))
    assert result.status is AgentStatus.CANCELLED
    assert [o.outcome for o in result.ticks[0].outcomes] == ["cancelled", "pending"]
    assert resolve(result.context, "†state.refund") is MISSING


def test_a_resume_does_not_repeat_the_refund_kept(tmp_path: pathlib.Path) -> None:
    shop = Shop()
    with Journal.open(tmp_path / "run.db") as journal:
        first = asyncio.run(_cancelled(shop, 1, journal=journal, run_id="a1"))
        assert first.status is AgentStatus.CANCELLED
        kinds = [(r.kind, r.node) for r in journal.records("a1")]
        assert kinds.index((RecordKind.FINISH, 0)) < kinds.index((RecordKind.CANCEL, None))
        # Tick 1 is replayed from the journal (not asked again): the script answers tick 2.
        again = asyncio.run(shop.run([DONE], journal=journal, run_id="a1"))
    assert again.status is AgentStatus.COMPLETED and again.output == "sent"
    assert shop.done == ["refund", "notify"]  # the refund was not repeated


def test_a_cancel_ends_the_run_when_the_solution_was_found_invalid() -> None:
    # The stream closed without an output (InvalidSolution) while the refund ran: the
    # cancel still ends the run, keeping the refund, instead of going on to tick 2.
    shop = Shop()
    invalid = {"calls": REFUND_THEN_NOTIFY["calls"][:1]}
    task_result = asyncio.run(_cancelled_with(shop, [invalid, DONE]))
    assert task_result.status is AgentStatus.CANCELLED and len(task_result.ticks) == 1
    assert list(task_result.ticks[0].errors) == ["InvalidSolution"]
    assert resolve(task_result.context, "†state.refund") == {"refunded": 5}


def test_a_tick_cancelled_while_its_solution_arrives_keeps_the_refund(
        tmp_path: pathlib.Path) -> None:
    # notify would arrive 5 s later: the cancel cuts the stream, the refund is kept, and
    # the resumed tick goes on with the calls recorded (a null output); tick 2 plans the
    # rest.
    shop = Shop()
    notify_then_done = {"calls": REFUND_THEN_NOTIFY["calls"][1:], "output": "†state.note"}
    with Journal.open(tmp_path / "run.db") as journal:
        first = asyncio.run(_cancelled_with(shop, [REFUND_THEN_NOTIFY], journal=journal,
                                            run_id="a1", delays=[0, 5]))
        assert first.status is AgentStatus.CANCELLED
        assert [o.outcome for o in first.ticks[0].outcomes] == ["executed"]
        again = asyncio.run(shop.run([notify_then_done], journal=journal, run_id="a1"))
    assert again.status is AgentStatus.COMPLETED and again.output == "sent"
    assert shop.done == ["refund", "notify"]

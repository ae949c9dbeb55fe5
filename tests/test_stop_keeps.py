"""A run stopped from outside keeps what finished (issue 25 item 1), in the library.

- sync: once ``stop`` is set nothing more starts; the call running finishes and keeps
  its outcome; a ``KeyboardInterrupt`` while it is set abandons that call (cancelled);
  without ``stop`` a ``KeyboardInterrupt`` still propagates, as before;
- journaled, the outcome that finished is recorded, and a resume does not run it again;
- asyncio: the same through cancellation (tests/test_faults.py has the plain-activity
  waits), a ``timeout=`` still drops a plain activity's late result.
The CLI's signals are tested in tests/test_cli_interrupt.py.
"""

from __future__ import annotations

import asyncio
import pathlib
import threading
import time
from typing import Any

import pytest

from obelisk import (
    MISSING,
    Journal,
    RecordKind,
    resolve,
    resume,
    run_async,
    run_durable,
    run_sync,
)

PLAN = [{"_tool": "refund", "_outputPath": "†state.refund"},
        {"_tool": "notify", "about": "†state.refund", "_outputPath": "†state.note"}]


class Shop:
    """Activities that count their executions; ``refund`` asks the run to stop while it
    works (as a signal handler would), or is interrupted."""

    def __init__(self, stop: threading.Event, interrupt: bool = False) -> None:
        self.stop, self.interrupt = stop, interrupt
        self.done: list[str] = []
        self.events: list[str] = []
        self.tries = 0

    def refund(self, call: dict[str, Any], tool: Any, context: Any) -> Any:
        self.tries += 1
        if self.tries == 1:
            self.stop.set()  # Ctrl-C while the refund runs
            if self.interrupt:
                raise KeyboardInterrupt  # Ctrl-C again: the refund is abandoned
        self.done.append("refund")
        return {"refunded": 5}

    def notify(self, call: dict[str, Any], tool: Any, context: Any) -> Any:
        self.done.append("notify")
        return "sent"

    @property
    def activities(self) -> dict[str, Any]:
        return {"refund": self.refund, "notify": self.notify}

    def observe(self, event: Any) -> None:
        self.events.append(type(event).__name__)


def test_a_sync_run_stops_after_the_call_running_and_keeps_its_outcome() -> None:
    shop = Shop(threading.Event())
    result = run_sync(PLAN, activities=shop.activities, stop=shop.stop, observer=shop.observe)
    assert result.status == "cancelled"
    assert [c.outcome.value for c in result.calls] == ["executed", "pending"]
    assert resolve(result.context, "†state.refund") == {"refunded": 5}
    assert shop.done == ["refund"] and shop.events[-2:] == ["Finished", "Cancelled"]


def test_an_interrupt_while_stopping_abandons_the_call_running() -> None:
    shop = Shop(threading.Event(), interrupt=True)
    result = run_sync(PLAN, activities=shop.activities, stop=shop.stop)
    assert result.status == "cancelled"
    assert [c.outcome.value for c in result.calls] == ["cancelled", "pending"]
    assert resolve(result.context, "†state.refund") is MISSING


def test_without_stop_an_interrupt_still_propagates() -> None:
    shop = Shop(threading.Event(), interrupt=True)
    with pytest.raises(KeyboardInterrupt):
        run_sync(PLAN, activities=shop.activities)


@pytest.mark.parametrize("interrupt", [False, True])
def test_a_stopped_journaled_run_records_what_finished_and_resumes_the_rest(
        tmp_path: pathlib.Path, interrupt: bool) -> None:
    shop = Shop(threading.Event(), interrupt=interrupt)
    with Journal.open(tmp_path / "run.db") as journal:
        first = run_durable(PLAN, journal=journal, run_id="r", activities=shop.activities,
                            stop=shop.stop)
        assert first.status == "cancelled"
        kinds = [(r.kind, r.node) for r in journal.records("r")]
        assert ((RecordKind.FINISH, 0) in kinds) is not interrupt  # abandoned: no outcome
        assert (RecordKind.INVOKE, 0) in kinds or interrupt is False
        again = resume(journal, "r", activities=shop.activities)
    assert again.status == "completed"
    assert resolve(again.context, "†state.note") == "sent"
    # A finished refund is never repeated; an abandoned one runs again (§8.7).
    assert shop.done == ["refund", "notify"]


def test_a_timeout_still_drops_a_plain_activitys_late_result() -> None:
    release = threading.Event()

    def slow(call: dict[str, Any], tool: Any, context: Any) -> Any:
        release.wait(5)
        return "late"

    def quick(call: dict[str, Any], tool: Any, context: Any) -> Any:
        time.sleep(0.2)  # the slow call's thread is still held when this one ends
        release.set()
        return "quick"

    plan = [{"_tool": "slow", "_outputPath": "†state.slow || †state.error"},
            {"_tool": "quick", "_outputPath": "†state.quick"}]
    result = asyncio.run(run_async(plan, activities={"slow": slow, "quick": quick},
                                   timeout=0.05))
    assert result.status == "completed"
    assert resolve(result.context, "†state.error.type") == "Timeout"
    assert resolve(result.context, "†state.slow") is MISSING

"""The terminal's words while a run stops (obelisk/cli/interrupt.py), without signals."""

from __future__ import annotations

import io
import threading
from typing import Any

from obelisk.cli.interrupt import Interrupts, waiting_line


def test_the_waiting_line_names_each_activity_and_its_time() -> None:
    assert waiting_line([], 5.0) is None
    assert waiting_line([("refundOrder", 2.7)], 5.0) == (
        "cancelling: waiting for 1 activity still running (refundOrder, 2.3 s); "
        "Ctrl-C again to abandon it")
    assert waiting_line([("a", 4.0), ("b\x1b[2J", 3.5)], 5.0) == (
        "cancelling: waiting for 2 activities still running (a, 1.0 s; b\\x1b[2J, 1.5 s); "
        "Ctrl-C again to abandon them")  # a name is made inert on the terminal


def test_wrapped_activities_are_listed_while_they_run() -> None:
    stops = Interrupts(io.StringIO())
    seen: list[Any] = []
    wrapped = stops.wrap("refundOrder", lambda *a: seen.append(list(stops.running.values())))
    wrapped({}, None, None)
    assert [name for name, _ in seen[0]] == ["refundOrder"] and not stops.running
    assert stops.exit_code(1, io.StringIO()) == 1  # no signal: the run's own code


def test_runs_outside_the_main_thread_install_no_handler() -> None:
    done: list[Any] = []

    def run() -> None:
        stops = Interrupts(io.StringIO())

        async def answer() -> int:
            return 5

        done.append(stops.run_async(answer))
        with stops.sync():
            done.append("sync")

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert done == [5, "sync"]

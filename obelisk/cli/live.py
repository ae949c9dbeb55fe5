"""The live display of ``obelisk run`` and ``obelisk resume``: the calls running with their
elapsed time, and how many are done, running, waiting, failed and skipped of the total.

Every number comes from the run's own events folded through the state machine
(``replay_open``, then ``replay_more`` with the events since: the functions the run used,
each event folded once), so the display never counts on its own: a call is done, failed or
skipped when the machine says so (an exception routed to an error branch is not a
failure), and the skips the machine decides while it looks for ready calls, which leave no
event, are counted as they happen. A resumed run's display starts from the events its
journal recorded, so its counts cover the whole run.

The machine starts a batch of ready calls at once, but an interpreter runs at most
``slots`` of them at a time (one under the sync interpreter, ``--max-concurrency`` on
asyncio), first started first run. So the display shows the first ``slots`` started calls
as running, each timed from when its turn came (its start, or the end of the call before
it), and counts the rest as waiting.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TextIO

from rich.live import Live
from rich.table import Table
from rich.text import Text

from obelisk import CompiledPlan, Replayed, Status, replay_more, replay_open
from obelisk.cli.terminal import call_label, console_for

#: The statuses a call never leaves, as the display counts them: "done".
_FINAL = frozenset({Status.EXECUTED, Status.SKIPPED, Status.FAILED, Status.CANCELLED,
                    Status.INVALID})

#: The events the machine replays (by name: the command line imports nothing beneath the
#: facade); an observer may be told others.
_RUN_EVENTS = frozenset({"Started", "Decided", "Finished", "Cancelled", "Admitted", "Closed"})


class Counts:
    """What the display says about a run: calls done (in a final state) of the total, and
    of those the failed, skipped and cancelled ones; the running and waiting calls."""

    def __init__(self, statuses: Sequence[Status], running: int = 0, waiting: int = 0) -> None:
        self.total = len(statuses)
        self.done = sum(status in _FINAL for status in statuses)
        self.failed = sum(status is Status.FAILED for status in statuses)
        self.skipped = sum(status is Status.SKIPPED for status in statuses)
        self.cancelled = sum(status is Status.CANCELLED for status in statuses)
        self.running, self.waiting = running, waiting

    def line(self) -> str:
        """The final line: ``3/3 done, 1 failed, 1 skipped`` (cancelled calls when any)."""
        cancelled = f", {self.cancelled} cancelled" if self.cancelled else ""
        return (f"{self.done}/{self.total} done, {self.failed} failed, "
                f"{self.skipped} skipped{cancelled}")


class Progress:
    """Live progress on a terminal (``enabled``), fed by the run's events (:meth:`observe`).

    Folding costs what the run's own steps cost, so it is done only after new events and
    at most every 0.25 s, or four times as long as the last fold took: the display takes
    at most a fifth of the run's time. (rich's ``Live`` renders under its own lock, so two
    folds never overlap.) ``recorded`` are the events a resumed run's journal holds
    (``approvals``: the run asks an approval hook), ``slots`` how many calls the
    interpreter runs at once (None: every started call).
    """

    def __init__(self, plan: CompiledPlan, stream: TextIO, enabled: bool, *,
                 slots: int | None = 1, recorded: Sequence[Any] = (),
                 approvals: bool = False) -> None:
        self.plan, self.stream, self.enabled, self.slots = plan, stream, enabled, slots
        self._approvals = approvals
        self._events: list[tuple[float, Any]] = []  # each with when it was observed
        self._folded = 0  # how many of the events the fold has taken in
        self._replayed: Replayed | None = None
        self._broken = False  # a fold failed: the events do not fit the plan
        self._next_fold = 0.0  # time.monotonic() before which no fold is made
        self._turns: dict[int, float | None] = {}  # started calls -> when their turn came
        self._live: Live | None = None
        if not enabled:
            return
        now = time.monotonic()
        if recorded:
            self._fold_events([(now, event) for event in recorded])
            if self._replayed is not None:  # the calls the journal left under way
                for invocation in (*self._replayed.running, *self._replayed.undecided):
                    self._turns[invocation.node] = None
                self._take_turns(now)
        self._live = Live(self._render(), console=console_for(stream), refresh_per_second=4,
                          transient=True, get_renderable=self._render)
        self._live.start()

    def observe(self, event: Any) -> None:
        """One run event, shown at the next fold (at once when a fold is due); what an
        observer is told besides the run events (nothing replays it) is left out."""
        if self._live is None or type(event).__name__ not in _RUN_EVENTS:
            return
        now = time.monotonic()
        self._events.append((now, event))
        if now >= self._next_fold:
            self._live.refresh()

    def _fold(self) -> None:
        """Take in the events seen since the last fold, when a fold is due."""
        seen = len(self._events)  # the run may add more meanwhile: fold these
        if seen == self._folded or time.monotonic() < self._next_fold:
            return
        started = time.monotonic()
        self._fold_events(self._events[self._folded:seen])
        self._folded = seen
        finished = time.monotonic()
        self._next_fold = finished + max(0.25, 4 * (finished - started))

    def _fold_events(self, timed: Sequence[tuple[float, Any]]) -> None:
        if self._broken:
            return
        events = [event for _, event in timed]
        try:
            self._replayed = (
                replay_open(self.plan, None, events, approvals=self._approvals)
                if self._replayed is None
                else replay_more(self._replayed, events, approvals=self._approvals))
        except Exception:  # noqa: BLE001 - the display never stops the run it shows
            self._broken = True
            return
        for when, event in timed:  # whose turn it is: first started, first run
            kind = type(event).__name__
            if kind == "Started" and event.node not in self._turns:
                self._turns[event.node] = None
            elif kind == "Finished" or (
                    kind == "Decided" and type(event.verdict).__name__ == "Deny"):
                self._turns.pop(event.node, None)  # a denied call never runs
            elif kind == "Cancelled":
                self._turns.clear()
            self._take_turns(when)

    def _take_turns(self, when: float) -> None:
        """The first ``slots`` started calls run: those whose turn comes now start at
        ``when``."""
        for number, (node, turn) in enumerate(self._turns.items()):
            if self.slots is not None and number >= self.slots:
                break
            if turn is None:
                self._turns[node] = when

    def counts(self, settled: bool = False) -> Counts | None:
        """The counts as of the last fold (``settled``: with the run's last skips), or
        None when the events did not fit the plan."""
        if self._broken:
            return None
        if self._replayed is None:
            return Counts([Status.PENDING] * len(self.plan.nodes))
        state = self._replayed.settled() if settled else self._replayed.state
        running = sum(turn is not None for turn in self._turns.values())
        return Counts(state.status, running, len(self._turns) - running)

    def _render(self) -> Table:
        self._fold()
        table = Table.grid(padding=(0, 2))
        now = time.monotonic()
        for node_id, turn in self._turns.items():
            if turn is None:
                break
            table.add_row(Text("running", style="yellow"),
                          Text(call_label(self.plan.nodes[node_id])),
                          Text(f"{now - turn:.1f}s", style="dim"))
        counts = self.counts()
        if counts is not None:
            waiting = [Text(f"{counts.waiting} waiting")] if counts.waiting else []
            table.add_row(Text(f"{counts.done}/{counts.total} done", style="bold"),
                          Text(f"{counts.running} running"), *waiting,
                          Text(f"{counts.failed} failed", style="red" if counts.failed else ""),
                          Text(f"{counts.skipped} skipped", style="dim"))
        return table

    def close(self) -> None:
        """End the display and print the final count: every event folded in, with the
        skips the run made once nothing was left to start."""
        if self._live is None:
            return
        self._live.stop()
        self._next_fold = 0.0
        self._fold()
        counts = self.counts(settled=True)
        if counts is not None:
            line = Text(counts.line())
            line.stylize("bold", 0, len(f"{counts.done}/{counts.total} done"))
            console_for(self.stream).print(line)


__all__ = ["Counts", "Progress"]

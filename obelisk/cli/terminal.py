"""The terminal UI of ``obelisk run``: live progress, the approval prompt, and the
exceptions an activity raised.

Drawing uses rich (tables, colour, the live display), which respects ``NO_COLOR`` and
writes no escape code to something that is not a terminal. Every string from input is
made :func:`~obelisk.cli.safe.inert` first and given to rich as plain ``Text``, never as
markup, so a tool named ``[bold red]`` or holding an escape sequence is shown as written.

The display learns what the run does from the run's observer events (``Started``,
``Decided``, ``Finished``: their documented fields ``node``, ``call``, ``verdict``,
``outcome``), read by attribute so the CLI needs no import beneath the facade.
"""

from __future__ import annotations

import inspect
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from obelisk import (
    Approve,
    CompiledPlan,
    Deny,
    Replace,
    Replayed,
    Status,
    replay_more,
    replay_open,
)
from obelisk.cli.review import review, reviewer
from obelisk.cli.safe import inert, json_text


def console_for(stream: TextIO) -> Console:
    """A rich console on ``stream``: colour only on a terminal and without ``NO_COLOR``."""
    terminal = stream.isatty()
    return Console(file=stream, force_terminal=terminal, no_color=bool(
        os.environ.get("NO_COLOR")) or not terminal, highlight=False, soft_wrap=True,
        emoji=False, markup=False)


class Progress:
    """Live progress on a terminal: the running calls with their elapsed time, and how many
    are done, failed and skipped of the total.

    Fed by the run's observer events (:meth:`observe`); its counters are the display's
    state, owned by the one run it watches.

    Skips leave no event: the machine decides them while it looks for ready calls. So the
    display follows the run through the machine (``replay_open``, then ``replay_more`` with
    the events since: the same functions the run used, no rule of its own, each event
    folded once) and counts the skipped calls of that state. Folding costs what the run's
    own steps cost, so it is done only after new events and at most every 0.25 s, or four
    times as long as the last fold took: the display takes at most a fifth of the run's time. (rich's ``Live``
    renders under its own lock, so two replays never overlap.) A display that did not see
    the run begin (``from_start`` false: a resumed run, whose earlier events are in its
    journal) cannot replay it, and shows the skipped calls at the end only.
    """

    def __init__(self, plan: CompiledPlan, stream: TextIO, enabled: bool, *,
                 from_start: bool = True) -> None:
        self.plan, self.stream, self.enabled = plan, stream, enabled
        self._replays = enabled and from_start
        self.total = len(plan.nodes)
        self.done = self.failed = self.skipped = 0
        self.running: dict[int, float] = {}
        self._events: list[Any] = []
        self._replayed: Replayed | None = None  # the run as of the events counted
        self._counted = 0  # how many of the events the skipped count has seen
        self._next_count = 0.0  # time.monotonic() before which no replay is made
        self._live: Live | None = None
        if enabled:
            self._live = Live(self._render(), console=console_for(stream),
                              refresh_per_second=4, transient=True,
                              get_renderable=self._render)
            self._live.start()

    def observe(self, event: Any) -> None:
        """One run event: a call started, or finished (done, or failed when it raised)."""
        if self._replays:
            self._events.append(event)
        if hasattr(event, "outcome"):
            self.running.pop(event.node, None)
            self.done += 1
            if type(event.outcome).__name__ == "Raised":
                self.failed += 1
        elif hasattr(event, "call"):
            self.running[event.node] = time.monotonic()
        if self._live is not None:
            self._live.refresh()  # show each change at once, not at the next tick

    def _count_skipped(self) -> None:
        """Bring :attr:`skipped` up to the events seen, when a replay is due."""
        seen = len(self._events)  # the run may add more meanwhile: fold these
        if (not self._replays or seen == self._counted
                or time.monotonic() < self._next_count):
            return
        started = time.monotonic()
        new = self._events[self._counted:seen]
        self._replayed = (replay_open(self.plan, None, new) if self._replayed is None
                          else replay_more(self._replayed, new))
        self.skipped = sum(status is Status.SKIPPED for status in self._replayed.state.status)
        self._counted = seen
        finished = time.monotonic()
        self._next_count = finished + max(0.25, 4 * (finished - started))

    def _render(self) -> Table:
        self._count_skipped()
        table = Table.grid(padding=(0, 2))
        now = time.monotonic()
        for node_id, started in sorted(self.running.items()):
            node = self.plan.nodes[node_id]
            label = f"call {node.index}" + (f" ({inert(node.tool)})" if node.tool else "")
            if node.instance is not None:
                label += f" [{inert(node.instance)}]"
            table.add_row(Text("running", style="yellow"), Text(label),
                          Text(f"{now - started:.1f}s", style="dim"))
        table.add_row(Text(f"{self.done}/{self.total} done", style="bold"),
                      Text(f"{len(self.running)} running"),
                      Text(f"{self.failed} failed", style="red" if self.failed else ""),
                      Text(f"{self.skipped} skipped", style="dim"))
        return table

    def close(self, skipped: int = 0) -> None:
        """End the display, with the final count (the run's last skips, made when nothing
        was left to start, are known only at the end)."""
        if self._live is not None:
            self._live.stop()
            console_for(self.stream).print(Text.assemble(
                (f"{self.done}/{self.total} done", "bold"), f", {self.failed} failed, ",
                f"{skipped} skipped"))


class Exceptions:
    """The exceptions activities raised, with their tracebacks, so the summary can list
    those that a branching call routed to its error branch (they leave no error message)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, BaseException, str]] = []

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The activity ``fn``, each exception it raises recorded and raised again."""
        if inspect.iscoroutinefunction(fn):
            async def run_async_fn(*a: Any) -> Any:
                try:
                    return await fn(*a)
                except Exception as exc:
                    self._record(name, exc)
                    raise
            return run_async_fn

        def run_fn(*a: Any) -> Any:
            try:
                return fn(*a)
            except Exception as exc:
                self._record(name, exc)
                raise
        return run_fn

    def _record(self, name: str, exc: BaseException) -> None:
        self.seen.append((name, exc, "".join(traceback.format_exception(
            type(exc), exc, exc.__traceback__))))

    def render(self, errors: Sequence[tuple[str, str]], out: TextIO,
               show_traceback: bool) -> None:
        """List the exceptions that left no error message (routed to an error branch), and
        with ``show_traceback`` every recorded exception's Python traceback."""
        pending = list(errors)
        routed = []
        for name, exc, text in self.seen:
            key = (name, str(exc))
            if key in pending:
                pending.remove(key)
            else:
                routed.append((name, exc, text))
        if routed:
            print("\nrouted to an error branch:", file=out)
            for name, exc, _ in routed:
                print(f"  {inert(name)}: {inert(type(exc).__name__)}: {inert(str(exc))}",
                      file=out)
        if show_traceback and self.seen:
            print("\ntracebacks:", file=out)
            for _, _, text in self.seen:
                print("\n".join("  " + inert(line) for line in text.rstrip().split("\n")),
                      file=out)


def terminal_approval(err: TextIO, plan: CompiledPlan | None = None,
                      tools: Sequence[Any] = ()) -> tuple[Callable[[dict[str, Any]], Any],
                                                          Callable[[Any], None]]:
    """Ask at the terminal before each call: approve, edit its parameters, or reject it
    (with a reason), each verdict saying who made it (:mod:`obelisk.cli.review`).

    Returns the approval hook and an observer: the observer learns which node each ready
    call is (``Started`` comes before the hook is asked), so the prompt shows the call's
    index, its tool and the tool's description, where its result goes, and its resolved
    parameters.
    """
    descriptions = _descriptions(tools)
    who = reviewer()
    pending: list[tuple[int, dict[str, Any]]] = []
    console = console_for(err)

    def observe(event: Any) -> None:
        if hasattr(event, "call") and not hasattr(event, "outcome"):
            pending.append((event.node, dict(event.call)))

    def index_of(call: dict[str, Any]) -> str:
        for number, (node_id, seen) in enumerate(pending):
            if seen == call:
                del pending[number]
                if plan is None:
                    return ""
                node = plan.nodes[node_id]
                where = f" [instance {inert(node.instance)}]" if node.instance is not None else ""
                return f"call {node.index}{where}: "
        return ""

    def ask(call: dict[str, Any]) -> Any:
        tool = call.get("_tool")
        print(f"\n{index_of(call)}about to run {inert(repr(tool))} with:", file=err)
        table = Table.grid(padding=(0, 2))
        description = descriptions.get(tool) if isinstance(tool, str) else None
        if description:
            table.add_row(Text("tool", style="bold"), Text(inert(description)))
        if "_outputPath" in call:
            table.add_row(Text("result to", style="bold"),
                          Text(inert(str(call["_outputPath"]))))
        if table.row_count:
            console.print(table)
        params = {k: v for k, v in call.items() if not k.startswith("_")}
        print(json_text(params, stream=err), file=err)
        return review(err, "[a]pprove, [e]dit, [r]eject? ", (params, "new parameters", dict),
                      (lambda: Approve(by=who), lambda edited: Replace(edited, by=who),
                       lambda reason: Deny(reason, by=who)), rejected="denied at the terminal")

    return ask, observe


def _descriptions(tools: Sequence[Any]) -> dict[str, str]:
    found = {}
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        props = tool.get("properties")
        name = props.get("_tool", {}).get("const") if isinstance(props, Mapping) else None
        if isinstance(name, str) and isinstance(tool.get("description"), str):
            found[name] = tool["description"]
    return found


__all__ = ["Exceptions", "Progress", "console_for", "terminal_approval"]

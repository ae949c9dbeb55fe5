"""The live view of ``obelisk agent`` on a terminal.

A spinner with the elapsed time says what the run waits for: the LLM's answer (from the
``Asked`` event until an activity of the tick starts, or the tick's plan has run), an
activity (from its start to its end: the command line wraps each activity, as it does
for ``obelisk run``'s tracebacks), or the rest of the tick's plan; beside it, the tokens paid so far (each ended tick's). When a
tick's plan has run (``Ran``), each call's line is printed above the spinner: its
outcome, a short form of what it wrote, and the LLM's ``_reasoningForCall`` when the
call gave one. Errors fed back, streamed starts and delegates are printed as the plain
tick printer prints them.

rich draws it (colour only without ``NO_COLOR``); on anything that is not a terminal the
command prints the plain tick lines instead (:func:`obelisk.cli.agent.tick_printer`).
Every string from input is made inert and given to rich as ``Text``, never as markup.
"""

from __future__ import annotations

import inspect
import io
import itertools
import json
import time
from collections.abc import Callable
from typing import Any, TextIO

from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from obelisk import thaw
from obelisk.cli.paint import STYLES
from obelisk.cli.safe import inert
from obelisk.cli.terminal import console_for

#: How many characters of a call's result and reasoning a line shows.
SHORT = 72


def short(value: Any, width: int = SHORT) -> str:
    """``value`` as one line of at most ``width`` characters (JSON, strings as they are)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=repr)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class AgentView:
    """The live view on ``stream`` (a terminal): :meth:`observe` takes the agent's events,
    :meth:`wrap` an activity; :meth:`close` ends it."""

    def __init__(self, stream: TextIO) -> None:
        self.console = console_for(stream)
        self.tokens_in = self.tokens_out = 0
        self._tick = 0
        self._waiting: tuple[str, float] | None = None  # what the run waits for, since when
        self._activities: dict[int, tuple[str, float]] = {}  # running activities, by id
        self._keys = itertools.count()
        self._live = Live(console=self.console, refresh_per_second=8, transient=True,
                          get_renderable=self._render)
        self._live.start()

    def observe(self, event: Any) -> None:
        """One agent event: what the run now waits for, and the lines it leaves."""
        kind = type(event).__name__
        if kind == "Asked":
            self._tick = event.tick
            if getattr(event, "replayed", False):  # a resumed run's recorded tick
                self._print(Text(f"replayed tick {event.tick} from the journal", style="dim"))
                self._waiting = (f"tick {event.tick}: running the plan", time.monotonic())
            else:
                self._waiting = (f"tick {event.tick}: asking the LLM ({event.size:,} "
                                 "characters)", time.monotonic())
        elif kind == "Ran":
            self._print_calls(event)
            self._waiting = None
        elif kind == "TickEnded":
            self.tokens_in += event.tick.usage.input_tokens
            self.tokens_out += event.tick.usage.output_tokens
            for message in event.errors:
                error = message["data"]["error"]
                self._print(Text.assemble("  error fed back: ", (inert(error["type"]), "red"),
                                          f": {inert(str(error['message']))}"))
            self._waiting = None
        elif kind == "CallStarted":
            state = "the solution still arriving" if event.open else "the solution complete"
            self._print(Text(f"  call {event.call} started ({event.seen} call(s) arrived, "
                             f"{state})"))
        elif kind == "Delegated":
            path = " -> ".join(("caller", *(inert(c) for c in event.chain)))
            self._print(Text(f"  delegate {path}: {inert(event.status)} after "
                             f"{event.ticks} tick(s)"))
        self._live.refresh()

    def _print_calls(self, event: Any) -> None:
        run = event.run
        calls = event.solution.get("calls") if isinstance(event.solution, dict) else None
        written = _written(run)
        for outcome in run.calls:
            where = "" if outcome.instance is None else f" [{inert(outcome.instance)}]"
            tool = "(no _tool)" if outcome.tool is None else inert(str(outcome.tool))
            line = Text.assemble(f"  call {outcome.call} {tool}{where}: ",
                                 (str(outcome.outcome), STYLES.get(str(outcome.outcome), "")))
            if outcome.error:
                line.append(f" ({inert(outcome.error)})", style="red")
            if outcome.outcome == "skipped" and outcome.reason:
                line.append(f": {inert(outcome.reason)}", style="dim")
            value = written.get((outcome.call, outcome.instance))
            if value is not None:
                line.append(f"  {inert(value)}", style="dim")
            self._print(line)
            call = (calls[outcome.call] if isinstance(calls, list)
                    and 0 <= outcome.call < len(calls) else None)
            reason = call.get("_reasoningForCall") if isinstance(call, dict) else None
            if isinstance(reason, str) and reason.strip():
                self._print(Text(f"      why: {inert(short(reason))}", style="italic"))

    def _print(self, line: Text) -> None:
        self.console.print(line)  # above the live part, which rich redraws below it

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The activity ``fn``, shown running while it runs."""
        if inspect.iscoroutinefunction(fn):
            async def run_async_fn(*a: Any) -> Any:
                key = self._begin(name)
                try:
                    return await fn(*a)
                finally:
                    self._activities.pop(key, None)
            return run_async_fn

        def run_fn(*a: Any) -> Any:
            key = self._begin(name)
            try:
                return fn(*a)
            finally:
                self._activities.pop(key, None)
        return run_fn

    def _begin(self, name: str) -> int:
        key, now = next(self._keys), time.monotonic()
        self._activities[key] = (name, now)
        # The LLM has answered: what is left of the tick is its plan.
        self._waiting = (f"tick {self._tick}: running the plan", now)
        return key

    def _render(self) -> Table:
        now = time.monotonic()
        table = Table.grid(padding=(0, 1))
        running = list(self._activities.values())
        if running:
            names = ", ".join(inert(name) for name, _ in running)
            since = min(started for _, started in running)
            table.add_row(Spinner("dots", style="yellow"),
                          Text(f"tick {self._tick}: running {names}"),
                          Text(f"{now - since:.1f}s", style="dim"))
        elif self._waiting is not None:
            text, since = self._waiting
            table.add_row(Spinner("dots", style="yellow"), Text(text),
                          Text(f"{now - since:.1f}s", style="dim"))
        table.add_row(Text(""), Text(f"tokens so far: {self.tokens_in:,} in, "
                                     f"{self.tokens_out:,} out", style="dim"))
        return table

    def lines(self) -> TextIO:
        """A stream whose lines are printed above the live part (lazy mode's plans)."""
        return _Lines(self._print)

    def close(self) -> None:
        """End the live part (the printed lines stay)."""
        self._live.stop()


class _Lines(io.StringIO):
    """Text written here is printed, line by line, by ``show``."""

    def __init__(self, show: Callable[[Text], None]) -> None:
        super().__init__()
        self._show = show

    def write(self, text: str) -> int:
        lines = (self.getvalue() + text).split("\n")
        for line in lines[:-1]:
            self._show(Text(line))
        self.seek(0)
        self.truncate()
        super().write(lines[-1])
        return len(text)


def _written(run: Any) -> dict[tuple[int, str | None], str]:
    """What each call of the tick's plan wrote last, as ``†state.order = {...}``: the data
    messages the call left (a data message names the call as written, and its instance)."""
    by_call: dict[str, int] = {}
    for index, call in enumerate(run.plan.calls):
        by_call.setdefault(json.dumps(thaw(call), sort_keys=True, default=repr), index)
    found: dict[tuple[int, str | None], str] = {}
    for message in run.context.to_json():
        if message.get("type") != "data" or not isinstance(message.get("_call"), dict):
            continue
        found_at = by_call.get(json.dumps(message["_call"], sort_keys=True, default=repr))
        if found_at is not None:
            path = str(message.get("_outputPath", ""))
            found[found_at, message.get("_instance")] = f"{path} = {short(_at(message, path))}"
    return found


def _at(message: dict[str, Any], path: str) -> Any:
    """The value a data message writes at ``path`` (``†kind.a.b``): its ``data`` walked
    by the path's plain keys, or the whole ``data`` when the path is not that simple."""
    value = message.get("data")
    for key in path.split(".")[1:]:
        if not isinstance(value, dict) or key not in value:
            return message.get("data")
        value = value[key]
    return value


__all__ = ["AgentView", "short"]

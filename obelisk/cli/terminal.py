"""The terminal UI of ``obelisk run``: the approval prompt, and the exceptions an activity
raised (the live display is :mod:`obelisk.cli.live`).

Drawing uses rich (tables, colour, the live display), which respects ``NO_COLOR`` and
writes no escape code to something that is not a terminal. Every string from input is
made :func:`~obelisk.cli.safe.inert` first and given to rich as plain ``Text``, never as
markup, so a tool named ``[bold red]`` or holding an escape sequence is shown as written.

What the run does is learnt from its observer events (``Started``, ``Decided``,
``Finished``: their documented fields ``node``, ``call``, ``verdict``, ``outcome``), read
by attribute so the CLI needs no import beneath the facade.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from obelisk import (
    Approve,
    CompiledPlan,
    Deny,
    Replace,
)
from obelisk.cli.paint import colour_wanted
from obelisk.cli.review import review, reviewer
from obelisk.cli.safe import inert, json_text


def console_for(stream: TextIO) -> Console:
    """A rich console on ``stream``: colour only on a terminal and without ``NO_COLOR``."""
    terminal = stream.isatty()
    return Console(file=stream, force_terminal=terminal, no_color=not colour_wanted(stream),
                   highlight=False, soft_wrap=True, emoji=False, markup=False)


class Exceptions:
    """What activities raised: the failures a branching call routed to its error branch
    (they leave no error message, so the report's table alone would hide them) and, for
    ``--traceback``, every exception's Python traceback.

    A routed failure is known by call identity from the run's events: a ``Finished``
    event whose outcome is ``Raised``, for a call the run ended as executed (a failure
    that is not routed ends the call as failed, and is in the report's errors).
    ``recorded`` are the events a resumed run's journal holds.
    """

    def __init__(self, plan: CompiledPlan, recorded: Sequence[Any] = ()) -> None:
        self.plan = plan
        self.seen: list[tuple[str, BaseException, str]] = []
        self.raised: dict[int, Any] = {}  # node -> its Raised outcome
        for event in recorded:
            self.observe(event)

    def observe(self, event: Any) -> None:
        """A run event: a call's outcome, kept when it raised."""
        outcome = getattr(event, "outcome", None)
        if outcome is None:
            return
        if type(outcome).__name__ == "Raised":
            self.raised[event.node] = outcome
        else:  # a call resumed after a crash runs again
            self.raised.pop(event.node, None)

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

    def routed(self, outcomes: Mapping[tuple[int, str | None], str]) -> list[tuple[Any, Any]]:
        """The calls whose failure went to an error branch, in plan order, each with its
        ``Raised`` outcome; ``outcomes`` maps each call's (index, instance) to the outcome
        the run's report gives it."""
        nodes = self.plan.nodes
        return [(nodes[node], raised) for node, raised in sorted(self.raised.items())
                if outcomes.get((nodes[node].index, nodes[node].instance)) == "executed"]

    def render(self, outcomes: Mapping[tuple[int, str | None], str], out: TextIO,
               show_traceback: bool) -> None:
        """List the failures routed to an error branch, and with ``show_traceback`` every
        recorded exception's Python traceback."""
        routed = self.routed(outcomes)
        if routed:
            print("\nrouted to an error branch:", file=out)
            for node, raised in routed:
                print(f"  {call_label(node)}: {inert(raised.type)}: {inert(raised.message)}",
                      file=out)
        if show_traceback and self.seen:
            print("\ntracebacks:", file=out)
            for _, _, text in self.seen:
                print("\n".join("  " + inert(line) for line in text.rstrip().split("\n")),
                      file=out)


def call_label(node: Any) -> str:
    """``call 3 (tool) [instance]``, made inert: how the terminal names a call."""
    label = f"call {node.index}" + (f" ({inert(node.tool)})" if node.tool else "")
    return label + (f" [{inert(node.instance)}]" if node.instance is not None else "")


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


__all__ = ["Exceptions", "call_label", "console_for", "terminal_approval"]

"""The printed report: the run's parameters, the table, the ratios and the goals."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping, Sequence

from .measured import CONTENDERS, Measured, Settings
from .tasks import Task

__all__ = ["Results", "all_right", "goals", "parameters", "ratios", "right", "table"]

#: What was measured, by (task, contender).
Results = Mapping[tuple[str, str], Measured]

NAMES = dict(CONTENDERS)
OTHERS = ("react", "lg-react", "lg-parallel")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def parameters(settings: Settings, langgraph: str) -> list[str]:
    """The run's parameters: the latency model, token counting, the machine."""
    latency = settings.latency
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return [
        f"Model: {latency.first_token * 1000:.0f} ms to the first token, then "
        f"{latency.per_token * 1000:.0f} ms per output token; input tokens take no time.",
        f"Tools: their own latencies (50-500 ms) x {settings.tool_scale:g}. Tokens: characters / 4 "
        "of the rendered request and of the answer.",
        f"Machine: Python {sys.version.split()[0]}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs ({_cpu()}), load average {load}; LangGraph {langgraph}.",
    ]


def right(m: Measured, task: Task) -> bool:
    """Whether ``m`` gave ``task``'s known answer at every user turn."""
    return len(m.answers) == len(task.turns) and all(
        a == t.answer for a, t in zip(m.answers, task.turns, strict=True))


def all_right(results: Results, tasks: Sequence[Task]) -> bool:
    """Whether every contender measured gave every task's known answers."""
    by_name = {task.name: task for task in tasks}
    return all(right(m, by_name[name]) for (name, _), m in results.items())


def table(results: Results, tasks: Sequence[Task]) -> list[str]:
    """One row per task and contender: requests, wall time, tokens, the answer checked."""
    lines = [f"{'task':<9} {'contender':<22} {'requests':>8} {'wall s':>7} {'tokens in':>10} "
             f"{'tokens out':>10}  answer"]
    for task in tasks:
        for key, name in CONTENDERS:
            m = results.get((task.name, key))
            if m is None:
                continue
            lines.append(f"{task.name:<9} {name:<22} {m.requests:>8} {m.seconds:>7.2f} "
                         f"{m.input_tokens:>10,} {m.output_tokens:>10,}  "
                         f"{'right' if right(m, task) else 'WRONG'}")
    return lines


def _ratio(other: Measured, ours: Measured, field: str) -> float:
    return float(getattr(other, field)) / max(float(getattr(ours, field)), 1e-9)


def ratios(results: Results, tasks: Sequence[Task]) -> list[str]:
    """The other contenders' figures over obelisk's (whole plan | streaming)."""
    fields = ("requests", "seconds", "input_tokens", "output_tokens")
    lines = ["Ratios: the other contender's figure / obelisk's, whole plan | streaming "
             "(above 1: obelisk does better)",
             f"{'task':<9} {'against':<22}" + "".join(
                 f"{h:>16}" for h in ("requests", "wall", "tokens in", "tokens out"))]
    for task in tasks:
        whole, stream = results.get((task.name, "whole")), results.get((task.name, "stream"))
        for key in OTHERS:
            other = results.get((task.name, key))
            if other is None or whole is None or stream is None:
                continue
            cells = [f"{_ratio(other, whole, f):.2f} | {_ratio(other, stream, f):.2f}"
                     for f in fields]
            lines.append(f"{task.name:<9} {NAMES[key]:<22}" + "".join(f"{c:>16}" for c in cells))
    return lines


def _mark(ok: bool) -> str:
    return "met" if ok else "NOT met"


def goals(results: Results) -> list[str]:
    """The issue's goals, each with the figures and whether it is met."""
    lines = ["Goals:"]
    for task in ("parallel", "fan-out"):
        for key in ("react", "lg-react"):
            other = results.get((task, key))
            if other is None:
                continue
            for mine in ("stream", "whole"):
                ours = results[(task, mine)]
                wall, asked = _ratio(other, ours, "seconds"), _ratio(other, ours, "requests")
                lines.append(f"  {task}, {NAMES[key]} / {NAMES[mine]}: wall {wall:.2f}x, "
                             f"requests {asked:.1f}x (goal >= 3x both): {_mark(wall >= 3 and asked >= 3)}")
        stream, whole = results.get((task, "stream")), results.get((task, "whole"))
        if stream is not None and whole is not None:
            gain = _ratio(whole, stream, "seconds")
            lines.append(f"  {task}, streaming faster than the whole plan: {gain:.2f}x "
                         f"(goal >= 1.3x): {_mark(gain >= 1.3)}")
    for task in ("chain", "branch"):
        other = results.get((task, "lg-parallel"))
        if (task, "whole") not in results:
            continue  # not among the tasks run (--tasks)
        if other is None:
            lines.append(f"  {task}, against LangGraph parallel: not measured (LangGraph absent)")
            continue
        for mine in ("stream", "whole"):
            ours = results[(task, mine)]
            ok = ours.requests < other.requests and ours.seconds < other.seconds
            lines.append(f"  {task}, {NAMES[mine]} against LangGraph parallel: requests "
                         f"{ours.requests} vs {other.requests}, wall {ours.seconds:.2f} vs "
                         f"{other.seconds:.2f} s (goal: fewer and faster): {_mark(ok)}")
    return lines

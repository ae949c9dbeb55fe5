"""What each strategy answers, from a turn's steps: the scripts of the simulated model.

- ``plan`` (obelisk, whole or streamed): one solution holding every step, each argument a
  reference, a fallback written as a branch (the primary's ``_outputPath`` has an error
  alternative, the fallback reads it with ``&&``), and the output as references: one
  request per turn.
- ``react``: one step per request, each after the results it needs were seen, then one
  request that gives the answer.
- ``parallel`` (LangGraph's parallel tool calls): every step whose inputs have been
  seen, together, per request; then one request that gives the answer.

The model knows ahead which steps fail (the task says), as a model that has read the
error would: a fallback is asked for only after its primary failed, except in a plan,
which writes the fallback as a branch.
"""

from __future__ import annotations

import json
from typing import Any

from .tasks import First, Ref, Step, Turn, reads

__all__ = ["obelisk_solutions", "obelisk_value", "waves", "will_run"]


def will_run(turn: Turn, fails: frozenset[str]) -> tuple[Step, ...]:
    """The steps a strategy that sees each result calls: fallbacks only of failed steps."""
    return tuple(s for s in turn.steps if s.after_failure is None or s.after_failure in fails)


def waves(turn: Turn, fails: frozenset[str], *, one_at_a_time: bool) -> list[list[Step]]:
    """The steps of ``turn`` by request: each request calls the steps whose inputs were
    all seen (only the first of them with ``one_at_a_time``)."""
    running = will_run(turn, fails)
    seen: set[str] = set()
    out: list[list[Step]] = []
    remaining = list(running)
    while remaining:
        ready = [s for s in remaining if all(r.id in seen for r in reads(s, running))]
        if not ready:
            raise ValueError(f"the steps {[s.id for s in remaining]} read each other")
        ready = ready[:1] if one_at_a_time else ready
        out.append(ready)
        seen.update(s.id for s in ready)
        remaining = [s for s in remaining if s not in ready]
    return out


def _reference(ref: Ref) -> str:
    return "†state." + ref.path


def obelisk_value(value: Any, ran: frozenset[str] | None = None) -> Any:
    """``value`` with its references written as obelisk's (``†state...``). A
    :class:`First` is an ``||`` in a plan (``ran`` None); a strategy that has seen which
    steps gave a result (``ran``, their ids) names the one that did."""
    if isinstance(value, Ref):
        return _reference(value)
    if isinstance(value, First):
        options = [r for r in value.options if ran is None
                   or any(r.path == i or r.path.startswith(i + ".") for i in ran)]
        return " || ".join(_reference(r) for r in options[:None if ran is None else 1])
    if isinstance(value, dict):
        return {k: obelisk_value(v, ran) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [obelisk_value(v, ran) for v in value]
    return value


def _gated(step: Step, args: dict[str, Any]) -> dict[str, Any]:
    """A fallback's arguments in a plan: its first one also requires the primary's error,
    so the fallback runs only on that branch (and is skipped when the primary succeeds)."""
    name, value = next(iter(args.items()))
    text = value if isinstance(value, str) and value.startswith("†") else json.dumps(value)
    return {**args, name: f"†state.{step.after_failure}Failed && {text}"}


def _obelisk_call(step: Step, turn: Turn, ran: frozenset[str] | None) -> dict[str, Any]:
    args = {k: obelisk_value(v, ran) for k, v in step.args.items()}
    target = _reference(Ref(step.id))
    if ran is None:  # a plan: branches for failures, fallbacks on them
        args = _gated(step, args) if step.after_failure else args
        if any(s.after_failure == step.id for s in turn.steps):
            target += f" || †state.{step.id}Failed"
    return {"_tool": step.tool, **args, "_outputPath": target}


def obelisk_solutions(turn: Turn, fails: frozenset[str], strategy: str) -> list[dict[str, Any]]:
    """The solutions, in order, that the simulated model gives obelisk for ``turn``:
    ``plan`` (one, calls and output together) or ``react`` (a call a tick, then the
    output in a tick of its own)."""
    if strategy == "plan":
        return [{"calls": [_obelisk_call(s, turn, None) for s in turn.steps],
                 "output": obelisk_value(turn.output)}]
    if strategy != "react":
        raise ValueError(f"unknown obelisk strategy {strategy!r}: plan or react")
    ran = frozenset(s.id for s in will_run(turn, fails) if s.id not in fails)
    solutions: list[dict[str, Any]] = [
        {"calls": [_obelisk_call(s, turn, ran) for s in wave], "output": None}
        for wave in waves(turn, fails, one_at_a_time=True)]
    return solutions + [{"calls": [], "output": obelisk_value(turn.output, ran)}]

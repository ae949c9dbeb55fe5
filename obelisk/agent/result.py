"""What an agent run produced: its :class:`AgentStatus`, each :class:`Tick`, and the
:class:`AgentResult` (final context, status, output, ticks)."""

from __future__ import annotations

import enum
from typing import Any

from attrs import frozen
from pyrsistent import PVector, pvector

from obelisk.core.context import Context
from obelisk.llm.base import Usage

__all__ = ["AgentResult", "AgentStatus", "PlanOutcome", "Tick"]


class AgentStatus(str, enum.Enum):
    """How an agent run ended."""

    COMPLETED = "completed"  # a tick gave a non-null output, its references resolved
    MAX_TICKS = "max_ticks"  # the tick budget ran out first
    STALLED = "stalled"  # max_stalls ticks in a row with no call and no output
    CANCELLED = "cancelled"  # the run was cancelled
    FAILED = "failed"  # the LLM adapter failed after its retries

    def __str__(self) -> str:
        return str(self.value)


@frozen
class PlanOutcome:
    """How one call of a tick's plan ended, as the plan message records it.

    ``outcome`` is ``executed``, ``skipped``, ``failed``, ``invalid``, ``denied`` or
    ``cancelled``; ``error`` the type of the error the call added, if any; ``reason`` why
    a skipped call was skipped (§8.2 step 5: the reference without a value and who wrote
    it, or what its writer did instead) or a denied one denied (the reviewer's reason),
    None for any other outcome.
    """

    call: int
    instance: str | None
    outcome: str
    error: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The outcome's entry in the plan message."""
        out: dict[str, Any] = {"call": self.call, "instance": self.instance,
                               "outcome": self.outcome}
        if self.error is not None:
            out["error"] = self.error
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@frozen
class Tick:
    """One tick: its number (from 1), the solution as the LLM gave it (None when the
    adapter failed), the plan's outcomes (empty when nothing ran), the types of the
    errors the tick added outside any call, and the tokens it cost (latent calls
    included)."""

    number: int
    solution: Any
    outcomes: PVector[PlanOutcome] = pvector()
    errors: PVector[str] = pvector()
    usage: Usage = Usage()
    #: True when ``on_plan`` edited the plan before it ran (lazy mode).
    edited: bool = False

    def to_json(self) -> dict[str, Any]:
        """The tick as ``--json`` prints it."""
        return {"tick": self.number, "solution": self.solution,
                "outcomes": [o.to_json() for o in self.outcomes],
                "errors": list(self.errors), "edited": self.edited,
                "usage": {"input_tokens": self.usage.input_tokens,
                          "output_tokens": self.usage.output_tokens}}


@frozen
class AgentResult:
    """The end of an agent run: the final context, the status, the output (references
    resolved; None unless completed), each tick, and why the run ended (a sentence)."""

    context: Context
    status: AgentStatus
    output: Any
    ticks: PVector[Tick]
    reason: str = ""
    #: The LLM requests the run made, its delegates' included (replayed ticks are not).
    requests: int = 0

    @property
    def usage(self) -> Usage:
        """The tokens the whole run cost."""
        total = Usage()
        for tick in self.ticks:
            total = total + tick.usage
        return total

    def to_json(self) -> dict[str, Any]:
        """The result as ``obelisk agent --json`` prints it (without the context)."""
        usage = self.usage
        return {"status": self.status.value, "output": self.output, "reason": self.reason,
                "ticks": [t.to_json() for t in self.ticks],
                "usage": {"input_tokens": usage.input_tokens,
                          "output_tokens": usage.output_tokens, "requests": self.requests}}

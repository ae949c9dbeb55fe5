"""What the agent loop's callers plug in: ``on_plan``'s verdicts in lazy mode, and the
events an observer (the command line) is told as a run goes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from attrs import field, frozen

from obelisk.agent.result import Tick
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.errors import ObeliskError
from obelisk.interpreters.result import RunResult
from obelisk.llm.request import Request

__all__ = [
    "AgentError",
    "AgentEvent",
    "AgentObserver",
    "ApprovePlan",
    "Asked",
    "CallStarted",
    "Delegated",
    "EditPlan",
    "OnPlan",
    "PlanVerdict",
    "Ran",
    "RejectPlan",
    "TickEnded",
    "plan_verdict",
]


class AgentError(ObeliskError, ValueError):
    """The agent cannot start or go on: a bad option, or a hook that answered badly."""


# -- lazy mode: what on_plan answers ---------------------------------------------------------


# Each verdict may say who made it (``by``: "alice at the terminal") and why; both are
# recorded with it (the journal's review row, ``obelisk history``, a rejection's error).


@frozen
class ApprovePlan:
    """Run the plan as compiled."""

    by: str | None = field(default=None, kw_only=True)
    reason: str | None = field(default=None, kw_only=True)


@frozen
class EditPlan:
    """Run these calls instead (compiled again; the plan message says ``edited``)."""

    calls: Sequence[Any]
    by: str | None = field(default=None, kw_only=True)
    reason: str | None = field(default=None, kw_only=True)


@frozen
class RejectPlan:
    """Do not run the plan: a ``Denied`` error with the reason is appended, then the plan
    message with every outcome ``denied`` (the LLM sees what was refused), and the tick
    ends."""

    reason: str = "the plan was rejected"
    by: str | None = field(default=None, kw_only=True)


#: What ``on_plan`` returns (or awaits): a verdict; ``True``/``None`` approve, ``False``
#: rejects, a list of calls edits.
PlanVerdict: TypeAlias = ApprovePlan | EditPlan | RejectPlan
OnPlan: TypeAlias = Callable[[CompiledPlan], Any]


def plan_verdict(answer: Any) -> PlanVerdict:
    """``on_plan``'s answer as a verdict; raises :class:`AgentError` for any other answer."""
    if answer is None or answer is True:
        return ApprovePlan()
    if answer is False:
        return RejectPlan()
    if isinstance(answer, (ApprovePlan, EditPlan, RejectPlan)):
        return answer
    if isinstance(answer, list):
        return EditPlan(answer)
    raise AgentError(f"on_plan returned {answer!r}: return ApprovePlan(), EditPlan(calls) "
                     "or RejectPlan(reason)")


# -- events: what an observer (the CLI) sees as the run goes --------------------------------


@frozen
class Asked:
    """Tick ``tick`` asks the LLM; ``size`` is the rendered request's length in characters.
    ``replayed``: the tick's answer is taken from the run's journal instead (a resume).
    ``request``: the request itself (what ``obelisk request`` prints)."""

    tick: int
    size: int
    replayed: bool = False
    request: Request | None = field(default=None, eq=False, repr=False)


@frozen
class Ran:
    """Tick ``tick``'s plan ran: its solution and the interpreter's result."""

    tick: int
    solution: Any
    run: RunResult


@frozen
class TickEnded:
    """Tick ``tick`` ended; ``errors`` are the error messages it appended."""

    tick: Tick
    errors: tuple[Any, ...]


@frozen
class Delegated:
    """A delegate ended: ``chain`` names the delegates from the outermost run down to it,
    ``status`` how it ended, ``ticks`` how many ticks it took."""

    chain: tuple[str, ...]
    status: str
    ticks: int


@frozen
class CallStarted:
    """Streaming: call ``call`` of tick ``tick`` started after ``seen`` calls had arrived
    (the stream still open when ``open``)."""

    tick: int
    call: int
    seen: int
    open: bool


AgentEvent: TypeAlias = Asked | Ran | TickEnded | Delegated | CallStarted
AgentObserver: TypeAlias = Callable[[AgentEvent], None]

"""The options of one agent run, fixed for every tick (what :func:`run_agent` was given,
checked), and the budgets' defaults."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from attrs import field, frozen

from obelisk.agent.delegate import Delegation
from obelisk.agent.hooks import AgentObserver, OnPlan
from obelisk.agent.result import AgentResult
from obelisk.agent.source import NoJournal, TickSource
from obelisk.core.size import MAX_REQUEST_BYTES
from obelisk.interpreters.activities import Activity, Offload
from obelisk.llm.base import LLM

__all__ = ["MAX_REQUEST_BYTES", "MAX_STALLS", "MAX_TICKS", "Nested", "Options", "Refresh"]

#: Default budgets.
MAX_TICKS = 25
MAX_STALLS = 2

#: How a delegate's run is made: ``run_agent`` itself, handed down (the modules of a tick
#: sit below the loop, so they do not import it).
Nested = Callable[..., Awaitable[AgentResult]]

#: Asked before each tick: new ``(tools, activities)`` to use from this tick on (MCP
#: servers re-listed after their tool list changed), or None when nothing changed.
Refresh: TypeAlias = Callable[[], Awaitable["tuple[Sequence[Any], Mapping[str, Activity]] | None"]]


@frozen
class Options:
    """The run's options, fixed for every tick."""

    llm: LLM
    tools: tuple[Any, ...]
    activities: Mapping[str, Activity]
    output_schema: Any
    max_ticks: int
    max_stalls: int
    approve: Callable[[dict[str, Any]], Any] | None
    on_plan: OnPlan | None
    clock: Callable[[], str]
    max_concurrency: int | None
    timeout: float | None
    instances: bool
    mocks: Mapping[str, Any] | None
    latent_tools: frozenset[str] | None
    observer: AgentObserver | None
    nested: Nested
    delegation: Delegation = Delegation()
    stream: bool = False
    #: The run's journal: what was recorded of it and the recording (a NoJournal when
    #: the run is not recorded).
    ticks: TickSource = field(factory=NoJournal)
    refresh: Refresh | None = None
    #: Where activities run when not here (``obelisk.dask.DaskInterpreter``; None: here).
    interpreter: Offload | None = None
    #: The largest request (or latent sub-request) sent to the LLM, in bytes.
    max_request_bytes: int = MAX_REQUEST_BYTES

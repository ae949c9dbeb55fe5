"""Where the agent loop takes a tick's solution from and how it runs a tick's plan, when
the run is recorded: the :class:`TickSource` hook (``obelisk.journal`` implements it).

The loop stays the loop: a source only answers "was this tick's solution recorded?",
records a new one, and runs a tick's plan (recording it, or replaying it through the
machine when it was recorded). The agent layer never imports the journal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from obelisk.compiler.plan import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.executors import AsyncExecutor
from obelisk.interpreters.result import RunResult
from obelisk.llm.base import Reply


class TickSource(Protocol):
    """The journal of one agent run, as the loop sees it."""

    def recorded_reply(self, tick: int) -> Reply | None:
        """The solution recorded for ``tick`` (no usage: it was paid for already), or None
        when the LLM must be asked."""

    def record_solution(self, tick: int, solution: Any) -> None:
        """Record the LLM's solution for ``tick``, before anything of the tick runs."""

    async def run_tick(self, tick: int, plan: CompiledPlan, context: Context,
                       invoke: AsyncExecutor, approve: Callable[[dict[str, Any]], Any] | None,
                       clock: Callable[[], str], *, max_concurrency: int | None,
                       timeout: float | None) -> RunResult:
        """Run tick ``tick``'s plan (keeping going past invalid calls), recorded."""

    def end(self, status: str, errors: int) -> None:
        """Record the run's end."""


class AgentJournal(Protocol):
    """What ``run_agent(journal=...)`` takes: a journal that opens an agent run."""

    def agent_source(self, run_id: str | None, context: Context, tools: tuple[Any, ...],
                     options: Mapping[str, Any]) -> TickSource:
        """The run ``run_id`` (None: a new one) recorded in this journal."""

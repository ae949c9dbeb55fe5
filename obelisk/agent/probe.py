"""The request the agent loop builds at a tick, shown without asking an LLM
(``obelisk request``).

The loop builds it, with the builder every tick uses (:mod:`obelisk.agent.tick`): a
:class:`Probe` stands in for the LLM, the activities and the hooks, and its observer stops
the run when the tick's request is built. Before that tick nothing may be asked of them
(a recorded run's earlier ticks replay from its journal); when something is, the request
would not be the one the run sends, and :meth:`Probe.run` says so instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Collection, Iterable
from typing import Any

from obelisk.agent.hooks import AgentError, AgentEvent, Asked, RejectPlan
from obelisk.agent.loop import run_agent
from obelisk.agent.result import AgentResult
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity
from obelisk.llm.base import LLMError, Reply, StreamItem
from obelisk.llm.request import Request

__all__ = ["Probe", "agent_request"]


class _Built(Exception):  # noqa: N818 - a signal, not an error: the request was built
    """Raised by the probe's observer to stop the run at the tick asked for."""

    def __init__(self, asked: Asked) -> None:
        super().__init__("built")
        self.asked = asked


class Probe:
    """The LLM, activities and hooks of a run that only builds requests.

    ``tick``: the tick whose request is wanted (None: the newest one the run reaches
    before the LLM, an activity or a hook would be asked).
    """

    def __init__(self, tick: int | None = None) -> None:
        self.tick = tick
        self.used: str | None = None  # what was asked first (the run then differs)
        self.last: Asked | None = None

    def _asked(self, what: str) -> None:
        if self.used is None:
            self.used = what

    async def solve(self, request: Request) -> Reply:
        """Never answers: the LLM is not asked."""
        self._asked("the LLM")
        raise LLMError("obelisk request asks no LLM", provider="probe")

    async def latent(self, request: Request) -> Reply:
        """Never answers a latent call."""
        self._asked("the LLM (a latent call)")
        raise LLMError("obelisk request asks no LLM", provider="probe")

    def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """Never streams."""
        self._asked("the LLM")
        raise LLMError("obelisk request asks no LLM", provider="probe")

    def activities(self, names: Iterable[str]) -> dict[str, Activity]:
        """Activities by these names, none of which runs."""

        def unrun(name: str) -> Activity:
            def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
                self._asked(f"activity {name!r}")
                raise RuntimeError("obelisk request runs no activity")

            return activity

        return {name: unrun(name) for name in names}

    def approve(self, call: dict[str, Any]) -> Any:
        """The approval hook: never approves."""
        self._asked("the approval hook")
        return False

    def on_plan(self, plan: CompiledPlan) -> Any:
        """The plan review hook: never approves."""
        self._asked("the plan review hook")
        return RejectPlan("obelisk request runs no plan")

    def observer(self, event: AgentEvent) -> None:
        """Keep each request built before anything was asked; stop at the tick wanted."""
        if not isinstance(event, Asked) or self.used is not None:
            return
        self.last = event
        if event.tick == self.tick and event.request is not None:
            raise _Built(event)

    async def run(self, started: Awaitable[AgentResult]) -> Asked:
        """The run ``started`` (a loop given this probe) asking at the tick wanted: the
        event, with its request; :class:`AgentError` when the run does not reach it as it
        would run."""
        try:
            await started
        except _Built as built:
            return built.asked
        last = self.last
        reached = 0 if last is None else last.tick
        if self.tick is None and last is not None:
            return last
        if self.used is not None:
            raise AgentError(f"tick {self.tick} cannot be shown as it would be sent: "
                             f"{self.used} would be asked after tick {reached} (the record "
                             "ends in the middle of a tick): resume the run first")
        raise AgentError(f"the run has no tick {self.tick}: it ended after tick {reached}")


def agent_request(context: Context | Iterable[Any], *, activity_names: Collection[str] = (),
                  **options: Any) -> Request:
    """The request the agent loop sends at its first tick for ``context`` and ``options``
    (:func:`obelisk.run_agent`'s, without ``llm``, ``activities`` and the hooks);
    ``activity_names`` the activities the run would have."""
    probe = Probe(1)
    asked = asyncio.run(probe.run(run_agent(
        context, probe, activities=probe.activities(activity_names) or None,
        observer=probe.observer, **options)))
    assert asked.request is not None  # the loop's Asked events carry their request
    return asked.request

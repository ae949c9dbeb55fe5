"""The request-size check: a long agent run whose data does not grow.

Each tick the model asks for one call, ``poll``, whose result overwrites the same state
(``†state.job``: the same keys, a tick number that changes); after ``ticks`` ticks it
answers. The request should follow the data, not the history: its size at tick 50
should be at most 1.2 times its size at tick 10.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from obelisk.agent import AgentStatus, run_agent
from obelisk.llm import Request

from .llm import Latency, SimulatedLLM, count_tokens
from .on_obelisk import activities, obelisk_tools
from .tasks import Tool

__all__ = ["Growth", "request_growth"]

TICKS_SHOWN = (1, 10, 50)
LIMIT = 1.2


@frozen
class Growth:
    """Request sizes (characters, and tokens as counted, by tick) of a run of ``ticks``
    ticks."""

    ticks: int
    sizes: dict[int, int]
    tokens: dict[int, int]

    def ratio(self) -> float:
        """Size at tick 50 over size at tick 10."""
        return self.sizes[50] / self.sizes[10]

    def met(self) -> bool:
        """Whether the ratio is within the limit (1.2)."""
        return self.ratio() <= LIMIT

    def lines(self) -> list[str]:
        """The check as printed lines."""
        shown = ", ".join(f"tick {t}: {self.sizes[t]:,} characters ({self.tokens[t]:,} tokens)"
                          for t in TICKS_SHOWN)
        return [f"Request size in a {self.ticks}-tick run whose data does not grow: {shown}",
                f"  tick 50 / tick 10 = {self.ratio():.2f} (goal <= {LIMIT}: "
                f"{'met' if self.met() else 'NOT met'})"]


def _poll(job: str) -> Any:
    return {"job": job, "status": "running", "progress": 0.5}


async def request_growth(ticks: int = 60) -> Growth:
    """Run the long agent and measure its requests at ticks 1, 10 and 50."""
    tool = Tool("poll", "The status of a job.", {"job": {"type": "string"}}, 0.0, _poll)

    def solution(request: Request) -> Any:
        if len(llm.requests) > ticks - 1:
            return {"calls": [], "output": "†state.job.status"}
        return {"calls": [{"_tool": "poll", "job": "j-7", "_outputPath": "†state.job"}],
                "output": None}

    llm = SimulatedLLM(solution, Latency(0.0, 0.0))
    result = await run_agent([{"type": "text", "text": "Watch job j-7 until it is done."}],
                             llm, tools=obelisk_tools((tool,)),
                             activities=activities((tool,), 0.0), max_ticks=ticks)
    if result.status is not AgentStatus.COMPLETED:
        raise RuntimeError(f"the long run ended {result.status.value}: {result.reason}")
    texts = {t: llm.requests[t - 1].render() for t in TICKS_SHOWN}
    return Growth(ticks, {t: len(text) for t, text in texts.items()},
                  {t: count_tokens(text) for t, text in texts.items()})

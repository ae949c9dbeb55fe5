"""A run's budgets, shared with its delegates: LLM requests, tokens, delegates at once.

Delegates multiply: three delegating calls per answer, nested, make thousands of requests
from one run. So a run and every delegate under it draw on one :class:`Spending`: its
limits (:class:`Budgets`) and what was spent so far. Every request to the LLM goes
through :class:`Metered`, the run's adapter wrapped: it asks the spending first (past a
budget it raises :class:`BudgetExceeded` instead of asking) and counts the tokens each
answer cost, usable or not. A delegate beyond ``max_delegates`` running at once is not
started (the delegate executor asks :meth:`Spending.enter`).

Where the budget runs out decides what ends: a tick's request ends the run ``failed``
with a ``BudgetExceeded`` error; a delegate's request ends that delegate, so its call
fails with ``DelegateFailed`` naming the budget; a latent call's request fails that call.
Tokens are counted after each answer, so the last request may pass the token budget by
what it cost; the next one is refused. A resumed run counts what it asks from then on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from attrs import frozen

from obelisk.llm.base import LLM, Failure, LLMError, Reply, StreamedOutput, StreamItem, Usage
from obelisk.llm.request import Request

__all__ = ["MAX_DELEGATES", "MAX_REQUESTS", "MAX_TOKENS", "BudgetExceeded", "Budgets",
           "Metered", "Spending"]

#: Default budgets of a run, its delegates included.
MAX_REQUESTS = 200
MAX_TOKENS = 2_000_000
MAX_DELEGATES = 16


@frozen
class Budgets:
    """A run's limits: LLM requests and tokens (input and output) for the run and all
    its delegates, and how many delegates may run at once."""

    max_requests: int = MAX_REQUESTS
    max_tokens: int = MAX_TOKENS
    max_delegates: int = MAX_DELEGATES


class BudgetExceeded(LLMError):
    """A budget of the run is spent: ``budget`` names it (``max_requests``,
    ``max_tokens``, ``max_delegates``), ``limit`` is its value."""

    def __init__(self, budget: str, limit: int, message: str) -> None:
        self.budget = budget
        self.limit = limit
        super().__init__(message, provider="budget", failure=Failure.EXHAUSTED, attempts=0)


class Spending:
    """What a run and its delegates spent so far, against their :class:`Budgets` (one
    object, shared down the chain of delegates; only the run's event loop touches it)."""

    def __init__(self, budgets: Budgets = Budgets()) -> None:
        self.budgets = budgets
        self.requests = 0
        self.usage = Usage()
        self.delegates = 0  # running now

    def __repr__(self) -> str:
        return (f"Spending({self.requests} requests, {self.tokens} tokens, "
                f"{self.delegates} delegates running)")

    @property
    def tokens(self) -> int:
        """The tokens spent, input and output."""
        return self.usage.input_tokens + self.usage.output_tokens

    def ask(self) -> None:
        """One more request, counted; raises :class:`BudgetExceeded` when a budget is
        spent (the request is then not made)."""
        limits = self.budgets
        if self.requests >= limits.max_requests:
            raise BudgetExceeded("max_requests", limits.max_requests,
                                 f"the run's budget of {_many(limits.max_requests, 'LLM request')}"
                                 " (delegates included) is spent: raise max_requests"
                                 " (--max-requests)")
        if self.tokens >= limits.max_tokens:
            raise BudgetExceeded("max_tokens", limits.max_tokens,
                                 f"the run's budget of {_many(limits.max_tokens, 'token')} "
                                 f"(delegates included) is spent ({self.tokens:,} so far): "
                                 "raise max_tokens (--max-tokens)")
        self.requests += 1

    def paid(self, usage: Usage) -> None:
        """An answer's cost."""
        self.usage = self.usage + usage

    def enter(self) -> str | None:
        """A delegate starts, counted; why it may not (``max_delegates``), or None."""
        limit = self.budgets.max_delegates
        if self.delegates >= limit:
            return (f"{limit:,} delegates are running already (max_delegates, "
                    "--max-delegates): delegate fewer calls at once")
        self.delegates += 1
        return None

    def leave(self) -> None:
        """A delegate ended."""
        self.delegates -= 1


class Metered:
    """An adapter that draws every request from a :class:`Spending` (the run's adapter,
    wrapped once; its delegates share it)."""

    def __init__(self, llm: LLM, spending: Spending) -> None:
        self.llm = llm
        self.spending = spending

    def __repr__(self) -> str:
        return repr(self.llm)

    async def solve(self, request: Request) -> Reply:
        """The adapter's solution, counted; raises :class:`BudgetExceeded` first when a
        budget is spent."""
        self.spending.ask()
        reply = await self.llm.solve(request)
        self.spending.paid(reply.usage)
        return reply

    async def latent(self, request: Request) -> Reply:
        """The adapter's latent answer, counted as :meth:`solve` is."""
        self.spending.ask()
        reply = await self.llm.latent(request)
        self.spending.paid(reply.usage)
        return reply

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The adapter's stream, counted as :meth:`solve` is (its usage at its end)."""
        self.spending.ask()
        async for item in self.llm.stream(request):
            if isinstance(item, StreamedOutput):
                self.spending.paid(item.usage)
            yield item


def metered(llm: LLM, spending: Spending | None, budgets: Budgets) -> Metered:
    """The run's adapter drawing on ``spending`` (a delegate's: its caller's), or on a new
    one with ``budgets`` (a run of its own); an adapter metered already is kept."""
    if isinstance(llm, Metered) and (spending is None or llm.spending is spending):
        return llm
    return Metered(llm.llm if isinstance(llm, Metered) else llm,
                   spending if spending is not None else Spending(budgets))


def _many(count: int, noun: str) -> str:
    """``count`` (with thousands separators) and ``noun``, agreeing: ``1 token``,
    ``2,000,000 tokens``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"

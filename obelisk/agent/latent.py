"""Latent execution: a call that no activity runs is answered by the LLM.

:class:`LLMLatent` is a :class:`obelisk.interpreters.LatentExecutor` (the executor seam of
the interpreters): for a latent call without ``_output`` it builds the call's sub-request
(:func:`obelisk.agent.request.build_latent_request`) from the context the tick started
with, asks the adapter's ``latent`` method, and turns the answer into an outcome. The
machine then checks it like any activity's result (JSON, the tool's ``_output`` schema, a
declared branch), so no rule of the run is repeated here.

When the call's ``_outputPath`` has two or more alternatives the answer is
``{"branch": <one of them>, "value": ...}`` and becomes an explicit choice of that branch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from obelisk.agent.request import Transcript, build_latent_request
from obelisk.agent.sizes import MAX_REQUEST_BYTES, request_too_large
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.outcomes import Chose, Outcome, Raised, Returned
from obelisk.llm.answers import Unusable
from obelisk.llm.base import LLM, Usage

__all__ = ["LLMLatent", "alternatives_of"]


def alternatives_of(plan: CompiledPlan, node_id: int) -> tuple[str, ...]:
    """The alternatives of a node's ``_outputPath``, each as written (``()`` without one)."""
    node = plan.nodes[node_id]
    if node.output is None or node.output_text is None:
        return ()
    text = node.output_text
    return tuple(text[alt.span.start:alt.span.end].strip() for alt in node.output.alternatives)


class LLMLatent:
    """Answers a tick's latent calls through an LLM adapter.

    ``plan`` is the tick's plan, ``context`` the context the tick started with (the
    parent context the sub-request renders), ``transcript`` the loop's index of it.
    :attr:`usage` adds up the tokens the sub-requests cost. A sub-request over
    ``max_bytes`` is not sent: the call fails with ``RequestTooLarge``. One executor per
    tick.
    """

    def __init__(self, llm: LLM, plan: CompiledPlan, context: Context,
                 transcript: Transcript | None = None, *,
                 on_usage: Callable[[Usage], None] | None = None,
                 max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.llm = llm
        self.max_bytes = max_bytes  # the largest sub-request sent
        self.on_usage = on_usage  # told each answer's cost (a journal records it)
        self.plan = plan
        self.context = context
        self.transcript = transcript
        self.usage = Usage()

    def __repr__(self) -> str:
        return f"LLMLatent({self.llm!r})"

    async def __call__(self, invocation: Invocation) -> Outcome:
        """The outcome of ``invocation``, asked of the LLM; an adapter failure raises (the
        interpreter makes it the call's failure)."""
        alternatives = alternatives_of(self.plan, invocation.node)
        request = build_latent_request(self.context, invocation.call, invocation.tool,
                                       alternatives=alternatives, transcript=self.transcript)
        too_large = request_too_large(request, self.max_bytes, "the call's sub-request")
        if too_large is not None:  # not sent: the call fails, as an activity's failure
            return Raised("RequestTooLarge", too_large)
        reply = await self.llm.latent(request)
        self.usage = self.usage + reply.usage
        if self.on_usage is not None:
            self.on_usage(reply.usage)
        return outcome_of_answer(reply.value, alternatives)


def outcome_of_answer(answer: Any, alternatives: tuple[str, ...]) -> Outcome:
    """A latent answer as an outcome: the value itself, or with two or more alternatives
    the branch it names (an answer of the wrong shape breaks the branch contract); an
    unusable answer (not JSON, refused) is a ``NotJSON`` failure saying why."""
    if isinstance(answer, Unusable):
        return Raised("NotJSON", "the LLM's answer to this latent call is not usable: "
                      + answer.describe(), contract=True)
    if len(alternatives) < 2:
        return Returned(answer)
    if not isinstance(answer, Mapping) or "branch" not in answer or "value" not in answer:
        return Raised("BranchContract", 'a latent call with alternatives must answer '
                      '{"branch": <one of ' + ", ".join(alternatives) + '>, "value": ...}',
                      contract=True)
    branch = answer["branch"]
    if not isinstance(branch, str):
        return Raised("BranchContract", "the latent answer's branch must be a string naming "
                      "one of " + ", ".join(alternatives), contract=True)
    return Chose(branch, answer["value"])

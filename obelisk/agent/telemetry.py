"""The agent's part of the typed event stream (:mod:`obelisk.interpreters.stream`): the
LLM request and answer of each tick. Nothing is made when nobody watches the run."""

from __future__ import annotations

from typing import Any

from obelisk.agent.budget import Metered
from obelisk.interpreters.stream import Emitter
from obelisk.llm.answers import Unusable
from obelisk.llm.base import LLM, Reply
from obelisk.llm.request import Request

__all__ = ["answered", "asked", "provider_of", "reviewed"]


def provider_of(llm: LLM) -> tuple[str, str]:
    """The adapter's provider and model names, as the GenAI conventions name them (of the
    adapter a run's budget meters, not of the meter)."""
    while isinstance(llm, Metered):
        llm = llm.llm
    module = type(llm).__module__.rsplit(".", 1)[-1]
    provider = {"openai": "openai", "anthropic": "anthropic"}.get(module, "obelisk." + module)
    return provider, str(getattr(llm, "model", None) or type(llm).__name__)


def asked(emitter: Emitter | None, llm: LLM, tick: int, request: Request, *,
          stream: bool = False, marks: dict[str, Any] | None = None,
          **call: int) -> dict[str, Any] | None:
    """``llm_request``: tick ``tick`` asks the LLM (its size; the turns when content is
    recorded); a latent call's sub-request names its ``node`` and ``call``. The event
    (None when nobody watches). ``marks``: a replayed tick's (``replayed``, the recorded
    ``time``)."""
    if emitter is None:
        return None
    provider, model = provider_of(llm)
    fields: dict[str, Any] = {"tick": tick, "provider": provider, "model": model,
                              "size": len(request.render()), "stream": stream, **call}
    if emitter.content:
        fields["content"] = request.turns_json()
    return emitter.emit("llm_request", **fields, **(marks or {}))


def answered(emitter: Emitter | None, llm: LLM, tick: int, reply: Reply | None, *,
             error: BaseException | None = None, first_call: float | None = None,
             marks: dict[str, Any] | None = None, **call: int) -> None:
    """``llm_answer``: the tokens it cost, the solution when content is recorded, or the
    error that ended the request (a latent call's names its ``node`` and ``call``)."""
    if emitter is None:
        return
    provider, model = provider_of(llm)
    fields: dict[str, Any] = {"tick": tick, "provider": provider, "model": model, **call}
    if reply is not None:
        fields.update(input_tokens=reply.usage.input_tokens,
                      output_tokens=reply.usage.output_tokens)
        if reply.response_id is not None:
            fields["response_id"] = reply.response_id
        if reply.finish_reason is not None:
            fields["finish"] = reply.finish_reason
        if isinstance(reply.value, Unusable):  # not JSON, refused, unreadable: why
            fields["error"] = "Unusable"
            if emitter.content:
                fields["content"] = reply.value.to_json()
        elif emitter.content:
            fields["content"] = reply.value
    if first_call is not None:
        fields["first_call"] = first_call
    if error is not None:
        fields["error"] = type(error).__name__
    emitter.emit("llm_answer", **fields, **(marks or {}))


def reviewed(emitter: Emitter | None, tick: int, verdict: Any, asked_at: float | None, *,
             marks: dict[str, Any] | None = None) -> None:
    """``plan_reviewed``: what ``on_plan`` said about tick ``tick``'s plan (lazy mode), who
    said it and why, and when it was asked (``asked``: the review's bar runs from there to
    the event)."""
    if emitter is None:
        return
    word = {"RejectPlan": "reject", "EditPlan": "edit"}.get(type(verdict).__name__, "approve")
    fields: dict[str, Any] = {"tick": tick, "verdict": word}
    for name in ("reason", "by"):
        if getattr(verdict, name, None) is not None:
            fields[name] = getattr(verdict, name)
    if asked_at is not None:
        fields["asked"] = asked_at
    emitter.emit("plan_reviewed", **fields, **(marks or {}))

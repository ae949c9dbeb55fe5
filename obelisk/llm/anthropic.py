"""The Anthropic messages adapter: the solution as one forced tool.

The request's schema becomes the ``input_schema`` of a single tool named after the
request (``solution``, or ``latent`` for a sub-request, wrapped as ``{"value": ...}``
since a tool's input is an object), and ``tool_choice={"type": "tool", "name": ...}``
forces the model to call it; the answer is that ``tool_use`` block's ``input``. The
request's system text and ``system`` turns become the ``system`` parameter; the user turns
become the text blocks of one user message, in order.

Needs the ``anthropic`` package (``pip install 'obelisk[anthropic]'``), imported only when
an adapter is made. The SDK's own retries are off (``max_retries=0``); this adapter retries
429, 5xx (529 "overloaded" included), timeouts and dropped connections with backoff within
its :class:`RetryPolicy`. ``stop_reason: "refusal"`` raises :class:`Refusal`; an answer
without the tool call is asked again once, then raises :class:`LLMError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from attrs import evolve

from obelisk.llm.base import (
    Failure,
    LLMError,
    Refusal,
    Reply,
    StreamedCall,
    StreamedOutput,
    StreamItem,
    Usage,
    redact,
)
from obelisk.llm.openai import wrap_latent_schema
from obelisk.llm.request import Request, Role
from obelisk.llm.retry import (
    DEFAULT_POLICY,
    Malformed,
    RetryPolicy,
    Sleep,
    Transient,
    api_key_from,
    retry_after_seconds,
    with_retries,
)
from obelisk.llm.streaming import SolutionParser, failed_midstream

__all__ = ["AnthropicLLM"]

PROVIDER = "anthropic"
TOOL_DESCRIPTION = "Give your answer by calling this tool; its input is the answer."


def _import_sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise LLMError("the anthropic package is not installed: "
                       "pip install 'obelisk[anthropic]'", provider=PROVIDER,
                       attempts=0) from None
    return anthropic


class AnthropicLLM:
    """An adapter for Anthropic messages.

    ``model`` names the model; ``api_key`` defaults to the environment's
    ``ANTHROPIC_API_KEY``; ``base_url`` points elsewhere (a proxy, a test server);
    ``max_tokens`` bounds each answer (the API requires a bound); ``policy`` bounds retries
    and each request's time; ``sleep`` is how to wait between attempts. Raises
    :class:`LLMError` when the SDK is missing or no key is found. The key never appears in
    this object's repr or in any error text.
    """

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int = 4096, policy: RetryPolicy = DEFAULT_POLICY,
                 sleep: Sleep = asyncio.sleep, temperature: float | None = None) -> None:
        sdk = _import_sdk()
        self._secret = api_key_from(api_key, "ANTHROPIC_API_KEY", PROVIDER)
        self.model = model
        self.base_url = base_url
        self.max_tokens = max_tokens
        self.policy = policy
        self._sleep = sleep
        self._options: dict[str, Any] = {}
        if temperature is not None:
            self._options["temperature"] = temperature
        self._sdk = sdk
        self._client = sdk.AsyncAnthropic(api_key=self._secret, base_url=base_url,
                                          max_retries=0, timeout=policy.timeout)

    def __repr__(self) -> str:
        where = "" if self.base_url is None else f", base_url={self.base_url!r}"
        return f"AnthropicLLM(model={self.model!r}{where})"

    async def solve(self, request: Request) -> Reply:
        """The solution for ``request``; raises :class:`LLMError` or :class:`Refusal`."""
        return await self._ask(request, request.schema)

    async def latent(self, request: Request) -> Reply:
        """A latent call's result for the sub-request; raises :class:`LLMError`."""
        reply = await self._ask(request, wrap_latent_schema(request.schema))
        value = reply.value
        return evolve(reply, value=value.get("value") if isinstance(value, dict) else None)

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The solution as it is generated (``stream=True``): the forced tool's input is
        parsed as its JSON arrives, each call yielded as soon as its object is complete,
        then the output and the usage. Opening the stream is retried like a request; a
        failure after it began raises :class:`LLMError`."""
        system, blocks, tool = self._parts(request, request.schema)
        parser = SolutionParser(PROVIDER)

        async def attempt() -> Any:
            try:
                return await self._client.messages.create(
                    model=self.model, max_tokens=self.max_tokens, system=system,
                    messages=[{"role": "user", "content": blocks}], tools=[tool],
                    tool_choice={"type": "tool", "name": request.name},
                    timeout=self.policy.timeout, stream=True, **self._options)
            except Exception as exc:  # the SDK's errors, classified below
                raise self._classify(exc) from None

        events = await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                    sleep=self._sleep, secret=self._secret)
        tokens_in = tokens_out = 0
        try:
            async for event in events:
                kind = getattr(event, "type", "")
                if kind == "message_start":
                    tokens_in = int(getattr(event.message.usage, "input_tokens", 0) or 0)
                elif kind == "content_block_delta" and event.delta.type == "input_json_delta":
                    for call in parser.feed(event.delta.partial_json):
                        yield StreamedCall(call)
                elif kind == "message_delta":
                    tokens_out = int(getattr(event.usage, "output_tokens", 0) or 0)
                    if getattr(event.delta, "stop_reason", None) == "refusal":
                        raise Refusal("the model stopped with a refusal", provider=PROVIDER)
        except Exception as exc:
            raise failed_midstream(self._classify(exc) if not isinstance(exc, LLMError)
                                   else exc, PROVIDER, self._secret) from None
        yield StreamedOutput(parser.close(), Usage(tokens_in, tokens_out))

    def _parts(self, request: Request, schema: Any) -> tuple[str, list[Any], dict[str, Any]]:
        """The system text, the user blocks and the forced tool of a request."""
        system = "\n\n".join(
            [request.system] + [t.content for t in request.messages if t.role is Role.SYSTEM])
        blocks = [{"type": "text", "text": t.content}
                  for t in request.messages if t.role is Role.USER]
        if not blocks:  # the API wants one user message at least
            blocks = [{"type": "text", "text": "(no data yet)"}]
        return system, blocks, {"name": request.name, "description": TOOL_DESCRIPTION,
                                "input_schema": schema}

    async def _ask(self, request: Request, schema: Any) -> Reply:
        system, blocks, tool = self._parts(request, schema)

        async def attempt() -> Reply:
            try:
                response = await self._client.messages.create(
                    model=self.model, max_tokens=self.max_tokens, system=system,
                    messages=[{"role": "user", "content": blocks}], tools=[tool],
                    tool_choice={"type": "tool", "name": request.name},
                    timeout=self.policy.timeout, **self._options)
            except Exception as exc:  # the SDK's errors, classified below
                raise self._classify(exc) from None
            return self._read(response, request.name)

        return await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                  sleep=self._sleep, secret=self._secret)

    def _classify(self, exc: Exception) -> Exception:
        sdk = self._sdk
        text = redact(f"{type(exc).__name__}: {exc}", self._secret)
        if isinstance(exc, sdk.APITimeoutError):
            return Transient("the request timed out", failure=Failure.TIMEOUT)
        if isinstance(exc, sdk.APIConnectionError):
            return Transient(f"connection failed: {text}", failure=Failure.CONNECTION)
        if isinstance(exc, sdk.APIStatusError):
            status = int(exc.status_code)
            if status == 429:
                return Transient(f"rate limited: {text}", failure=Failure.RATE_LIMITED,
                                 status=status,
                                 retry_after=retry_after_seconds(exc.response.headers))
            if status >= 500 or status == 408:
                return Transient(f"server error: {text}", failure=Failure.SERVER,
                                 status=status,
                                 retry_after=retry_after_seconds(exc.response.headers))
            return LLMError(f"request refused: {text}", provider=PROVIDER, status=status)
        return LLMError(f"unexpected failure: {text}", provider=PROVIDER)

    def _read(self, response: Any, name: str) -> Reply:
        usage = getattr(response, "usage", None)
        counted = Usage(int(getattr(usage, "input_tokens", 0) or 0),
                        int(getattr(usage, "output_tokens", 0) or 0))
        if getattr(response, "stop_reason", None) == "refusal":
            texts = [getattr(b, "text", "") for b in response.content
                     if getattr(b, "type", None) == "text"]
            raise Refusal(redact(" ".join(texts) or "no reason given", self._secret),
                          provider=PROVIDER)
        for block in getattr(response, "content", None) or []:
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == name:
                if not isinstance(block.input, dict):
                    raise Malformed("the tool call's input is not an object")
                ident, stop = getattr(response, "id", None), getattr(response, "stop_reason", None)
                return Reply(block.input, counted, ident if isinstance(ident, str) else None,
                             stop if isinstance(stop, str) else None)
        raise Malformed(f"the answer has no call of the tool {name!r}")

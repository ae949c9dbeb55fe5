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
its :class:`RetryPolicy`. An answer the adapter cannot use (``stop_reason: "refusal"``,
no call of the tool, a response of the wrong shape) is returned as an
:class:`~obelisk.llm.answers.Unusable`, with its tokens counted, and never asked again:
the loop feeds it back (one request per tick).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from obelisk.llm.answers import (
    MAX_ANSWER_DEPTH,
    Unusable,
    count_of,
    depth_over,
    excerpt,
    field_of,
    redact_value,
    unreadable,
)
from obelisk.llm.base import (
    Failure,
    LLMError,
    Reply,
    StreamedCall,
    StreamItem,
    Usage,
    redact,
)
from obelisk.llm.deadlines import bounded, paced
from obelisk.llm.openai import wrap_latent_schema
from obelisk.llm.request import Request, Role
from obelisk.llm.retry import (
    DEFAULT_POLICY,
    RetryPolicy,
    Sleep,
    Transient,
    api_key_from,
    retry_after_seconds,
    with_retries,
)
from obelisk.llm.streaming import SolutionParser, call_of, failed_midstream

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
    ``ANTHROPIC_API_KEY`` (with ``base_url`` and no key, a placeholder is sent, as
    :class:`~obelisk.llm.openai.OpenAILLM` does); ``base_url`` points elsewhere (a proxy,
    a test server);
    ``max_tokens`` bounds each answer (the API requires a bound); ``policy`` bounds retries
    and each request's time; ``sleep`` is how to wait between attempts. Raises
    :class:`LLMError` when the SDK is missing or no key is found. The key never appears in
    this object's repr or in any error text.
    """

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int = 4096, policy: RetryPolicy = DEFAULT_POLICY,
                 sleep: Sleep = asyncio.sleep, temperature: float | None = None) -> None:
        sdk = _import_sdk()
        if api_key is None and base_url is not None:
            try:
                api_key = api_key_from(None, "ANTHROPIC_API_KEY", PROVIDER)
            except LLMError:
                api_key = "not-needed"  # a proxy or a local server seldom checks it
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
        """The solution for ``request`` (an :class:`Unusable` when the answer has no call
        of the forced tool, is refused or unreadable); raises :class:`LLMError` when the
        provider failed after the retries."""
        return await self._ask(request, request.schema)

    async def latent(self, request: Request) -> Reply:
        """A latent call's result for the sub-request; raises :class:`LLMError`."""
        reply = await self._ask(request, wrap_latent_schema(request.schema))
        value = reply.value
        if isinstance(value, Unusable):
            return reply
        return Reply(value.get("value") if isinstance(value, dict) else None, reply.usage)

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The solution as it is generated (``stream=True``): the forced tool's input is
        parsed as its JSON arrives, each call yielded as soon as its object is complete,
        then the output and the usage (or why the answer was unusable: a refusal, a
        stop at the token limit before the solution closed). Opening the stream is
        retried like a request; a failure after it began raises :class:`LLMError`."""
        system, blocks, tool = self._parts(request, request.schema)
        parser = SolutionParser(PROVIDER, self._secret)

        async def attempt() -> Any:
            try:
                return await bounded(self._client.messages.create(
                    model=self.model, max_tokens=self.max_tokens, system=system,
                    messages=[{"role": "user", "content": blocks}], tools=[tool],
                    tool_choice={"type": "tool", "name": request.name},
                    timeout=self.policy.stream_timeout, stream=True, **self._options),
                    self.policy.timeout)
            except Exception as exc:  # the SDK's errors, classified below
                raise self._classify(exc) from None

        events = await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                    sleep=self._sleep, secret=self._secret)
        tokens_in = tokens_out = 0
        try:
            async for event in paced(events, first=self.policy.timeout,
                                     total=self.policy.stream_timeout):
                kind = field_of(event, "type")
                delta = field_of(event, "delta")
                if kind == "message_start":
                    tokens_in = count_of(field_of(field_of(field_of(event, "message"),
                                                           "usage"), "input_tokens"))
                elif kind == "content_block_delta" and \
                        field_of(delta, "type") == "input_json_delta":
                    text = field_of(delta, "partial_json")
                    for call in parser.feed(text if isinstance(text, str) else ""):
                        yield StreamedCall(call_of(call, None, self._secret))
                elif kind == "message_delta":
                    tokens_out = count_of(field_of(field_of(event, "usage"), "output_tokens"))
                    if field_of(delta, "stop_reason") == "refusal":
                        parser.refuse("the model stopped with a refusal")
        except Exception as exc:
            found = unreadable(exc)
            if found is None:
                raise failed_midstream(self._classify(exc) if not isinstance(exc, LLMError)
                                       else exc, PROVIDER, self._secret) from None
            parser.unreadable(found)
        yield parser.end(Usage(tokens_in, tokens_out))

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
                response = await bounded(self._client.messages.create(
                    model=self.model, max_tokens=self.max_tokens, system=system,
                    messages=[{"role": "user", "content": blocks}], tools=[tool],
                    tool_choice={"type": "tool", "name": request.name},
                    timeout=self.policy.timeout, **self._options),
                    self.policy.timeout)
            except Exception as exc:  # the SDK's errors, classified below
                found = unreadable(exc)
                if found is None:
                    raise self._classify(exc) from None
                return Reply(found, Usage())  # unread: no tokens to count
            return self._read(response, request.name)

        return await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                  sleep=self._sleep, secret=self._secret)

    def _classify(self, exc: Exception) -> Exception:
        if isinstance(exc, (Transient, LLMError)):  # a deadline passed, or classified already
            return exc
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
        """The forced tool's input in a response, read without trusting its shape:
        anything else is an :class:`Unusable` answer (its tokens counted)."""
        usage = field_of(response, "usage")
        counted = Usage(count_of(field_of(usage, "input_tokens")),
                        count_of(field_of(usage, "output_tokens")))
        content = field_of(response, "content")
        blocks = content if isinstance(content, list) else []
        texts = " ".join(t for t in (field_of(b, "text") for b in blocks
                                     if field_of(b, "type") == "text") if isinstance(t, str))
        if field_of(response, "stop_reason") == "refusal":
            return Reply(Unusable("the model refused", excerpt(texts, self._secret)), counted)
        for block in blocks:
            if field_of(block, "type") == "tool_use" and field_of(block, "name") == name:
                value = field_of(block, "input")
                if not isinstance(value, dict):
                    return Reply(Unusable("the tool call's input is not an object"), counted)
                if depth_over(value):
                    return Reply(Unusable(f"the answer is nested more than {MAX_ANSWER_DEPTH} "
                                          "levels deep"), counted)
                return Reply(redact_value(value, self._secret), counted)
        return Reply(Unusable(f"the answer has no call of the tool {name!r}",
                              excerpt(texts, self._secret)), counted)

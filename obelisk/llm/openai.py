"""The OpenAI chat-completions adapter (and any OpenAI-compatible server, by ``base_url``).

The solution comes back as strict structured output: ``response_format`` is a
``json_schema`` named after the request (``solution``), with ``strict: true`` and the
request's schema rewritten by :func:`obelisk.llm.strict.strict_schema`; the nulls strict
mode forces into optional properties are removed again (:func:`drop_forced_nulls`)
before the answer is returned. A latent sub-request's schema is wrapped as
``{"value": <schema>}`` (strict mode wants an object at the top) and unwrapped.

Needs the ``openai`` package (``pip install 'obelisk[openai]'``), imported only when an
adapter is made. The SDK's own retries are off (``max_retries=0``): this adapter retries
429, 5xx, timeouts and dropped connections itself, with backoff, within its
:class:`RetryPolicy`. A model's refusal raises :class:`Refusal`; content that is not a JSON
object is asked again once, then raises :class:`LLMError`.
"""

from __future__ import annotations

import asyncio
import json
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
from obelisk.llm.request import Request
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
from obelisk.llm.streaming import SolutionParser, call_of, failed_midstream, output_of
from obelisk.llm.strict import drop_forced_nulls, strict_schema

__all__ = ["OpenAILLM", "wrap_latent_schema"]

PROVIDER = "openai"


def wrap_latent_schema(schema: Any) -> dict[str, Any]:
    """A latent sub-request's schema as an object ``{"value": schema}``."""
    return {"type": "object", "properties": {"value": schema}, "required": ["value"],
            "additionalProperties": False}


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError:
        raise LLMError("the openai package is not installed: pip install 'obelisk[openai]'",
                       provider=PROVIDER, attempts=0) from None
    return openai


class OpenAILLM:
    """An adapter for OpenAI chat completions.

    ``model`` names the model; ``api_key`` defaults to the environment's
    ``OPENAI_API_KEY`` (with ``base_url`` and no key, a placeholder is sent: local
    OpenAI-compatible servers seldom check it); ``base_url`` points at any
    OpenAI-compatible server; ``policy`` bounds retries and each request's time; ``sleep``
    is how to wait between attempts. Raises :class:`LLMError` when the SDK is missing or
    no key is found. The key never appears in this object's repr or in any error text.
    """

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 policy: RetryPolicy = DEFAULT_POLICY, sleep: Sleep = asyncio.sleep,
                 temperature: float | None = None, max_tokens: int | None = None) -> None:
        sdk = _import_sdk()
        if api_key is None and base_url is not None:
            try:
                api_key = api_key_from(None, "OPENAI_API_KEY", PROVIDER)
            except LLMError:
                api_key = "not-needed"
        self._secret = api_key_from(api_key, "OPENAI_API_KEY", PROVIDER)
        self.model = model
        self.base_url = base_url
        self.policy = policy
        self._sleep = sleep
        self._options: dict[str, Any] = {}
        if temperature is not None:
            self._options["temperature"] = temperature
        if max_tokens is not None:
            self._options["max_completion_tokens"] = max_tokens
        self._sdk = sdk
        self._client = sdk.AsyncOpenAI(api_key=self._secret, base_url=base_url,
                                       max_retries=0, timeout=policy.timeout)

    def __repr__(self) -> str:
        where = "" if self.base_url is None else f", base_url={self.base_url!r}"
        return f"OpenAILLM(model={self.model!r}{where})"

    async def solve(self, request: Request) -> Reply:
        """The solution for ``request``; raises :class:`LLMError` or :class:`Refusal`."""
        schema = request.schema
        reply = await self._ask(request, strict_schema(schema))
        return evolve(reply, value=drop_forced_nulls(reply.value, schema))

    async def latent(self, request: Request) -> Reply:
        """A latent call's result for the sub-request; raises :class:`LLMError`."""
        schema = wrap_latent_schema(request.schema)
        reply = await self._ask(request, strict_schema(schema))
        value = drop_forced_nulls(reply.value, schema)
        return evolve(reply, value=value.get("value") if isinstance(value, dict) else None)

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The solution as it is generated (``stream=True``): each call as soon as its
        object is complete, then the output and the usage. Opening the stream is retried
        like a request; a failure after it began raises :class:`LLMError`."""
        schema = request.schema
        parser = SolutionParser(PROVIDER)
        response_format = {"type": "json_schema", "json_schema": {
            "name": request.name, "strict": True, "schema": strict_schema(schema)}}

        async def attempt() -> Any:
            try:
                return await self._client.chat.completions.create(
                    model=self.model, messages=request.turns_json(),
                    response_format=response_format, timeout=self.policy.timeout,
                    stream=True, stream_options={"include_usage": True}, **self._options)
            except Exception as exc:  # the SDK's errors, classified below
                raise self._classify(exc) from None

        chunks = await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                    sleep=self._sleep, secret=self._secret)
        usage = Usage()
        try:
            async for chunk in chunks:
                counted = getattr(chunk, "usage", None)
                if counted is not None:
                    usage = Usage(int(getattr(counted, "prompt_tokens", 0) or 0),
                                  int(getattr(counted, "completion_tokens", 0) or 0))
                for choice in getattr(chunk, "choices", None) or []:
                    delta = choice.delta
                    refusal = getattr(delta, "refusal", None)
                    if refusal:
                        raise Refusal(redact(str(refusal), self._secret), provider=PROVIDER)
                    for call in parser.feed(getattr(delta, "content", None) or ""):
                        yield StreamedCall(call_of(call, schema))
        except Exception as exc:
            raise failed_midstream(self._classify(exc) if not isinstance(exc, LLMError)
                                   else exc, PROVIDER, self._secret) from None
        yield StreamedOutput(output_of(parser.close(), schema), usage)

    async def _ask(self, request: Request, schema: Any) -> Reply:
        messages = request.turns_json()
        response_format = {"type": "json_schema", "json_schema": {
            "name": request.name, "strict": True, "schema": schema}}

        async def attempt() -> Reply:
            try:
                response = await self._client.chat.completions.create(
                    model=self.model, messages=messages, response_format=response_format,
                    timeout=self.policy.timeout, **self._options)
            except Exception as exc:  # the SDK's errors, classified below
                raise self._classify(exc) from None
            return self._read(response)

        return await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                  sleep=self._sleep, secret=self._secret)

    def _classify(self, exc: Exception) -> Exception:
        sdk = self._sdk
        text = redact(_describe(exc), self._secret)
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

    def _read(self, response: Any) -> Reply:
        usage = getattr(response, "usage", None)
        counted = Usage(int(getattr(usage, "prompt_tokens", 0) or 0),
                        int(getattr(usage, "completion_tokens", 0) or 0))
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise Malformed("the response has no choices")
        message = choices[0].message
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise Refusal(redact(str(refusal), self._secret), provider=PROVIDER)
        content = message.content
        if not isinstance(content, str):
            raise Malformed("the message has no content")
        try:
            value = json.loads(content)
        except ValueError as exc:
            raise Malformed(f"content is not JSON ({exc}): {content[:200]!r}") from None
        if not isinstance(value, dict):
            raise Malformed(f"content is JSON but not an object: {content[:200]!r}")
        return Reply(value, counted, _text_or_none(getattr(response, "id", None)),
                     _text_or_none(getattr(choices[0], "finish_reason", None)))


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None

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
:class:`RetryPolicy`. An answer the adapter cannot use (content that is not JSON, an
empty reply, a refusal, a response of the wrong shape) is returned as an
:class:`~obelisk.llm.answers.Unusable`, with its tokens counted, and never asked again:
the loop feeds it back (one request per tick). The API key is masked in every answer
before anything reads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from obelisk.llm.answers import (
    Unusable,
    count_of,
    excerpt,
    field_of,
    parse_answer,
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
from obelisk.llm.request import Request
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
        """The solution for ``request`` (an :class:`Unusable` when the answer is not JSON,
        empty, refused or unreadable); raises :class:`LLMError` when the provider failed
        after the retries."""
        schema = request.schema
        reply = await self._ask(request, strict_schema(schema))
        if isinstance(reply.value, Unusable):
            return reply
        return Reply(drop_forced_nulls(reply.value, schema), reply.usage)

    async def latent(self, request: Request) -> Reply:
        """A latent call's result for the sub-request (an :class:`Unusable` as for
        :meth:`solve`); raises :class:`LLMError`."""
        schema = wrap_latent_schema(request.schema)
        reply = await self._ask(request, strict_schema(schema))
        if isinstance(reply.value, Unusable):
            return reply
        value = drop_forced_nulls(reply.value, schema)
        return Reply(value.get("value") if isinstance(value, dict) else None, reply.usage)

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The solution as it is generated (``stream=True``): each call as soon as its
        object is complete, then the output and the usage (or why the answer was
        unusable). Opening the stream is retried like a request; a failure after it began
        raises :class:`LLMError`."""
        schema = request.schema
        parser = SolutionParser(PROVIDER, self._secret)
        response_format = {"type": "json_schema", "json_schema": {
            "name": request.name, "strict": True, "schema": strict_schema(schema)}}

        async def attempt() -> Any:
            try:
                return await bounded(self._client.chat.completions.create(
                    model=self.model, messages=request.turns_json(),
                    response_format=response_format, timeout=self.policy.stream_timeout,
                    stream=True, stream_options={"include_usage": True}, **self._options),
                    self.policy.timeout)
            except Exception as exc:  # the SDK's errors, classified below
                raise self._classify(exc) from None

        chunks = await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                    sleep=self._sleep, secret=self._secret)
        usage = Usage()
        try:
            async for chunk in paced(chunks, first=self.policy.timeout,
                                     total=self.policy.stream_timeout):
                counted = field_of(chunk, "usage")
                if counted is not None:
                    usage = _usage(counted)
                for delta in _deltas(chunk):
                    refusal = field_of(delta, "refusal")
                    if refusal:
                        parser.refuse(str(refusal))
                    content = field_of(delta, "content")
                    for call in parser.feed(content if isinstance(content, str) else ""):
                        yield StreamedCall(call_of(call, schema, self._secret))
        except Exception as exc:
            found = unreadable(exc)
            if found is None:
                raise failed_midstream(self._classify(exc) if not isinstance(exc, LLMError)
                                       else exc, PROVIDER, self._secret) from None
            parser.unreadable(found)
        yield parser.end(usage, schema)

    async def _ask(self, request: Request, schema: Any) -> Reply:
        messages = request.turns_json()
        response_format = {"type": "json_schema", "json_schema": {
            "name": request.name, "strict": True, "schema": schema}}

        async def attempt() -> Reply:
            try:
                response = await bounded(self._client.chat.completions.create(
                    model=self.model, messages=messages, response_format=response_format,
                    timeout=self.policy.timeout, **self._options),
                    self.policy.timeout)
            except Exception as exc:  # the SDK's errors, classified below
                found = unreadable(exc)
                if found is None:
                    raise self._classify(exc) from None
                return Reply(found, Usage())  # unread: no tokens to count
            return self._read(response)

        return await with_retries(attempt, provider=PROVIDER, policy=self.policy,
                                  sleep=self._sleep, secret=self._secret)

    def _classify(self, exc: Exception) -> Exception:
        if isinstance(exc, (Transient, LLMError)):  # a deadline passed, or classified already
            return exc
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
        """The answer in a response, read without trusting its shape: anything but one
        message with text content is an :class:`Unusable` answer (its tokens counted)."""
        counted = _usage(field_of(response, "usage"))
        choices = field_of(response, "choices")
        if not isinstance(choices, list) or not choices:
            return Reply(Unusable("the response has no choices"), counted)
        message = field_of(choices[0], "message")
        if message is None:
            return Reply(Unusable("the response's first choice has no message"), counted)
        refusal = field_of(message, "refusal")
        if refusal:
            return Reply(Unusable("the model refused", excerpt(str(refusal), self._secret)),
                         counted)
        content = field_of(message, "content")
        if not isinstance(content, str):
            return Reply(Unusable("the answer is empty"), counted)
        # The key is masked before anything reads the answer: an echo of it goes nowhere.
        return Reply(parse_answer(redact(content, self._secret), self._secret), counted)


def _usage(counted: Any) -> Usage:
    """The tokens a response (or a chunk) reports; a count that is not an integer is 0."""
    return Usage(count_of(field_of(counted, "prompt_tokens")),
                 count_of(field_of(counted, "completion_tokens")))


def _deltas(chunk: Any) -> list[Any]:
    """The deltas of a streamed chunk's choices (none for a chunk of the wrong shape)."""
    choices = field_of(chunk, "choices")
    if not isinstance(choices, list):
        return []
    return [delta for delta in (field_of(c, "delta") for c in choices) if delta is not None]


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"

"""Parsing a solution's JSON text as it arrives: each complete call, then the output.

The OpenAI and Anthropic adapters receive a solution ``{"calls": [...], "output": ...}``
as chunks of JSON text. :class:`SolutionParser` feeds them to ``ijson``'s push interface
(a well-kept incremental JSON parser with a C backend) and hands back each item of
``calls`` as soon as its closing brace has arrived; :meth:`SolutionParser.close` checks
that the text ended as one complete JSON document and returns the output. ``ijson`` is an
optional dependency, installed with the provider extras (``obelisk[openai]``,
``obelisk[anthropic]``); only streaming needs it.
"""

from __future__ import annotations

from typing import Any

from obelisk.llm.base import Failure, LLMError, redact
from obelisk.llm.strict import drop_forced_nulls

__all__ = ["SolutionParser", "call_of", "failed_midstream", "output_of"]


def _import_ijson(provider: str) -> Any:
    try:
        import ijson  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise LLMError("streaming needs the ijson package: pip install 'obelisk[openai]' "
                       "(or [anthropic])", provider=provider, attempts=0) from None
    return ijson


class SolutionParser:
    """An incremental parser of one solution's JSON text.

    :meth:`feed` takes the next chunk of text and returns the calls completed by it, in
    order; :meth:`close` ends the text and returns ``output`` (None when absent or null).
    Text that is not JSON raises :class:`LLMError` (``malformed``) from either.
    """

    def __init__(self, provider: str) -> None:
        ijson = _import_ijson(provider)
        self.provider = provider
        self._errors: tuple[type[BaseException], ...] = (ijson.JSONError,)
        self._calls: list[Any] = ijson.sendable_list()
        self._output: list[Any] = ijson.sendable_list()
        self._call_items = ijson.items_coro(self._calls, "calls.item", use_float=True)
        self._output_items = ijson.items_coro(self._output, "output", use_float=True)
        self.text: list[str] = []  # everything fed, for error messages

    def feed(self, chunk: str) -> list[Any]:
        """The calls completed by ``chunk`` (often none)."""
        if not chunk:
            return []
        self.text.append(chunk)
        data = chunk.encode("utf-8")
        try:
            self._call_items.send(data)
            self._output_items.send(data)
        except self._errors as exc:
            raise self._malformed(exc) from None
        done = list(self._calls)
        del self._calls[:]
        return done

    def close(self) -> Any:
        """The output, once the text has ended; raises :class:`LLMError` when it is not
        one complete JSON document."""
        if not self.text:
            raise LLMError("the streamed solution is empty (the model answered without "
                           "it)", provider=self.provider, failure=Failure.MALFORMED)
        try:
            self._call_items.close()
            self._output_items.close()
        except self._errors as exc:
            raise self._malformed(exc) from None
        return self._output[0] if self._output else None

    def _malformed(self, exc: BaseException) -> LLMError:
        shown = "".join(self.text)[:200]
        return LLMError(f"the streamed solution is not JSON ({exc}): {shown!r}",
                        provider=self.provider, failure=Failure.MALFORMED)


def call_of(call: Any, schema: Any) -> Any:
    """A streamed call with the nulls strict mode forced into it removed again."""
    return drop_forced_nulls({"calls": [call], "output": None}, schema)["calls"][0]


def output_of(output: Any, schema: Any) -> Any:
    """A streamed output with the nulls strict mode forced into it removed again."""
    return drop_forced_nulls({"calls": [], "output": output}, schema)["output"]


def failed_midstream(exc: BaseException, provider: str, secret: str | None) -> LLMError:
    """A failure after the stream began (no retry: calls may already be running)."""
    if isinstance(exc, LLMError):
        return exc
    failure = getattr(exc, "failure", Failure.CONNECTION)
    status = getattr(exc, "status", None)
    return LLMError("the stream broke off: " + redact(f"{type(exc).__name__}: {exc}", secret),
                    provider=provider, failure=failure if isinstance(failure, Failure)
                    else Failure.CONNECTION, status=status if isinstance(status, int) else None)

"""Parsing a solution's JSON text as it arrives: each complete call, then the output.

The OpenAI and Anthropic adapters receive a solution ``{"calls": [...], "output": ...}``
as chunks of JSON text. :class:`SolutionParser` feeds them to ``ijson``'s push interface
(a well-kept incremental JSON parser with a C backend) and hands back each item of
``calls`` as soon as its closing brace has arrived; :meth:`SolutionParser.end` makes the
stream's last item: the output, and the answer as a whole (so a missing ``output`` is
judged as in a whole answer). Text that stops being JSON, a stream that ends before the
solution closed (a token limit) and a refusal make the answer *unusable*
(:class:`~obelisk.llm.answers.Unusable`): the calls that arrived before stay, nothing
more is parsed, and the loop feeds it back as an ``InvalidSolution``. ``ijson`` is an
optional dependency, installed with the provider extras (``obelisk[openai]``,
``obelisk[anthropic]``); only streaming needs it.
"""

from __future__ import annotations

from typing import Any

from obelisk.core.errors import ObeliskError
from obelisk.llm.answers import Unusable, excerpt, parse_answer, redact_value
from obelisk.llm.base import Failure, LLMError, StreamedOutput, Usage, redact
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
    order (none once the answer is unusable); :meth:`refuse` records a refusal;
    :meth:`end` ends the text and returns the stream's :class:`StreamedOutput`.
    ``secret`` (the API key) is masked in every text quoted back.
    """

    def __init__(self, provider: str, secret: str | None = None) -> None:
        ijson = _import_ijson(provider)
        self.provider = provider
        self.secret = secret
        self._errors: tuple[type[BaseException], ...] = (ijson.JSONError,)
        self._calls: list[Any] = ijson.sendable_list()
        self._call_items = ijson.items_coro(self._calls, "calls.item", use_float=True)
        self.text: list[str] = []  # everything fed: the answer as a whole, at the end
        self.unusable: Unusable | None = None

    def feed(self, chunk: str) -> list[Any]:
        """The calls completed by ``chunk`` (often none)."""
        if not chunk:
            return []
        self.text.append(chunk)
        if self.unusable is not None:
            return []
        try:
            self._call_items.send(chunk.encode("utf-8"))
        except self._errors as exc:
            self.unusable = Unusable(self._why("the answer is not JSON", exc), self._excerpt())
            return []
        done = list(self._calls)
        del self._calls[:]
        return done

    def refuse(self, reason: str) -> None:
        """The model refused, saying ``reason``: the answer is unusable."""
        self.unusable = Unusable("the model refused", excerpt(reason, self.secret))

    def unreadable(self, why: Unusable) -> None:
        """The stream cannot be read further (an event the SDK could not parse): the
        answer is unusable, saying ``why``; the calls that arrived before stay."""
        if self.unusable is None:
            self.unusable = why

    def end(self, usage: Usage, schema: Any = None) -> StreamedOutput:
        """The stream's last item, once the text has ended: the output (forced nulls of
        ``schema``'s strict form removed) and the whole answer, or why it is unusable."""
        if self.unusable is None and not "".join(self.text).strip():
            self.unusable = Unusable("the answer is empty")
        if self.unusable is None:
            try:
                self._call_items.close()
            except self._errors as exc:
                self.unusable = Unusable(self._why(
                    "the answer ended before the solution was complete", exc), self._excerpt())
        if self.unusable is not None:
            return StreamedOutput(None, usage, unusable=self.unusable)
        whole = parse_answer("".join(self.text), self.secret)
        if isinstance(whole, Unusable):
            return StreamedOutput(None, usage, unusable=whole)
        whole = redact_value(whole, self.secret)
        if not isinstance(whole, dict) or "output" not in whole:
            return StreamedOutput(None, usage, solution=whole)
        output = output_of(whole["output"], schema) if schema is not None else whole["output"]
        return StreamedOutput(output, usage, solution={**whole, "output": output})

    def _why(self, what: str, exc: BaseException) -> str:
        """``what``, with the parser's first line of explanation (the key masked)."""
        lines = str(exc).strip().splitlines()
        return what + (f" ({redact(lines[0], self.secret)[:100]})" if lines else "")

    def _excerpt(self) -> str:
        return excerpt("".join(self.text), self.secret)


def call_of(call: Any, schema: Any, secret: str | None = None) -> Any:
    """A streamed call with the nulls strict mode forced into it removed again, and the
    secret masked."""
    return redact_value(drop_forced_nulls({"calls": [call], "output": None}, schema)["calls"][0],
                        secret)


def output_of(output: Any, schema: Any) -> Any:
    """A streamed output with the nulls strict mode forced into it removed again."""
    return drop_forced_nulls({"calls": [], "output": output}, schema)["output"]


def failed_midstream(exc: BaseException, provider: str, secret: str | None) -> LLMError:
    """A failure after the stream began (no retry: calls may already be running)."""
    if isinstance(exc, LLMError):
        return exc
    failure = getattr(exc, "failure", Failure.CONNECTION)
    status = getattr(exc, "status", None)
    what = str(exc) if isinstance(exc, ObeliskError) else f"{type(exc).__name__}: {exc}"
    return LLMError("the stream broke off: " + redact(what, secret),
                    provider=provider, failure=failure if isinstance(failure, Failure)
                    else Failure.CONNECTION, status=status if isinstance(status, int) else None)

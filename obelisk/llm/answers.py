"""Unusable answers: what an LLM said when it did not say one usable JSON value.

An adapter that gets text which does not parse, a refusal, an empty reply, or a response
it cannot read hands the loop an :class:`Unusable` instead of raising: the loop feeds it
back as an ``InvalidSolution`` and goes on (one request per tick; the adapter does not
re-ask). :func:`parse_answer` turns a text into a JSON value or an :class:`Unusable`, its
depth checked *before* anything recursive (``json.loads`` among them) touches it:
:func:`depth_over` walks a parsed value without recursion and :func:`text_depth` counts a
text's nesting without parsing it, so a 100,000-deep answer is refused, never a
``RecursionError``.

Every text quoted back is cut to :data:`EXCERPT` characters and passed through
:func:`~obelisk.llm.base.redact` first, so an answer that echoes the API key is masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from obelisk.llm.base import redact

__all__ = ["EXCERPT", "MAX_ANSWER_DEPTH", "Unusable", "count_of", "depth_over", "excerpt",
           "field_of", "parse_answer", "redact_value", "text_depth", "unreadable"]

#: The deepest nesting of an LLM's answer (objects and arrays inside each other, the
#: answer itself counting one). Below it every step that reads an answer (the schema
#: checks, the compiler, freezing, rendering) stays far inside Python's stack; past it the
#: answer is unusable. An LLM's plan never needs a tenth of it.
MAX_ANSWER_DEPTH = 128

#: How many characters of an answer are quoted back to the LLM and into errors.
EXCERPT = 200


def excerpt(text: str, secret: str | None = None) -> str:
    """The first :data:`EXCERPT` characters of ``text`` (the secret masked), with how long
    the whole was when it is cut."""
    shown = redact(text, secret)
    if len(shown) <= EXCERPT:
        return shown
    return f"{shown[:EXCERPT]}... ({len(shown):,} characters in all)"


@frozen
class Unusable:
    """An answer that is not a usable JSON value: ``reason`` why (a sentence), ``text`` an
    excerpt of what was said (:func:`excerpt`: bounded, the key masked)."""

    reason: str
    text: str = ""

    def describe(self) -> str:
        """The reason and the excerpt, as one text for the LLM and for people."""
        return self.reason + (f": {self.text!r}" if self.text else "")

    def to_json(self) -> dict[str, Any]:
        """The form a journal records (read back by :meth:`of_json`)."""
        return {"unusable": {"reason": self.reason, "text": self.text}}

    @classmethod
    def of_json(cls, value: Any) -> Unusable | None:
        """The :class:`Unusable` a journal recorded as ``value``; None for anything else."""
        if not isinstance(value, Mapping) or set(value) != {"unusable"}:
            return None
        inner = value["unusable"]
        if not isinstance(inner, Mapping) or not isinstance(inner.get("reason"), str) or \
                not isinstance(inner.get("text", ""), str):
            return None
        return cls(inner["reason"], inner.get("text", ""))


def depth_over(value: Any, limit: int = MAX_ANSWER_DEPTH) -> bool:
    """Whether ``value`` (plain JSON) nests deeper than ``limit`` levels; no recursion, and
    it stops at the first container past the limit (a container holding itself, too)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (Mapping, list, tuple)))
    return False


#: What changes the nesting of a JSON text: a string (skipped whole) or a bracket.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def text_depth(text: str, stop: int | None = None) -> int:
    """The deepest nesting of the brackets in a JSON text, outside strings (0 for a
    scalar), counted without parsing; with ``stop``, counting ends as soon as the depth
    passes it (the answer is ``stop + 1`` then)."""
    depth = deepest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop is not None and deepest > stop:
                    return deepest
        elif token == "]" or token == "}":
            depth -= 1
    return deepest


def parse_answer(text: str, secret: str | None = None,
                 limit: int = MAX_ANSWER_DEPTH) -> Any:
    """The JSON object an answer's ``text`` holds, or an :class:`Unusable` saying why
    not: an empty text, one nested deeper than ``limit``, one that does not parse, one
    that is not an object. (Whether the object has the right keys is the caller's
    question.)"""
    if not text.strip():
        return Unusable("the answer is empty")
    if text_depth(text, stop=limit) > limit:
        return Unusable(f"the answer is nested more than {limit} levels deep (arrays and "
                        "objects inside each other)", excerpt(text, secret))
    try:
        value = json.loads(text)
    except ValueError as exc:
        return Unusable(f"the answer is not JSON ({exc})", excerpt(text, secret))
    if not isinstance(value, dict):
        return Unusable("the answer is JSON but not an object", excerpt(text, secret))
    return value


def field_of(value: Any, name: str) -> Any:
    """A field of a provider's response object (an SDK model or a plain dict), None when
    it has none: a response of the wrong shape is read without an exception."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def count_of(value: Any) -> int:
    """A token count as a provider reported it: a non-negative integer, else 0 (a count
    that is not a number is not trusted, and never breaks the run)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


def redact_value(value: Any, secret: str | None) -> Any:
    """``value`` (plain JSON, at most :data:`MAX_ANSWER_DEPTH` deep) with the secret masked
    in every string; a value nested deeper is returned as it is (it is refused anyway)."""
    if not secret or depth_over(value):
        return value
    text = json.dumps(value, ensure_ascii=False)
    masked = redact(text, secret)
    if masked == text:
        return value
    try:
        return json.loads(masked)
    except ValueError:  # a piece of the key looked like JSON syntax: mask the whole text
        return redact(text, secret)


def unreadable(exc: BaseException) -> Unusable | None:
    """An SDK's failure to read a response it received as an unusable answer (§9): a body
    that is not JSON, or nested deeper than Python's parser goes; None for any other
    failure (the adapter classifies those)."""
    if isinstance(exc, RecursionError):
        return Unusable("the provider's response is nested too deep to read")
    if isinstance(exc, json.JSONDecodeError):
        return Unusable(f"the provider's response is not JSON ({exc.msg}, at character "
                        f"{exc.pos})")
    return None

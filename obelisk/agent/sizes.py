"""Bounding what the agent sends its LLM: a request's size in bytes (pure).

A run's values are bounded one by one (``max_value_bytes``), but a request renders every
kind's folded value, and values share structure: a short answer whose calls each repeat
the previous result twice makes a small context and a request of tens of megabytes. So
before a request is rendered, the data it would show is measured as it will be written
(:func:`obelisk.core.size.json_size`, shared structure counted each time it appears), and
after it is rendered, the text itself. Over ``max_request_bytes`` the request is not
sent: the problem names the kind that holds most of it and the call that wrote most of
that kind.
"""

from __future__ import annotations

import json
from typing import Any

from obelisk.core.context import Context
from obelisk.core.messages import kind_of
from obelisk.core.plain import thaw
from obelisk.core.size import MAX_REQUEST_BYTES, json_size
from obelisk.core.values import MISSING
from obelisk.llm.request import Request

__all__ = ["MAX_REQUEST_BYTES", "data_too_large", "request_bytes", "request_too_large"]


def data_too_large(context: Context, blocks: Any, limit: int, what: str) -> str | None:
    """Why the data a request would show is over ``limit`` bytes (None when it is not):
    ``blocks`` are the (kind, instance) pairs it shows; ``what`` names the request."""
    sizes = []
    total = 0
    for kind, instance in blocks:
        value, _ = context.view(kind, instance)
        size = 0 if value is MISSING else json_size(value, limit)
        sizes.append((size, kind, instance))
        total += size
        if total > limit:
            break
    if total <= limit:
        return None
    size, kind, instance = max(sizes, key=lambda found: found[0])
    where = f"¶{kind}" + ("" if instance is None else f" (_instance {instance!r})")
    return (f"{what} would hold {total:,} bytes of data or more, over max_request_bytes "
            f"({limit:,}): {where} holds {size:,} bytes or more"
            + _writer(context, kind, instance, limit) + "; write less to the context (keep "
            "only what the next steps read), or raise max_request_bytes")


def _writer(context: Context, kind: str, instance: str | None, limit: int) -> str:
    """``, most of it written by the call {...} (N bytes)``: the message of ``kind`` with
    the largest value, and the call that wrote it ("" when no call wrote one)."""
    best: tuple[int, Any] | None = None
    for message in context.messages:
        if "_call" not in message or kind_of(message) != kind \
                or message.get("_instance") != instance:
            continue
        size = json_size(message, limit)
        if best is None or size > best[0]:
            best = (size, message)
    if best is None:
        return ""
    size, message = best
    call = thaw(message["_call"])
    shown = {k: call[k] for k in ("_tool", "_outputPath") if isinstance(call, dict) and k in call}
    return (f", the largest write of it ({size:,} bytes or more, to "
            f"{message.get('_outputPath')}) by the call "
            + json.dumps(shown, ensure_ascii=False))


def request_bytes(request: Request) -> int:
    """The rendered request's size in bytes (UTF-8): its system text, turns and schema."""
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in
               (request.system, request.schema_text, *(t.content for t in request.messages)))


def request_too_large(request: Request, limit: int, what: str) -> str | None:
    """Why the rendered ``request`` is over ``limit`` bytes (None when it is not)."""
    size = request_bytes(request)
    if size <= limit:
        return None
    return (f"{what} is {size:,} bytes, over max_request_bytes ({limit:,}); write less to "
            "the context, give fewer or shorter tools, or raise max_request_bytes")

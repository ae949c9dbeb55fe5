"""Deadlines for provider requests: ``timeout`` bounds a request as a whole.

An HTTP client's own timeout bounds each read, so a server that trickles its answer a byte
at a time could hold a request for ever. :func:`bounded` bounds an awaitable (a whole
request, or opening a stream) by the loop's clock; :func:`paced` bounds a stream: its
first item within ``first`` seconds, the whole stream within ``total``. Both raise
:class:`~obelisk.llm.retry.Transient` (``timeout``): a request is retried within the
policy's budget, a stream that has begun fails the tick (calls may already be running).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from obelisk.llm.base import Failure
from obelisk.llm.retry import Transient

__all__ = ["bounded", "paced"]

T = TypeVar("T")


async def bounded(awaitable: Awaitable[T], seconds: float, what: str = "the request") -> T:
    """The result of ``awaitable``, which must come within ``seconds``; else it is
    cancelled and :class:`Transient` (``timeout``) raised."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise Transient(f"{what} took longer than {seconds:g} s (the policy's timeout)",
                        failure=Failure.TIMEOUT) from None


async def paced(items: AsyncIterator[T], *, first: float, total: float) -> AsyncIterator[T]:
    """``items``, the first within ``first`` seconds and the last within ``total``
    seconds of the start; past either, :class:`Transient` (``timeout``) is raised."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    iterator = aiter(items)
    limit, what = min(first, total), f"the stream's first chunk took longer than {first:g} s"
    while True:
        left = max(0.0, start + limit - loop.time())
        try:
            item = await asyncio.wait_for(anext(iterator), left)
        except StopAsyncIteration:
            return
        except asyncio.TimeoutError:
            raise Transient(f"{what} (the policy's timeout)", failure=Failure.TIMEOUT) from None
        limit, what = total, f"the stream took longer than {total:g} s in all"
        yield item

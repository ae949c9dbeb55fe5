"""Activities equivalent to CONFORMANCE.md mocks, so one scenario can run under the real
interpreters (with these activities) and the dry run (with the mocks) alike.

Not a test module: test_interpreters.py and test_run_properties.py import it.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from typing import Any

from obelisk import MISSING, ActivityError, Branch, Context
from obelisk.core.plain import thaw


def scopes_view(context: Context, instance: str | None) -> dict[str, Any]:
    """What ``echo_scopes`` returns: each kind of the scoped context as the call sees it."""
    out = {}
    for kind in context.kinds:
        found = context.value(kind, (), instance)
        if found is not MISSING:
            out[kind] = thaw(found)
    return out


def perform(mock: Mapping[str, Any], call: dict[str, Any], context: Context) -> Any:
    """Do what a CONFORMANCE.md mock says, as an activity would (``sequence`` has no
    equivalent: an activity does not know its rank among the calls of its tool)."""
    if "return" in mock:
        return copy.deepcopy(mock["return"])
    if "raise" in mock:
        err = mock["raise"]
        raise ActivityError(err["type"], err.get("message", err["type"]), err.get("data"))
    if "branch" in mock:
        return Branch(mock["branch"], copy.deepcopy(mock.get("value")))
    if "echo" in mock:
        return {k: v for k, v in call.items() if not k.startswith("_")}
    if "echo_scopes" in mock:
        return scopes_view(context, call.get("_instance"))
    if "by_instance" in mock:
        return perform(mock["by_instance"][call["_instance"]], call, context)
    raise NotImplementedError(f"no activity equivalent for {mock}")


def delay_of(mock: Mapping[str, Any], call: dict[str, Any]) -> float:
    """The delay, in seconds, a mock applies to this call (by_instance entries included)."""
    delay = mock.get("delay_ms", 0) / 1000
    if "by_instance" in mock:
        inner = mock["by_instance"].get(call.get("_instance"), {})
        delay += delay_of(inner, call)
    return float(delay)


def activity_of(mock: Any, style: str) -> Callable[..., Any]:
    """The activity equivalent to ``mock``: a plain (``style="plain"``) or an ``async
    def`` function. A function mock is already an activity. A mock with ``delay_ms``
    (anywhere) always gives an async activity that sleeps that long.
    """
    if callable(mock):
        return mock  # type: ignore[no-any-return]
    has_delay = _has_delay(mock)

    def plain(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return perform(mock, call, context)

    async def asynchronous(call: dict[str, Any], tool: Any, context: Context) -> Any:
        delay = delay_of(mock, call)
        if delay:
            await asyncio.sleep(delay)
        return perform(mock, call, context)

    return asynchronous if style == "async" or has_delay else plain


def _has_delay(mock: Any) -> bool:
    if not isinstance(mock, Mapping):
        return False
    return "delay_ms" in mock or any(_has_delay(m) for m in mock.get("by_instance", {}).values())

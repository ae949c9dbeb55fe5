"""What a call may set of the meta-properties that choose what runs it.

A tool decides what runs its calls; a call (written by an LLM, say) must not be able to
decide it instead (SEMANTICS §5, §8.5):

- ``_delegate`` hands the call to another agent instead of its activity. A call may set
  it only when its tool leaves the choice to it, with an ``enum`` of the delegates it
  may pick (jsonschema then checks the value), or to the value the tool's ``const``
  prescribes anyway. Any other ``_delegate`` would skip the activity: the LLM could
  answer for the ``charge`` activity itself.
- ``_activity`` never chooses the activity (the tool does), but an activity may read it:
  a call may only repeat what the tool runs with (its explicit activity; else its own
  name, or ``""`` for a latent tool, as the LLM's schema fixes it).
- ``_idempotencyKey`` is the engine's, set on a durable run's calls; a call that sets its
  own could make an activity take it for another call's.

``_outputPath``, ``_outputMethod`` and ``_scopes`` are checked by the tool's schema when
it declares them (a ``const`` forbids every other value); a ``default`` leaves them to
the call. Every rule here is a ``(pointer, message)`` pair for the compiler to report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyrsistent import PMap

from obelisk.compiler.tools import Tool
from obelisk.core.plain import thaw

__all__ = ["ENGINE_META", "engine_meta_errors", "tool_meta_errors"]

#: Meta-properties only the engine sets on a call.
ENGINE_META = ("_idempotencyKey",)

_NONE: list[tuple[str, str]] = []  # returned, never changed


def engine_meta_errors(call: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where ``call`` sets a meta-property only the engine sets (with or without tools)."""
    if "_idempotencyKey" not in call:  # nearly every call: no list made
        return _NONE
    return [(f"/{name}", f"{name} is set by the engine on the calls of a durable run; a "
             "call cannot set it: leave it out")
            for name in ENGINE_META if name in call]


def tool_meta_errors(tool: Tool, call: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where ``call`` sets ``_delegate`` or ``_activity`` to what ``tool`` does not let
    it choose (values the tool's schema checks itself, a ``const`` or an ``enum``, are
    left to that check)."""
    if "_delegate" not in call and "_activity" not in call:
        return _NONE
    found_props = tool.schema.get("properties") if isinstance(tool.schema, PMap) else None
    props: Mapping[str, Any] = found_props if isinstance(found_props, PMap) else {}
    found = []
    if "_delegate" in call and not _checked(props.get("_delegate")):
        found.append(("/_delegate", (
            f"_delegate {_shown(call['_delegate'])}: tool {tool.name!r} does not let a call "
            "choose a delegate, which would run instead of its activity; leave _delegate "
            "out, or declare the choices in the tool: \"_delegate\": {\"enum\": [...]}")))
    if "_activity" in call and not _checked(props.get("_activity")):
        explicit = tool.explicit_activity
        allowed = (explicit,) if explicit is not None else (tool.name, "")
        if call["_activity"] not in allowed:
            runs = (f"names its activity, {explicit!r}" if explicit is not None else
                    f"is run by the activity registered as {tool.name!r}, or else latent "
                    "(\"\")")
            found.append(("/_activity", (
                f"_activity {_shown(call['_activity'])}: a call cannot choose its activity; "
                f"tool {tool.name!r} {runs}; leave _activity out")))
    return found


def _checked(spec: Any) -> bool:
    """Whether the tool's schema for a meta-property pins its value (``const``, ``enum``)."""
    return isinstance(spec, PMap) and ("const" in spec or "enum" in spec)


def _shown(value: Any) -> str:
    text = json.dumps(thaw(value), ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"

"""What a call leaves in the run's context: the output messages of a node (§7.7), its error
and approval messages (appended at the run's end), and the values an activity gave made
fit for them (frozen within the size limit, or shown as text when they are not JSON).
"""

from __future__ import annotations

from typing import Any

from pyrsistent import PMap

from obelisk.compiler.nodes import Node, message_path
from obelisk.core.ast import Reference
from obelisk.core.errors import NotJSONError, ValueTooLarge
from obelisk.core.messages import output_message as _output_message
from obelisk.core.plain import thaw
from obelisk.core.size import fits, json_size
from obelisk.core.values import MISSING, UNLIMITED, Frozen, freeze, without_surrogates
from obelisk.interpreters.outcomes import Raised

__all__ = ["approval_message", "checked_result", "error_message", "json_or_repr",
           "output_message", "safe_text", "shown", "target_text", "too_large",
           "too_many_bytes"]


def checked_result(node: Node, value: Any, max_nodes: int,
                   max_bytes: int = UNLIMITED) -> Frozen | Raised:
    """A call's result frozen for the context, or the broken contract that refuses it
    (``NotJSON``, ``ValueTooLarge``: over ``max_nodes`` values, or a JSON text over
    ``max_bytes``, shared structure counted as it will be written): never routed to an
    error branch."""
    try:
        frozen = freeze(value, max_nodes=max_nodes)
        if fits(frozen, max_bytes):
            return frozen
        return Raised("ValueTooLarge", too_many_bytes(
            node, "result", json_size(frozen, max_bytes), max_bytes), contract=True)
    except NotJSONError as exc:
        return Raised("NotJSON", f"the result is not JSON: {exc}", contract=True)
    except ValueTooLarge:
        return Raised("ValueTooLarge", too_large(node, "result", max_nodes), contract=True)
    except Exception as exc:  # noqa: BLE001 - a container whose own methods raise
        return Raised("NotJSON", f"the result cannot be read as JSON: reading it raised "
                      f"{type(exc).__name__}", contract=True)


def too_large(node: Node, what: str, limit: int) -> str:
    """The message of a ``ValueTooLarge`` failure: which call, what, and the limit."""
    return (f"{node.label}: the {what} holds more than {limit:,} JSON values, over the size "
            f"limit (max_value_nodes={limit}); make it smaller, or raise max_value_nodes")


def too_many_bytes(node: Node, what: str, size: int, limit: int) -> str:
    """The message of a ``ValueTooLarge`` failure over the byte limit: which call, what,
    its size (at least) and the limit."""
    return (f"{node.label}: the {what} is {size:,} bytes or more as JSON, over the size "
            f"limit (max_value_bytes={limit}; a value read several times counts each "
            "time, as it is written); make it smaller, or raise max_value_bytes")


def safe_text(text: Any) -> str:
    """Text for an error message from anything an activity gave: a string as it is, with
    lone surrogates written as escapes (so the message can go into the context)."""
    return without_surrogates(text if isinstance(text, str) else _repr(text))


def shown(value: Any) -> str:
    """The repr of anything, safe for an error message and at most 200 characters."""
    return safe_text(_repr(value))[:200]


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not crash the run
        return type(value).__name__
    return text if isinstance(text, str) else type(value).__name__


def target_text(node: Node, target: Reference) -> str:
    """The ``_outputPath`` of the messages writing ``target``: the target as a reference.

    When the node's ``_outputPath`` is that very text (one target, written canonically),
    the plan's own string is returned, so the messages share it instead of each holding
    a copy. A node with a single target has it already (:attr:`Node.sole_text`)."""
    if node.sole_text is not None:
        return node.sole_text
    return message_path(target, node.output_text)


def output_message(node: Node, target: Reference, value: Frozen, date: str,
                   text: str | None = None) -> PMap[str, Any]:
    """The data message that writes ``value`` to one target of a node's output (§7.7):
    :func:`obelisk.core.messages.output_message` with the node's fields (``text``: the
    target's :func:`target_text`, when the caller has it)."""
    return _output_message(target.kind, target.path,
                           target_text(node, target) if text is None else text,
                           node.method, node.instance, node.call, value, date)


def error_message(node: Node, etype: str, message: str, data: Any = MISSING) -> dict[str, Any]:
    """The error message a failed or refused call adds to the context (at the run's end)."""
    error: dict[str, Any] = {"type": etype, "message": message}
    if data is not MISSING:
        error["data"] = data
    out: dict[str, Any] = {"type": "error", "data": {"call": thaw(node.call), "error": error}}
    if node.instance is not None:
        out["_instance"] = node.instance
    return out


def approval_message(node: Node, decision: str, *, replacement: Any = MISSING,
                     reason: str | None = None, by: str | None = None) -> dict[str, Any]:
    """The approval message recording the approval hook's answer for a call (§7 step 3):
    ``{"type": "approval", "data": {"call", "decision", "replacement"?, "reason"?,
    "by"?}}`` (``by``: who decided, when the hook said), with ``_instance`` when the call
    has one. Not a data kind: no reference ever reads it."""
    data: dict[str, Any] = {"call": thaw(node.call), "decision": decision}
    if replacement is not MISSING:
        data["replacement"] = thaw(json_or_repr(replacement))  # recorded even if not JSON
    if reason is not None:
        data["reason"] = reason
    if by is not None:
        data["by"] = by
    out: dict[str, Any] = {"type": "approval", "data": data}
    if node.instance is not None:
        out["_instance"] = node.instance
    return out


def json_or_repr(data: Any, max_nodes: int = UNLIMITED, max_bytes: int = UNLIMITED) -> Any:
    """``data`` frozen if it is JSON, else its repr (else its type's name).

    An error's details that are not JSON are kept as their repr: the failure must still
    be recorded, routed or not. Details over ``max_nodes`` JSON values, or whose JSON text
    is over ``max_bytes``, are replaced by a note saying so.
    """
    try:
        frozen = freeze(data, max_nodes=max_nodes)
        if not fits(frozen, max_bytes):
            return f"(the error's data is over {max_bytes:,} bytes as JSON; left out)"
        return thaw(frozen)  # a copy: the activity keeps its own
    except ValueTooLarge:
        return f"(the error's data held more than {max_nodes:,} JSON values; left out)"
    except Exception:  # noqa: BLE001 - not JSON, or a container whose methods raise
        return safe_text(_repr(data))[:10_000]  # a repr can be huge

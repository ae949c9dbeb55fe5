"""Call materialisation: from a compiled node and its parameter values to the call an
activity receives, the messages its results become, and the context it may see (§7.5).

The per-node part that never changes (the call as plain JSON) is cached in a
:class:`CallCache`, one per plan object, found with :func:`cache_of` and carried by the
run state. Output messages need nothing cached per node: they are built whole, in one
step (``core/messages.py``), sharing the plan's strings, so a finished run holds its
messages and nothing more for them. The cache lives here, in the interpreter
layer: the compiler's ``CompiledPlan`` stays a frozen value with nothing written into it.
It is keyed by the plan's identity and dropped when the plan is collected (a weak
reference), not held in a ``WeakKeyDictionary``: a frozen attrs plan hashes by value,
which would cost O(plan) on every lookup. Sharing it between runs of one plan matters:
a dry run's exploration, or a service running the same plan again, would otherwise
rebuild every template each run.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen
from pyrsistent import PMap

from obelisk.compiler.conform import validate_params
from obelisk.compiler.nodes import CompiledPlan, Node, message_path
from obelisk.compiler.parse import parse_reference, unescape_literal
from obelisk.compiler.tools import Tool
from obelisk.core import slots
from obelisk.core.ast import Reference
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, NotJSONError, ValueTooLarge
from obelisk.core.messages import kind_of
from obelisk.core.messages import output_message as _output_message
from obelisk.core.paths import Path
from obelisk.core.values import (
    MISSING,
    NON_STRING_SCALAR_TYPES,
    UNLIMITED,
    Frozen,
    freeze,
    sorted_items,
    thaw,
    thaw_counted,
    without_surrogates,
)
from obelisk.interpreters.events import Started
from obelisk.interpreters.outcomes import Raised


@frozen
class Invocation:
    """A call ready to run: its node, the resolved call, the tool, the scoped context.

    The machine resolves a new call for every invocation, and nobody else holds it: the
    activity is handed that call itself (:meth:`for_activity`; a copy per call was 3% of
    a run of no-op calls), and everyone else who is handed the call gets a copy of their
    own (:meth:`fresh_call`: the approval hook, an observer's ``Started``, a resumed
    run), so what the activity changes in it, nobody sees, and the other way round.
    """

    node: int
    call: dict[str, Any] = field(eq=False)
    tool: Tool | None
    context: Context

    def for_activity(self) -> dict[str, Any]:
        """The call the activity is handed: this invocation's own. Hand it out once, when
        invoking, and never invoke one invocation twice (a retry makes a new one from a
        :meth:`fresh_call` kept before)."""
        return self.call

    def fresh_call(self) -> dict[str, Any]:
        """A deep copy of the call, for anyone handed it besides the activity."""
        return fresh(self.call)


_set_node, _set_call, _set_tool, _set_context = slots.slot_setters(Invocation)


def _new_invocation(*, node: int, call: dict[str, Any], tool: Tool | None,
                    context: Context) -> Invocation:
    # Invocation(**fields) through its slots: one per call that starts.
    made = slots.new(Invocation)
    _set_node(made, node)
    _set_call(made, call)
    _set_tool(made, tool)
    _set_context(made, context)
    return made


#: How the machine makes the invocation of a call that starts (see
#: :mod:`obelisk.core.slots`).
new_invocation = slots.checked(Invocation, _new_invocation)


class CallCache:
    """What runs derive once per node of a plan: call templates.

    A memo of pure functions of immutable nodes, so sharing or dropping it never changes
    a result (two threads filling one key store equal values); only this module touches it.
    (The text of a single target's messages needs no memo: the compiler found it,
    :attr:`Node.sole_text`.)
    """

    __slots__ = ("templates", "plan", "seen")

    def __init__(self, plan: weakref.ref[CompiledPlan] | None = None) -> None:
        self.templates: dict[int, dict[str, Any]] = {}
        #: By node id, a byte: 1 once a call of the node has been made (its template is
        #: kept from the second on; see :meth:`call`).
        self.seen = bytearray()
        #: The plan this cache is for (a weak reference), when shared through cache_of.
        self.plan = plan

    def template(self, node: Node) -> dict[str, Any]:
        """The node's call as plain JSON, never handed out: only copies of it (see
        :func:`resolved_call`)."""
        call = self.templates.get(node.id)
        if call is None:
            call = self.templates[node.id] = _call_template(node)
        return call

    def call(self, node: Node) -> dict[str, Any]:
        """A new plain copy of the node's call, to resolve parameters into.

        The first call of a node is made from the node itself and nothing is kept: most
        plans run once (an agent compiles a plan per tick), and keeping a template would
        cost that run a copy of it and a dict per call for as long as the plan lives. From
        the second call of the node on (a plan run again, a dry run exploring branches),
        the template is kept and copied (:func:`fresh`: a fifth of making it again). A flat
        call (:attr:`Node.flat`) is made from the node every time: that costs no more than
        a copy, so no template of it is kept."""
        if node.flat:
            return _call_template(node)
        at = node.id
        call = self.templates.get(at)
        if call is not None:
            return fresh(call)
        seen = self.seen
        if at < len(seen) and seen[at]:
            return fresh(self.template(node))
        if at >= len(seen):  # grown geometrically: node ids come in order
            seen.extend(bytes(max(at + 1, 2 * len(seen), 64) - len(seen)))
        seen[at] = 1
        return _call_template(node)


#: The shared caches, by ``id(plan)``; an entry leaves when its plan is collected.
_CACHES: dict[int, CallCache] = {}


def cache_of(plan: CompiledPlan) -> CallCache:
    """The call cache of ``plan`` (this very object), made on first use."""
    key = id(plan)
    cache = _CACHES.get(key)
    if cache is None or cache.plan is None or cache.plan() is not plan:
        # The callback runs when the plan is freed, before its id can be reused.
        ref = weakref.ref(plan, functools.partial(_forget, key))
        cache = _CACHES[key] = CallCache(ref)
    return cache


def _forget(key: int, _: weakref.ref[CompiledPlan]) -> None:
    _CACHES.pop(key, None)


def resolved_call(node: Node, values: Mapping[Path, Frozen], cache: CallCache | None = None,
                  max_nodes: int = UNLIMITED) -> dict[str, Any]:
    """The call as written with every parameter expression replaced by its value.

    ``cache`` is the run's (none: nothing cached).

    Parameter strings that start with ``\\†`` lose the backslash; meta-properties are
    never resolved. A copy made by instancing carries its ``_instance``, so the activity
    knows which instance it works for. Returns a fresh plain dict each time. Raises
    :class:`ValueTooLarge` when the values read hold more than ``max_nodes`` JSON values
    together (one frozen value read twice counts twice: it is handed out twice).
    """
    call: Any = cache.call(node) if cache is not None else _call_template(node)
    left = max_nodes
    for path, value in values.items():
        target = call
        for segment in path[:-1]:
            target = target[segment]
        try:
            target[path[-1]], used = thaw_counted(value, left)
        except ValueTooLarge:
            raise ValueTooLarge(max_nodes) from None
        left -= used
    return call  # type: ignore[no-any-return]


def bounded_call(node: Node, values: Mapping[Path, Frozen], cache: CallCache | None,
                 max_nodes: int) -> dict[str, Any] | Raised:
    """:func:`resolved_call`, or the ``ValueTooLarge`` failure when it is over the limit."""
    try:
        return resolved_call(node, values, cache, max_nodes)
    except ValueTooLarge:
        return Raised("ValueTooLarge", too_large(node, "resolved call", max_nodes),
                      contract=True)


def started(invocation: Invocation, with_call: bool) -> Started:
    """The :class:`Started` event of ``invocation``: with a copy of the resolved call, or
    with an empty one for an observer that never reads it (``with_call`` false: see
    :func:`obelisk.interpreters.common.reads_calls`)."""
    if with_call:
        return Started(invocation.node, fresh(invocation.call))
    return Started(invocation.node, {})

def fresh(call: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a plain JSON call, for each party that is handed one besides the
    activity, which is handed the invocation's own (the approval hook, an observer's
    ``Started``, a hook's replacement, a resumed run's invocations): what one changes in
    place, the others never see.

    Dicts and lists are copied (a call's values are nested at most ``MAX_JSON_DEPTH``
    deep, so recursion is bounded); anything else, immutable in a resolved call, is
    shared. Five times faster than a JSON round trip on a typical call.
    """
    out = dict(call)
    for key, value in out.items():
        if type(value) is dict or type(value) is list:
            out[key] = _copy(value)
    return out


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    return value


def checked_result(node: Node, value: Any, max_nodes: int) -> Frozen | Raised:
    """A call's result frozen for the context, or the broken contract that refuses it
    (``NotJSON``, ``ValueTooLarge``): never routed to an error branch."""
    try:
        return freeze(value, max_nodes=max_nodes)
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


def _call_template(node: Node) -> dict[str, Any]:
    # The call as plain JSON (thaw: keys in order), its instance added and literal \†
    # strings of its parameters unescaped: what parameters are resolved into (a copy of
    # it, ``fresh``, once a node's template is kept). Scalars, nearly every value of a
    # call, are taken as they are, in one pass over the call's entries; a flat call (the
    # compiler found every member a scalar and nothing to unescape: ``Node.flat``) is
    # taken whole, its entries in key order, which is what that pass would make of it.
    if node.flat:
        call: dict[str, Any] = dict(sorted_items(node.call))  # type: ignore[arg-type]
    else:
        call = {}
        for key, value in sorted_items(node.call):  # type: ignore[arg-type]  # an object
            kind = type(value)
            if kind is str:
                call[key] = value if key[:1] == "_" else unescape_literal(value)  # type: ignore[arg-type]
            elif kind in NON_STRING_SCALAR_TYPES:
                call[key] = value
            else:
                call[key] = thaw(value) if key[:1] == "_" else _unescape(thaw(value))
    if node.instance is not None:
        call["_instance"] = node.instance
    return call


def _unescape(value: Any) -> Any:
    if isinstance(value, str):
        return unescape_literal(value)
    if isinstance(value, dict):
        return {k: _unescape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unescape(v) for v in value]
    return value


#: The context of a call without ``_scopes``: empty (one object, shared).
NO_CONTEXT = Context()


def scoped_context(context: Context, node: Node) -> Context:
    """What an activity sees (§7.5): messages of the kinds in ``_scopes`` that are global
    or this call's instance. No ``_scopes``: an empty context (:data:`NO_CONTEXT`)."""
    if not node.scopes:
        return NO_CONTEXT
    kinds = set(node.scopes)
    kept = []
    for message in context.messages:
        instance = message.get("_instance")
        if kind_of(message) in kinds and (instance is None or instance == node.instance):
            kept.append(message)
    return Context.of(kept)


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


def param_problems(tool: Tool | None, call: Mapping[str, Any]) -> str | None:
    """Why ``call``'s parameters fail ``tool``'s schema (``"t's schema: /n: ..."``), or None
    when they pass or there is no tool."""
    problems = validate_params(tool, call) if tool is not None else []
    if not problems:
        return None
    assert tool is not None
    return f"{tool.name}'s schema: " + "; ".join(f"{p or '/'}: {m}" for p, m in problems)


def approval_message(node: Node, decision: str, *, replacement: Any = MISSING,
                     reason: str | None = None) -> dict[str, Any]:
    """The approval message recording the approval hook's answer for a call (§7 step 3):
    ``{"type": "approval", "data": {"call", "decision", "replacement"?, "reason"?}}``, with
    ``_instance`` when the call has one. Not a data kind: no reference ever reads it."""
    data: dict[str, Any] = {"call": thaw(node.call), "decision": decision}
    if replacement is not MISSING:
        data["replacement"] = thaw(json_or_repr(replacement))  # recorded even if not JSON
    if reason is not None:
        data["reason"] = reason
    out: dict[str, Any] = {"type": "approval", "data": data}
    if node.instance is not None:
        out["_instance"] = node.instance
    return out


def json_or_repr(data: Any, max_nodes: int = UNLIMITED) -> Any:
    """``data`` frozen if it is JSON, else its repr (else its type's name).

    An error's details that are not JSON are kept as their repr: the failure must still
    be recorded, routed or not. Details over ``max_nodes`` JSON values are replaced by a
    note saying so.
    """
    try:
        return thaw(freeze(data, max_nodes=max_nodes))  # a copy: the activity keeps its own
    except ValueTooLarge:
        return f"(the error's data held more than {max_nodes:,} JSON values; left out)"
    except Exception:  # noqa: BLE001 - not JSON, or a container whose methods raise
        return safe_text(_repr(data))[:10_000]  # a repr can be huge


def alternative_of(node: Node, path: str) -> int | None:
    """The index of the alternative of the node's ``_outputPath`` that ``path`` names (a
    reference to one of its targets), or None when it names none."""
    if node.output is None:
        return None
    try:
        chosen = parse_reference(path.strip())
    except (ExpressionSyntaxError, TypeError):
        return None
    for alt, group in enumerate(node.output.alternatives):
        if any(t.kind == chosen.kind and t.path == chosen.path for t in group.targets):
            return alt
    return None

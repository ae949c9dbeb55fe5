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

from obelisk.compiler.conform import validate_params
from obelisk.compiler.nodes import CompiledPlan, Node
from obelisk.compiler.parse import parse_reference, unescape_literal
from obelisk.compiler.tools import Tool
from obelisk.core import slots
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, ValueTooLarge
from obelisk.core.messages import kind_of
from obelisk.core.paths import Path
from obelisk.core.plain import sorted_items, thaw, thaw_counted
from obelisk.core.values import (
    NON_STRING_SCALAR_TYPES,
    UNLIMITED,
    Frozen,
)
from obelisk.interpreters.events import Started
from obelisk.interpreters.outcomes import Raised
from obelisk.interpreters.records import too_large


@frozen
class Invocation:
    """A call ready to run: its node, the resolved call, the tool, the scoped context.

    Everyone who is handed the call gets a copy of their own: the activity
    (:meth:`for_activity`) as much as the approval hook and an observer's ``Started``
    (:meth:`fresh_call`), so what one changes in it, nobody else sees, and an invocation
    may be invoked again. (Handing the activity the invocation's own call saved 2.1% of
    a chain's instructions and 4.1% of a fan-out's, under the 5% a fast path must earn:
    see docs/performance.md.)
    """

    node: int
    call: dict[str, Any] = field(eq=False)
    tool: Tool | None
    context: Context

    def for_activity(self) -> dict[str, Any]:
        """The call the activity is handed: a deep copy of its own."""
        return fresh(self.call)

    def fresh_call(self) -> dict[str, Any]:
        """A deep copy of the call, for anyone else handed it (the approval hook, an
        observer)."""
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
    """:func:`resolved_call`, or the ``ValueTooLarge`` failure when it is over the limit.

    (Its JSON text is not measured: every value it reads was measured when it was
    written, :func:`obelisk.interpreters.records.checked_result`, so a call reading many
    of them is bounded by the calls' own results: one that returns what it read is
    refused when it writes.)"""
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
    """A deep copy of a plain JSON call, for each party that is handed one (the activity,
    the approval hook, an observer's ``Started``, a hook's replacement): what one changes
    in place, the others never see.

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


def param_problems(tool: Tool | None, call: Mapping[str, Any]) -> str | None:
    """Why ``call``'s parameters fail ``tool``'s schema (``"t's schema: /n: ..."``), or None
    when they pass or there is no tool."""
    problems = validate_params(tool, call) if tool is not None else []
    if not problems:
        return None
    assert tool is not None
    return f"{tool.name}'s schema: " + "; ".join(f"{p or '/'}: {m}" for p, m in problems)


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

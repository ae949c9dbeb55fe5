"""The request: what the LLM is given for one tick, built from a context (pure).

:func:`build_request` turns ``(context, tools, output schema, mode)`` into a
provider-neutral :class:`Request`: a system text, rendered turns (``system`` or ``user``
text) and the solution schema (:func:`obelisk.agent.schema.solution_schema`). The turns,
in this order:

1. ``system`` and ``text`` messages of the context, passed through in context order;
2. one block per (kind, instance) of data, global blocks first, each with a header
   (``## Data: ¶state``, plus the instance), the kind's description and schema (from the
   newest message stating them) and the folded value as JSON (``input`` blocks add that
   input data is a structured prompt); values come from the context's materialised views,
   so message meta keys (``_outputPath``, ``_call``...) never show, only the instance;
3. the newest plan message: the plan, each call with its outcomes;
4. feedback from approvals (since the plan before the newest one: the newest plan's tick);
5. the error messages added since the newest plan message, as a list of
   ``{call, error}`` (older ones are seen through the plan's outcomes).

The texts are versioned constants (:data:`TEMPLATE_VERSION`); golden tests pin them.

Everything that is not data (tools, text, plans, errors, approvals, each kind's schema
and description) is read from a :class:`Transcript`: an index of the context's non-data
messages that :meth:`Transcript.advance` brings up to date in O(new messages). The agent
loop keeps one beside its context, so building a request costs the size of the folded
data and of the rendered text, not the length of the history.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, field, frozen
from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.agent.schema import Mode, solution_schema
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.context import Context
from obelisk.core.errors import ObeliskError
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING, Frozen
from obelisk.llm.request import TEMPLATE_VERSION, Request, Role, Turn

#: A message as the context holds it: a frozen JSON object.
Message = PMap[str, Frozen]

__all__ = [
    "TEMPLATE_VERSION", "Request", "RequestError", "Role", "Transcript", "Turn",
    "build_latent_request", "build_request", "merge_tools",
]

SYSTEM_TEMPLATE = """\
You are an agent that works by planning calls to tools.
Answer with one JSON object {"calls": [...], "output": ...} that matches the schema.
- "calls" is a plan: each call names its "_tool" and its parameters. A parameter may be a
  reference to data, a string starting with † such as "†input.orderId" or
  "†state.user.status"; "||" picks the first present value, "&&" requires all.
- "_outputPath" says where a call's result is written ("†state.refund"); other calls may
  read it by reference, so the order of calls does not matter, only the data they share.
  Alternatives "†state.ok || †state.failed" let a call choose a branch; its failure goes
  to the last alternative.
- "output" is your final answer. Leave it null while work remains; once it is set, the run
  ends. It may hold references to results of this solution's calls.
- Data is shown below per kind (¶kind) and instance; write "_instance" to address one."""

DATA_HEADER = "## Data: ¶{kind}"
INSTANCE_SUFFIX = ' (_instance "{instance}")'
INPUT_NOTE = "Input data MUST be treated as a structured prompt."
PLAN_HEADER = "## Plan (mode: {mode})"
PLAN_NOTE = ("The committed plan, each call with its outcome. Calls never run again; "
             "follow, extend or replace it with new calls.")
ERRORS_HEADER = "## Errors"
ERRORS_NOTE = "Errors since the plan above, each with the call that caused it (if any):"
FEEDBACK_HEADER = "## Feedback"
LATENT_SYSTEM_TEMPLATE = """\
You are executing one call of a plan yourself, as the tool it names.
Answer with one JSON object that matches the schema: the call's result."""
LATENT_BRANCH_NOTE = ('Answer {"branch": <one of the alternatives>, "value": <the result>}: '
                      "the first alternative is success, the last one failure.")
CALL_HEADER = "## Call"

#: Message types that carry data (docs/semantics.md §1); their kind, when not ``data``.
_DATA_TYPES: Mapping[str, str | None] = {"data": None, "input": "input", "state": "state"}


class RequestError(ObeliskError, ValueError):
    """A request cannot be built: a tool message is malformed or a tool is invalid."""


# -- the transcript: an index of the non-data messages --------------------------------------


@frozen
class Transcript:
    """What a request needs from a context besides the folded data, indexed.

    Invariant: every field describes ``context.messages[:length]`` of the contexts this
    transcript was advanced over; ``last`` is the message at ``length - 1`` (to detect a
    context that does not extend the one indexed, in which case :meth:`advance` starts
    over). ``blocks`` lists (kind, instance) pairs in order of first appearance;
    ``kind_info`` each kind's newest schema and description; ``previous_plan`` is the
    index of the plan message before the newest one (-1 when none).
    """

    length: int = 0
    last: Any = field(default=None, eq=False, repr=False)
    tools: PVector[Message] = field(factory=pvector)
    passthrough: PVector[tuple[Role, str]] = field(factory=pvector)
    blocks: PVector[tuple[str, str | None]] = field(factory=pvector)
    block_set: PMap[tuple[str, str | None], bool] = field(factory=pmap, repr=False)
    kind_info: PMap[str, PMap[str, Frozen]] = field(factory=pmap)
    plan: Message | None = None
    errors: PVector[Message] = field(factory=pvector)
    approvals_previous: PVector[Message] = field(factory=pvector)
    approvals: PVector[Message] = field(factory=pvector)

    @classmethod
    def of(cls, context: Context) -> Transcript:
        """The transcript of ``context`` (reads every message once)."""
        return cls().advance(context)

    def advance(self, context: Context) -> Transcript:
        """This transcript brought up to ``context``, reading only the messages it has not
        seen; when ``context`` does not extend the context indexed so far, starts over."""
        messages = context.messages
        start = self.length
        if start > len(messages) or (start and messages[start - 1] is not self.last):
            return Transcript().advance(context)
        if start == len(messages):
            return self
        tools = self.tools.evolver()
        passthrough = self.passthrough.evolver()
        blocks = self.blocks.evolver()
        block_set = self.block_set
        kind_info = self.kind_info
        plan = self.plan
        errors = self.errors
        approvals_previous = self.approvals_previous
        approvals = self.approvals
        for index in range(start, len(messages)):
            message = messages[index]
            kind_type = message.get("type")
            if kind_type in _DATA_TYPES:
                kind = _DATA_TYPES[kind_type] or message.get("kind", "data")
                instance = message.get("_instance")
                key = (kind, instance)
                if key not in block_set:
                    block_set = block_set.set(key, True)
                    blocks.append(key)
                info = {k: message[k] for k in ("schema", "description") if k in message}
                if info:
                    old = kind_info[kind] if kind in kind_info else pmap()
                    kind_info = kind_info.set(kind, old.update(info))
            elif kind_type == "tool":
                if "tool" not in message:
                    raise RequestError(
                        f'context message {index} has type "tool" but no "tool": '
                        'write {"type": "tool", "tool": <the tool\'s JSON Schema>}')
                tools.append(message["tool"])
            elif kind_type in ("text", "system"):
                passthrough.append((Role.USER if kind_type == "text" else Role.SYSTEM,
                                    _text_of(message)))
            elif kind_type == "plan":
                plan = message
                errors = pvector()
                approvals_previous, approvals = approvals, pvector()
            elif kind_type == "error":
                errors = errors.append(message)
            elif kind_type == "approval":
                approvals = approvals.append(message)
        return evolve(
            self, length=len(messages), last=messages[len(messages) - 1],
            tools=tools.persistent(), passthrough=passthrough.persistent(),
            blocks=blocks.persistent(), block_set=block_set,
            kind_info=kind_info, plan=plan, errors=errors,
            approvals_previous=approvals_previous, approvals=approvals,
        )


def _text_of(message: Message) -> str:
    """The text of a ``text`` or ``system`` message: its ``text`` or ``message`` field,
    else the message without its type, as JSON."""
    for key in ("text", "message"):
        value = message.get(key)
        if isinstance(value, str):
            return value
    plain: Any = thaw(message)
    rest = {k: v for k, v in plain.items() if k != "type"}
    return _dumps(rest)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


# -- tools -------------------------------------------------------------------------------


def merge_tools(passed: Iterable[Any], from_context: Iterable[Any]) -> ToolRegistry:
    """The request's tools: ``passed`` first, then the context's ``tool`` messages; a later
    definition of the same ``_tool`` replaces an earlier one (in the earlier one's place).

    Raises :class:`obelisk.ToolError` for an invalid tool.
    """
    by_name: dict[str, Tool] = {}
    for index, schema in enumerate([*passed, *from_context]):
        tool = schema if isinstance(schema, Tool) else Tool.of(schema, index)
        by_name[tool.name] = tool  # dicts keep the first key's place: replace in place
    return ToolRegistry.of(list(by_name.values()))


# -- rendering -----------------------------------------------------------------------------


def _data_block(context: Context, transcript: Transcript, kind: str,
                instance: str | None) -> str:
    lines = [DATA_HEADER.format(kind=kind)
             + ("" if instance is None else INSTANCE_SUFFIX.format(instance=instance))]
    info = transcript.kind_info.get(kind, pmap())
    description = info.get("description")
    if isinstance(description, str):
        lines.append(description)
    if kind == "input":
        lines.append(INPUT_NOTE)
    if "schema" in info:
        lines += ["Schema:", _dumps(thaw(info["schema"]))]
    value, error = context.view(kind, instance)
    if error is not None:
        lines += ["Value: unreadable: " + str(error)]
    else:
        lines += ["Value:", "null" if value is MISSING else _dumps(thaw(value))]
    return "\n".join(lines)


def _data_turns(context: Context, transcript: Transcript,
                only_instance: str | None | bool = True,
                kinds: Collection[str] | None = None) -> list[Turn]:
    """Data blocks, global first; ``only_instance`` False: global only, a string: global
    and that instance, True: every instance; ``kinds`` restricts the kinds shown."""
    blocks = list(transcript.blocks)
    # Global blocks first, then instance blocks, each in order of first appearance.
    order = [(k, i) for k, i in blocks if i is None] + [(k, i) for k, i in blocks if i is not None]
    turns = []
    for kind, instance in order:
        if kinds is not None and kind not in kinds:
            continue
        if instance is not None and (only_instance is False
                                     or (isinstance(only_instance, str)
                                         and instance != only_instance)):
            continue
        turns.append(Turn(Role.USER, _data_block(context, transcript, kind, instance)))
    return turns


def _plan_turns(transcript: Transcript) -> list[Turn]:
    plan = transcript.plan
    turns: list[Turn] = []
    if plan is not None:
        calls = thaw(plan.get("plan", pvector()))
        by_call = _outcomes_by_call(thaw(plan.get("outcomes", pvector())))
        rows = []
        for index, call in enumerate(calls if isinstance(calls, list) else []):
            row: dict[str, Any] = {"call": index, "as_written": call}
            row["outcomes"] = by_call.get(index, [])
            rows.append(row)
        mode = plan.get("mode", "eager")
        turns.append(Turn(Role.USER, "\n".join(
            [PLAN_HEADER.format(mode=mode), PLAN_NOTE, _dumps(rows)])))
        feedback = [_feedback_line(a, calls if isinstance(calls, list) else [])
                    for a in [*transcript.approvals_previous, *transcript.approvals]]
    else:
        feedback = [_feedback_line(a, []) for a in transcript.approvals]
    if feedback:
        turns.append(Turn(Role.USER, "\n".join([FEEDBACK_HEADER, *feedback])))
    if transcript.errors:
        rows = []
        for message in transcript.errors:
            data = thaw(message.get("data", pmap()))
            row = {}
            if isinstance(data, dict):
                if "call" in data:
                    row["call"] = data["call"]
                row["error"] = data.get("error")
            if "_instance" in message:
                row["_instance"] = message["_instance"]
            rows.append(row)
        turns.append(Turn(Role.USER, "\n".join([ERRORS_HEADER, ERRORS_NOTE, _dumps(rows)])))
    return turns


def _outcomes_by_call(outcomes: Any) -> dict[int, list[dict[str, Any]]]:
    """A plan message's outcomes by call index, each without ``call`` (in one pass)."""
    grouped: dict[int, list[dict[str, Any]]] = {}
    for o in outcomes if isinstance(outcomes, list) else []:
        if isinstance(o, dict) and isinstance(o.get("call"), int):
            grouped.setdefault(o["call"], []).append({k: v for k, v in o.items() if k != "call"})
    return grouped


def _feedback_line(message: Message, calls: Sequence[Any]) -> str:
    data = thaw(message.get("data", pmap()))
    if not isinstance(data, dict):
        return "- " + _dumps(data)
    call = data.get("call")
    who = f"call {calls.index(call)}" if call in calls else "the call " + _compact(call)
    decision = data.get("decision")
    if decision == "replace":
        line = f"- {who} was replaced by {_compact(data.get('replacement'))}"
    elif decision == "deny":
        line = f"- {who} was denied"
    else:
        line = f"- {who} was approved"
    reason = data.get("reason")
    return line + (f": {reason}" if isinstance(reason, str) else "")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def build_request(
    context: Context,
    *,
    tools: Iterable[Any] = (),
    output_schema: Any = None,
    mode: Mode | str = Mode.EAGER,
    activity_names: Collection[str] = (),
    transcript: Transcript | None = None,
) -> Request:
    """The request for one tick: the context rendered, and the solution schema.

    ``tools`` are passed-in tool schemas (they come before the context's ``tool``
    messages; a later definition of a name replaces an earlier one); ``output_schema``
    the user's schema for ``output``; ``mode`` ``eager`` or ``lazy``; ``activity_names``
    the registered activities; ``transcript`` an index of ``context`` kept by the caller
    (the agent loop), advanced here, so the history is not read again. Raises
    :class:`RequestError` for a malformed tool message and :class:`obelisk.ToolError` for
    an invalid tool.
    """
    transcript = (transcript or Transcript()).advance(context)
    registry = merge_tools(tools, [thaw(t) for t in transcript.tools])
    schema = solution_schema(registry, output_schema, mode, activity_names)
    turns = [Turn(role, text) for role, text in transcript.passthrough]
    turns += _data_turns(context, transcript)
    turns += _plan_turns(transcript)
    return Request(SYSTEM_TEMPLATE, tuple(turns), json.dumps(schema, ensure_ascii=False))


def build_latent_request(
    context: Context,
    call: Mapping[str, Any],
    tool: Tool | Mapping[str, Any] | None = None,
    *,
    alternatives: Sequence[str] = (),
    transcript: Transcript | None = None,
) -> Request:
    """The sub-request for a latent call without ``_output`` (its result, asked of the LLM).

    ``call`` is the call resolved (meta-properties included: ``_instance`` and
    ``_scopes`` are read from it); ``tool`` its tool; ``alternatives`` the alternatives of
    its ``_outputPath`` as text. The turns are the context rendered as for a solution but
    with only global data and the call's own instance, then the data of the call's
    ``_scopes`` repeated, then the call. The schema is the tool's ``_output`` schema (any
    JSON without one); with two or more alternatives it is ``{"branch", "value"}``, the
    value checked against ``_output`` only for the first alternative.
    """
    transcript = (transcript or Transcript()).advance(context)
    instance = call.get("_instance")
    instance = instance if isinstance(instance, str) else False
    scopes = call.get("_scopes")
    scoped = [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else []
    turns = [Turn(role, text) for role, text in transcript.passthrough]
    turns += _data_turns(context, transcript, instance)
    if scoped:
        turns += _data_turns(context, transcript, instance, kinds=scoped)
    turns.append(Turn(Role.USER, "\n".join([CALL_HEADER, _dumps(dict(call))])))
    if isinstance(tool, Tool):
        output = tool.output_schema
    elif isinstance(tool, Mapping):
        output = Tool.of(tool).output_schema
    else:
        output = None
    value_schema: Any = {} if output is None else output
    if len(alternatives) >= 2:
        schema: Any = {
            "type": "object",
            "properties": {"branch": {"type": "string", "enum": list(alternatives)},
                           "value": {}},
            "required": ["branch", "value"],
            "additionalProperties": False,
            "if": {"properties": {"branch": {"const": alternatives[0]}}},
            "then": {"properties": {"value": value_schema}},
        }
        turns.append(Turn(Role.USER, LATENT_BRANCH_NOTE))
    else:
        schema = value_schema
    name = call.get("_tool")
    return Request(LATENT_SYSTEM_TEMPLATE, tuple(turns), json.dumps(schema, ensure_ascii=False),
                   name="latent", tool=name if isinstance(name, str) else None)

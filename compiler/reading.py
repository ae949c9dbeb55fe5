"""Reading one call: its tool, parameter expressions and meta-properties, checked alone.

:func:`read_call` is the compiler's first pass over each call. It returns a frozen
:class:`CallReading`: what the call says (:class:`CallInfo`, None when the call is not a
JSON object at all) and the diagnostics found in it. A call with errors still yields its
:class:`CallInfo` (keep going): a parameter that does not parse is left out of
``params`` (it reads nothing), an output that does not parse leaves ``output`` None (it
writes nothing), a bad ``_outputMethod`` reads as ``set``, a bad ``_instance`` as none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from attrs import field, frozen
from pyrsistent import PMap, PVector, pmap

from obelisk.compiler.conform import literal_param_errors
from obelisk.compiler.diagnostics import Diagnostic
from obelisk.compiler.hints import METHOD_ALIASES, closest
from obelisk.compiler.meta import engine_meta_errors, tool_meta_errors
from obelisk.compiler.parse import parse_input, parse_output
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.ast import Expr, OutputExpr, Span
from obelisk.core.errors import ExpressionSyntaxError
from obelisk.core.messages import KIND_NAME, NON_DATA_KINDS
from obelisk.core.methods import Method
from obelisk.core.paths import Path
from obelisk.core.plain import thaw
from obelisk.core.values import NON_STRING_SCALAR_TYPES, Frozen, freeze, json_type, pointer_of

#: Makes a diagnostic about the call being read: ``report(code, message, pointer=...)``.
_Report = Callable[..., Diagnostic]


@frozen
class CallInfo:
    """What one call says, as the compiler reads it (before it becomes nodes)."""

    index: int
    call: Frozen
    tool: str | None
    instance: str | None
    params: tuple[tuple[str, Path, str, Expr], ...]  # (pointer, path, text, AST)
    output: OutputExpr | None
    output_text: str | None
    method: Method
    scopes: tuple[str, ...]
    #: The meta-properties the tool prescribes that the call leaves out (see
    #: :func:`prescribed_meta`); ``call`` is the call as written, without them.
    prescribed: PMap[str, Frozen] = field(factory=pmap)




#: The meta-properties a tool's schema can prescribe with a ``const`` or a ``default``.
PRESCRIBABLE = ("_outputPath", "_outputMethod", "_scopes", "_delegate")


def prescribed_meta(call: Mapping[str, Frozen], tool: Tool | None,
                    memo: dict[Any, Any] | None = None) -> PMap[str, Frozen]:
    """The meta-properties ``tool`` prescribes (``properties.<name>.const``, else
    ``.default``) that ``call`` leaves out: the call takes them as if it had written them.

    ``memo``: as for :func:`read_call` (what a tool prescribes is found once per plan).
    """
    if tool is None:
        return _NOTHING
    key = ("prescribed", id(tool))
    offered = memo.get(key) if memo is not None else None
    if offered is None:
        offered = _prescribable(tool)
        if memo is not None:
            memo[key] = offered
    if not offered:
        return _NOTHING
    return pmap({name: value for name, value in offered if name not in call})


_NOTHING: PMap[str, Frozen] = pmap()


def _prescribable(tool: Tool) -> tuple[tuple[str, Frozen], ...]:
    # What the tool would prescribe to a call that writes none of them.
    props = tool.schema.get("properties") if isinstance(tool.schema, PMap) else None
    if not isinstance(props, PMap):
        return ()
    found: list[tuple[str, Frozen]] = []
    for name in PRESCRIBABLE:
        schema = props.get(name)
        if not isinstance(schema, PMap):
            continue
        for keyword in ("const", "default"):
            if keyword in schema:
                found.append((name, schema[keyword]))
                break
    return tuple(found)


@frozen
class CallReading:
    """The result of reading one call: what it says (None when it is not a JSON object)
    and the diagnostics found in it alone."""

    info: CallInfo | None
    diagnostics: tuple[Diagnostic, ...]




def read_call(index: int, raw: Any, registry: ToolRegistry | None,
              memo: dict[Any, Any] | None = None) -> CallReading:
    """Read call number ``index`` of a plan: parse its expressions, check its
    meta-properties, and (when a registry is given) its tool and literal parameters.

    ``memo``: a dict kept across the calls of one plan (then dropped), so work that
    depends only on the tool and a value is done once per plan (see
    :func:`~obelisk.compiler.conform.literal_param_errors`).
    """
    if type(raw) is not dict and not isinstance(raw, (Mapping, PMap)):  # dict: no ABC check
        return CallReading(None, (Diagnostic(
            "invalid-call", f"a call must be a JSON object, got {json_type(raw)}", call=index,
            hint='write it as {"_tool": "name", "param": value, ...}'),))
    members: dict[str, Frozen] = {}  # the call's members, read here more cheaply than call's
    try:
        call = freeze(raw, members=members, compact=True)
    except ValueError as exc:
        return CallReading(None, (
            Diagnostic("invalid-call", f"the call is not JSON: {exc}", call=index),))
    assert isinstance(call, PMap)  # a Mapping freezes to a PMap
    tool = members.get("_tool")
    tool_name = tool if isinstance(tool, str) and tool else None
    report: _Report = partial(Diagnostic, call=index, tool=tool_name)
    prescribed = prescribed_meta(members, registry.get(tool_name) if registry is not None
                                 and tool_name is not None else None, memo)
    # What the call means: as written, plus what is prescribed.
    meta = {**members, **prescribed} if prescribed else members
    params, param_diags = _read_params(members, report, memo)
    output, output_diags = _read_output(meta.get("_outputPath"), report)
    method, method_diags = _read_method(meta.get("_outputMethod"), report)
    instance, instance_diags = _read_instance(members.get("_instance"), report)
    scopes, scope_diags = _read_scopes(meta.get("_scopes"), report)
    text = meta.get("_outputPath")
    info = CallInfo(index, call, tool_name, instance, params, output,
                    text if isinstance(text, str) else None, method, scopes, prescribed)
    return CallReading(info, (
        *_check_tool(tool, registry, report), *param_diags, *output_diags, *method_diags,
        *instance_diags, *scope_diags, *_check_literals(info, members, registry, report, memo),
    ))


def _check_tool(tool: Any, registry: ToolRegistry | None,
                report: _Report) -> tuple[Diagnostic, ...]:
    # _tool: present, a string, and known when a registry is given.
    if isinstance(tool, str) and tool:
        if registry is None or tool in registry:
            return ()
        near = closest(tool, registry.names)
        return (report("unknown-tool", f"no tool named {tool!r}", pointer="/_tool",
                       hint=f"did you mean {near!r}?" if near
                       else f"known tools: {', '.join(registry.names) or 'none'}"),)
    return (report("unknown-tool", "the call has no _tool" if tool is None
                   else "_tool is an empty string" if tool == ""
                   else f"_tool must be a tool's name, got {json_type(tool)}",
                   pointer="/_tool", hint=_name_the_tool(registry)),)


def _name_the_tool(registry: ToolRegistry | None) -> str:
    """The hint for a call without a usable ``_tool``: one of the known tools when there
    are any (the LLM reads it), else an example."""
    names = registry.names if registry is not None else ()
    if not names:
        return 'name the tool: "_tool": "processPayment"'
    known = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
    return f'name the tool: "_tool": {json.dumps(names[0], ensure_ascii=False)}' + (
        f" (known tools: {known})" if len(names) > 1 else "")


def _place(path: Path, memo: dict[Any, Any] | None) -> tuple[str, Path]:
    """A parameter's pointer and path, one copy of each per plan (calls of one tool
    repeat them), so the plan does not hold a copy per call."""
    if memo is None:
        return pointer_of(path), path
    key = ("param", path)
    found: tuple[str, Path] | None = memo.get(key)
    if found is None:
        found = memo[key] = (pointer_of(path), path)
    return found


def _read_params(call: Mapping[str, Frozen], report: _Report,
                 memo: dict[Any, Any] | None) -> tuple[
        tuple[tuple[str, Path, str, Expr], ...], tuple[Diagnostic, ...]]:
    # Parameters: every string that starts with † anywhere below a non-meta key.
    params: list[tuple[str, Path, str, Expr]] = []
    found: list[Diagnostic] = []
    stack: list[tuple[Path, Frozen]] = [
        ((key,), value) for key, value in sorted(call.items(), reverse=True)
        if not key.startswith("_")
    ]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if value.startswith("†"):
                pointer, path = _place(path, memo)
                try:
                    params.append((pointer, path, value, parse_input(value)))
                except ExpressionSyntaxError as exc:
                    found.append(_syntax(report, exc, pointer, value))
        elif type(value) in NON_STRING_SCALAR_TYPES:  # no ABC checks below for these
            continue
        elif isinstance(value, PMap):
            stack.extend(((*path, k), v) for k, v in sorted(value.items(), reverse=True))
        elif isinstance(value, PVector):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))
    return tuple(params), tuple(found)


def _read_output(text: Any, report: _Report) -> tuple[OutputExpr | None,
                                                      tuple[Diagnostic, ...]]:
    # _outputPath: an output expression over data kinds.
    if text is None:
        return None, ()
    if not isinstance(text, str):
        return None, (report("syntax", f"_outputPath must be a string, got {json_type(text)}",
                             pointer="/_outputPath"),)
    try:
        output = parse_output(text)
    except ExpressionSyntaxError as exc:
        return None, (_syntax(report, exc, "/_outputPath", text),)
    alternatives = output.alternatives
    if len(alternatives) == 1 and len(alternatives[0].targets) == 1 and (
            alternatives[0].targets[0].kind not in NON_DATA_KINDS):
        return output, ()  # one target of a data kind: the usual case
    return output, tuple(
        report("invalid-output-target",
               f'kind "{target.kind}" is a message type that cannot hold data',
               pointer="/_outputPath", expression=text, span=target.span,
               hint="write to a data kind such as †state or †data")
        for target in output.targets if target.kind in NON_DATA_KINDS
    )


def _read_method(raw: Any, report: _Report) -> tuple[Method, tuple[Diagnostic, ...]]:
    # _outputMethod: one of the five (set when absent).
    if raw is None:
        return Method.SET, ()
    try:
        return Method(raw), ()
    except ValueError:
        near = closest(raw, [m.value for m in Method], aliases=METHOD_ALIASES) \
            if isinstance(raw, str) else None
        return Method.SET, (report(
            "invalid-output-method",
            f"_outputMethod {thaw(raw)!r} is not set, merge, assign, push or concat",
            pointer="/_outputMethod",
            hint=f"did you mean {near!r}?" if near else "leave it out for set"),)


def _read_instance(raw: Any, report: _Report) -> tuple[str | None, tuple[Diagnostic, ...]]:
    # _instance: a string id.
    if raw is None or isinstance(raw, str):
        return raw, ()
    return None, (report("invalid-meta", f"_instance must be a string id, got {json_type(raw)}",
                         pointer="/_instance"),)


def _read_scopes(raw: Any, report: _Report) -> tuple[tuple[str, ...], tuple[Diagnostic, ...]]:
    # _scopes: a list of kind names (a leading † is allowed).
    if raw is None:
        return (), ()
    if not isinstance(raw, PVector):
        return (), (report("invalid-meta", "_scopes must be a list of kind names",
                           pointer="/_scopes", hint='for example "_scopes": ["state", "input"]'),)
    scopes: list[str] = []
    found: list[Diagnostic] = []
    for i, kind in enumerate(raw):
        name = kind.removeprefix("†") if isinstance(kind, str) else None
        if name in NON_DATA_KINDS:
            # A scope hands the activity the messages of a kind: only data may be scoped,
            # never the system prompt, tool schemas or earlier errors.
            found.append(report(
                "invalid-scope", f"_scopes[{i}] names {name!r}, a message type that holds no "
                "data; only data kinds can be scoped", pointer=f"/_scopes/{i}",
                hint='scope data kinds such as "state", "data" or "input"'))
        elif name is not None and KIND_NAME.match(name):
            scopes.append(name)
        else:
            found.append(report("invalid-meta", f"_scopes[{i}] is not a kind name: {thaw(kind)!r}",
                                pointer=f"/_scopes/{i}", hint='kind names look like "state"'))
    return tuple(scopes), tuple(found)


def _check_literals(info: CallInfo, members: Mapping[str, Frozen],
                    registry: ToolRegistry | None, report: _Report,
                    memo: dict[Any, Any] | None) -> tuple[Diagnostic, ...]:
    # Literal parameters against the tool's schema (references are type-checked later),
    # and the meta-properties the call may not choose (most calls set none of them: the
    # common path builds nothing).
    engine = engine_meta_errors(members)
    tool = registry.get(info.tool) if registry is not None and info.tool is not None else None
    found = [] if tool is None else literal_param_errors(tool, members, memo)
    meta = [] if tool is None else tool_meta_errors(tool, members)
    if not (engine or found or meta):
        return ()
    return (*(report("invalid-meta", message, pointer=pointer) for pointer, message in engine),
            *(report("param-schema", message, pointer=pointer) for pointer, message in
              (*found, *meta)))


def _syntax(report: _Report, exc: ExpressionSyntaxError, pointer: str, text: str) -> Diagnostic:
    """A ``syntax`` diagnostic for an expression that does not parse, caret and hint."""
    return report("syntax", exc.reason, pointer=pointer, expression=text,
                  span=Span(exc.column - 1, exc.end - 1), hint=_syntax_hint(exc))


def _syntax_hint(exc: ExpressionSyntaxError) -> str | None:
    parts = []
    if exc.expected:
        parts.append("expected " + (exc.expected[0] if len(exc.expected) == 1
                                    else "one of: " + ", ".join(exc.expected)))
    if exc.hint:
        parts.append(exc.hint)
    return "; ".join(parts) or None

"""Delegates (the shell): a call handed to another agent run with the same adapter.

A call with ``_delegate`` (its own, or the one its tool prescribes) is run by a
:class:`DelegateRunner`, the interpreters' :class:`~obelisk.interpreters.executors.
DelegateExecutor` seam. ``"anonymous"`` starts from an empty context; any other value
names a *saved request*, a JSON file ``{"context": [...], "schema": {...}, "tools"?: [...],
"max_ticks"?: N}`` under the delegate root. The delegate's context is the saved request's
context, then one data message per kind in the caller's ``_scopes`` holding the value the
caller sees (global data with the caller's instance on top), then an input message of the
call's resolved parameters. It runs as :func:`obelisk.agent.loop.run_agent` itself (no
second loop), one level deeper; its output is the call's result, which the machine checks
against the tool's ``_output`` schema like any activity's result.

The errors are runtime errors, so a call with alternatives sends them to its last one:
``DelegateNotFound``, ``DelegateOutsideRoot`` (an absolute path, ``..``, or a symbolic
link leaving the root), ``DelegateDepth`` (deeper than ``max_delegate_depth``) and
``DelegateFailed`` (the delegate ended ``stalled``, ``max_ticks``, ``failed`` or
``cancelled``). Saved requests are read here, in the shell; :func:`missing_delegates`
lets a command report a missing one before the run starts.
"""

from __future__ import annotations

import asyncio
import errno
import os
import pathlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from attrs import field, frozen

from obelisk.agent.budget import Spending
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.core.errors import MessageError, ObeliskError
from obelisk.core.messages import PAYLOAD_KEYS
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.outcomes import Outcome, Raised, Returned
from obelisk.jsonio import InputError, parse_json, read_text
from obelisk.llm.base import Usage

__all__ = [
    "ANONYMOUS",
    "MAX_DELEGATE_DEPTH",
    "DelegateError",
    "DelegateRunner",
    "Delegation",
    "SavedRequest",
    "delegate_context",
    "load_saved_request",
    "locate_saved_request",
    "missing_delegates",
]

#: The delegate that starts from an empty context.
ANONYMOUS = "anonymous"

#: How deep delegates may nest by default.
MAX_DELEGATE_DEPTH = 8


class DelegateError(ObeliskError):
    """A delegate could not be run; ``type`` is the error type the call fails with."""

    def __init__(self, type: str, message: str) -> None:  # noqa: A002 - the error's type
        self.type = type
        super().__init__(message)


@frozen
class SavedRequest:
    """A saved request: the delegate's context, output schema, tools and tick budget."""

    context: tuple[Any, ...]
    schema: Any
    tools: tuple[Any, ...] = ()
    max_ticks: int | None = None


@frozen
class Delegation:
    """How delegates run: the ``root`` of saved requests (None: only anonymous ones), the
    depth limit, ``chain``, the delegates this run is nested in (outermost first), and the
    ``spending`` the run and all its delegates draw on (None: no budget of delegates)."""

    root: pathlib.Path | None = None
    max_depth: int = MAX_DELEGATE_DEPTH
    chain: tuple[str, ...] = ()
    spending: Spending | None = field(default=None, eq=False)

    def deeper(self, to: str) -> Delegation:
        """The delegation of a delegate named ``to``, one level down."""
        return Delegation(self.root, self.max_depth, (*self.chain, to), self.spending)

    def describe(self, to: str | None = None) -> str:
        """The chain as text: ``caller -> a.json -> anonymous``."""
        return " -> ".join(("caller", *self.chain, *(() if to is None else (to,))))


def locate_saved_request(root: pathlib.Path | None, name: str) -> pathlib.Path:
    """The file of the saved request ``name`` under ``root``.

    Raises :class:`DelegateError`: ``DelegateOutsideRoot`` for an absolute path, a ``..``
    part, or a path whose real location (symbolic links followed) leaves the root;
    ``DelegateNotFound`` when there is no root or no such file, or when the name cannot
    name a file at all (a NUL character, too long, symbolic links that loop).
    """
    pure = pathlib.PurePosixPath(name.replace("\\", "/"))
    windows = pathlib.PureWindowsPath(name)
    if pure.is_absolute() or windows.drive or windows.root or ".." in pure.parts:
        raise DelegateError("DelegateOutsideRoot", f"_delegate {_shown(name)} is not a relative "
                            "path inside the delegate root: absolute paths and '..' are refused")
    if root is None:
        raise DelegateError("DelegateNotFound", f"_delegate {_shown(name)} names a saved "
                            "request, but no delegate root is configured (pass delegate_root= "
                            "or --delegate-root DIR)")
    try:
        base = root.resolve()
        target = (base / pure).resolve()
        outside = target != base and base not in target.parents
        found = not outside and target.is_file()
    except (OSError, ValueError, RuntimeError) as exc:  # what the file system refuses
        raise DelegateError("DelegateNotFound", f"_delegate {_shown(name)} cannot name a saved "
                            f"request under the delegate root {str(root)!r}: {_why(exc)}"
                            ) from None
    if outside:
        raise DelegateError("DelegateOutsideRoot", f"_delegate {_shown(name)} leads outside the "
                            f"delegate root {str(root)!r} (through a symbolic link)")
    if not found:
        raise DelegateError("DelegateNotFound", f"no saved request {_shown(name)} under the "
                            f"delegate root {str(root)!r}: save the request as that file")
    return target


def _shown(name: str) -> str:
    """A delegate's name quoted for a message, cut short when it is long."""
    return repr(name) if len(name) <= 100 else repr(name[:99]) + "…"


def _why(exc: Exception) -> str:
    """What the file system made of a name, for people (never a Python error type)."""
    if isinstance(exc, ValueError):
        return "it holds a NUL character"
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
        return "its symbolic links loop"
    if getattr(exc, "errno", None) == errno.ENAMETOOLONG:
        return "the name is too long for the file system"
    return str(getattr(exc, "strerror", None) or exc)


def load_saved_request(root: pathlib.Path | None, name: str) -> SavedRequest:
    """The saved request ``name`` read from under ``root``; raises :class:`DelegateError`
    (``DelegateNotFound`` also for a file that is not a saved request). It is read like a
    plan file (a byte order mark skipped; duplicate keys, NaN, lone surrogates refused)
    and checked whole: its context's messages, its tools, its output schema."""
    path = locate_saved_request(root, name)
    try:
        data = parse_json(read_text(str(path)), f"saved request {_shown(name)}")
    except InputError as exc:
        raise DelegateError("DelegateNotFound", exc.message) from None
    problem = _shape_problem(data)
    if problem:
        raise DelegateError("DelegateNotFound", f"saved request {_shown(name)} is not a saved "
                            f"request: {problem}")
    return SavedRequest(tuple(data["context"]), data.get("schema"), tuple(data.get("tools", ())),
                        data.get("max_ticks"))


def _shape_problem(data: Any) -> str:
    if not isinstance(data, dict):
        return "it must be an object {\"context\": [...], \"schema\": {...}}"
    if not isinstance(data.get("context"), list):
        return "\"context\" must be a list of messages"
    if not isinstance(data.get("tools", []), list):
        return "\"tools\" must be a list of tool schemas"
    ticks = data.get("max_ticks")
    if ticks is not None and (not isinstance(ticks, int) or isinstance(ticks, bool) or ticks < 1):
        return "\"max_ticks\" must be a positive integer"
    try:
        Context.of(data["context"])
        ToolRegistry.of(data.get("tools", ()))
    except ObeliskError as exc:  # a malformed message, an invalid tool: what is wrong, where
        return f"{'its context' if isinstance(exc, MessageError) else 'its tools'}: {exc}"
    return _schema_problem(data.get("schema"))


def _schema_problem(schema: Any) -> str:
    """What is wrong with a saved request's output schema ("" when it is usable)."""
    if schema is None:
        return ""
    if not isinstance(schema, (dict, bool)):
        return "\"schema\" must be a JSON Schema (an object, or true or false)"
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError, best_match  # type: ignore[import-untyped]

    try:
        error = best_match(Draft202012Validator(
            Draft202012Validator.META_SCHEMA).iter_errors(schema))
    except (RecursionError, SchemaError):
        return "\"schema\" is nested too deeply to check"
    if error is None:
        return ""
    where = "".join(f"/{p}" for p in error.absolute_path)
    return f"\"schema\" is not a JSON Schema (Draft 2020-12): at {where or '/'}: {error.message}"


def delegate_context(saved: Iterable[Any], invocation: Invocation,
                     scopes: Iterable[str]) -> list[Any]:
    """The delegate's initial context: the saved request's messages, one data message per
    scoped kind (the value the caller sees), then the input message of the parameters."""
    messages = [thaw(m) for m in saved]
    instance = invocation.call.get("_instance")
    for kind in scopes:
        value = invocation.context.value(kind, (), instance if isinstance(instance, str) else None)
        if value is MISSING:
            continue
        if kind in PAYLOAD_KEYS:
            messages.append({"type": kind, kind: thaw(value)})
        else:
            messages.append({"type": "data", "kind": kind, "data": thaw(value)})
    parameters = {k: v for k, v in invocation.call.items() if not k.startswith("_")}
    messages.append({"type": "input", "input": parameters})
    return messages


def missing_delegates(tools: Iterable[Any], root: pathlib.Path | None) -> list[str]:
    """What is wrong with the saved requests the tools can delegate to (their ``_delegate``
    ``const``, ``default`` or ``enum`` values): one line per request that is missing,
    outside the root, or not a saved request. For a command to report before the run
    starts."""
    problems = []
    for tool in tools:
        spec = tool.get("properties", {}).get("_delegate") if isinstance(tool, dict) else None
        if not isinstance(spec, dict):
            continue
        names = [spec.get("const"), spec.get("default"), *spec.get("enum", ())]
        for name in dict.fromkeys(n for n in names if isinstance(n, str) and n != ANONYMOUS):
            try:
                load_saved_request(root, name)
            except DelegateError as exc:
                problems.append(f"tool {_tool_name(tool)!r}: {exc}")
    return problems


def _tool_name(tool: dict[str, Any]) -> Any:
    name = tool.get("properties", {}).get("_tool", {})
    return name.get("const") if isinstance(name, dict) else None


#: Runs a delegate's agent loop: (context, tools, output schema, max ticks, delegation,
#: the delegated call's idempotency key or None) -> the delegate's result (an
#: :class:`~obelisk.agent.result.AgentResult`).
RunDelegate = Callable[[list[Any], tuple[Any, ...], Any, "int | None", Delegation,
                        "str | None"], Awaitable[Any]]


class DelegateRunner:
    """The delegate executor of one tick: runs a delegated call as a nested agent run.

    ``run`` starts the nested loop (the agent loop passes a closure over
    :func:`run_agent` with its own options); ``tools`` are the caller's tools, which an
    anonymous delegate gets.
    """

    def __init__(self, delegation: Delegation, tools: tuple[Any, ...], run: RunDelegate,
                 on_result: Callable[[tuple[str, ...], Any], None] | None = None) -> None:
        self.delegation = delegation
        self.tools = tools
        self.run = run
        self.on_result = on_result
        self.usage = Usage()  # the tokens the delegates' runs cost, counted in the tick's

    async def __call__(self, to: str, invocation: Invocation) -> Outcome:
        """The delegated call's outcome: the delegate's output, or a runtime error."""
        nested = self.delegation.deeper(to)
        if len(nested.chain) > self.delegation.max_depth:
            return Raised("DelegateDepth", f"delegating to {to!r} nests {len(nested.chain)} "
                          f"delegates deep ({nested.describe()}), more than the limit of "
                          f"{self.delegation.max_depth} (max_delegate_depth)")
        try:
            saved = self._saved(to, invocation)
        except DelegateError as exc:
            return Raised(exc.type, str(exc))
        context = delegate_context(saved.context, invocation, scoped_kinds(invocation.call))
        key = invocation.call.get("_idempotencyKey")  # set when the run is journaled
        spending = self.delegation.spending
        refused = None if spending is None else spending.enter()
        if refused is not None:
            return Raised("DelegateFailed", f"the delegate {nested.describe()} was not "
                          f"started: {refused}", data={"status": "not started",
                                                        "chain": list(nested.chain)})
        try:
            result = await self.run(context, saved.tools, saved.schema, saved.max_ticks,
                                    nested, key if isinstance(key, str) else None)
        finally:
            if spending is not None:
                spending.leave()
        self.usage = self.usage + result.usage
        if self.on_result is not None:
            self.on_result(nested.chain, result)
        status = str(result.status.value)
        if status == "cancelled":  # the caller's run is being cancelled: so is this call
            raise asyncio.CancelledError
        if status != "completed":
            return Raised("DelegateFailed", f"the delegate {nested.describe()} ended "
                          f"{status}: {result.reason}", data={"status": status,
                                                              "chain": list(nested.chain)})
        return Returned(result.output)

    def _saved(self, to: str, invocation: Invocation) -> SavedRequest:
        if to == ANONYMOUS:
            tool = invocation.tool
            return SavedRequest((), None if tool is None else tool.output_schema, self.tools)
        return load_saved_request(self.delegation.root, to)


def as_root(root: str | os.PathLike[str] | None) -> pathlib.Path | None:
    """A delegate root given as text or a path (None stays None)."""
    return None if root is None else pathlib.Path(root)


def scoped_kinds(call: Mapping[str, Any]) -> list[str]:
    """The kind names in a call's ``_scopes`` (none when it has no list)."""
    scopes = call.get("_scopes")
    return [k for k in scopes if isinstance(k, str)] if isinstance(scopes, list) else []

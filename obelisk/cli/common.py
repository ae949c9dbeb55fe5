"""What every command shares: exit codes, the command table's row type, and the loaders
that turn files and options into library values (every failure an :class:`InputError`)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TextIO

from obelisk.jsonio import InputError, load_json

if TYPE_CHECKING:
    # Imported where used: the command table and ``--help`` need none of the library.
    from obelisk import CompiledPlan, Context, Diagnostic
    from obelisk.planfile import PlanFile

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

#: ``--interpreter``'s help, for every command that takes it.
INTERPRETER_HELP = ("sync: one call at a time, in plan order (default); asyncio: every "
                    "ready call at once")


class AddArguments(Protocol):
    """Declares a command's arguments and options on its sub-parser."""

    def __call__(self, parser: argparse.ArgumentParser) -> None: ...


class RunCommand(Protocol):
    """Runs a command over parsed arguments; returns the exit code (0, 1 or 2).

    Raises :class:`InputError` for unreadable input (exit 2); any other ``ObeliskError``
    is a failed check (exit 1). ``main`` translates both.
    """

    def __call__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> int: ...


class Command(NamedTuple):
    """One row of the command table: the name typed, its one-line help, its arguments,
    and what it runs."""

    # A frozen NamedTuple, not an attrs class as values are elsewhere: ``obelisk --help``
    # builds the table and nothing else, and importing attrs would double its start-up.

    name: str
    help: str
    add_arguments: AddArguments
    run: RunCommand


def add_plan_file(parser: argparse.ArgumentParser) -> None:
    """The positional FILE argument of every command that reads a plan file."""
    parser.add_argument("file", metavar="FILE", help="plan file (or - for stdin)")


def add_inputs(parser: argparse.ArgumentParser, *, runs: bool = False) -> None:
    """``--tools FILE`` and ``--context FILE``: tools and context kept apart from the plan
    (they are usually fixed while plans change); and the MCP servers' options (``runs``:
    ``--allow-destructive`` too, for the commands that call tools)."""
    parser.add_argument("--tools", metavar="TOOLS.json",
                        help="tool schemas (an array, or an object with \"tools\"); "
                             "the plan file's own tools are added after them")
    parser.add_argument("--context", metavar="CONTEXT.json",
                        help="context messages (an array, or an object with \"context\"); "
                             "the plan file's own context follows them")
    from obelisk.cli.mcp import add_mcp_arguments  # declares options only: no SDK

    add_mcp_arguments(parser, runs=runs)


def read_inputs(path: str, args: argparse.Namespace, err: TextIO = sys.stderr,
                pf: PlanFile | None = None) -> PlanFile:
    """The plan file at ``path`` (``pf`` when it was read already), with the tools and
    context of ``--tools`` and ``--context`` put before its own (a later tool definition
    replaces an earlier one), and the tools of its MCP servers (``--mcp``, its ``mcp``
    field) before those."""
    if pf is None:
        from obelisk.planfile import read_plan_file

        pf = read_plan_file(path)
    if getattr(args, "mcp", None) or getattr(args, "mcp_config", None) or pf.mcp is not None:
        from obelisk.cli.mcp import with_mcp_tools

        pf = with_mcp_tools(pf, args, err)
    tools: list[Any] = []
    context: list[Any] = []
    if getattr(args, "context", None):
        context = context_messages(args.context)
        tools += [m["tool"] for m in context
                  if isinstance(m, Mapping) and m.get("type") == "tool" and "tool" in m]
    if getattr(args, "tools", None):
        tools = _tools(args.tools) + tools
    if not tools and not context:
        return pf
    from attrs import evolve

    return evolve(pf, tools=tools + pf.tools, context=context + pf.context)


def read_inputs_without_plan(args: argparse.Namespace, err: TextIO = sys.stderr) -> list[Any]:
    """The tools of ``--mcp``, ``--tools`` and ``--context`` alone (``schema`` without a
    plan file)."""
    context = context_messages(args.context) if args.context else []
    tools = [m["tool"] for m in context
             if isinstance(m, Mapping) and m.get("type") == "tool" and "tool" in m]
    mcp: list[Any] = []
    if getattr(args, "mcp", None) or getattr(args, "mcp_config", None):
        from obelisk.cli.mcp import servers_for

        servers = servers_for(args, err)
        mcp = servers.tools if servers is not None else []
    return mcp + (_tools(args.tools) if args.tools else []) + tools


def _tools(path: str) -> list[Any]:
    data = load_json(path)
    if isinstance(data, Mapping):
        if "tools" not in data:
            raise InputError(f'{path}: expected an array of tool schemas or an object with '
                             '"tools"')
        data = data["tools"]
    if not isinstance(data, list):
        raise InputError(f"{path}: tools are an array of tool schemas, got "
                         f"{type(data).__name__}")
    return data


def context_messages(path: str) -> list[Any]:
    """The messages of a context file: an array, or an object with a "context" array."""
    data = load_json(path)
    if isinstance(data, dict):
        if "context" not in data:
            raise InputError(f'{path}: expected an array of messages or an object with "context"')
        data = data["context"]
    if not isinstance(data, list):
        raise InputError(f"{path}: a context is an array of messages, got {type(data).__name__}")
    return data


def load_context(path: str) -> Context:
    """A context from a file: an array of messages, or an object with a "context" array."""
    from obelisk import Context, MessageError

    data = context_messages(path)
    try:
        return Context.of(data)
    except MessageError as exc:
        raise InputError(f"{path}: {exc}") from None


def load_activities(spec: str) -> Mapping[str, Callable[..., Any]]:
    """The activity mapping named ``package.module:NAME`` (a dict of name -> callable)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InputError(f"--activities takes package.module:NAME, got {spec!r}")
    # As `python -m` does: modules in the current directory are found first.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except KeyboardInterrupt:  # Ctrl-C while importing: main reports the interrupt (130)
        raise
    except BaseException as exc:  # noqa: B036 - an import that raises, or calls sys.exit
        # (SystemExit), is bad input: say so rather than end the command line silently.
        hint = " (the module calls sys.exit when imported)" if isinstance(exc, SystemExit) else ""
        raise InputError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}{hint}"
                         ) from None
    if not hasattr(module, attribute):
        import difflib  # on first use: --help never needs it
        near = difflib.get_close_matches(attribute, [n for n in vars(module)
                                                     if not n.startswith("_")], n=1)
        raise InputError(f"{spec}: module {module_name!r} has no attribute {attribute!r}"
                         + (f"; did you mean {near[0]!r}?" if near else ""))
    mapping = getattr(module, attribute)
    if not isinstance(mapping, Mapping) or not all(
            isinstance(k, str) and callable(v) for k, v in mapping.items()):
        raise InputError(f"{spec} must be a dict of activity name -> callable, got "
                         f"{type(mapping).__name__}")
    return mapping


def input_notes(pf: PlanFile) -> list[Diagnostic]:
    """What the command's inputs, not the plan, call for: a ``no-tools`` info when no tool
    schema was given (the plan file's ``tools``, tool messages, ``--tools``, ``--context``).

    The shell adds it, not the compiler: the library's ``compile_plan`` without tools is a
    choice its caller made, and a plan's diagnostics are the protocol's (the same for
    every implementation); whether a command line was given tools is the command's own.
    """
    if pf.tools:
        return []
    from obelisk import Diagnostic

    return [Diagnostic("no-tools", "no tools given: tool names and parameters were not "
                       "checked", hint='give --tools FILE or a "tools" list in the plan file')]


def compile_file(pf: PlanFile, *, instances: bool = False) -> CompiledPlan:
    """Compile a plan file (mapped over its instances when the file or ``instances`` asks).

    A malformed context message or tool definition is bad input (:class:`InputError`);
    problems in the plan itself are the compiled plan's diagnostics.
    """
    from obelisk import Context, MessageError, ToolError, compile_plan

    try:
        context = Context.of(pf.context)
    except MessageError as exc:
        raise InputError(f"{pf.name}: context {exc}") from None
    try:
        return compile_plan(pf.plan, tools=pf.tools, context=context,
                            instances=pf.instances or instances)
    except ToolError as exc:
        raise InputError(f"{pf.name}: {exc}") from None

"""The ``obelisk`` command line: a thin shell over the library.

Exit codes: 0 success, 1 a failed check (MISSING, an invalid plan, a failing vector),
2 bad usage or unreadable input. A user never sees a traceback for bad input.

A command is one module that defines its arguments and what it runs, and one row in
:data:`COMMANDS`; :func:`main` is the error boundary every command shares.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

from obelisk import ObeliskError, __version__
from obelisk.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    load_activities,
    load_context,
)
from obelisk.cli.safe import inert, inert_lines
from obelisk.jsonio import InputError
from obelisk.urls import hide_from_title

if TYPE_CHECKING:
    from obelisk.cli.live import Progress
    from obelisk.cli.terminal import terminal_approval


class _Deferred(NamedTuple):
    """A command row of ``obelisk.cli.<module>``, imported when first declared or run.

    The table below names each command's module instead of importing it, so ``obelisk
    --help`` and a command that needs little (``resolve``, ``validate``) do not import
    what the other commands use (rich, sqlite3, asyncio, the LLM adapters, hypothesis).
    """

    module: str
    row: str

    def command(self) -> Command:
        """The module's own row."""
        command: Command = getattr(importlib.import_module(f"obelisk.cli.{self.module}"), self.row)
        return command

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare the command's arguments on its sub-parser."""
        self.command().add_arguments(parser)

    def run(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        """Run the command."""
        return self.command().run(args, out, err)


def _row(name: str, help: str, module: str, row: str) -> Command:
    """The row for command ``row`` of ``obelisk.cli.<module>``; its name and help are
    repeated here so that listing the commands imports none of them (a test checks that
    they match the module's own row)."""
    deferred = _Deferred(module, row)
    return Command(name, help, deferred.add_arguments, deferred.run)


#: Every command, in the order ``obelisk --help`` lists them.
COMMANDS: tuple[Command, ...] = (
    _row("resolve", "print the value of an expression in a context", "resolve", "RESOLVE"),
    _row("validate", "check a plan file and report every problem", "validate", "VALIDATE"),
    _row("graph", "print a plan's dataflow graph", "validate", "GRAPH"),
    _row("schema", "print the composed calls schema for a file's tools", "validate", "SCHEMA"),
    _row("dry-run", "simulate a plan with mocks (no activity runs)", "run", "DRY_RUN"),
    _row("run", "run a plan with real activities", "run", "RUN"),
    _row("resume", "continue a run recorded with --journal", "durable", "RESUME"),
    _row("history", "print the events a journal recorded for a run", "durable", "HISTORY"),
    _row("report", "write a run's report as one HTML page", "htmlreport", "REPORT"),
    _row("submit", "record a plan's run for a worker to run", "worker", "SUBMIT"),
    _row("worker", "run the runs a shared journal holds for workers", "worker", "WORKER"),
    _row("agent", "run an agent: an LLM plans calls, tick by tick", "agent", "AGENT"),
    _row("request", "print the request the LLM is sent at a tick of an agent", "request",
         "REQUEST"),
    _row("mcp", "list MCP servers' tools as obelisk sees them", "mcplist", "MCP"),
    _row("mcp-server", "serve plan mode to MCP clients over MCP servers' tools", "mcpserver",
         "MCP_SERVER"),
    _row("conformance", "run conformance vectors", "kit", "CONFORMANCE"),
    _row("adapter", "speak the adapter protocol on stdin/stdout", "kit", "ADAPTER"),
    _row("fuzz", "fuzz another implementation against obelisk", "kit", "FUZZ"),
)


def __getattr__(name: str) -> Any:
    """``Progress`` and ``terminal_approval`` (rich) are imported on first use."""
    if name in ("Progress", "terminal_approval"):
        module = "live" if name == "Progress" else "terminal"
        return getattr(importlib.import_module(f"obelisk.cli.{module}"), name)
    raise AttributeError(f"module 'obelisk.cli' has no attribute {name!r}")


class UsageError(ObeliskError):
    """Bad command-line usage; ``main`` prints it with the usage line and exits 2."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    # argparse prints usage errors to sys.stderr and exits; this one raises instead, so
    # main() reports them on its own error stream.
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


class _Completion(argparse.Action):
    """``--completion SHELL``: print argcomplete's script for the shell, then exit 0."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from argcomplete import shell_integration

        print(shell_integration.shellcode(["obelisk"], shell=str(values)), end="")
        parser.exit()


def build_parser(commands: Sequence[Command] = COMMANDS, *,
                 arguments_for: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: one sub-command per row of ``commands``.

    Only the commands named in ``arguments_for`` (every command when None) get their
    arguments: declaring a command's arguments imports its module, and one command line
    runs one command.
    """
    parser = _Parser(
        prog="obelisk",
        description="The Call/Plan protocol's reference implementation.",
    )
    parser.add_argument("--version", action="version", version=f"obelisk {__version__}")
    parser.add_argument("--completion", action=_Completion, choices=["bash", "zsh", "fish"],
                        help="print the shell completion script for SHELL and exit "
                             "(bash: eval \"$(obelisk --completion bash)\")", metavar="SHELL")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_Parser)
    for command in commands:
        p = sub.add_parser(command.name, help=command.help,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if arguments_for is None or command.name in arguments_for:
            command.add_arguments(p)
            _describe(p, command.name)
        p.set_defaults(run=command.run)
    return parser


def _describe(parser: argparse.ArgumentParser, name: str) -> None:
    """The command's description and examples from :data:`helptext.HELP` (and those of
    its own sub-commands: ``mcp list``)."""
    from obelisk.cli.helptext import HELP, epilog

    if name in HELP:
        description, examples = HELP[name]
        import textwrap

        parser.description = textwrap.fill(description, 79)
        parser.epilog = epilog(examples)
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, nested in action.choices.items():
                _describe(nested, f"{name} {word}")


def _tolerant(stream: TextIO) -> TextIO:
    """The console stream, set to write what its encoding cannot hold as escapes.

    Under ``PYTHONIOENCODING=ascii`` (or a Latin-1 terminal) printing "†state" would
    fail; JSON output is then all ASCII (see ``json_text``) and text shows ``\u2020``.
    """
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
        with contextlib.suppress(Exception):  # a stream that cannot change keeps its own
            reconfigure(errors="backslashreplace")
    return stream


def _complete() -> None:
    """Complete a command line: argcomplete answers (the shell asked) and exits. It
    completes any command's options, so every command declares its arguments."""
    import argcomplete

    argcomplete.autocomplete(build_parser(), exit_method=sys.exit)


def _own_words() -> list[str]:
    """This process's own command line, whose URL passwords are kept out of ``ps``."""
    hide_from_title(sys.argv[1:])
    return sys.argv[1:]


#: The commands that serve until they are stopped, running overlapping runs: a worker and
#: an MCP server. Their tuned block lasts as long as the process, so they never freeze.
SERVICES = frozenset({"worker", "mcp-server"})


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the parsed command; ``args.closing`` closes what it opened for its whole run
    (MCP sessions) when it ends, however it ends.

    A command builds contexts from whole files, compiles and runs plans: all allocate many
    long-lived objects, which the tuned collector does not rescan over and over. The
    command line owns its process, so it may tune the collector; the library never does.
    A command that ends also freezes (its block ends with it); a service (:data:`SERVICES`)
    does not: frozen objects, garbage cycles included, are collected only when the last
    freezing block ends, which a service never reaches.
    """
    from obelisk import gc_tuned

    freeze = args.command not in SERVICES
    with gc_tuned(freeze=freeze), contextlib.ExitStack() as closing:
        args.closing = closing
        code: int = args.run(args, out, err)
        return code


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    out = out or _tolerant(sys.stdout)
    err = err or _tolerant(sys.stderr)
    if "_ARGCOMPLETE" in os.environ:
        _complete()
    words = _own_words() if argv is None else argv
    # The command is the first word naming one (the top-level options take no command
    # name as their value); without one, argparse prints help or a usage error.
    names = {c.name for c in COMMANDS}
    parser = build_parser(arguments_for=[next((w for w in words if w in names), "")])
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse leaves a FILE given after an option (validate a.json --format json
        # b.json) unparsed: a command taking several files takes them too.
        if extra and isinstance(getattr(args, "files", None), list) and not any(
                e.startswith("-") and e != "-" for e in extra):
            args.files.extend(extra)
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except UsageError as exc:
        err.write(exc.usage)
        print(f"obelisk: error: {inert_lines(str(exc))}", file=err)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version print and exit 0
        return int(exc.code or 0)
    try:
        return _run(args, out, err)
    except InputError as exc:
        print(f"error: {exc.render(inert)}", file=err)
        return EXIT_USAGE
    except ObeliskError as exc:
        # Messages quote input (tool names, paths, values): every line made inert.
        print(f"error: {inert_lines(str(exc))}", file=err)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return 130
    except BrokenPipeError:  # the reader went away (obelisk graph ... | head): not an error
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return EXIT_OK
    except Exception as exc:  # a bug in obelisk: say so in one line, not a traceback
        if os.environ.get("OBELISK_DEBUG"):
            raise
        print(f"obelisk: internal error (a bug, please report it): {type(exc).__name__}: "
              f"{inert_lines(str(exc))}\n"
              "set OBELISK_DEBUG=1 to see the traceback", file=err)
        return EXIT_FAILED


__all__ = [
    "COMMANDS",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Command",
    "Progress",
    "UsageError",
    "build_parser",
    "load_activities",
    "load_context",
    "main",
    "terminal_approval",
]

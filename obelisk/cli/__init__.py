"""The ``obelisk`` command line: a thin shell over the library.

Exit codes: 0 success, 1 a failed check (MISSING, an invalid plan, a failing vector),
2 bad usage or unreadable input. A user never sees a traceback for bad input.

A command is one module that defines its arguments and what it runs, and one row in
:data:`COMMANDS`; :func:`main` is the error boundary every command shares.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

import argcomplete
from argcomplete import shell_integration

from obelisk import ObeliskError, __version__, gc_tuned
from obelisk.cli.agent import AGENT
from obelisk.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    load_activities,
    load_context,
)
from obelisk.cli.durable import HISTORY, RESUME
from obelisk.cli.kit import ADAPTER, CONFORMANCE, FUZZ
from obelisk.cli.resolve import RESOLVE
from obelisk.cli.run import DRY_RUN, RUN
from obelisk.cli.safe import inert, inert_lines
from obelisk.cli.terminal import Progress, terminal_approval
from obelisk.cli.validate import GRAPH, SCHEMA, VALIDATE
from obelisk.jsonio import InputError

#: Every command, in the order ``obelisk --help`` lists them.
COMMANDS: tuple[Command, ...] = (
    RESOLVE,
    VALIDATE,
    GRAPH,
    SCHEMA,
    DRY_RUN,
    RUN,
    RESUME,
    HISTORY,
    AGENT,
    CONFORMANCE,
    ADAPTER,
    FUZZ,
)


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
        print(shell_integration.shellcode(["obelisk"], shell=str(values)), end="")
        parser.exit()


def build_parser(commands: Sequence[Command] = COMMANDS) -> argparse.ArgumentParser:
    """The argument parser: one sub-command per row of ``commands``."""
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
        p = sub.add_parser(command.name, help=command.help)
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return parser


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


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    out = out or _tolerant(sys.stdout)
    err = err or _tolerant(sys.stderr)
    parser = build_parser()
    # Completing a command line: argcomplete answers (when the shell asked) and exits.
    argcomplete.autocomplete(parser, exit_method=sys.exit)
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
        # A command builds contexts from whole files and runs plans: both allocate many
        # long-lived objects, which the tuned collector does not rescan over and over.
        with gc_tuned():
            code: int = args.run(args, out, err)
            return code
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

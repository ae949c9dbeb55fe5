"""``obelisk resolve CONTEXT.json EXPRESSION``: the value of an expression in a context."""

from __future__ import annotations

import argparse
from typing import TextIO

from obelisk import MISSING, ExpressionSyntaxError, WriteError, resolve
from obelisk.cli.common import EXIT_FAILED, EXIT_OK, Command, load_context
from obelisk.cli.safe import inert, inert_lines, json_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CONTEXT.json, EXPRESSION and ``--instance``."""
    parser.add_argument("context", metavar="CONTEXT.json", help="array of messages (or - for stdin)")
    parser.add_argument("expression", metavar="EXPRESSION", help="for example '†state.user.id'")
    parser.add_argument("--instance", metavar="ID", help="read for this instance (global data below it)")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the value as JSON (exit 0), or MISSING or the error with a caret (exit 1)."""
    context = load_context(args.context)
    try:
        value = resolve(context, args.expression, args.instance)
    except ExpressionSyntaxError as exc:
        print(f"error: {inert_lines(exc.render())}", file=err)
        return EXIT_FAILED
    except WriteError as exc:
        print(f"error: {inert_lines(str(exc))}", file=err)
        return EXIT_FAILED
    if value is MISSING:
        print("MISSING", file=out)
        where = f" for instance {inert(repr(args.instance))}" if args.instance else ""
        print(f"{inert(args.expression)} has no value in {inert(args.context)}{where}",
              file=err)
        return EXIT_FAILED
    print(json_text(value, stream=out), file=out)
    return EXIT_OK


RESOLVE = Command("resolve", "print the value of an expression in a context", add_arguments, run)

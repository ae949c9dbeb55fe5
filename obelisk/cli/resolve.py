"""``obelisk resolve CONTEXT.json EXPRESSION``: the value of an expression in a context."""

from __future__ import annotations

import argparse
from typing import TextIO

from obelisk import MISSING, ExpressionSyntaxError, WriteError, resolve
from obelisk.cli.common import EXIT_FAILED, EXIT_OK, Command, load_context
from obelisk.jsonio import dumps


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
        print(f"error: {exc.render()}", file=err)
        return EXIT_FAILED
    except WriteError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_FAILED
    if value is MISSING:
        print("MISSING", file=out)
        where = f" for instance {args.instance!r}" if args.instance else ""
        print(f"{args.expression} has no value in {args.context}{where}", file=err)
        return EXIT_FAILED
    print(dumps(value), file=out)
    return EXIT_OK


RESOLVE = Command("resolve", "print the value of an expression in a context", add_arguments, run)

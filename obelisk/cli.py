"""The ``obelisk`` command line: a thin shell over the library.

Exit codes: 0 success, 1 a failed check (MISSING, an invalid plan, a failing vector),
2 bad usage or unreadable input. A user never sees a traceback for bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from obelisk import conformance
from obelisk.compiler.parse import parse_input
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, MessageError, ObeliskError, WriteError
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.values import MISSING, thaw
from obelisk.jsonio import InputError, dumps, load_json

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def load_context(path: str) -> Context:
    """A context from a file: an array of messages, or an object with a "context" array."""
    data = load_json(path)
    if isinstance(data, dict):
        if "context" not in data:
            raise InputError(f'{path}: expected an array of messages or an object with "context"')
        data = data["context"]
    if not isinstance(data, list):
        raise InputError(f"{path}: a context is an array of messages, got {type(data).__name__}")
    try:
        return Context.of(data)
    except MessageError as exc:
        raise InputError(f"{path}: {exc}") from None


def cmd_resolve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    context = load_context(args.context)
    try:
        expr = parse_input(args.expression)
        value = evaluate(expr, lookup_in(context, args.instance))
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
    print(dumps(thaw(value)), file=out)
    return EXIT_OK


def cmd_conformance(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    outcomes, _ = conformance.run(args.paths, interpreter=args.interpreter)
    passed = sum(o.passed for o in outcomes)
    for outcome in outcomes:
        if outcome.passed:
            if not args.quiet:
                print(f"PASS {outcome.id}", file=out)
            continue
        print(f"FAIL {outcome.id} ({outcome.source})", file=out)
        for problem in outcome.problems:
            print("  " + problem.replace("\n", "\n    "), file=out)
    print(f"{passed} passed, {len(outcomes) - passed} failed", file=out)
    return EXIT_OK if passed == len(outcomes) and outcomes else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="obelisk",
        description="The Call/Plan protocol's reference implementation.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("resolve", help="print the value of an expression in a context")
    p.add_argument("context", metavar="CONTEXT.json", help="array of messages (or - for stdin)")
    p.add_argument("expression", metavar="EXPRESSION", help="for example '†state.user.id'")
    p.add_argument("--instance", metavar="ID", help="read for this instance (global data below it)")
    p.set_defaults(run=cmd_resolve)

    p = sub.add_parser("conformance", help="run conformance vectors")
    p.add_argument("paths", nargs="+", metavar="PATH", help="vector files or folders of *.json")
    p.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync")
    p.add_argument("-q", "--quiet", action="store_true", help="print only failures and the total")
    p.set_defaults(run=cmd_conformance)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage error
        return int(exc.code or 0)
    run: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.run
    try:
        return run(args, out, err)
    except InputError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    except ObeliskError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

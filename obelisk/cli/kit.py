"""The implementers' kit on the command line: ``obelisk conformance`` (in process,
``--against`` an adapter, ``--export``), ``obelisk adapter`` and ``obelisk fuzz``.

Three rows of the command table: :data:`CONFORMANCE`, :data:`ADAPTER`, :data:`FUZZ`.
Exit codes as everywhere: 0 success, 1 a failed check, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
import io
import sys
from typing import TextIO

from obelisk import plural
from obelisk.cli.common import INTERPRETER_HELP, Command
from obelisk.cli.paint import paint_for, word
from obelisk.cli.safe import inert, inert_lines
from obelisk.jsonio import InputError
from obelisk.kit import conformance
from obelisk.kit.client import DEFAULT_TIMEOUT, AdapterClient, AdapterError

#: ``obelisk fuzz``'s examples per op (kept here: the kit's cli must not import hypothesis).
DEFAULT_EXAMPLES = 300

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_adapter_arguments(parser: argparse.ArgumentParser) -> None:
    """``--interpreter``."""
    parser.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync",
                   help="the interpreter for run requests")


def add_fuzz_arguments(parser: argparse.ArgumentParser) -> None:
    """``--against`` (required), ``--ops``, ``--examples``, ``--seed``, ``--save``,
    ``--timeout``."""
    parser.add_argument("--against", metavar="COMMAND", required=True,
                   help="the adapter to test, split like a shell line")
    parser.add_argument("--ops", default="resolve,check,run", metavar="OPS",
                   help="comma-separated ops to fuzz (default resolve,check,run)")
    parser.add_argument("--examples", type=int, metavar="N", default=None,
                   help=f"examples per op (default {DEFAULT_EXAMPLES})")
    parser.add_argument("--seed", type=int, metavar="S", help="the seed; the same seed gives the "
                   "same cases (default: a random seed, printed)")
    parser.add_argument("--save", metavar="DIR", help="write the minimal failing vector here")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="per request (default 10)")


def add_conformance_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH... (default: the bundled pack), ``--interpreter``, ``-q``, ``--against``,
    ``--strict``, ``--export``, ``--timeout``."""
    parser.add_argument("paths", nargs="*", metavar="PATH",
                   help="vector files or folders of *.json (default: the bundled pack)")
    parser.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync",
                        help=INTERPRETER_HELP)
    parser.add_argument("-q", "--quiet", action="store_true",
                   help="print only failures and the total")
    parser.add_argument("--against", metavar="COMMAND",
                   help="judge the answers of this adapter (split like a shell line)")
    parser.add_argument("--strict", action="store_true",
                   help="count vectors the adapter does not support as failures")
    parser.add_argument("--export", metavar="DIR",
                   help="write the bundled pack, its JSON Schema and the protocol to DIR")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="per request to the adapter (default 10)")


def cmd_conformance(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``obelisk conformance``: run vectors (the bundled pack with no PATH), or export it."""
    from obelisk.kit import pack

    if not args.timeout > 0:
        raise InputError("--timeout must be a positive number of seconds")
    if args.against is not None and not args.against.strip():
        # An empty command is no adapter: judging obelisk by itself would pass silently.
        raise InputError("--against needs the command that starts the adapter, got an "
                         "empty one; give it, or leave --against out to test obelisk itself")
    if args.export:
        if args.paths or args.against is not None:
            raise InputError("--export writes the bundled pack; give no PATH and no --against")
        written = pack.export(args.export)
        print(f"wrote {plural(len(written) - 2, 'vector file')}, vector.schema.json and PROTOCOL.md "
              f"to {args.export}", file=out)
        return EXIT_OK
    paths = args.paths or [pack.pack_dir()]
    if args.against is not None:
        try:
            with AdapterClient(args.against, timeout=args.timeout) as client:
                try:
                    client.start()
                except AdapterError as exc:  # nothing can be judged: say so once
                    raise InputError(f"the adapter did not start: {exc}") from None
                outcomes, _ = conformance.run(paths, implementation=client)
        except AdapterError as exc:
            raise InputError(str(exc)) from None
    else:
        outcomes, _ = conformance.run(paths, interpreter=args.interpreter)
    return print_outcomes(outcomes, out, quiet=args.quiet, strict=args.strict)


def print_outcomes(outcomes: list[conformance.Outcome], out: TextIO, *, quiet: bool,
                   strict: bool) -> int:
    """One line per vector, the unsupported apart, then ``N passed, N failed[, N
    unsupported]``; returns the exit code."""
    unsupported = [o for o in outcomes if o.unsupported and not o.problems]
    passed = sum(o.passed for o in outcomes)
    failed = len(outcomes) - passed - len(unsupported)
    paint = paint_for(out)
    for outcome in outcomes:
        if outcome in unsupported:
            continue
        if outcome.passed:
            if not quiet:
                print(f"{word(paint, 'PASS')} {inert(outcome.id)}", file=out)
            continue
        print(f"{word(paint, 'FAIL')} {inert(outcome.id)} ({inert(outcome.source)})", file=out)
        for problem in outcome.problems:
            print("  " + inert_lines(problem).replace("\n", "\n    "), file=out)
    for outcome in unsupported:
        print(f"{word(paint, 'FAIL' if strict else 'UNSUPPORTED')} {inert(outcome.id)}: needs "
              f"the {', '.join(outcome.unsupported)} op, which the implementation does not "
              "list in hello", file=out)
    tail = f", {len(unsupported)} unsupported" if unsupported else ""
    print(paint(f"{passed} passed, {failed} failed{tail}", "bold red" if failed else "bold green"),
          file=out)
    ok = outcomes and not failed and not (strict and unsupported)
    return EXIT_OK if ok else EXIT_FAILED


def cmd_adapter(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``obelisk adapter``: serve the protocol on standard input and output (UTF-8)."""
    from obelisk.kit.server import local_answer, serve

    stdin: TextIO = sys.stdin
    if out is sys.stdout:
        # The protocol is UTF-8 whatever the locale says.
        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
        out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", line_buffering=False)
    return serve(stdin, out, local_answer(args.interpreter))


def cmd_fuzz(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``obelisk fuzz``: compare an adapter with obelisk on generated cases."""
    try:
        from obelisk.kit import fuzz
    except ImportError as exc:
        raise InputError(f"obelisk fuzz needs hypothesis ({exc}); install it with "
                         "pip install 'obelisk[testing]'") from None
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [o for o in ops if o not in fuzz.FUZZ_OPS]
    if unknown or not ops:
        raise InputError(f"--ops takes a comma-separated list of {', '.join(fuzz.FUZZ_OPS)}, "
                         f"got {args.ops!r}")
    if args.examples is not None and args.examples < 1:
        raise InputError("--examples must be at least 1")
    if not args.timeout > 0:
        raise InputError("--timeout must be a positive number of seconds")
    try:
        with AdapterClient(args.against, timeout=args.timeout) as client:
            return fuzz.main(client, ops, examples=args.examples, seed=args.seed,
                             save=args.save, out=out, err=err)
    except AdapterError as exc:
        raise InputError(str(exc)) from None


CONFORMANCE = Command("conformance", "run conformance vectors", add_conformance_arguments,
                      cmd_conformance)
ADAPTER = Command("adapter", "speak the adapter protocol on stdin/stdout", add_adapter_arguments,
                  cmd_adapter)
FUZZ = Command("fuzz", "fuzz another implementation against obelisk", add_fuzz_arguments,
               cmd_fuzz)

"""The implementers' kit on the command line: ``obelisk adapter``, ``obelisk fuzz``, and
``obelisk conformance`` (in process, ``--against`` an adapter, ``--export``).

:func:`register` adds the new subcommands; :func:`add_conformance_options` and
:func:`cmd_conformance` serve the existing ``conformance`` command. Exit codes as
everywhere: 0 success, 1 a failed check, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any, TextIO

from obelisk import conformance
from obelisk.jsonio import InputError
from obelisk.kit.client import DEFAULT_TIMEOUT, AdapterClient, AdapterError

#: ``obelisk fuzz``'s examples per op (kept here: the kit's cli must not import hypothesis).
DEFAULT_EXAMPLES = 300

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    """Add ``adapter`` and ``fuzz`` to the ``obelisk`` command's subparsers."""
    p = subparsers.add_parser("adapter", help="answer the adapter protocol on stdin/stdout "
                              "(obelisk itself, as implementers' model)")
    p.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync",
                   help="the interpreter for run requests")
    p.set_defaults(run=cmd_adapter)

    p = subparsers.add_parser("fuzz", help="differential testing of another implementation "
                              "against obelisk (needs obelisk[testing])")
    p.add_argument("--against", metavar="COMMAND", required=True,
                   help="the adapter to test, split like a shell line")
    p.add_argument("--ops", default="resolve,check,run", metavar="OPS",
                   help="comma-separated ops to fuzz (default resolve,check,run)")
    p.add_argument("--examples", type=int, metavar="N", default=None,
                   help=f"examples per op (default {DEFAULT_EXAMPLES})")
    p.add_argument("--seed", type=int, metavar="S", help="the seed; the same seed gives the "
                   "same cases (default: a random seed, printed)")
    p.add_argument("--save", metavar="DIR", help="write the minimal failing vector here")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="per request (default 10)")
    p.set_defaults(run=cmd_fuzz)


def add_conformance_options(p: argparse.ArgumentParser) -> None:
    """The kit's options of ``obelisk conformance``."""
    p.add_argument("--against", metavar="COMMAND",
                   help="judge the answers of this adapter (split like a shell line)")
    p.add_argument("--strict", action="store_true",
                   help="count vectors the adapter does not support as failures")
    p.add_argument("--export", metavar="DIR",
                   help="write the bundled pack, its JSON Schema and the protocol to DIR")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="per request to the adapter (default 10)")


def cmd_conformance(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``obelisk conformance``: run vectors (the bundled pack with no PATH), or export it."""
    from obelisk.kit import pack

    if not args.timeout > 0:
        raise InputError("--timeout must be a positive number of seconds")
    if args.export:
        if args.paths or args.against:
            raise InputError("--export writes the bundled pack; give no PATH and no --against")
        written = pack.export(args.export)
        print(f"wrote {len(written) - 2} vector file(s), vector.schema.json and PROTOCOL.md "
              f"to {args.export}", file=out)
        return EXIT_OK
    paths = args.paths or [pack.pack_dir()]
    if args.against:
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
    for outcome in outcomes:
        if outcome in unsupported:
            continue
        if outcome.passed:
            if not quiet:
                print(f"PASS {outcome.id}", file=out)
            continue
        print(f"FAIL {outcome.id} ({outcome.source})", file=out)
        for problem in outcome.problems:
            print("  " + problem.replace("\n", "\n    "), file=out)
    for outcome in unsupported:
        print(f"{'FAIL' if strict else 'UNSUPPORTED'} {outcome.id}: needs the "
              f"{', '.join(outcome.unsupported)} op, which the implementation does not "
              "list in hello", file=out)
    tail = f", {len(unsupported)} unsupported" if unsupported else ""
    print(f"{passed} passed, {failed} failed{tail}", file=out)
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

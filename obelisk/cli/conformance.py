"""``obelisk conformance PATH...``: run conformance vectors (the runner is
:mod:`obelisk.conformance`; this module only parses options and prints outcomes)."""

from __future__ import annotations

import argparse
from typing import TextIO

from obelisk import conformance as runner
from obelisk.cli.common import EXIT_FAILED, EXIT_OK, Command
from obelisk.cli.safe import inert, inert_lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """PATH..., ``--interpreter`` and ``-q``."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="vector files or folders of *.json")
    parser.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only failures and the total")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """One line per vector (failures only with ``-q``) and the total; exit 1 on a failure."""
    outcomes, _ = runner.run(args.paths, interpreter=args.interpreter)
    passed = sum(o.passed for o in outcomes)
    for outcome in outcomes:
        if outcome.passed:
            if not args.quiet:
                print(f"PASS {inert(outcome.id)}", file=out)
            continue
        print(f"FAIL {inert(outcome.id)} ({inert(outcome.source)})", file=out)
        for problem in outcome.problems:
            print("  " + inert_lines(problem).replace("\n", "\n    "), file=out)
    print(f"{passed} passed, {len(outcomes) - passed} failed", file=out)
    return EXIT_OK if passed == len(outcomes) and outcomes else EXIT_FAILED


CONFORMANCE = Command("conformance", "run conformance vectors", add_arguments, run)

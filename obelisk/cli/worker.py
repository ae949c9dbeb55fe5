"""The commands of a worker pool sharing a journal:

    obelisk submit FILE --journal TARGET [--run ID] [--interpreter sync|asyncio] ...
    obelisk worker --journal TARGET --activities MODULE:NAME [--llm SPEC] [--slots N]
                   [--lease SECONDS] [--until-idle]

``submit`` records a plan's run without starting it; ``worker`` picks up the runs nobody
holds (submitted ones, released ones, and those whose owner's lease expired) and resumes
them. The first SIGTERM (or Ctrl-C) stops a worker cleanly: no further call starts, the
calls running finish and are recorded, the runs are released for another worker. A second
one ends it at once (its runs wait for their leases to expire).
"""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from obelisk import JournalError, JournalUnreadable
from obelisk.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    INTERPRETER_HELP,
    Command,
    add_inputs,
    add_plan_file,
    compile_file,
    load_activities,
    read_inputs,
)
from obelisk.cli.llmargs import make_llm
from obelisk.cli.render import render_refusal
from obelisk.cli.run import add_lease_argument, open_journal
from obelisk.cli.safe import inert
from obelisk.journal import DEFAULT_LEASE, Worker, submit
from obelisk.jsonio import InputError


def add_submit_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, ``--journal``, ``--run``, the interpreter and its options."""
    add_plan_file(parser)
    add_inputs(parser)
    parser.add_argument("--journal", metavar="TARGET", required=True,
                        help="the journal: an SQLite file or a postgresql:// URL")
    parser.add_argument("--run", dest="run_id", metavar="ID", help="the run's id (default: new)")
    parser.add_argument("--instances", action="store_true", help="map the plan over the instances")
    parser.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync",
                        help=INTERPRETER_HELP)
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="per call (asyncio)")
    parser.add_argument("--max-concurrency", type=int, metavar="N", help="calls at once (asyncio)")


def submit_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Record the plan's run without starting it and print its id; exit 1 when the plan is
    invalid, 2 when the journal cannot take it."""
    pf = read_inputs(args.file, args)
    plan = compile_file(pf, instances=args.instances)
    if not plan.ok:
        render_refusal(plan, pf, err)
        return EXIT_FAILED
    with open_journal(args.journal) as journal:
        try:
            run_id = submit(journal, plan, run_id=args.run_id,
                            interpreter=args.interpreter,
                            max_concurrency=args.max_concurrency, timeout=args.timeout)
        except JournalUnreadable as exc:
            raise InputError(str(exc)) from None
        print(inert(f"journal: run {run_id} submitted to {journal.name}"), file=err)
    print(inert(run_id), file=out)
    return EXIT_OK


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    """``--journal``, ``--activities``, ``--llm``, ``--slots``, ``--lease``,
    ``--until-idle``, ``--owner``."""
    parser.add_argument("--journal", metavar="TARGET", required=True,
                        help="the journal: an SQLite file or a postgresql:// URL")
    parser.add_argument("--activities", metavar="MODULE:NAME", required=True,
                        help="an importable dict of activity name -> callable")
    parser.add_argument("--llm", metavar="SPEC",
                        help="agent runs' adapter (without it, agent runs are left to others)")
    parser.add_argument("--base-url", metavar="URL", help="the provider's base URL (agent runs)")
    parser.add_argument("--slots", type=int, default=1, metavar="N", help="runs at once")
    add_lease_argument(parser)
    parser.add_argument("--durability", choices=["sync", "batch"], default="sync",
                        help="sync: each event on disk before the run goes on (default)")
    parser.add_argument("--until-idle", action="store_true",
                        help="exit when no run is left to take (default: wait for more)")
    parser.add_argument("--owner", metavar="NAME",
                        help="this worker's name as the runs' owner (default host:pid:nonce)")


def worker_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Work until stopped (or idle, with ``--until-idle``); exit 1 when a run could not
    be run (the error names it), else 0."""
    if args.slots < 1:
        raise InputError("--slots must be at least 1")
    activities = load_activities(args.activities)
    llm = None if args.llm is None else make_llm(args.llm, args.base_url)
    with open_journal(args.journal) as journal:  # refuses an unusable journal up front
        name = journal.name

    def tell(line: str) -> None:
        print(inert(line), file=err, flush=True)

    worker = Worker(args.journal, activities, llm=llm, slots=args.slots,
                    lease=args.lease or DEFAULT_LEASE,
                    durability=args.durability, owner=args.owner, tell=tell)
    tell(f"worker: {worker.owner} takes runs from {name}, {args.slots} at a time")
    with _stopped_by_signals(worker, tell):
        try:
            report = worker.run(until_idle=args.until_idle)
        except JournalError as exc:
            raise InputError(str(exc)) from None
    tell(f"worker: {len(report.ended)} runs ended, {len(report.stopped)} stopped, "
         f"{len(report.failed)} not run")
    return EXIT_FAILED if report.failed else EXIT_OK


@contextmanager
def _stopped_by_signals(worker: Worker, tell: Any) -> Iterator[None]:
    """SIGTERM and SIGINT stop the worker cleanly the first time, at once the second."""
    def handle(number: int, frame: Any) -> None:
        if worker.stopping.is_set():
            signal.signal(number, signal.SIG_DFL)
            signal.raise_signal(number)
            return
        tell("worker: stopping: the calls running finish, then the runs are released")
        worker.stop()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


SUBMIT = Command("submit", "record a plan's run for a worker to run", add_submit_arguments,
                 submit_command)
WORKER = Command("worker", "run the runs a shared journal holds for workers",
                 add_worker_arguments, worker_command)

"""Interpreters: sync, asyncio and dry-run, over one pure run state machine."""

from obelisk.compiler.parse import parse_reference as _parse_reference
from obelisk.core.messages import use_reference_parser as _use_reference_parser

# core reads a message's _outputPath with the compiler's grammar, which it cannot import
# (core is the lowest layer): plug it in here, before anything builds a context.
# TODO(arch): the lead moves this call into compiler/parse.py at merge.
_use_reference_parser(_parse_reference)

from obelisk.interpreters.activities import Activity, ActivityError, Branch
from obelisk.interpreters.aio import drive_async, run_async
from obelisk.interpreters.dryrun import DryRunResult, MockError, dry_run
from obelisk.interpreters.events import EventKind, RunEvent, RunStatus, Status
from obelisk.interpreters.executors import LatentExecutor, Registry, choose_executor
from obelisk.interpreters.machine import PlanRefused, RunState
from obelisk.interpreters.outcomes import Approve, Deny, Replace
from obelisk.interpreters.replay import replay
from obelisk.interpreters.report import report, views
from obelisk.interpreters.result import CallOutcome, RunResult
from obelisk.interpreters.sync import drive_sync, run_sync

__all__ = [
    "Activity", "ActivityError", "Approve", "Branch", "CallOutcome", "Deny", "DryRunResult",
    "EventKind", "LatentExecutor", "MockError", "PlanRefused", "Registry", "Replace",
    "RunEvent", "RunResult", "RunState", "RunStatus", "Status", "choose_executor",
    "drive_async", "drive_sync", "dry_run", "replay", "report", "run_async", "run_sync",
    "views",
]

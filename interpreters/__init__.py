"""Interpreters: sync, asyncio and dry-run, over one pure run state machine."""

from obelisk.compiler.parse import parse_reference as _parse_reference
from obelisk.core.messages import use_reference_parser as _use_reference_parser

# core reads a message's _outputPath with the compiler's grammar, which it cannot import
# (core is the lowest layer): plug it in here, before anything builds a context.
# TODO(arch): the lead moves this call into compiler/parse.py at merge.
_use_reference_parser(_parse_reference)

from obelisk.interpreters.activities import Activity, ActivityError, Branch
from obelisk.interpreters.aio import drive_async, run_async
from obelisk.interpreters.dryrun import DryRunResult, MockError, dry_run, report
from obelisk.interpreters.machine import (
    Approve,
    CallOutcome,
    Deny,
    PlanRefused,
    Replace,
    RunResult,
    RunState,
    Status,
)
from obelisk.interpreters.sync import drive_sync, run_sync

__all__ = [
    "Activity", "ActivityError", "Approve", "Branch", "CallOutcome", "Deny", "DryRunResult", "MockError",
    "PlanRefused", "Replace", "RunResult", "RunState", "Status", "drive_async", "drive_sync",
    "dry_run", "report", "run_async", "run_sync",
]

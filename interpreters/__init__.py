"""Interpreters: sync, asyncio and dry-run, over one pure run state machine."""

from obelisk.interpreters.activities import Activity, ActivityError, Branch
from obelisk.interpreters.aio import drive_async, run_async
from obelisk.interpreters.dryrun import DryRunResult, MockError, dry_run, report
from obelisk.interpreters.machine import (
    Approve, CallOutcome, Deny, PlanRefused, Replace, RunResult, RunState, Status,
)
from obelisk.interpreters.sync import drive_sync, run_sync

__all__ = [
    "Activity", "ActivityError", "Approve", "Branch", "CallOutcome", "Deny", "DryRunResult", "MockError",
    "PlanRefused", "Replace", "RunResult", "RunState", "Status", "drive_async", "drive_sync",
    "dry_run", "report", "run_async", "run_sync",
]

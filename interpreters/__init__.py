"""Interpreters: sync, asyncio and dry-run, over one pure run state machine."""

# This folder is installed as obelisk.interpreters; imported by its own name (possible from the
# repository root) it would load a second copy of every module, with its own MISSING.
if __name__ != "obelisk.interpreters":
    raise ImportError(f"import obelisk.interpreters, not {__name__}: the interpreters/ folder is the "
                      f"package obelisk.interpreters, and a second copy would not share its values")

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

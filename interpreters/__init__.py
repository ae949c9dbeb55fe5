"""Interpreters: sync, asyncio and dry-run, over one pure run state machine."""

# This folder is installed as obelisk.interpreters; imported by its own name (possible from the
# repository root) it would load a second copy of every module, with its own MISSING.
if __name__ != "obelisk.interpreters":
    raise ImportError(f"import obelisk.interpreters, not {__name__}: the interpreters/ folder is the "
                      f"package obelisk.interpreters, and a second copy would not share its values")

from typing import TYPE_CHECKING

from obelisk.core.lazy import LazyExports

if TYPE_CHECKING:
    from obelisk.core.errors import ActivityError, MockError, PlanRefused
    from obelisk.interpreters.activities import Activity, Branch
    from obelisk.interpreters.aio import drive_async, run_async
    from obelisk.interpreters.dryrun import DryRunResult, dry_run
    from obelisk.interpreters.events import EventKind, RunEvent, RunStatus, Status
    from obelisk.interpreters.executors import LatentExecutor, Registry, choose_executor
    from obelisk.interpreters.outcomes import Approve, Deny, Replace
    from obelisk.interpreters.replaying import Replayed, replay, replay_more, replay_open
    from obelisk.interpreters.reporting import report, views
    from obelisk.interpreters.result import CallOutcome, RunResult
    from obelisk.interpreters.state import RunState
    from obelisk.interpreters.sync import drive_sync, run_sync

# Imported on first use: a command that only needs the collector tuning of
# obelisk.interpreters.collector (validate, resolve) does not load asyncio and every shell.
_EXPORTS = LazyExports(globals(), {
    "obelisk.core.errors": ("ActivityError", "MockError", "PlanRefused"),
    "obelisk.interpreters.activities": ("Activity", "Branch"),
    "obelisk.interpreters.aio": ("drive_async", "run_async"),
    "obelisk.interpreters.dryrun": ("DryRunResult", "dry_run"),
    "obelisk.interpreters.events": ("EventKind", "RunEvent", "RunStatus", "Status"),
    "obelisk.interpreters.executors": ("LatentExecutor", "Registry", "choose_executor"),
    "obelisk.interpreters.state": ("RunState",),
    "obelisk.interpreters.outcomes": ("Approve", "Deny", "Replace"),
    # The functions replay and report live in modules named otherwise (replaying,
    # reporting): importing a module sets its package's attribute of the same name, which
    # would hide a function of that name looked up on first use.
    "obelisk.interpreters.replaying": ("Replayed", "replay", "replay_more", "replay_open"),
    "obelisk.interpreters.reporting": ("report", "views"),
    "obelisk.interpreters.result": ("CallOutcome", "RunResult"),
    "obelisk.interpreters.sync": ("drive_sync", "run_sync"),
})
__getattr__, __dir__ = _EXPORTS.getattr, _EXPORTS.dir

__all__ = [
    "Activity", "ActivityError", "Approve", "Branch", "CallOutcome", "Deny", "DryRunResult",
    "EventKind", "LatentExecutor", "MockError", "PlanRefused", "Registry", "Replace",
    "RunEvent", "RunResult", "RunState", "RunStatus", "Status", "choose_executor",
    "drive_async", "drive_sync", "dry_run", "Replayed", "replay", "replay_more", "replay_open",
    "report", "run_async", "run_sync", "views",
]

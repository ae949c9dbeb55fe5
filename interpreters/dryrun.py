"""The dry-run interpreter: the sync or asyncio loop with mocks in place of activities.

No real activity is ever called. Each call's result comes from its tool's mock (a form of
:mod:`obelisk.interpreters.mocks`, or a function with the activity signature), else from
its own ``_output`` when it is latent, else from an example generated from the tool's
``_output`` schema, else it fails with ``NoMock`` (the choice is made in
:mod:`obelisk.interpreters.executors`). ``explore=True`` runs every combination of branch
choices (bounded, :mod:`obelisk.interpreters.explore`) and summarises each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.schemas import example_of
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.context import Context
from obelisk.core.values import MISSING, Json
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.common import Observer, clock_of, prepare
from obelisk.interpreters.events import RunStatus
from obelisk.interpreters.executors import Registry, async_executor, sync_executor
from obelisk.interpreters.explore import EXPLORE_LIMIT, Combination, forced
from obelisk.interpreters.explore import explore as explore_branches
from obelisk.interpreters.mocks import Counts, check_mocks
from obelisk.interpreters.outcomes import Outcome
from obelisk.interpreters.reporting import report
from obelisk.interpreters.result import CallOutcome, RunResult
from obelisk.interpreters.sync import drive_sync

__all__ = ["DRY_RUN_DATE", "DryRunResult", "dry_run", "example_of_tool"]

#: The fixed clock of a dry run, so its reports are the same every time.
DRY_RUN_DATE = "1970-01-01T00:00:00Z"


@frozen
class DryRunResult:
    """A dry run's result: the run (``context``, ``calls``, ``errors``, ``trace``,
    ``status``) and, with ``explore``, every combination tried."""

    run: RunResult
    combinations: tuple[Combination, ...] = ()
    total_combinations: int = 0
    truncated: bool = False
    #: How many combinations were run (``combinations`` lists the distinct outcomes).
    runs: int = 0

    @property
    def context(self) -> Context:
        """The final context of the first run."""
        return self.run.context

    @property
    def calls(self) -> tuple[CallOutcome, ...]:
        """Each call's outcome in the first run."""
        return self.run.calls

    @property
    def errors(self) -> tuple[Json, ...]:
        """The error messages of the first run."""
        return self.run.errors

    @property
    def trace(self) -> tuple[dict[str, Any], ...]:
        """The trace of the first run."""
        return self.run.trace

    @property
    def status(self) -> RunStatus:
        """How the first run ended."""
        return self.run.status

    @property
    def plan(self) -> CompiledPlan:
        """The compiled plan that ran."""
        return self.run.plan

    def report(self) -> dict[str, Any]:
        """The dry-run report (the run report, plus ``explore`` when exploring)."""
        out = report(self.run)
        if self.total_combinations:
            out["explore"] = {
                "total": self.total_combinations, "run": self.runs,
                "distinct": len(self.combinations),
                "truncated": self.truncated,
                "combinations": [c.to_json() for c in self.combinations],
            }
        return out


def example_of_tool(tool: Tool) -> Any:
    """The example a dry run writes for a tool without a mock (MISSING without ``_output``)."""
    return example_of(tool.output_schema, root=tool.to_json()) if tool.output_schema else MISSING


def dry_run(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    mocks: Mapping[str, Any] | None = None,
    interpreter: str = "sync",
    instances: bool = False,
    explore: bool = False,
    limit: int = EXPLORE_LIMIT,
    tools: ToolRegistry | Iterable[Any] | None = (),
    clock: Callable[[], Any] | None = None,
    approve: Callable[[dict[str, Any]], Any] | None = None,
    observer: Observer | None = None,
    max_value_nodes: int | None = None,
    max_value_bytes: int | None = None,
) -> DryRunResult:
    """Simulate a plan with mocks; no real activity runs.

    ``interpreter`` is ``"sync"`` or ``"asyncio"`` (mock delays apply under asyncio).
    ``explore`` runs every combination of branch choices, at most ``limit`` of them.
    ``approve`` is asked before each ready call, as in a real run (so an approval
    policy can be tried out); with ``explore`` it is asked in every combination.
    ``observer`` follows the first run's events. ``max_value_nodes`` and
    ``max_value_bytes`` bound values as in a real run (``ValueTooLarge``). Raises ``PlanRefused`` for a plan with
    errors and :class:`MockError` for bad mocks.
    """
    if interpreter not in ("sync", "asyncio"):
        raise ValueError(f"interpreter must be 'sync' or 'asyncio', not {interpreter!r}")
    mocks = dict(mocks or {})
    check_mocks(mocks)
    compiled, ctx = prepare(plan, context, tools, instances)
    read_clock = clock_of(clock, default=lambda: DRY_RUN_DATE)

    def run_once(forcing: Mapping[int, int], watch: Observer | None = None) -> RunResult:
        # Every run counts its own invocations (for sequence mocks).
        registry = Registry(mocks=mocks, counts=Counts(), example=example_of_tool)

        def steer(invocation: Invocation, outcome: Outcome) -> Outcome:
            # Exploring: bend the outcome onto the alternative this combination forces.
            alt = forcing.get(invocation.node)
            if alt is None:
                return outcome
            return forced(compiled, invocation.node, alt, outcome, example_of_tool)

        if interpreter == "sync":
            return drive_sync(compiled, ctx, sync_executor(compiled, registry, steer),
                              approve, read_clock, watch, max_value_nodes=max_value_nodes,
                              max_value_bytes=max_value_bytes, trace=True)
        return asyncio.run(drive_async(compiled, ctx, async_executor(compiled, registry, steer),
                                       approve, read_clock, observer=watch,
                                       max_value_nodes=max_value_nodes,
                                       max_value_bytes=max_value_bytes, trace=True))

    base = run_once({}, observer)
    if not explore:
        return DryRunResult(base)
    found = explore_branches(compiled, run_once, limit)
    return DryRunResult(base, found.combinations, found.total, found.truncated, found.runs)


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

from obelisk.compiler.plan import CompiledPlan
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.context import Context
from obelisk.core.errors import MockError  # re-exported: its old home
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
from obelisk.interpreters.report import invalid_report, report, views
from obelisk.interpreters.result import CallOutcome, RunResult
from obelisk.interpreters.sync import drive_sync

__all__ = [
    "DRY_RUN_DATE", "EXPLORE_LIMIT", "Combination", "DryRunResult", "MockError",
    "check_mocks", "dry_run", "example_of", "invalid_report", "report", "views",
]

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


#: Example strings for common ``format`` values (formats are not validated by default,
#: but a readable example is worth having).
_FORMATS = {"date-time": "1970-01-01T00:00:00Z", "date": "1970-01-01", "time": "00:00:00Z",
            "email": "user@example.com", "uri": "https://example.com/", "uuid":
            "00000000-0000-0000-0000-000000000000", "hostname": "example.com"}
_ANYTHING = object()


def example_of(schema: Any, depth: int = 0, root: Any = None) -> Any:
    """A deterministic example value for a JSON Schema, or MISSING when none can be made.

    ``const``, then the first of ``enum`` / ``examples``, then ``default``; a local
    ``$ref`` (``#/...``) is followed; ``anyOf``/``oneOf``/``allOf`` take their first
    branch. Otherwise by ``type`` (the first listed that is not null): an object with
    every property that can be made (a required one that cannot makes the object
    MISSING; one whose schema allows anything is null), an array of ``minItems``
    examples, a string within ``minLength``/``maxLength`` (or an example of its
    ``format``), a number within the bounds and ``multipleOf``, ``false``, ``null``. A
    schema that says nothing (``{}``) has no example. ``pattern`` is not followed, so
    the dry run still checks the example against the schema when it is written.
    """
    value = _example(schema, depth, schema if root is None else root)
    return MISSING if value is _ANYTHING else value


def _example(schema: Any, depth: int, root: Any) -> Any:
    if depth > 32 or not isinstance(schema, Mapping):
        return _ANYTHING if schema is True else MISSING
    if "const" in schema:
        return schema["const"]
    for key in ("enum", "examples"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    if "default" in schema:
        return schema["default"]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _example(_local_ref(root, ref), depth + 1, root)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _example(schema[key][0], depth + 1, root)
    types = schema.get("type")
    if isinstance(types, list):
        types = next((t for t in types if t != "null"), types[0] if types else None)
    if types is None and ("properties" in schema or "required" in schema):
        types = "object"
    match types:
        case "object":
            return _object_example(schema, depth, root)
        case "array":
            count = schema.get("minItems", 0)
            count = count if isinstance(count, int) else 0
            if not count:
                return []
            item = _example(schema.get("items", {}), depth + 1, root)
            if item is MISSING:
                return MISSING
            return [None if item is _ANYTHING else item] * count
        case "string":
            return _string_example(schema)
        case "integer" | "number":
            return _number_example(schema, types == "integer")
        case "boolean":
            return False
        case "null":
            return None
    return _ANYTHING if not (set(schema) - {"description", "title", "$comment"}) else MISSING


def _local_ref(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _object_example(schema: Mapping[str, Any], depth: int, root: Any) -> Any:
    props = schema.get("properties", {})
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required", [])
    required = required if isinstance(required, list) else []
    out: dict[str, Any] = {}
    for name, sub in props.items():
        value = _example(sub, depth + 1, root)
        if value is MISSING:
            if name in required:
                return MISSING
            continue
        out[name] = None if value is _ANYTHING else value
    for name in required:
        if isinstance(name, str) and name not in out:
            out[name] = None  # required, but the schema says nothing about it
    return out


def _string_example(schema: Mapping[str, Any]) -> str:
    fmt = schema.get("format")
    text = _FORMATS.get(fmt, "string") if isinstance(fmt, str) else "string"
    low = schema.get("minLength", 0)
    high = schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        text += "x" * (low - len(text))
    if isinstance(high, int) and len(text) > high:
        text = text[:max(high, low if isinstance(low, int) else 0)]
    return text


def _number_example(schema: Mapping[str, Any], integer: bool) -> Any:
    import math

    def num(key: str) -> float | None:
        value = schema.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    step = 1.0 if integer else 0.5
    low, high = num("minimum"), num("maximum")
    xlow, xhigh = num("exclusiveMinimum"), num("exclusiveMaximum")
    if xlow is not None:
        low = max(low if low is not None else -math.inf, math.floor(xlow + 1) if integer else xlow + step)
    if xhigh is not None:
        high = min(high if high is not None else math.inf, math.ceil(xhigh - 1) if integer else xhigh - step)
    value = 0.0
    if low is not None and value < low:
        value = math.ceil(low) if integer else low
    elif high is not None and value > high:
        value = math.floor(high) if integer else high
    multiple = num("multipleOf")
    if multiple and multiple > 0 and value % multiple:
        value = math.ceil(value / multiple) * multiple
    return int(value) if integer or value == int(value) else value


def _example_of_tool(tool: Tool) -> Any:
    # The example a dry run writes for a tool without a mock.
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
) -> DryRunResult:
    """Simulate a plan with mocks; no real activity runs.

    ``interpreter`` is ``"sync"`` or ``"asyncio"`` (mock delays apply under asyncio).
    ``explore`` runs every combination of branch choices, at most ``limit`` of them.
    ``approve`` is asked before each ready call, as in a real run (so an approval
    policy can be tried out); with ``explore`` it is asked in every combination.
    ``observer`` follows the first run's events. Raises ``PlanRefused`` for a plan with
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
        registry = Registry(mocks=mocks, counts=Counts(), example=_example_of_tool)

        def steer(invocation: Invocation, outcome: Outcome) -> Outcome:
            # Exploring: bend the outcome onto the alternative this combination forces.
            alt = forcing.get(invocation.node)
            if alt is None:
                return outcome
            return forced(compiled, invocation.node, alt, outcome, _example_of_tool)

        if interpreter == "sync":
            return drive_sync(compiled, ctx, sync_executor(compiled, registry, steer),
                              approve, read_clock, watch)
        return asyncio.run(drive_async(compiled, ctx, async_executor(compiled, registry, steer),
                                       approve, read_clock, observer=watch))

    base = run_once({}, observer)
    if not explore:
        return DryRunResult(base)
    found = explore_branches(compiled, run_once, limit)
    return DryRunResult(base, found.combinations, found.total, found.truncated, found.runs)


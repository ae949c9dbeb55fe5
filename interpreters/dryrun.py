"""The dry-run interpreter: the sync or asyncio loop with mocks in place of activities.

No real activity is ever called. Each call's result comes from its tool's mock
(CONFORMANCE.md's forms, or a function with the activity signature), else from its own
``_output`` when it is latent, else from an example generated from the tool's ``_output``
schema, else it fails with ``NoMock``. ``explore=True`` runs every combination of branch
choices (bounded) and summarises each.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, frozen

from obelisk.compiler.plan import CompiledPlan, Node
from obelisk.compiler.schemas import example_of  # re-exported: its home was here
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.core.errors import ObeliskError, WriteError
from obelisk.core.values import MISSING, thaw
from obelisk.interpreters.activities import call_async, call_sync, latent_outcome
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.common import clock_of, prepare
from obelisk.interpreters.machine import (
    Chose, Invocation, Outcome, Raised, Returned, RunResult, Status, executor_for,
)
from obelisk.interpreters.sync import drive_sync

#: The fixed clock of a dry run, so its reports are the same every time.
DRY_RUN_DATE = "1970-01-01T00:00:00Z"
#: How many branch combinations ``explore`` runs unless told otherwise.
EXPLORE_LIMIT = 256

_FORMS = ("return", "raise", "branch", "echo", "echo_scopes", "sequence", "by_instance")


class MockError(ObeliskError, ValueError):
    """A mock is not one of the forms in CONFORMANCE.md; ``problems`` lists each."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("invalid mocks:\n" + "\n".join(f"  {p}" for p in self.problems))


def check_mocks(mocks: Mapping[str, Any]) -> None:
    """Raise :class:`MockError` unless every mock has a valid form."""
    if not isinstance(mocks, Mapping):
        raise MockError([f"mocks must be an object of tool name -> mock, got {type(mocks).__name__}"])
    problems: list[str] = []
    for tool, mock in mocks.items():
        if not callable(mock):
            problems.extend(_mock_problems(mock, f"mocks.{tool}"))
    if problems:
        raise MockError(problems)


def _mock_problems(mock: Any, where: str) -> list[str]:
    if not isinstance(mock, Mapping):
        return [f"{where}: a mock is an object such as {{\"return\": ...}}"]
    forms = [k for k in _FORMS if k in mock]
    allowed = {*_FORMS, "value", "delay_ms"}
    problems = [f"{where}: unknown field {k!r}" for k in mock if k not in allowed]
    if len(forms) != 1:
        problems.append(f"{where}: give exactly one of {', '.join(_FORMS)} (got {forms or 'none'})")
        return problems
    form = forms[0]
    delay = mock.get("delay_ms", 0)
    if not isinstance(delay, (int, float)) or isinstance(delay, bool) or delay < 0:
        problems.append(f"{where}.delay_ms: a number of milliseconds, at least 0")
    if "value" in mock and form != "branch":
        problems.append(f"{where}: \"value\" goes with \"branch\" only")
    match form:
        case "raise":
            err = mock["raise"]
            if not isinstance(err, Mapping) or not isinstance(err.get("type"), str):
                problems.append(f"{where}.raise: an object with a string \"type\" and \"message\"")
            elif not isinstance(err.get("message", ""), str):
                problems.append(f"{where}.raise.message: a string")
        case "branch":
            if not isinstance(mock["branch"], str) or not mock["branch"].startswith("†"):
                problems.append(f"{where}.branch: a reference naming one alternative, like \"†state.error\"")
        case "echo" | "echo_scopes":
            if mock[form] is not True:
                problems.append(f"{where}.{form}: true")
        case "sequence":
            seq = mock["sequence"]
            if not isinstance(seq, list) or not seq:
                problems.append(f"{where}.sequence: a non-empty array of mocks")
            else:
                for i, item in enumerate(seq):
                    problems.extend(_mock_problems(item, f"{where}.sequence[{i}]"))
        case "by_instance":
            table = mock["by_instance"]
            if not isinstance(table, Mapping):
                problems.append(f"{where}.by_instance: an object of instance id -> mock")
            else:
                for key, item in table.items():
                    problems.extend(_mock_problems(item, f"{where}.by_instance.{key}"))
    return problems


# -- from a mock to an outcome -------------------------------------------------------------


@frozen
class _Mocked:
    outcome: Outcome | None
    delay: float = 0.0
    function: Callable[..., Any] | None = None


class _Invocations:
    """Counts a dry run's invocations per tool, and per tool and instance (for ``sequence``).

    A ``sequence`` mock gives its entries one per invocation, in the order the calls are
    invoked: a call that waits for another comes after it, and a skipped call takes no
    entry. Inside ``by_instance``, the count is per instance. The sync loop and the
    asyncio loop invoke calls in the same order unless mocks add ``delay_ms``.
    """

    def __init__(self) -> None:
        self.per_tool: dict[str | None, int] = {}
        self.per_instance: dict[tuple[str | None, str | None], int] = {}

    def next(self, node: Node) -> tuple[int, int]:
        rank = self.per_tool.get(node.tool, 0)
        instance_rank = self.per_instance.get((node.tool, node.instance), 0)
        self.per_tool[node.tool] = rank + 1
        self.per_instance[(node.tool, node.instance)] = instance_rank + 1
        return rank, instance_rank


def _interpret(mock: Any, invocation: Invocation, node: Node, rank: int,
               instance_rank: int) -> _Mocked:
    delay = float(mock.get("delay_ms", 0)) / 1000.0
    if "return" in mock:
        return _Mocked(Returned(mock["return"]), delay)
    if "raise" in mock:
        err = mock["raise"]
        return _Mocked(Raised(err["type"], err.get("message", err["type"]),
                              err["data"] if "data" in err else MISSING), delay)
    if "branch" in mock:
        return _Mocked(Chose(mock["branch"], mock.get("value")), delay)
    if "echo" in mock:
        params = {k: v for k, v in invocation.call.items() if not k.startswith("_")}
        return _Mocked(Returned(params), delay)
    if "echo_scopes" in mock:
        return _Mocked(Returned(_scopes_view(invocation.context, node.instance)), delay)
    if "sequence" in mock:
        seq = mock["sequence"]
        if rank >= len(seq):
            return _Mocked(Raised("NoMock", f"the sequence mock of {node.tool!r} has {len(seq)} "
                                  f"entries, but this is invocation number {rank + 1} of that "
                                  "tool", contract=True))
        inner = _interpret(seq[rank], invocation, node, rank, instance_rank)
        return evolve(inner, delay=inner.delay + delay)
    if "by_instance" in mock:
        table = mock["by_instance"]
        if node.instance not in table:
            return _Mocked(Raised("NoMock", f"the by_instance mock of {node.tool!r} has no entry "
                                  f"for instance {node.instance!r}", contract=True))
        # Below by_instance, a sequence counts this instance's invocations only.
        inner = _interpret(table[node.instance], invocation, node, instance_rank, instance_rank)
        return evolve(inner, delay=inner.delay + delay)
    raise AssertionError(mock)  # check_mocks ran first


def _scopes_view(context: Context, instance: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in context.kinds:
        try:
            value = context.value(kind, (), instance)
        except WriteError:
            continue
        if value is not MISSING:
            out[kind] = thaw(value)
    return out


#: Example strings for common ``format`` values (formats are not validated by default,
#: but a readable example is worth having).
def _mocked(plan: CompiledPlan, mocks: Mapping[str, Any], counts: _Invocations,
            invocation: Invocation) -> _Mocked:
    node = plan.nodes[invocation.node]
    rank, instance_rank = counts.next(node)
    mock = mocks.get(node.tool) if node.tool is not None else None
    if mock is not None:
        if callable(mock):
            return _Mocked(None, 0.0, mock)
        return _interpret(mock, invocation, node, rank, instance_rank)
    # The call's own _output only for a latent call: a tool that names an _activity is
    # run by that activity, never by the LLM (SEMANTICS §7 step 4).
    own = latent_outcome(invocation) if not executor_for(plan, node, ()) else None
    if own is not None:
        return _Mocked(own)
    tool = plan.tool_of(node)
    if tool is not None and tool.output_schema is not None:
        example = example_of(tool.output_schema, root=tool.to_json())
        if example is not MISSING:
            return _Mocked(Returned(example))
    return _Mocked(Raised("NoMock", f"no mock for tool {node.tool!r}, the call has no _output, "
                          "and its tool has no _output schema to make an example from",
                          contract=True))


def _forced(plan: CompiledPlan, node_id: int, alt: int, outcome: Outcome) -> Outcome:
    """The outcome ``outcome`` bent to land on alternative ``alt`` (for exploration)."""
    node = plan.nodes[node_id]
    assert node.output is not None
    count = len(node.output.alternatives)
    last = count - 1
    match outcome:
        case Raised(contract=False) if alt == last:
            return outcome
        case Returned() if alt == 0:
            return outcome
        case Chose(path=path):
            targets = node.output.alternatives[alt].targets
            if any(str(t) == path.strip() for t in targets):
                return outcome
    if isinstance(outcome, (Returned, Chose)):
        value = outcome.value
    else:  # a failure forced onto a value alternative: an example, never null (not present)
        tool = plan.tool_of(node)
        example = (example_of(tool.output_schema, root=tool.to_json())
                   if tool and tool.output_schema else MISSING)
        value = {"explored": True} if example is MISSING else example
    if alt == last:
        return Raised("Explored", f"exploring alternative {alt + 1} of {count}")
    if alt == 0:
        return Returned(value)
    return Chose(str(node.output.alternatives[alt].targets[0]), value)


# -- the dry run ------------------------------------------------------------------------


@frozen
class Combination:
    """One explored combination: the branch each branching call took, and what followed."""

    choices: tuple[tuple[int, str | None, int], ...]
    result: RunResult

    def to_json(self) -> dict[str, Any]:
        plan = self.result.plan
        def ids(status: str) -> list[Any]:
            return [c.call if c.instance is None else [c.call, c.instance]
                    for c in self.result.calls if c.outcome == status]
        return {
            "choices": [
                {"call": plan.nodes[n].index, "instance": inst, "alternative": alt + 1,
                 "output": plan.nodes[n].output_text}
                for n, inst, alt in self.choices
            ],
            "executed": ids("executed"), "skipped": ids("skipped"), "failed": ids("failed"),
            "views": views(self.result.context),
        }


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
        return self.run.context

    @property
    def calls(self) -> Any:
        return self.run.calls

    @property
    def errors(self) -> Any:
        return self.run.errors

    @property
    def trace(self) -> Any:
        return self.run.trace

    @property
    def status(self) -> str:
        return self.run.status

    @property
    def plan(self) -> CompiledPlan:
        return self.run.plan

    def report(self) -> dict[str, Any]:
        """The dry-run report of CONFORMANCE.md (plus ``explore`` when exploring)."""
        out = report(self.run)
        if self.total_combinations:
            out["explore"] = {
                "total": self.total_combinations, "run": self.runs,
                "distinct": len(self.combinations),
                "truncated": self.truncated,
                "combinations": [c.to_json() for c in self.combinations],
            }
        return out


def views(context: Context) -> dict[str, Any]:
    """For every data kind: the value of ``†kind`` globally and per instance (MISSING left out)."""
    out: dict[str, Any] = {}
    for kind in sorted(context.kinds):
        per: dict[str, Any] = {}
        for instance in (None, *context.instances):
            try:
                value = context.value(kind, (), instance)
            except WriteError as exc:
                per["global" if instance is None else instance] = {"error": str(exc)}
                continue
            if value is not MISSING:
                per["global" if instance is None else instance] = thaw(value)
        out[kind] = per
    return out


def report(result: RunResult) -> dict[str, Any]:
    """The CONFORMANCE.md report of a run: status, diagnostics, calls, errors, views, trace."""
    return {
        "status": result.status,
        "diagnostics": [d.to_json() for d in result.plan.diagnostics],
        "calls": [c.to_json() for c in result.calls],
        "errors": [thaw(e) if not isinstance(e, dict) else e for e in result.errors],
        "views": views(result.context),
        "trace": list(result.trace),
    }


def invalid_report(plan: CompiledPlan) -> dict[str, Any]:
    """The report of a plan that was refused: status ``invalid`` and its diagnostics."""
    return {"status": "invalid", "diagnostics": [d.to_json() for d in plan.diagnostics],
            "calls": [], "errors": [], "views": {}, "trace": []}


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
) -> DryRunResult:
    """Simulate a plan with mocks; no real activity runs.

    ``interpreter`` is ``"sync"`` or ``"asyncio"`` (mock delays apply under asyncio).
    ``explore`` runs every combination of branch choices, at most ``limit`` of them.
    ``approve`` is asked before each ready call, as in a real run (so an approval
    policy can be tried out); with ``explore`` it is asked in every combination.
    Raises ``PlanRefused`` for a plan with errors and :class:`MockError` for bad mocks.
    """
    if interpreter not in ("sync", "asyncio"):
        raise ValueError(f"interpreter must be 'sync' or 'asyncio', not {interpreter!r}")
    mocks = dict(mocks or {})
    check_mocks(mocks)
    compiled, ctx = prepare(plan, context, tools, instances)
    read_clock = clock_of(clock, default=lambda: DRY_RUN_DATE)

    def run_once(forced: Mapping[int, int]) -> RunResult:
        counts = _Invocations()  # every run counts its own invocations
        def steer(invocation: Invocation, outcome: Outcome) -> Outcome:
            # Exploring: bend the outcome onto the alternative this combination forces.
            alt = forced.get(invocation.node)
            return outcome if alt is None else _forced(compiled, invocation.node, alt, outcome)

        if interpreter == "sync":
            def invoke(invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome:
                mocked = _mocked(compiled, mocks, counts, invocation)
                if mocked.function is not None:  # a function mock is called like an activity
                    return steer(invocation, call_sync(mocked.function, invocation, wait))
                assert mocked.outcome is not None
                return steer(invocation, mocked.outcome)
            return drive_sync(compiled, ctx, invoke, approve, read_clock)

        async def ainvoke(invocation: Invocation) -> Outcome:
            mocked = _mocked(compiled, mocks, counts, invocation)
            if mocked.delay:
                await asyncio.sleep(mocked.delay)
            if mocked.function is not None:
                return steer(invocation, await call_async(mocked.function, invocation))
            assert mocked.outcome is not None
            return steer(invocation, mocked.outcome)
        return asyncio.run(drive_async(compiled, ctx, ainvoke, approve, read_clock))

    base = run_once({})
    if not explore:
        return DryRunResult(base)
    branching = [n.id for n in compiled.nodes if n.output is not None and len(n.output.alternatives) > 1]
    sizes = [len(compiled.nodes[n].output.alternatives) for n in branching]  # type: ignore[union-attr]
    total = 1
    for size in sizes:
        total *= size
    combos = []
    seen: set[tuple[tuple[int, str | None, int], ...]] = set()
    runs = 0
    for choice in itertools.islice(itertools.product(*[range(s) for s in sizes]), limit):
        forced = dict(zip(branching, choice))
        result = run_once(forced)
        runs += 1
        taken = tuple(
            (n, compiled.nodes[n].instance, alt) for n, alt in forced.items()
            if result.calls[n].outcome == Status.EXECUTED.value
        )
        # A choice forced on a call that never ran (a dead branch) changes nothing: the
        # runs agree, so each distinct set of choices taken is listed once.
        if taken not in seen:
            seen.add(taken)
            combos.append(Combination(taken, result))
    return DryRunResult(base, tuple(combos), total, total > limit, runs)

"""The one place where what runs a call is chosen (§7 step 4) and invoked.

:func:`choose_executor` looks at a ready invocation and the run's :class:`Registry` and
returns an :data:`Execution`, one of:

- :class:`RunActivity` — a registered activity (or the ``latent=`` function, or a dry
  run's function mock), called with ``(call, tool, context)``;
- :class:`Produce` — an outcome known without running anything: a dry run's mock, a
  latent call's own ``_output``, an example made from the tool's ``_output`` schema, or a
  ``NoActivity``/``NoMock`` refusal;
- :class:`RunLatent` — a :class:`LatentExecutor` (the agent's LLM) that answers a latent
  call with an outcome;
- :class:`Delegate` — a call handed to another agent (``_delegate``, §8.5), run by the
  registry's :class:`DelegateExecutor` (the agent layer supplies it).

:func:`execute_sync` and :func:`execute_async` invoke an execution; :func:`sync_executor`
and :func:`async_executor` give the interpreters' loops their :class:`SyncExecutor` /
:class:`AsyncExecutor`. ``run_sync``, ``run_async`` and ``dry_run`` all go through here.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, Protocol, TypeAlias

from attrs import field, frozen

from obelisk.compiler.nodes import CompiledPlan, Node
from obelisk.compiler.tools import Tool, resolve_activity
from obelisk.core.values import MISSING
from obelisk.interpreters.activities import (
    FAILURES,
    OUTCOMES,
    Activity,
    call_async,
    call_sync,
    is_async,
    latent_outcome,
    outcome_of_exception,
)
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.mocks import Counts, interpret
from obelisk.interpreters.outcomes import Outcome, Raised, Returned


class SyncExecutor(Protocol):
    """How the sync loop runs one invocation; ``wait`` finishes an awaitable."""

    def __call__(self, invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome: ...


class AsyncExecutor(Protocol):
    """How the asyncio loop runs one invocation."""

    def __call__(self, invocation: Invocation) -> Awaitable[Outcome]: ...


class LatentExecutor(Protocol):
    """Answers a latent call (no activity runs it) with an outcome: the agent's LLM."""

    async def __call__(self, invocation: Invocation) -> Outcome: ...


@frozen
class RunActivity:
    """Call ``function`` like an activity: ``(call, tool, context)``."""

    function: Callable[..., Any]


@frozen
class Produce:
    """The outcome, known without running anything (after ``delay`` seconds under asyncio)."""

    outcome: Outcome
    delay: float = 0.0


@frozen
class RunLatent:
    """Ask a latent executor."""

    executor: LatentExecutor


class DelegateExecutor(Protocol):
    """Runs a delegated call as another agent: ``to`` is ``anonymous`` or a saved request."""

    async def __call__(self, to: str, invocation: Invocation) -> Outcome: ...


@frozen
class Delegate:
    """Hand the call to another agent named ``to``, run by ``executor`` (None: no agent
    runs delegates here, and the call fails clearly)."""

    to: str
    executor: DelegateExecutor | None = None


#: What runs one invocation.
Execution: TypeAlias = RunActivity | Produce | RunLatent | Delegate

#: A dry run's last resort for a tool without a mock: an example result, or MISSING.
ExampleOf: TypeAlias = Callable[[Tool], Any]


@frozen
class Registry:
    """What a run may execute calls with.

    ``activities`` by name; ``latent``: a function with the activity signature for latent
    calls; ``latent_executor``: an LLM-style executor for them (tried first); ``delegates``:
    tool names handed to other agents. A dry run sets ``mocks`` (tool name -> mock,
    checked), its invocation ``counts`` and ``example`` (the schema example maker); then no
    activity is ever called, and ``latent_tools`` limits which latent calls without a mock
    or ``_output`` the latent executor answers (the others get an example).
    """

    activities: Mapping[str, Activity] = field(factory=dict)
    latent: Activity | None = None
    latent_executor: LatentExecutor | None = None
    delegates: frozenset[str] = frozenset()
    #: Runs calls with a ``_delegate`` (the agent loop supplies it).
    delegate_executor: DelegateExecutor | None = None
    mocks: Mapping[str, Any] | None = None
    counts: Counts | None = None
    example: ExampleOf | None = None
    #: In a dry run, the tools the latent executor answers (None: every latent tool).
    latent_tools: frozenset[str] | None = None


def executor_for(plan: CompiledPlan, node: Node, activity_names: Collection[str]) -> str:
    """The activity that runs a node (§7 step 4), or ``""`` when the call is latent.

    The tool's explicit ``_activity``; else an activity registered under the tool's name;
    else latent. Without a tool registry the tool's name is looked up directly.
    """
    tool = plan.tool_of(node)
    if tool is not None:
        return resolve_activity(tool, activity_names)
    return node.tool if node.tool in activity_names else ""  # type: ignore[return-value]


def choose_executor(plan: CompiledPlan, invocation: Invocation, registry: Registry) -> Execution:
    """What runs ``invocation``.

    A real run: the tool's ``_activity``, else an activity named like the tool (a missing
    one is a ``NoActivity`` failure); a delegated tool; else latent: the call's own
    ``_output``, else the latent executor, else the ``latent`` function, else
    ``NoActivity``. A dry run: see :func:`choose_mock`.
    """
    if registry.mocks is not None:
        return choose_mock(plan, invocation, registry)
    to = delegate_of(invocation)
    if to is not None:  # _delegate goes before every activity (§8.5)
        return Delegate(to, registry.delegate_executor)
    node = plan.nodes[invocation.node]
    name = executor_for(plan, node, registry.activities.keys())
    if name:
        fn = registry.activities.get(name)
        if fn is None:
            return Produce(Raised("NoActivity", f"the tool names _activity {name!r}, but no "
                                  "activity of that name is registered", contract=True))
        return RunActivity(fn)
    if node.tool is not None and node.tool in registry.delegates:
        return Delegate(node.tool)
    own = latent_outcome(invocation)
    if own is not None:
        return Produce(own)
    if registry.latent_executor is not None:
        return RunLatent(registry.latent_executor)
    if registry.latent is not None:
        return RunActivity(registry.latent)
    return Produce(Raised(
        "NoActivity",
        f"{node.label} is latent (no activity is registered for {node.tool!r} and the call "
        "has no _output); register an activity, or pass latent= to run latent calls",
        contract=True,
    ))


def choose_mock(plan: CompiledPlan, invocation: Invocation, registry: Registry) -> Execution:
    """What runs ``invocation`` in a dry run: the tool's mock, else (for a latent call)
    its own ``_output``, else the registry's latent executor when it has one, else an example of the tool's ``_output`` schema, else a
    ``NoMock`` failure. Every invocation is counted, for ``sequence`` mocks."""
    assert registry.mocks is not None
    node = plan.nodes[invocation.node]
    counts = registry.counts if registry.counts is not None else Counts()
    turn = counts.next(node, invocation)
    mock = registry.mocks.get(node.tool) if node.tool is not None else None
    if mock is not None:
        if callable(mock):  # a function mock is called like an activity
            return RunActivity(mock)
        mocked = interpret(mock, turn)
        if mocked.function is not None:
            return RunActivity(mocked.function)
        assert mocked.outcome is not None
        return Produce(mocked.outcome, mocked.delay)
    to = delegate_of(invocation)
    if to is not None:  # a mock for the tool goes first, then _delegate (§8.5)
        return Delegate(to, registry.delegate_executor)
    # The call's own _output only for a latent call: a tool that names an _activity is
    # run by that activity, never by the LLM (docs/semantics.md §7 step 4).
    latent = not executor_for(plan, node, ())
    own = latent_outcome(invocation) if latent else None
    if own is not None:
        return Produce(own)
    # A dry run of a whole agent answers latent calls through its (scripted) LLM.
    if latent and registry.latent_executor is not None and (
            registry.latent_tools is None or node.tool in registry.latent_tools):
        return RunLatent(registry.latent_executor)
    tool = plan.tool_of(node)
    if tool is not None and tool.output_schema is not None and registry.example is not None:
        example = registry.example(tool)
        if example is not MISSING:
            return Produce(Returned(example))
    return Produce(Raised("NoMock", f"no mock for tool {node.tool!r}, the call has no _output, "
                          "and its tool has no _output schema to make an example from",
                          contract=True))


def delegate_of(invocation: Invocation) -> str | None:
    """The delegate a call is handed to: its ``_delegate``, else the one its tool
    prescribes (a ``const`` or ``default`` of ``properties._delegate``); None: no delegate.
    Never resolved as an expression."""
    to = invocation.call.get("_delegate")
    if to is None and invocation.tool is not None:
        schema = invocation.tool.schema
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        spec = props.get("_delegate") if isinstance(props, Mapping) else None
        if isinstance(spec, Mapping):
            to = spec.get("const", spec.get("default"))
    return to if isinstance(to, str) and to else None


def _delegated(to: str) -> Outcome:
    return Raised("NotImplemented", f"the call is delegated to {to!r}, and only the agent loop "
                  "runs delegates: run it with obelisk.run_agent, or register an activity "
                  "for the tool and drop _delegate", contract=True)


def execute_sync(execution: Execution, invocation: Invocation,
                 wait: Callable[[Any], Any]) -> Outcome:
    """Run an execution for the sync loop (delays are ignored: one call at a time)."""
    match execution:
        case RunActivity(function=fn):
            return call_sync(fn, invocation, wait)
        case Produce(outcome=outcome):
            return outcome
        case RunLatent(executor=executor):
            return _latent_sync(executor, invocation, wait)
        case Delegate(to=to, executor=None):
            return _delegated(to)
        case Delegate(to=to, executor=delegate):
            assert delegate is not None
            try:
                done: Outcome = wait(delegate(to, invocation))
            except FAILURES as exc:  # the delegate's failure is the call's outcome
                return outcome_of_exception(exc)
            return done
    raise TypeError(f"not an execution: {execution!r}")  # pragma: no cover


def _latent_sync(executor: LatentExecutor, invocation: Invocation,
                 wait: Callable[[Any], Any]) -> Outcome:
    try:
        outcome: Outcome = wait(executor(invocation))
    except FAILURES as exc:  # the executor's failure is the call's outcome
        return outcome_of_exception(exc)
    return outcome


async def execute_async(execution: Execution, invocation: Invocation) -> Outcome:
    """Run an execution for the asyncio loop (a plain activity runs in a worker thread)."""
    match execution:
        case RunActivity(function=fn):
            return await call_async(fn, invocation)
        case Produce(outcome=outcome, delay=delay):
            if delay:
                await asyncio.sleep(delay)
            return outcome
        case RunLatent(executor=executor):
            try:
                result = executor(invocation)
                return await result if inspect.isawaitable(result) else result
            except OUTCOMES as exc:  # the executor's failure is the call's outcome
                return outcome_of_exception(exc)
        case Delegate(to=to, executor=None):
            return _delegated(to)
        case Delegate(to=to, executor=delegate):
            assert delegate is not None
            try:
                return await delegate(to, invocation)
            except Exception as exc:  # the delegate's failure is the call's outcome
                return outcome_of_exception(exc)
    raise TypeError(f"not an execution: {execution!r}")  # pragma: no cover


#: Bends an outcome before the machine sees it (a dry run's exploration steers branches).
#: It gets the invocation after its activity ran, whose call the activity may have
#: changed in place: read its node, not its call.
Steer: TypeAlias = Callable[[Invocation, Outcome], Outcome]


def sync_executor(plan: CompiledPlan, registry: Registry,
                  steer: Steer | None = None) -> SyncExecutor:
    """The sync loop's executor: choose (remembered by tool: :class:`ToolChoices`), then
    invoke (then ``steer``, when given)."""

    choices = ToolChoices(plan, registry)

    def run(invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome:
        chosen = choices.choose(invocation)
        if isinstance(chosen, Known):  # (not an ABC: a quick test)
            outcome = call_sync(chosen.function, invocation, wait)
        else:
            outcome = execute_sync(chosen, invocation, wait)
        return outcome if steer is None else steer(invocation, outcome)

    return run


def async_executor(plan: CompiledPlan, registry: Registry,
                   steer: Steer | None = None) -> AsyncExecutor:
    """The asyncio loop's executor: choose, then invoke (then ``steer``, when given).

    The activity chosen is remembered by tool (see :class:`ToolChoices`), and the
    executor returns the activity's own coroutine, not one wrapping it.
    """
    choices = ToolChoices(plan, registry)

    def run(invocation: Invocation) -> Awaitable[Outcome]:
        chosen = choices.choose(invocation)
        if isinstance(chosen, Known):  # (not an ABC: a quick test)
            awaitable = call_async(chosen.function, invocation, asynchronous=chosen.asynchronous)
        else:
            awaitable = execute_async(chosen, invocation)
        return awaitable if steer is None else _steered(awaitable, invocation, steer)

    return run


@frozen
class Known:
    """An activity chosen once for a tool's calls (:class:`ToolChoices`): the function,
    and whether it is ``async`` (asked once too)."""

    function: Callable[..., Any]
    asynchronous: bool


class ToolChoices:
    """:func:`choose_executor` for one executor's run, its activities remembered by tool.

    Outside a dry run (whose mocks count their turns), what runs a call that has neither
    ``_delegate`` nor ``_output`` depends only on its tool's name, the tool and the
    registry (the call's other fields are never read to choose): every call of a tool
    then runs the same activity, and it is chosen, and asked whether it is ``async``,
    once. ``choose`` returns the :class:`Known` activity, else the :data:`Execution`
    itself.
    """

    __slots__ = ("plan", "registry", "known", "remember")

    def __init__(self, plan: CompiledPlan, registry: Registry) -> None:
        self.plan = plan
        self.registry = registry
        #: Tool name -> (the tool, its Known activity, which :meth:`choose` returns).
        self.known: dict[str | None, tuple[Tool | None, Known]] = {}
        self.remember = registry.mocks is None

    def choose(self, invocation: Invocation) -> Known | Execution:
        call = invocation.call
        plain = self.remember and "_delegate" not in call and "_output" not in call
        name = self.plan.nodes[invocation.node].tool if plain else None
        if plain:
            known = self.known.get(name)
            if known is not None and known[0] is invocation.tool:
                return known[1]
        execution = choose_executor(self.plan, invocation, self.registry)
        if type(execution) is not RunActivity:
            return execution
        chosen = Known(execution.function, is_async(execution.function))
        if plain:
            self.known[name] = (invocation.tool, chosen)
        return chosen


async def _steered(awaitable: Awaitable[Outcome], invocation: Invocation,
                   steer: Steer) -> Outcome:
    return steer(invocation, await awaitable)

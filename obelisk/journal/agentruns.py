"""Recorded agent runs read back (:func:`recorded_agent`, :func:`run_kind`), and resuming
any run: :func:`resume_agent` for an agent's, :func:`resume` for either kind."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

from obelisk.agent.hooks import AgentObserver, Asked, OnPlan
from obelisk.agent.loop import run_agent
from obelisk.agent.probe import Probe
from obelisk.agent.result import AgentResult
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.stream import EventSink
from obelisk.journal.run import resume_plan
from obelisk.journal.store import JournalUnreadable, RunHeader
from obelisk.llm.base import LLM

if TYPE_CHECKING:
    from obelisk.journal.journal import Journal


@frozen
class RecordedAgent:
    """An agent run as it was started: its header, initial context, tools and options."""

    header: RunHeader
    context: Context
    tools: tuple[Any, ...]
    options: Mapping[str, Any]


def run_kind(journal: Journal, run_id: str | None = None) -> str:
    """``"plan"`` or ``"agent"``: what the run ``run_id`` (None: the newest) records."""
    header = journal.run_header(run_id)
    try:
        kind = json.loads(header.header)["options"]["kind"]
    except (KeyError, TypeError, ValueError):
        kind = None
    if kind not in ("plan", "agent"):
        raise JournalUnreadable(f"{journal.name}: run {header.run_id!r}: its header does not "
                                "read: the journal is damaged")
    return str(kind)


def recorded_agent(journal: Journal, run_id: str | None = None) -> RecordedAgent:
    """The agent run ``run_id`` (None: the newest) as it was started, checked."""
    header, where = journal.checked_header(run_id)
    try:
        data = json.loads(header.header)
        options = dict(data["options"])
        if options.pop("kind") != "agent":
            raise JournalUnreadable(f"{where} is a plan's run: resume it without --llm")
        return RecordedAgent(header, Context.of(data["context"]), tuple(data["tools"]),
                             options)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise JournalUnreadable(f"{where}: its header does not read ({exc!r})") from None


async def resume_agent(journal: Journal, run_id: str | None = None, *, llm: LLM,
                       activities: Mapping[str, Activity] | None = None,
                       approve: Callable[[dict[str, Any]], Any] | None = None,
                       clock: Callable[[], Any] | None = None,
                       observer: AgentObserver | None = None,
                       delegate_root: str | os.PathLike[str] | None = None,
                       on_plan: OnPlan | None = None, take_over: bool = False,
                       on_event: EventSink | None = None) -> AgentResult:
    """Continue the agent run ``run_id`` (None: the newest) of ``journal``: recorded ticks
    are replayed (the LLM is not asked again for them, recorded calls do not run again,
    recorded ``on_plan`` verdicts are not asked again), then the loop goes on with ``llm``.
    A run that had ended returns its result again. A dry run goes on with its recorded
    mocks, a streamed one streaming; ``on_plan`` is needed when the run had one.
    ``take_over``: claim the run even while another owner's lease on it is live;
    ``on_event`` is given the resumed run's typed events."""
    run = recorded_agent(journal, run_id)
    options = run.options
    where = f"{journal.name}: run {run.header.run_id!r}"
    if "parent" in options:
        raise JournalUnreadable(f"{where} is a delegate's run inside run "
                                f"{options['parent']!r}: resume that run")
    for key, given, what in (("approvals", approve, "an approval hook (--approve on the "
                              "command line)"), ("on_plan", on_plan, "a plan review hook "
                                                 "(on_plan; --approve in lazy mode)")):
        if bool(options.get(key)) != (given is not None):
            asked = "with" if options.get(key) else "without"
            raise JournalUnreadable(f"{where} was started {asked} {what}; resume it {asked} "
                                    "one")
    tenure = journal.claim(run.header.run_id, take_over=take_over)
    try:
        return await _go_on(journal, run, llm, activities, approve, clock, observer,
                            delegate_root, on_plan, on_event)
    finally:
        journal.leases.release(tenure)


async def _go_on(journal: Journal, run: RecordedAgent, llm: LLM,
                 activities: Mapping[str, Activity] | None,
                 approve: Callable[[dict[str, Any]], Any] | None,
                 clock: Callable[[], Any] | None, observer: AgentObserver | None,
                 delegate_root: str | os.PathLike[str] | None,
                 on_plan: OnPlan | None, on_event: EventSink | None = None) -> AgentResult:
    """The agent loop, from the recorded start of the held run ``run``."""
    options = run.options
    return await run_agent(
        run.context, llm, tools=run.tools, activities=activities,
        output_schema=options.get("output_schema"), mode=options.get("mode"),
        max_ticks=int(options.get("max_ticks", 25)),
        max_stalls=int(options.get("max_stalls", 2)), approve=approve, clock=clock,
        max_concurrency=options.get("max_concurrency"), timeout=options.get("timeout"),
        instances=bool(options.get("instances")), observer=observer, on_plan=on_plan,
        mocks=options.get("mocks"), latent_tools=options.get("latent_tools"),
        stream=bool(options.get("stream")),
        delegate_root=delegate_root, journal=journal, run_id=run.header.run_id,
        on_event=on_event)


def recorded_request(journal: Journal, run_id: str | None = None, *, tick: int | None = None,
                     activity_names: Collection[str] = ()) -> Asked:
    """The request the agent run ``run_id`` (None: the newest) of ``journal`` sends at
    ``tick`` (None: the newest tick it reaches without asking the LLM, an activity or a
    hook: the next one when the run goes on), built by the loop as the run is replayed;
    ``activity_names`` the activities it is resumed with. The replay claims the run and
    may record: give it a copy of a journal in use. Raises
    :class:`obelisk.agent.AgentError` when the record does not reach the tick."""
    options = recorded_agent(journal, run_id).options
    probe = Probe(tick)
    return asyncio.run(probe.run(resume_agent(
        journal, run_id, llm=probe, activities=probe.activities(activity_names) or None,
        approve=probe.approve if options.get("approvals") else None,
        on_plan=probe.on_plan if options.get("on_plan") else None,
        observer=probe.observer, take_over=True)))


def resume(journal: Journal, run_id: str | None = None, *,
           activities: Mapping[str, Activity] | None = None,
           approve: Callable[[dict[str, Any]], Any] | None = None,
           latent: Activity | None = None, llm: Any = None,
           clock: Callable[[], Any] | None = None, interpreter: str | None = None,
           max_concurrency: int | None = None, timeout: float | None = None,
           observer: Callable[[Any], None] | None = None,
           on_plan: Callable[[Any], Any] | None = None,
           take_over: bool = False,
           on_event: EventSink | None = None) -> RunResult | AgentResult:
    """Continue the run ``run_id`` (None: the newest) of ``journal`` and return its result
    (a :class:`RunResult`, or an :class:`obelisk.AgentResult` for an agent run).

    The run is claimed first: while another owner's lease on it is live the resume is
    refused with :class:`~obelisk.journal.store.RunOwned`, unless ``take_over``. The
    record is replayed through the machine: a recorded outcome is never produced again, a
    call invoked without a recorded outcome is invoked again with the same idempotency key
    (an at-most-once tool's gets an ``Interrupted`` error instead), a call waiting for
    approval is asked about again. A run that had ended returns its result without
    running anything. ``interpreter`` defaults to the recorded one.

    An agent run is resumed by the agent loop with ``llm`` (required), ``activities``,
    ``approve``, ``clock``, ``observer`` (an agent observer) and ``on_plan``: see
    :func:`resume_agent`. A plan's latent calls use ``latent``.
    """
    if run_kind(journal, run_id) == "agent":
        if llm is None:
            raise JournalUnreadable(f"{journal.name}: the run is an agent run: resume it with "
                                    "an LLM (llm=..., --llm on the command line)")
        return asyncio.run(resume_agent(journal, run_id, llm=llm, activities=activities,
                                        approve=approve, clock=clock, observer=observer,
                                        on_plan=on_plan, take_over=take_over,
                                        on_event=on_event))
    return resume_plan(journal, run_id, activities=activities, approve=approve,
                       latent=latent, clock=clock, interpreter=interpreter,
                       max_concurrency=max_concurrency, timeout=timeout, observer=observer,
                       take_over=take_over, on_event=on_event)

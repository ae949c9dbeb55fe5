"""A recorded agent run's typed events, read back from its journal (``obelisk report
run.db``): the run is resumed, on a copy of its rows in a scratch journal, by the agent
loop itself with an LLM, activities and hooks that are never asked (a resumed run tells
what its journal recorded: :mod:`obelisk.journal.retell`), and the replay stops where the
journal ends: where the LLM, an activity or a hook would have to be asked.

What the replay told from the journal (marked ``replayed``) is kept, with the times the
journal recorded; the events of the loop's own (the run's start, each tick's start and
plan, its end) take the time of the recorded event before them, so a tick's LLM request
bar runs from the previous tick's end to its answer. Nothing is written to the journal
read, and a run in progress may be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from obelisk.journal.agentrows import delegate_of
from obelisk.journal.agentruns import recorded_agent, resume_agent
from obelisk.journal.retell import dated, seconds
from obelisk.journal.store import RecordKind, end_status
from obelisk.llm.base import Reply, StreamItem

if TYPE_CHECKING:
    from obelisk.journal.journal import Journal

__all__ = ["agent_events"]


class _Reached(BaseException):  # noqa: N818 - a signal: the journal holds no more
    """Raised by what the replay must not ask: the record ends here."""


class _Unasked:
    """The LLM, activities and hooks of a replay that may ask none of them."""

    model = ""  # a journal does not record the model (the report says "not recorded")

    async def solve(self, request: Any) -> Reply:
        raise _Reached

    async def latent(self, request: Any) -> Reply:
        raise _Reached

    def stream(self, request: Any) -> AsyncIterator[StreamItem]:
        raise _Reached

    def approve(self, call: Any) -> Any:
        raise _Reached

    def on_plan(self, plan: Any) -> Any:
        raise _Reached


class _Told(list[dict[str, Any]]):
    """The replay's events, with content (the journal holds it)."""

    content = True

    def __call__(self, event: dict[str, Any]) -> None:
        self.append(event)


class _AnyActivity(Mapping[str, Any]):
    """Every activity name, none of which runs."""

    def __getitem__(self, name: str) -> Any:
        def unrun(*_: Any) -> Any:
            raise _Reached
        return unrun

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def agent_events(journal: Journal, run_id: str) -> list[dict[str, Any]]:
    """The events of the agent run ``run_id`` as its journal holds them (replayed on a
    copy). Raises :class:`~obelisk.journal.store.JournalUnreadable`."""
    from obelisk.journal.journal import Journal

    run = recorded_agent(journal, run_id)
    options = run.options
    told = _Told()
    unasked = _Unasked()
    since = time.time()
    with tempfile.TemporaryDirectory(prefix="obelisk-report-") as folder, \
            Journal.open(f"{folder}/copy.db") as copy:
        _copy(journal, copy, run_id)
        with contextlib.suppress(_Reached):  # the journal ends here
            asyncio.run(resume_agent(
                copy, run_id, llm=unasked, activities=_AnyActivity(),
                approve=unasked.approve if options.get("approvals") else None,
                on_plan=unasked.on_plan if options.get("on_plan") else None,
                on_event=told, take_over=True))
    records = list(journal.records(run_id))
    ends = [r for r in records if r.kind is RecordKind.END]
    status = end_status(ends[-1].data) if ends else "unfinished"
    return dated(_recorded(told), seconds(run.header.created) or 0.0, status, "agent", since)


def _copy(source: Journal, target: Journal, run_id: str) -> None:
    """``run_id``'s header and rows, and its delegates' runs, into ``target``."""
    records = list(source.records(run_id))
    target.store.create_run(source.run_header(run_id))
    tenure = target.claim(run_id)
    target.store.append(run_id, records, tenure.epoch)
    target.leases.release(tenure)
    for record in records:
        if record.kind is RecordKind.DELEGATE:
            nested = delegate_of(_json(record.data))
            if source.store.header(nested) is not None:
                _copy(source, target, nested)


def _json(text: str | None) -> Any:
    import json

    return json.loads(text or "null")


#: The events the loop makes itself, kept when the replay went past them.
_OWN = frozenset({"run_started", "tick_started", "plan", "tick_ended"})


def _recorded(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events up to the first one the replay did not read from the journal (a call
    or a request it would make now), less the replay's own end."""
    kept: list[dict[str, Any]] = []
    for event in events:
        if "delegate" not in event and event["type"] not in _OWN and \
                not event.get("replayed"):
            break
        kept.append(event)
    if kept and kept[-1]["type"] == "tick_started":
        kept.pop()  # a tick the journal holds nothing of
    return kept

"""What the interpreters share besides the machine: preparing a plan, the observer's
type, the clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.plan import compile_plan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context

if TYPE_CHECKING:
    # The events and the machine are imported where a run needs them: preparing a plan
    # (obelisk validate) needs neither.
    from obelisk.interpreters.events import RunEvent, Waiting

class Observer(Protocol):
    """Follows a run: called with every run event, in order, as it happens (and with a
    :class:`~obelisk.interpreters.events.Waiting` notice, which is no run event, while a
    cancelled run waits for plain activities)."""

    def __call__(self, event: RunEvent | Waiting, /) -> None: ...


@runtime_checkable
class CallReader(Protocol):
    """An observer that says whether it reads the call of a ``Started`` event. One that
    does not (the journal's recorder, which writes the node only) is given an empty call,
    so a journaled run pays for no copy that nobody reads; any other observer is given a
    copy of the call."""

    reads_calls: bool

    def __call__(self, event: RunEvent | Waiting, /) -> None: ...


def reads_calls(observer: Observer) -> bool:
    """Whether ``observer``'s ``Started`` events carry a copy of the call: unless it is a
    :class:`CallReader` that reads none. Asked once per run."""
    return not isinstance(observer, CallReader) or observer.reads_calls


def prepare(plan: CompiledPlan | Sequence[Any], context: Context | Iterable[Any] | None,
            tools: ToolRegistry | Iterable[Any] | None = (), instances: bool = False
            ) -> tuple[CompiledPlan, Context]:
    """A compiled plan and the context to run it on; refuses a plan with errors.

    A list of calls is compiled first (with ``tools`` and ``instances``). A CompiledPlan
    runs on ``context`` when one is given, else on the context it was compiled against.
    """
    if isinstance(plan, CompiledPlan):
        compiled = plan
        ctx = context if isinstance(context, Context) else (
            Context.of(context) if context is not None else plan.context)
    else:
        ctx = context if isinstance(context, Context) else Context.of(context or ())
        compiled = compile_plan(plan, tools=tools, context=ctx, instances=instances)
    if not compiled.ok:
        from obelisk.interpreters.machine import refuse

        raise refuse(compiled)
    return compiled, ctx


def traced(trace: bool | None, observer: Observer | None) -> bool:
    """Whether a run records its trace: as asked, else (None) when an observer follows it
    (the command line's display, a journal's recorder): the trace costs a run time and
    memory that a run nobody watches need not pay."""
    return observer is not None if trace is None else trace


def utc_now() -> str:
    """The default clock: the current UTC time, ISO 8601 with milliseconds."""
    # The text is made once per millisecond (reading the clock costs a twentieth of
    # formatting it), and a millisecond's calls share one string: each message keeps it.
    # The date and time to the second are formatted once a second.
    millis = time.time_ns() // 1_000_000
    last = _LAST_DATE[0]  # read once: another thread may replace it meanwhile
    if millis == last[0]:
        return last[1]
    seconds, rest = divmod(millis, 1000)
    second = _LAST_SECOND[0]
    if seconds != second[0]:
        import datetime  # here, as in clock_of: the commands that run nothing never need it

        now = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
        second = _LAST_SECOND[0] = (seconds, now.strftime("%Y-%m-%dT%H:%M:%S."))
    text = f"{second[1]}{rest:03d}Z"
    _LAST_DATE[0] = (millis, text)
    return text


_LAST_DATE: list[tuple[int, str]] = [(-1, "")]  # the millisecond last formatted, its text
_LAST_SECOND: list[tuple[int, str]] = [(-1, "")]  # the second last formatted, up to its "."


def clock_of(clock: Callable[[], Any] | None, default: Callable[[], str] = utc_now) -> Callable[[], str]:
    """A clock returning ISO 8601 text from one that returns a datetime or a string."""
    if clock is None:
        return default
    import datetime

    def read() -> str:
        value = clock()
        if isinstance(value, datetime.datetime):
            return value.isoformat()
        return str(value)

    return read

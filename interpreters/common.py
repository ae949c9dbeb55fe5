"""What the interpreters share besides the machine: preparing a plan, the observer's
type, the clock, and the garbage-collector tuning of a run."""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from obelisk.compiler.plan import CompiledPlan, compile_plan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.collector import may_freeze, promote
from obelisk.core.context import Context

if TYPE_CHECKING:
    # The events and the machine are imported where a run needs them: the command line
    # tunes the collector (gc_tuned) around commands that run nothing (validate, resolve).
    from obelisk.interpreters.events import RunEvent

#: Follows a run: called with every run event, in order, as it happens.
Observer: TypeAlias = "Callable[[RunEvent], None]"


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


#: Tune the garbage collector while a run is under way (see :func:`gc_tuned`).
TUNE_GC = True
_GC_LOCK = threading.Lock()
_GC_RUNS = 0
_GC_SAVED: tuple[int, int, int] = (700, 10, 10)


#: Allocations between two young collections, per call of the largest run under way.
_GC_PER_CALL = 50
#: Calls completed between two freezes of what the runs under way hold (see :func:`gc_keep`).
_GC_FREEZE_EVERY = 1_000
_GC_COMPLETED = 0
#: Whether the runs under way may freeze (nothing was frozen when the first one began).
_GC_FREEZES = False


def gc_keep() -> None:
    """Called by the interpreters once per completed call: every thousand calls while a
    tuned run is under way, what the process holds is frozen out of collection.

    A run keeps what it makes (each message, each folded value), so scanning it again is
    wasted work: about a microsecond an object, the larger part of a young collection's
    cost. Frozen, it is left alone until the last run ends (see :func:`gc_tuned`);
    reference cycles made meanwhile are freed then, by the next full collection.
    """
    global _GC_COMPLETED
    _GC_COMPLETED += 1
    if _GC_COMPLETED >= _GC_FREEZE_EVERY:
        _GC_COMPLETED = 0
        if _GC_RUNS and _GC_FREEZES:
            gc.freeze()


@contextlib.contextmanager
def gc_tuned(calls: int = 0) -> Iterator[None]:
    """Make the garbage collector cheaper for the length of a run, then restore it.

    A run allocates many small persistent objects and keeps most of them (the growing
    context), which makes CPython's default collector rescan an ever larger heap: the cost
    per call grew with the plan. While any run is under way, objects that existed before
    it are frozen out of collection (``gc.freeze``) and the first generation's threshold
    is raised to 50,000, or to 50 allocations per call of a run of ``calls`` calls when
    that is more; the previous thresholds come back, and the frozen objects are released,
    when the last concurrent run ends. Set ``TUNE_GC = False`` to opt out. When the last
    run ends, what the runs made joins the oldest generation too, without a young
    collection walking it (that walk cost a 100-call run about 0.3 ms, after its last
    call); reference cycles among it are freed by the next full collection, like those
    frozen before the run. A program
    that froze objects itself (``gc.freeze()``) keeps them frozen: then the runs freeze
    nothing, since unfreezing would release the program's objects too.

    Why per call: every young collection walks each persistent vector or map the run
    holds (the context's messages, the folded views, the calls' statuses) whole, because
    their newest versions are always young; a collection costs O(calls), so collecting
    every fixed number of allocations made the cost per call grow with the plan (121 µs
    at 100,000 calls, 73 µs at 1,000). Collections spaced in proportion to the plan keep
    it flat. Reference cycles, which only the collector frees, wait as long: at most
    about as many objects as the run itself holds.

    The interpreters and the command line use it; wrap a bulk load in it too (``with
    obelisk.gc_tuned(): Context.of(history)``): building a 50,000-message context took
    184 µs a message with the default collector and 50 µs under it.
    """
    global _GC_RUNS, _GC_SAVED, _GC_FREEZES
    if not TUNE_GC or not gc.isenabled():
        yield
        return
    young = max(50_000, _GC_PER_CALL * calls)
    with _GC_LOCK:
        if _GC_RUNS == 0:
            _GC_SAVED = gc.get_threshold()
            # Objects the program froze itself (gc.freeze before forking workers, say)
            # must stay frozen: unfreezing is all or nothing, so then nothing is frozen.
            _GC_FREEZES = may_freeze()
            if _GC_FREEZES:
                gc.freeze()
            first, second, third = _GC_SAVED
            gc.set_threshold(max(first, young), max(second, 20), max(third, 20))
        else:
            first, second, third = gc.get_threshold()
            if young > first:  # the largest run under way sets the spacing
                gc.set_threshold(young, second, third)
        _GC_RUNS += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_RUNS -= 1
            if _GC_RUNS == 0:
                if _GC_FREEZES:
                    # What the runs made is kept, mostly (the results): it joins the oldest
                    # generation with what was frozen, instead of being walked by the young
                    # collection the restored threshold would start at once (so before
                    # restoring it: any allocation in between would start that collection).
                    promote()
                gc.set_threshold(*_GC_SAVED)

"""Tuning the garbage collector, for a caller who asks for it: :func:`gc_tuned`.

The collector is process state: the host program's too. So the library never touches it
on its own (no run, replay or compile tunes, disables or freezes it); a caller that owns
the process opts in, as the command line and ``bench/`` do::

    with obelisk.gc_tuned(len(plan.nodes), freeze=True):
        result = obelisk.run_sync(plan, activities=...)

Two tunings, both undone when the last tuned block ends:

- thresholds (always): young collections spaced in proportion to the work. A run keeps
  most of what it makes (the growing context), and every young collection walks the
  run's persistent vectors and maps whole, because their newest versions are always
  young: collecting every 700 allocations made the cost per call grow with the plan
  (121 µs at 100,000 calls, 73 µs at 1,000). The first generation's threshold becomes
  50,000, or 50 allocations per call of a run of ``calls`` calls when that is more.
- freezing (``freeze=True``): what the process holds is moved out of collection
  (``gc.freeze``) when the block begins and, by :func:`gc_keep`, every thousand calls
  completed; when the last freezing block ends it is all released into the oldest
  generation (``gc.unfreeze``), so no young collection walks a finished run's result or a
  just-compiled plan.

The caveat of freezing: a frozen object is never collected, the host program's garbage
cycles included, until the last freezing block ends. A service whose tuned runs overlap
may never reach that moment, and its cyclic garbage then grows without bound (an
explicit ``gc.collect()`` frees none of it). Freeze only in a process whose blocks end:
a command, a batch job, a benchmark. A program that froze objects itself (``gc.freeze()``
before forking workers) keeps them frozen: unfreezing is all or nothing, so then obelisk
freezes nothing.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: Allocations between two young collections, per call of the largest run under way.
GC_PER_CALL = 50
#: The least first-generation threshold of a tuned block.
GC_YOUNG = 50_000
#: Calls completed between two freezes of what the process holds (see :func:`gc_keep`).
GC_FREEZE_EVERY = 1_000

_LOCK = threading.Lock()


class _Tuning:
    """The tuned blocks under way (changed under ``_LOCK``)."""

    #: Tuned blocks open, and the thresholds to restore when the last one ends.
    blocks = 0
    saved: tuple[int, int, int] = (700, 10, 10)
    #: Freezing blocks open (their freezing stops when the last one ends).
    freezing = 0
    #: Sticky: the program was seen to freeze objects itself (see :func:`may_freeze`).
    program_freezes = False


# Read by gc_keep on every completed call: module globals, the cheapest reads.
_COMPLETED = 0
_FREEZES = False  # a freezing block is open and may freeze


def gc_keep() -> None:
    """Called by the interpreters once per completed call: every thousand calls, while a
    freezing block is open (:func:`gc_tuned` with ``freeze=True``), what the process
    holds is frozen out of collection; otherwise it does nothing.

    A run keeps what it makes (each message, each folded value), so scanning it again is
    wasted work: about a microsecond an object, the larger part of a young collection's
    cost.
    """
    global _COMPLETED
    _COMPLETED += 1
    if _COMPLETED >= GC_FREEZE_EVERY:
        _COMPLETED = 0
        if _FREEZES:
            gc.freeze()


def may_freeze() -> bool:
    """True when obelisk may freeze and unfreeze: asked only while no freezing block is
    open, so that any frozen object found is the program's.

    Telling takes ``gc.get_freeze_count()``, which walks the frozen objects: cheap while
    none is, costly for a program that froze a million. So the answer is sticky: once
    frozen objects are found, obelisk never freezes, nor counts them, again.
    """
    if not _Tuning.program_freezes and gc.get_freeze_count():
        _Tuning.program_freezes = True
    return not _Tuning.program_freezes


@contextlib.contextmanager
def gc_tuned(calls: int = 0, *, freeze: bool = False) -> Iterator[None]:
    """Make the garbage collector cheaper for the length of the block, then restore it.

    The first generation's threshold is raised to 50,000, or to 50 allocations per call
    of a run of ``calls`` calls when that is more (the largest block under way sets it);
    ``freeze`` also moves what the process holds out of collection while the block runs
    (see the module docstring, and its caveat for services whose runs overlap). Blocks
    may nest and overlap, in threads or tasks: the collector comes back as it was when
    the last one ends, also when the block raises. A disabled collector is left alone.

    Wrap a run, a compile or a bulk load: building a 50,000-message context took 184 µs
    a message with the default collector and 50 µs in a tuned block.
    """
    if not gc.isenabled():
        yield
        return
    _enter(max(GC_YOUNG, GC_PER_CALL * calls), freeze)
    try:
        yield
    finally:
        _leave(freeze)


def _enter(young: int, freeze: bool) -> None:
    global _FREEZES
    with _LOCK:
        if _Tuning.blocks == 0:
            _Tuning.saved = gc.get_threshold()
            first, second, third = _Tuning.saved
            gc.set_threshold(max(first, young), max(second, 20), max(third, 20))
        else:
            first, second, third = gc.get_threshold()
            if young > first:  # the largest run under way sets the spacing
                gc.set_threshold(young, second, third)
        _Tuning.blocks += 1
        if freeze:
            if _Tuning.freezing == 0 and may_freeze():
                _FREEZES = True
                gc.freeze()
            _Tuning.freezing += 1


def _leave(freeze: bool) -> None:
    global _FREEZES
    with _LOCK:
        _Tuning.blocks -= 1
        if freeze:
            _Tuning.freezing -= 1
            if _Tuning.freezing == 0 and _FREEZES:
                _FREEZES = False
                # What the blocks made is kept, mostly (a result, a plan): it joins the
                # oldest generation, instead of being walked by the young collection the
                # restored threshold would start at once (so before restoring it: any
                # allocation in between would start that collection).
                gc.freeze()
                gc.unfreeze()
        if _Tuning.blocks == 0:
            gc.set_threshold(*_Tuning.saved)

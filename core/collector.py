"""Whether obelisk may freeze objects out of garbage collection (``gc.freeze``).

The collector's settings are process state, not I/O: the compiler and the run tuning use
them and stay pure. Unfreezing is all or nothing (``gc.unfreeze`` releases every frozen
object), so obelisk freezes nothing in a program that freezes objects itself (a server
that calls ``gc.freeze()`` before forking its workers keeps what it froze frozen).

Telling takes ``gc.get_freeze_count()``, which walks the frozen objects: cheap while
none is frozen (always so between obelisk's own uses), costly for a program that froze a
million. So the answer is sticky: the first time frozen objects are found where obelisk
froze none, it never freezes again in this process, and never counts them again.
"""

from __future__ import annotations

import gc


class _State:
    """Whether the program was seen to freeze objects itself (sticky)."""

    program_freezes = False


def may_freeze() -> bool:
    """True when obelisk may freeze and unfreeze: call it only where obelisk itself has
    nothing frozen (before a first run begins, after a compile), so that any frozen
    object found is the program's."""
    if not _State.program_freezes and gc.get_freeze_count():
        _State.program_freezes = True
    return not _State.program_freezes


def promote() -> None:
    """Move every object the collector tracks into its oldest generation, without a
    collection walking them (what obelisk just built is kept, and holds no cycles)."""
    gc.freeze()
    gc.unfreeze()

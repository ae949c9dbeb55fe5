"""Many writes of the engine appended to a context at once (:class:`Appender`): what a
transition of the run that completes several calls appends through.
"""

from __future__ import annotations

from typing import Any

from pyrsistent import PMap

from obelisk.core import pmaps
from obelisk.core.context import Context, describes, output_describes
from obelisk.core.errors import WriteError
from obelisk.core.messages import Write
from obelisk.core.methods import Method, set_in_open
from obelisk.core.paths import Path
from obelisk.core.values import Frozen, freeze

__all__ = ["Appender"]

_SET = Method.SET  # read on every write: a module constant costs a tenth of the lookup


class Appender:
    """Many writes of the engine appended to a context, made into one new context at the end.

    :meth:`context` gives the context that appending each message in turn with
    :meth:`Context.append_write` would have made: the same messages, views (equal, and
    laid out alike), versions and errors. Only the contexts in between are never built:
    a ``set`` through objects of a global view goes into an opened map of that view
    (:class:`~obelisk.core.pmaps.OpenMap`), so settling many calls at once folds each of
    their writes into a few open maps instead of making a new map at every level for
    every write. Any other write (another
    method, an instance, a path through an array or a missing object, a broken view)
    first makes the context so far, then takes :meth:`Context.append_write`'s route.

    Mutable, and meant to be: one transition of the run's state machine owns it and
    drops it when it makes the new state. The contexts it returns are ordinary contexts.
    """

    __slots__ = ("_base", "_messages", "_described", "_open", "_counts", "_fast")

    def __init__(self, context: Context) -> None:
        self._base = context
        self._fast = pmaps.FAST  # opened maps read the buckets: else one by one
        self._reset()

    def _reset(self) -> None:
        self._messages: list[Any] = []  # appended after the base's, in order
        self._described: list[int] = []  # their positions in the context, when they describe
        self._open: dict[str, pmaps.OpenMap] = {}  # the global views opened, by kind
        self._counts: dict[str, int] = {}  # the writes each has taken

    def append_write(self, message: Any, write: Write, *,
                     output: bool = False) -> WriteError | None:
        """:meth:`Context.append_write` on the context so far: None, or the
        :class:`WriteError` the write would cause (and nothing is appended)."""
        if self._fast and write.instance is None and write.method is _SET \
                and self._opened(message, write.kind, write.path, write.value, output):
            return None
        context, error = self.context().append_write(message, write, output=output)
        self._base = context
        return error

    def append_output(self, message: PMap[str, Any], kind: str, instance: str | None,
                      path: Path, method: Method, value: Frozen) -> WriteError | None:
        """:meth:`append_write` of the engine's output ``message`` and its write, given by
        its fields (the :class:`Write` is made only for the general route)."""
        if self._fast and instance is None and method is _SET \
                and self._opened(message, kind, path, value, True):
            return None
        return self.append_write(message, Write(kind, instance, path, method, value),
                                 output=True)

    def _opened(self, message: Any, kind: str, path: Path, value: Frozen, output: bool) -> bool:
        # A global set through objects, into the open view of its kind: True when taken.
        root = self._open.get(kind)
        if root is None:
            view, error = self._base.view(kind)
            if error is not None or type(view) is not PMap:
                return False
            root = self._open[kind] = pmaps.OpenMap(view)
        if not set_in_open(root, path, value):
            return False
        frozen_message = message if isinstance(message, PMap) else freeze(message)
        if output_describes(kind) if output else describes(frozen_message):
            self._described.append(len(self._base) + len(self._messages))
        self._messages.append(frozen_message)
        self._counts[kind] = self._counts.get(kind, 0) + 1
        return True

    def append_writes(self, pairs: list[tuple[Any, Write]], *,
                      output: bool = False) -> WriteError | None:
        """Every ``(message, write)`` of ``pairs`` appended in order, or none of them: the
        first :class:`WriteError` is returned and the context so far is left as it was."""
        if len(pairs) == 1:
            return self.append_write(*pairs[0], output=output)
        self._base, error = self.context().append_writes(pairs, output=output)
        return error

    def context(self) -> Context:
        """The context with every write so far (appending may go on after)."""
        base = self._base
        if not self._messages:
            self._open.clear()  # a view opened for a write that took the general route
            return base
        new = base.extended(self._messages, self._described, {
            kind: (root.close(), self._counts[kind]) for kind, root in self._open.items()
            if self._counts.get(kind)})  # (opened, then left to the general route: unchanged)
        self._base = new
        self._reset()
        return new

"""The context: an append-only, persistent sequence of messages with a read index.

``Context.append`` returns a new context and leaves the old one valid and unchanged. Beside
the messages, each context holds a materialised view of every data kind (the fold of its
global writes, docs/semantics.md §3) as frozen persistent values, updated in O(size of the write)
per append, so a read costs O(path length) however long the context is.

Instance views (global writes, then one instance's writes on top) are derived: they are
carried forward on instance writes while the kind's global layer is unchanged, and
otherwise rebuilt on the first read and memoised on that context object. The memo is a
cache of a pure function of the messages, so contexts stay values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pyrsistent import PMap, PSet, PVector, pmap, pset, pvector

from obelisk.core.errors import MessageError, NotJSONError, WriteError
from obelisk.core.messages import Write, normalise
from obelisk.core.methods import Method, apply_write, set_in_objects
from obelisk.core.paths import Path, get_in
from obelisk.core.plain import thaw
from obelisk.core.pmaps import get as _get
from obelisk.core.values import MISSING, Frozen, Json, Missing, freeze

#: A view: the folded value of a layer, or the error that broke the fold.
View = tuple["Frozen | Missing", "WriteError | None"]
_EMPTY: View = (MISSING, None)
_NONE: tuple[View, int] = (_EMPTY, 0)  # a kind no global write has touched
_SET = Method.SET  # read on every write: a module constant costs a tenth of the lookup


def _apply(view: View, write: Write, index: int) -> View:
    value, error = view
    if error is not None:
        return view  # a broken fold stays broken: later writes cannot repair it
    try:
        return apply_write(value, write.path, write.method, write.value), None
    except WriteError as exc:
        return value, exc.located(
            kind=write.kind, path=write.path, method=write.method.value,
            message_index=index, instance=write.instance,
        )


def describes(message: Any) -> bool:
    """Whether a frozen message belongs in :meth:`Context.described` (a superset of what
    the compiler's readers of it keep: they apply their own rules to these)."""
    if type(message) is not PMap:
        return False
    if _get(message, "schema", MISSING) is not MISSING:
        return True
    kind = _get(message, "type", MISSING)
    return bool(kind == "input" or (kind == "data" and _get(message, "kind", MISSING) == "input"))


def output_describes(kind: str) -> bool:
    """:func:`describes` of an output message the engine made for a write of ``kind``:
    data with no schema field."""
    return kind == "input"


class Context:
    """An immutable, persistent sequence of messages, oldest first.

    Build one with :meth:`of`; :meth:`append` returns a new context. Iterating yields the
    messages in their frozen form (``PMap``/``PVector``); :meth:`to_json` gives plain ones.
    Invariant: ``_globals[k]`` is ``(view, version)``: the fold of every global write of
    kind ``k`` in ``_messages``, and how many there are; ``_carried[(k, i)]``, when present,
    is ``(version, view)`` with the fold of instance ``i``'s writes over that version.
    """

    __slots__ = (
        "_messages", "_globals", "_instance_writes", "_carried",
        "_memo", "_instances", "_instance_ids", "_kinds", "_described",
    )

    _messages: PVector[Any]
    # A plain dict, copied on every global write and never changed after: a context holds
    # a handful of kinds, and copying a few entries costs less than a persistent map's set.
    _globals: dict[str, tuple[View, int]]
    _instance_writes: PMap[tuple[str, str], PVector[tuple[int, Write]]]
    _carried: PMap[tuple[str, str], tuple[int, View]]
    _memo: dict[tuple[str, str], tuple[int, View]]
    _instances: PVector[str]
    _instance_ids: PSet[str]
    _kinds: PVector[str]
    # The positions of the messages that can describe data (see :meth:`described`).
    _described: PVector[int]

    def __init__(self) -> None:
        self._messages = pvector()
        self._globals = {}
        self._instance_writes = pmap()
        self._carried = pmap()
        self._memo = {}
        self._instances = pvector()
        self._instance_ids = pset()
        self._kinds = pvector()
        self._described = pvector()

    # -- building -------------------------------------------------------------------

    @classmethod
    def of(cls, messages: Iterable[Any] = ()) -> Context:
        """A context holding ``messages`` in order.

        Raises :class:`MessageError` (with the message's index) for a malformed message.
        """
        context = cls()
        for message in messages:
            context = context.append(message)
        return context

    def append(self, message: Any) -> Context:
        """A new context with ``message`` at the end; this one is unchanged.

        Raises :class:`MessageError` for a malformed or ambiguous message. A write that
        cannot be applied (``push`` onto an object) is accepted, and reads of that kind
        then raise :class:`WriteError` (check with :meth:`write_error` before appending).
        """
        return self._appended(*self._normalised(message))

    def _appended(self, frozen_message: Any, write: Write | None) -> Context:
        index = len(self._messages)
        new = self._copy()
        new._messages = self._messages.append(frozen_message)
        if describes(frozen_message):
            new._described = self._described.append(index)
        if write is not None:
            new._record(self, write, index)
        return new

    def _normalised(self, message: Any) -> tuple[Any, Write | None]:
        """The frozen message and its write; errors located at the next message index."""
        index = len(self._messages)
        try:
            frozen_message = freeze(message)
            return frozen_message, normalise(frozen_message, checked=True)
        except NotJSONError as exc:
            raise MessageError(exc.reason, index=index, pointer=exc.pointer) from None
        except MessageError as exc:
            raise exc.at(index) from None

    def extend(self, messages: Iterable[Any]) -> Context:
        """A new context with every message of ``messages`` appended in order."""
        context = self
        for message in messages:
            context = context.append(message)
        return context

    def _copy(self) -> Context:
        new = Context.__new__(Context)
        new._messages = self._messages
        new._globals = self._globals
        new._instance_writes = self._instance_writes
        new._carried = self._carried
        new._memo = {}
        new._instances = self._instances
        new._instance_ids = self._instance_ids
        new._kinds = self._kinds
        new._described = self._described
        return new

    def _record(self, old: Context, write: Write, index: int, applied: View | None = None) -> None:
        # ``applied``, when given, is the view after this write (the caller computed it).
        kind = write.kind
        if kind not in self._kinds:  # few kinds: a linear look is cheapest
            self._kinds = self._kinds.append(kind)
        if write.instance is None:
            view, version = self._globals.get(kind, _NONE)
            if applied is None:
                applied = _apply(view, write, index)
            self._globals = {**self._globals, kind: (applied, version + 1)}
            return
        key = (kind, write.instance)
        if write.instance not in self._instance_ids:
            self._instances = self._instances.append(write.instance)
            self._instance_ids = self._instance_ids.add(write.instance)
        writes = self._instance_writes.get(key, pvector())
        self._instance_writes = self._instance_writes.set(key, writes.append((index, write)))
        # Carry the instance view forward when it is current for this kind's global layer.
        version = self._globals.get(kind, _NONE)[1]
        known = old._memo.get(key) or old._carried.get(key)
        if known is not None and known[0] == version:
            # The caller's view was this same fresh instance view, so ``applied`` is it.
            self._carried = self._carried.set(
                key, (version, applied if applied is not None else _apply(known[1], write, index)))

    # -- reading --------------------------------------------------------------------

    def value(self, kind: str, path: Path = (), instance: str | None = None) -> Frozen | Missing:
        """The frozen value of ``†kind.path`` for ``instance`` (global data only when None).

        Raises :class:`WriteError` when a write in the fold cannot be applied.
        """
        value, error = self.view(kind, instance)
        if error is not None:
            raise error
        return get_in(value, path)

    def view(self, kind: str, instance: str | None = None) -> View:
        """The folded root of ``kind`` for ``instance``, with the error that broke it if any."""
        base, version = self._globals.get(kind, _NONE)
        if instance is None:
            return base
        key = (kind, instance)
        writes = self._instance_writes.get(key)
        if writes is None:
            return base
        for cached in (self._carried.get(key), self._memo.get(key)):
            if cached is not None and cached[0] == version:
                return cached[1]
        view = base
        for index, write in writes:
            view = _apply(view, write, index)
        self._memo[key] = (version, view)
        return view

    def append_checked(self, message: Any) -> tuple[Context, WriteError | None]:
        """Append ``message`` unless its write cannot be applied.

        Returns the new context and None, or this context unchanged and the
        :class:`WriteError`. (A kind that was already broken stays broken, and the message
        is appended.) Raises :class:`MessageError` for a malformed message.
        """
        frozen_message, write = self._normalised(message)
        if write is None:
            return self._appended(frozen_message, None), None
        return self.append_write(frozen_message, write)

    def append_write(self, message: Any, write: Write, *,
                     output: bool = False) -> tuple[Context, WriteError | None]:
        """:meth:`append_checked` for a message whose write is already known.

        The engine appends every output this way, so a context it builds never holds a
        write that cannot be applied.

        ``write`` must be exactly what :func:`normalise` makes of ``message`` (the engine
        builds both from one call's output, so re-reading the message would only parse its
        ``_outputPath`` again). ``output``: ``message`` is the output message
        :func:`obelisk.core.messages.output_message` made for ``write`` (its fields are
        then known without reading them). Returns the new context and None, or this
        context and the :class:`WriteError` the write would cause.
        """
        index = len(self._messages)
        view = self.view(write.kind, write.instance)
        after = _apply(view, write, index)
        if after[1] is not None and view[1] is None:
            return self, after[1]
        new = self._copy()
        frozen_message = message if isinstance(message, PMap) else freeze(message)
        new._messages = self._messages.append(frozen_message)
        if output_describes(write.kind) if output else describes(frozen_message):
            new._described = self._described.append(index)
        new._record(self, write, index, after)
        return new, None

    def append_output(self, message: PMap[str, Any], kind: str, instance: str | None,
                      path: Path, method: Method,
                      value: Frozen) -> tuple[Context, WriteError | None]:
        """:meth:`append_write` of the engine's output ``message`` and its write, given by
        its fields. A ``set`` through objects of a global view that is sound, the commonest
        write, is applied here (:func:`set_in_objects`, which ``apply_write`` tries first);
        only another write makes a :class:`Write` and takes :meth:`append_write`'s route."""
        if instance is None and method is _SET:
            entry = self._globals.get(kind)
            if entry is not None:
                (view, error), version = entry
                if error is None and type(view) is PMap:
                    root = set_in_objects(view, path, value)
                    if root is not None:
                        # What append_write and _record do for it: the kind is known
                        # (it has a view), a global write touches no instance's layer.
                        index = len(self._messages)
                        new = self._copy()
                        new._messages = self._messages.append(message)
                        if output_describes(kind):
                            new._described = self._described.append(index)
                        new._globals = {**self._globals, kind: ((root, None), version + 1)}
                        return new, None
        return self.append_write(message, Write(kind, instance, path, method, value),
                                 output=True)

    def append_writes(self, pairs: Iterable[tuple[Any, Write]], *,
                      output: bool = False) -> tuple[Context, WriteError | None]:
        """:meth:`append_write` of every ``(message, write)`` of ``pairs`` in order, or of
        none of them: the new context and None, or this context and the first
        :class:`WriteError` (a call's fan-out is kept whole or not at all)."""
        context = self
        for message, write in pairs:
            context, error = context.append_write(message, write, output=output)
            if error is not None:
                return self, error
        return context, None

    def write_error(self, message: Any) -> WriteError | None:
        """The :class:`WriteError` reading ``message``'s kind would raise after appending
        it, or None: the error of a kind that is already broken, or the one this write
        would cause."""
        write = normalise(freeze(message), checked=True)
        if write is None:
            return None
        view = self.view(write.kind, write.instance)
        if view[1] is not None:
            return view[1]
        return _apply(view, write, len(self._messages))[1]

    def extended(self, messages: list[Any], described: list[int],
                 folded: Mapping[str, tuple[Frozen, int]]) -> Context:
        """This context with the engine's output ``messages`` appended (``described``: the
        positions, in the new context, of those that can describe data) and, for each kind
        in ``folded``, the global view its sets made and how many they were: what appending
        them one by one with :meth:`append_write` makes, when each was a ``set`` through
        objects of a sound global view (see :class:`~obelisk.core.appender.Appender`)."""
        new = self._copy()
        new._messages = self._messages.extend(messages)
        if described:
            new._described = self._described.extend(described)
        views = dict(self._globals)
        for kind, (root, count) in folded.items():
            views[kind] = ((root, None), views[kind][1] + count)
        new._globals = views
        return new

    @property
    def instances(self) -> tuple[str, ...]:
        """Every instance id found in the data messages, in order of first appearance."""
        return tuple(self._instances)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every data kind written by the messages, in order of first appearance."""
        return tuple(self._kinds)

    def described(self) -> Iterator[Any]:
        """The messages that can describe data, oldest first: every one with a ``schema``
        field, and every input message (``type`` input, or data of kind input). What the
        compiler reads of a context; kept as the context grows, so that reading it does
        not walk a long history."""
        messages = self._messages
        return (messages[index] for index in self._described)

    @property
    def messages(self) -> PVector[Any]:
        """The messages, frozen (``PMap``/``PVector``), oldest first."""
        return self._messages

    def to_json(self) -> list[Json]:
        """The messages as plain JSON (``dict`` and ``list``), oldest first."""
        return [thaw(m) for m in self._messages]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._messages)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Context) and self._messages == other._messages

    def __hash__(self) -> int:
        return hash(self._messages)

    def __repr__(self) -> str:
        return f"Context(<{len(self._messages)} messages>)"

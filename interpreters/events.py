"""The vocabulary of a run: a call's :class:`Status`, the trace's :class:`Event` kinds, and
the :data:`RunEvent` stream an observer follows and :func:`~obelisk.interpreters.replaying.replay`
rebuilds a run from.

Two kinds of record, for two readers:

- the trace (:class:`Event`, kinds in :class:`EventKind`) is what a person reads: one line
  per step, in the run report;
- run events (:class:`Started`, :class:`Decided`, :class:`Finished`, :class:`Cancelled`,
  :class:`Admitted`, :class:`Closed`) carry exactly what the machine was given from the
  outside world (a verdict, an outcome and its date, a new part of the plan), so the
  same machine functions applied to them rebuild the run without running anything.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, TypeAlias

from attrs import field, frozen

from obelisk.interpreters.outcomes import Outcome, Verdict

if TYPE_CHECKING:
    from obelisk.compiler.nodes import CompiledPlan


class Word(str, enum.Enum):
    """An Enum of words: each member is its value as a string, printed as the word, so
    JSON output and f-strings read as they did when these were plain strings."""

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:  # in a printed list too: ['executed', 'skipped']
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Status(Word):
    """Where a call is in its life. All but the first two are final.

    ``INVALID`` is a call the compiler found an error in, in a run that keeps going past
    such calls (``begin(..., isolate_invalid=True)``); it never appears otherwise.
    """

    PENDING = "pending"
    RUNNING = "running"
    EXECUTED = "executed"
    SKIPPED = "skipped"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INVALID = "invalid"


#: The statuses a call never leaves.
FINAL = frozenset({Status.EXECUTED, Status.SKIPPED, Status.FAILED, Status.CANCELLED,
                   Status.INVALID})


class EventKind(Word):
    """What one trace line says happened to a call."""

    STARTED = "started"
    SKIPPED = "skipped"
    WROTE = "wrote"
    EXECUTED = "executed"
    FAILED = "failed"
    DENIED = "denied"
    REPLACED = "replaced"
    CANCELLED = "cancelled"
    INVALID = "invalid"


class RunStatus(Word):
    """How a run as a whole ended."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"


@frozen
class Event:
    """One line of a run's trace: ``kind`` happened to node ``node``; ``detail`` says more."""

    kind: EventKind
    node: int
    detail: str = ""

    def to_json(self, plan: CompiledPlan) -> dict[str, Any]:
        """The trace line as the run report prints it (the call's index, not the node id)."""
        node = plan.nodes[self.node]
        out: dict[str, Any] = {"event": self.kind.value, "call": node.index}
        if node.instance is not None:
            out["instance"] = node.instance
        if self.detail:
            out["detail"] = self.detail
        return out


# -- run events: what an observer sees, what replay consumes -------------------------------


@frozen
class Started:
    """``advance`` made node ``node`` RUNNING with this resolved ``call``."""

    node: int
    call: dict[str, Any] = field(eq=False)


@frozen
class Decided:
    """The approval hook's ``verdict`` on the ready node ``node`` was applied."""

    node: int
    verdict: Verdict


@frozen
class Finished:
    """Node ``node`` produced ``outcome``; ``date`` stamped its messages."""

    node: int
    outcome: Outcome
    date: str


@frozen
class Cancelled:
    """The run was cancelled: every running call became CANCELLED."""


@frozen
class Waiting:
    """Not a run event (nothing replays it; a journal skips it): the run is being
    cancelled and waits for the plain activities of ``nodes``, which cannot be
    interrupted, to finish; a second cancel abandons them."""

    nodes: tuple[int, ...]


@frozen
class Admitted:
    """The run admitted more calls: ``plan`` extends the run's plan (streaming)."""

    plan: CompiledPlan


@frozen
class Closed:
    """No more calls will be admitted (streaming); ``plan``, when given, is the run's
    calls compiled as a whole (:func:`~obelisk.interpreters.admission.close`)."""

    plan: CompiledPlan | None = None


#: Everything the machine was told, in order; enough to rebuild the run.
RunEvent: TypeAlias = Started | Decided | Finished | Cancelled | Admitted | Closed

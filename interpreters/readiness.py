"""§7's readiness rule for a call whose parameter has no value: which of the four cases
(written-but-absent, dead, unwritten, null) each absent reference is in. Pure functions of
the run state; :mod:`obelisk.interpreters.machine` decides the skip from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from obelisk.compiler.nodes import Param, Read
from obelisk.core.ast import Reference
from obelisk.core.errors import WriteError
from obelisk.core.paths import overlaps
from obelisk.core.resolve import lookup_in
from obelisk.core.values import MISSING, present
from obelisk.interpreters.events import Status, Word

if TYPE_CHECKING:
    from obelisk.compiler.nodes import CompiledPlan
    from obelisk.core.context import Context


class RunState(Protocol):
    """What these rules read of a run: the machine's state, or a transition under way."""

    @property
    def plan(self) -> CompiledPlan:
        """The plan being run."""

    @property
    def context(self) -> Context:
        """The context so far."""

    @property
    def status(self) -> Sequence[Status]:
        """Each node's status."""

    @property
    def took(self) -> Mapping[int, int]:
        """The alternative each executed writer took."""

    @property
    def errors(self) -> Mapping[int, object]:
        """The error message of each call that added one, by node."""


class Absence(Word):
    """Why a reference a call reads has no value when the call is evaluated (§7), in the
    order the cases are decided: the first case any reference is in decides the skip."""

    WRITTEN_BUT_ABSENT = "written-but-absent"  # every possible writer wrote, still MISSING
    DEAD = "dead"  # a possible writer did not write it: a branch not taken
    UNWRITTEN = "unwritten"  # no call of the plan can write it: a missing input
    NULL = "null"  # every possible writer wrote, and what it holds is null


def wrote(state: RunState, writer: int, ref: Reference) -> bool:
    """True when node ``writer`` wrote ``ref``: it completed, and the write of the
    alternative it took, overlapping ``ref``, was applied (a refused write writes nothing;
    an exception routed to the last alternative writes that one)."""
    alt = state.took.get(writer)
    node = state.plan.nodes[writer]
    if state.status[writer] is not Status.EXECUTED or alt is None or node.output is None:
        return False
    return any(t.kind == ref.kind and overlaps(t.path, ref.path)
               for t in node.output.alternatives[alt].targets)


def absences(state: RunState, node_id: int,
             params: Iterable[Param]) -> list[tuple[Absence, Read]]:
    """Each reference of ``params`` whose value is not present now, with its case (§7):
    written-but-absent, dead, unwritten or null. Pure: reads the state only."""
    node = state.plan.nodes[node_id]
    lookup = lookup_in(state.context, node.instance)
    found: list[tuple[Absence, Read]] = []
    for param in params:
        for read in param.reads:
            ref = read.reference
            try:
                value = lookup(ref)
            except WriteError:
                value = MISSING  # the read itself fails: the parameter already said so
            if present(value):
                continue
            all_wrote = all(wrote(state, w, ref) for w in read.writers)
            if read.writers and all_wrote and value is MISSING:
                case = Absence.WRITTEN_BUT_ABSENT
            elif not all_wrote:
                case = Absence.DEAD
            elif not read.writers:
                case = Absence.UNWRITTEN
            else:
                case = Absence.NULL
            found.append((case, read))
    return found


def written_but_absent(state: RunState, read: Read) -> str:
    """The message of a ``MissingValue`` for a written-but-absent read: the writers, what
    each wrote, and the key that is absent."""
    ref = read.reference
    wrote_what = []
    for writer in read.writers:
        node = state.plan.nodes[writer]
        assert node.output is not None  # a writer that wrote has an output
        targets = [str(t) for t in node.output.alternatives[state.took[writer]].targets
                   if t.kind == ref.kind and overlaps(t.path, ref.path)]
        wrote_what.append(f"{node.label} wrote {' and '.join(targets)}")
    return (f"{ref} has no value, although every call that can write it did "
            f"({'; '.join(wrote_what)}): the key it reads is absent from what was written")


def skip_reason(state: RunState, case: Absence, found: Sequence[tuple[Absence, Read]]) -> str:
    """Why a call skipped silently, for a dead branch or a null (§9 "Skip reasons"): each
    reference of ``case`` that has no value, and the calls that wrote it (a null) or what
    each writer that did not write it did instead (took another alternative, was skipped,
    failed...)."""
    reads = list({str(read.reference): read for each, read in found if each is case}.values())
    if case is Absence.NULL:
        return "; ".join(f"{read.reference} is null (written by "
                         f"{_labels(state, read.writers)})" for read in reads)
    return "dead branch: " + "; ".join(
        f"{read.reference} was not written ("
        + "; ".join(_instead(state, w, read.reference) for w in read.writers
                    if not wrote(state, w, read.reference)) + ")" for read in reads)


def _labels(state: RunState, writers: Iterable[int]) -> str:
    return " and ".join(state.plan.nodes[w].label for w in writers)


def _instead(state: RunState, writer: int, ref: Reference) -> str:
    """What possible writer ``writer`` did instead of writing ``ref``."""
    node = state.plan.nodes[writer]
    status = state.status[writer]
    alt = state.took.get(writer)
    if status is Status.EXECUTED and alt is not None and node.output is not None:
        taken = " and ".join(str(t) for t in node.output.alternatives[alt].targets)
        return f"{node.label} took {taken} instead"
    if status is Status.FAILED:
        error = state.errors.get(writer)
        denied = isinstance(error, Mapping) and error["data"]["error"]["type"] == "Denied"
        return f"{node.label} {'was denied' if denied else 'failed'}"
    return f"{node.label} {_WHAT.get(status, 'wrote nothing')}"


#: What a writer that neither wrote nor failed did, by its status.
_WHAT = {Status.SKIPPED: "was skipped", Status.INVALID: "is invalid",
         Status.CANCELLED: "was cancelled", Status.PENDING: "never ran",
         Status.RUNNING: "has not finished"}

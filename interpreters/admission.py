"""Admitting calls while a run is open (streaming): ``admit`` adds
the nodes of a plan that extends the run's, ``close`` ends admission. Pure transitions of
the machine's :class:`~obelisk.interpreters.state.RunState`.
"""

from __future__ import annotations

from attrs import evolve
from pyrsistent import pvector

from obelisk.compiler.nodes import CompiledPlan
from obelisk.interpreters import calls
from obelisk.interpreters.events import FINAL, Status
from obelisk.interpreters.state import RunState, Step, invalidate_call

__all__ = ["admit", "close"]


def admit(state: RunState, plan: CompiledPlan) -> RunState:
    """The run with ``plan``'s new nodes admitted (streaming).

    ``plan`` extends the run's plan: its first nodes are the run's, the new ones are
    appended. New nodes become PENDING; every pending node's ``waiting`` is recomputed from
    its unfinished predecessors in ``plan``, and parked nodes are re-evaluated. A new node
    in ``plan.invalid`` finishes INVALID at once. What has already run is not revisited.
    Raises ``ValueError`` for a closed run or a plan that does not extend the run's.
    """
    old = state.plan
    if not state.open:
        raise ValueError("the run is closed: begin(plan, open=True) to admit calls")
    _check_extends(old, plan)
    status = state.status.extend([Status.PENDING] * (len(plan.nodes) - len(old.nodes)))
    waiting = pvector(
        sum(1 for p in preds if status[p] not in FINAL) for preds in plan.predecessors)
    state = evolve(state, plan=plan, status=status, waiting=waiting, cache=calls.cache_of(plan))
    new = [n for n in range(len(old.nodes), len(plan.nodes)) if n in plan.invalid]
    return _recandidate(_invalidated(state, new))


def close(state: RunState, plan: CompiledPlan | None = None) -> RunState:
    """The run closed to new calls: parked calls are evaluated again, and a value that
    nothing writes now makes a call fail with ``MissingValue``.

    ``plan``, when given, is the run's calls compiled as a whole (closed): it becomes the
    run's plan, and a PENDING node it finds invalid (a parked reader of a path that no
    call writes: a dangling reference) finishes INVALID at once, as in a whole run (§9
    "Streaming is the same run"). Raises ``ValueError`` for a plan of other calls.
    """
    if plan is None:
        return _recandidate(evolve(state, open=False))
    _check_extends(state.plan, plan)
    if len(plan.nodes) != len(state.plan.nodes):
        raise ValueError("the closing plan must hold exactly the run's calls")
    state = evolve(state, open=False, plan=plan, cache=calls.cache_of(plan))
    pending = [n for n in plan.invalid if state.status[n] is Status.PENDING]
    return _recandidate(_invalidated(state, sorted(pending)))


def _check_extends(old: CompiledPlan, plan: CompiledPlan) -> None:
    if len(plan.nodes) < len(old.nodes) or any(
            (a.index, a.instance, a.call) != (b.index, b.instance, b.call)
            for a, b in zip(old.nodes, plan.nodes, strict=False)):  # writers may differ
        raise ValueError("an admitted plan must keep the run's calls first, unchanged")


def _invalidated(state: RunState, nodes: list[int]) -> RunState:
    """The run with each of ``nodes`` finished INVALID (an admitted call with an error
    never starts, §8.6)."""
    if not nodes:
        return state
    step = Step(state)
    for node_id in nodes:
        invalidate_call(step, node_id)
    return step.state()


def _recandidate(state: RunState) -> RunState:
    # Every PENDING node with nothing left to wait for is a candidate (the parked ones too).
    ready = pvector([n for n, s in enumerate(state.status)
                     if s is Status.PENDING and state.waiting[n] == 0])
    return evolve(state, candidates=ready)

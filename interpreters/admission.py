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
    if len(plan.nodes) < len(old.nodes) or any(
            (a.index, a.instance, a.call) != (b.index, b.instance, b.call)
            for a, b in zip(old.nodes, plan.nodes, strict=False)):  # writers may differ
        raise ValueError("an admitted plan must keep the run's calls first, unchanged")
    status = state.status.extend([Status.PENDING] * (len(plan.nodes) - len(old.nodes)))
    waiting = pvector(
        sum(1 for p in preds if status[p] not in FINAL) for preds in plan.predecessors)
    state = evolve(state, plan=plan, status=status, waiting=waiting, cache=calls.cache_of(plan))
    new = [n for n in range(len(old.nodes), len(plan.nodes)) if n in plan.invalid]
    if new:  # an admitted call with an error never starts (§8.6)
        step = Step(state)
        for node_id in new:
            invalidate_call(step, node_id)
        state = step.state()
    return _recandidate(state)


def close(state: RunState) -> RunState:
    """The run closed to new calls: parked calls are evaluated again, and a value that
    nothing writes now makes a call fail with ``MissingValue``."""
    return _recandidate(evolve(state, open=False))


def _recandidate(state: RunState) -> RunState:
    # Every PENDING node with nothing left to wait for is a candidate (the parked ones too).
    ready = pvector([n for n, s in enumerate(state.status)
                     if s is Status.PENDING and state.waiting[n] == 0])
    return evolve(state, candidates=ready)

"""Exploration: a dry run of every combination of branch choices (bounded), each forced
by bending the mocked outcomes onto the chosen alternative."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.tools import Tool
from obelisk.core.values import MISSING
from obelisk.interpreters.events import Status
from obelisk.interpreters.outcomes import Chose, Outcome, Raised, Returned
from obelisk.interpreters.reporting import views
from obelisk.interpreters.result import RunResult

#: How many branch combinations ``explore`` runs unless told otherwise.
EXPLORE_LIMIT = 256

#: One choice taken: (node id, its instance, the alternative it wrote, from 0).
Choice = tuple[int, "str | None", int]


@frozen
class Combination:
    """One explored combination: the branch each branching call took, and what followed."""

    choices: tuple[Choice, ...]
    result: RunResult

    def to_json(self) -> dict[str, Any]:
        """The combination in the report's ``explore.combinations``."""
        plan = self.result.plan

        def ids(status: Status) -> list[Any]:
            return [c.call if c.instance is None else [c.call, c.instance]
                    for c in self.result.calls if c.outcome == status]

        return {
            "choices": [
                {"call": plan.nodes[n].index, "instance": inst, "alternative": alt + 1,
                 "output": plan.nodes[n].output_text}
                for n, inst, alt in self.choices
            ],
            "executed": ids(Status.EXECUTED), "skipped": ids(Status.SKIPPED),
            "failed": ids(Status.FAILED),
            "views": views(self.result.context),
        }


@frozen
class Exploration:
    """Every combination tried: the distinct ones, how many exist, how many ran."""

    combinations: tuple[Combination, ...]
    total: int
    truncated: bool
    runs: int


def forced(plan: CompiledPlan, node_id: int, alt: int, outcome: Outcome,
           example: Callable[[Tool], Any]) -> Outcome:
    """The outcome ``outcome`` bent to land on alternative ``alt`` (for exploration).

    A failure forced onto a value alternative writes an example of the tool's ``_output``
    schema (``example``), else ``{"explored": true}``: never null, which is not present.
    """
    node = plan.nodes[node_id]
    assert node.output is not None
    count = len(node.output.alternatives)
    last = count - 1
    match outcome:
        case Raised(contract=False) if alt == last:
            return outcome
        case Returned() if alt == 0:
            return outcome
        case Chose(path=path):
            targets = node.output.alternatives[alt].targets
            if any(str(t) == path.strip() for t in targets):
                return outcome
    if isinstance(outcome, (Returned, Chose)):
        value = outcome.value
    else:
        tool = plan.tool_of(node)
        made = example(tool) if tool and tool.output_schema else MISSING
        value = {"explored": True} if made is MISSING else made
    if alt == last:
        return Raised("Explored", f"exploring alternative {alt + 1} of {count}")
    if alt == 0:
        return Returned(value)
    return Chose(str(node.output.alternatives[alt].targets[0]), value)


def explore(plan: CompiledPlan, run_once: Callable[[Mapping[int, int]], RunResult],
            limit: int = EXPLORE_LIMIT) -> Exploration:
    """Run ``run_once`` for every combination of alternatives of the branching calls (at
    most ``limit``); list each distinct set of choices actually taken once."""
    branching = [n.id for n in plan.nodes
                 if n.output is not None and len(n.output.alternatives) > 1]
    sizes = [len(plan.nodes[n].output.alternatives) for n in branching]  # type: ignore[union-attr]
    total = 1
    for size in sizes:
        total *= size
    combos = []
    seen: set[tuple[Choice, ...]] = set()
    runs = 0
    for choice in itertools.islice(itertools.product(*[range(s) for s in sizes]), limit):
        forcing = dict(zip(branching, choice, strict=True))
        result = run_once(forcing)
        runs += 1
        taken = tuple(
            (n, plan.nodes[n].instance, alt) for n, alt in forcing.items()
            if result.calls[n].outcome == Status.EXECUTED
        )
        # A choice forced on a call that never ran (a dead branch) changes nothing: the
        # runs agree, so each distinct set of choices taken is listed once.
        if taken not in seen:
            seen.add(taken)
            combos.append(Combination(taken, result))
    return Exploration(tuple(combos), total, total > limit, runs)

"""interpreters/machine.py: §7's four cases for a value that is not present, as a table.

A reference a call reads that has no value is *written-but-absent* (every possible writer
wrote it, the key is still MISSING: a ``MissingValue`` error), *dead* (a possible writer did
not write it: a silent skip), *unwritten* (no possible writer: a ``MissingValue`` error) or
*null* (written, and null: a silent skip); the first case any reference is in decides.
"""

from __future__ import annotations

from typing import Any

import pytest

from obelisk import compile_plan
from obelisk.compiler.parse import parse_input
from obelisk.interpreters.events import Status
from obelisk.interpreters.machine import advance, begin, complete
from obelisk.interpreters.outcomes import Chose, Raised, Returned
from obelisk.interpreters.readiness import Absence, absences, wrote
from obelisk.interpreters.state import RunState

DATE = "2025-10-26T12:00:00Z"


def drive(plan: list[Any], outcomes: dict[int, Any], context: list[Any] | None = None,
          **kw: Any) -> RunState:
    """Run ``plan`` by hand: node ``n`` gets ``outcomes[n]`` (a plain value if not given)."""
    state = begin(compile_plan(plan, context=context or [], **kw))
    while True:
        state, ready = advance(state)
        if not ready:
            return state
        for invocation in ready:
            outcome = outcomes.get(invocation.node, Returned("v"))
            state = complete(state, invocation.node, outcome, DATE)


CHOSEN = {"_tool": "pick", "_outputPath": "†state.chosen"}
ROUTED = {"_tool": "pay", "_outputPath": "†state.receipt || †state.error"}


def reader(ref: str) -> dict[str, Any]:
    return {"_tool": "use", "x": ref, "_outputPath": "†state.used"}


# (plan, outcomes, context, expected status of the last call, its error type or None,
#  the start of its reason)
TABLE: list[tuple[str, list[Any], dict[int, Any], list[Any], Status, str | None, str]] = [
    ("written-but-absent: the writer wrote the parent, the key is absent",
     [CHOSEN, reader("†state.chosen.idd")], {0: Returned({"id": 1, "price": 2})}, [],
     Status.SKIPPED, "MissingValue", "MissingValue: †state.chosen.idd has no value, although"),
    ("written-but-absent through a fan-out: both writers wrote",
     [CHOSEN, {"_tool": "more", "_outputPath": "†state.chosen.extra"},
      reader("†state.chosen.idd")], {0: Returned({"id": 1})}, [],
     Status.SKIPPED, "MissingValue", "MissingValue: †state.chosen.idd has no value"),
    ("dead: the writer took the other alternative",
     [ROUTED, reader("†state.receipt")], {0: Raised("Declined", "no")}, [],
     Status.SKIPPED, None,
     "dead branch: †state.receipt was not written (call 0 (pay) took †state.error instead)"),
    ("dead: the writer wrote the alternative, not the absent key's sibling writer",
     [ROUTED, {"_tool": "x", "_outputPath": "†state.receipt.more"}, reader("†state.receipt.id")],
     {0: Raised("Declined", "no")}, [],
     Status.SKIPPED, None,
     "dead branch: †state.receipt.id was not written (call 0 (pay) took †state.error instead)"),
    ("dead: the writer failed (a refused write writes nothing)",
     [CHOSEN, reader("†state.chosen.id")], {0: Raised("Boom", "no")}, [],
     Status.SKIPPED, None, "dead branch: †state.chosen.id was not written (call 0 (pick) failed)"),
    ("dead: the writer was skipped",
     [{**CHOSEN, "q": "†state.nothing || †state.other"},
      {"_tool": "o", "_outputPath": "†state.other || †state.bad"}, reader("†state.chosen")],
     {1: Raised("E", "m")}, [], Status.SKIPPED, None,
     "dead branch: †state.chosen was not written (call 0 (pick) was skipped)"),
    ("dead wins over unwritten",
     [ROUTED, {"_tool": "use", "x": "†state.receipt", "y": "†input.nowhere"}],
     {0: Raised("Declined", "no")}, [], Status.SKIPPED, None,
     "dead branch: †state.receipt was not written (call 0 (pay) took †state.error instead)"),
    ("written-but-absent wins over dead",
     [ROUTED, CHOSEN, {"_tool": "use", "x": "†state.receipt", "y": "†state.chosen.idd"}],
     {0: Raised("Declined", "no"), 1: Returned({"id": 1})}, [],
     Status.SKIPPED, "MissingValue", "MissingValue: †state.chosen.idd"),
    ("unwritten: no call writes it and the context lacks it (an input never supplied)",
     [reader("†input.nope")], {}, [],
     Status.SKIPPED, "MissingValue", "MissingValue: †input.nope has no value, and no call"),
    ("null: the writer wrote a null",
     [CHOSEN, reader("†state.chosen")], {0: Returned(None)}, [],
     Status.SKIPPED, None, "†state.chosen is null (written by call 0 (pick))"),
    ("null below: the writer wrote the key as null",
     [CHOSEN, reader("†state.chosen.id")], {0: Returned({"id": None})}, [],
     Status.SKIPPED, None, "†state.chosen.id is null (written by call 0 (pick))"),
    ("an exception routed to the last alternative writes it",
     [ROUTED, reader("†state.error.code")], {0: Raised("Declined", "no")}, [],
     Status.SKIPPED, "MissingValue", "MissingValue: †state.error.code has no value"),
    ("an explicit choice writes the alternative chosen",
     [ROUTED, reader("†state.receipt.idd")],
     {0: Chose("†state.receipt", {"id": 1})}, [],
     Status.SKIPPED, "MissingValue", "MissingValue: †state.receipt.idd"),
    ("present: the call runs",
     [CHOSEN, reader("†state.chosen.id")], {0: Returned({"id": 1})}, [],
     Status.EXECUTED, None, ""),
]


@pytest.mark.parametrize(("name", "plan", "outcomes", "context", "status", "error", "reason"),
                         TABLE, ids=[row[0] for row in TABLE])
def test_the_four_cases(name: str, plan: list[Any], outcomes: dict[int, Any],
                        context: list[Any], status: Status, error: str | None,
                        reason: str) -> None:
    state = drive(plan, outcomes, context)
    last = len(plan) - 1
    assert state.status[last] is status
    found = state.errors.get(last)
    assert (found["data"]["error"]["type"] if found else None) == error
    assert state.reasons.get(last, "").startswith(reason)
    if status is Status.SKIPPED and error is None:  # a silent skip says all of why (§9)
        assert state.reasons[last] == reason


def test_written_but_absent_names_the_writer_and_the_absent_key() -> None:
    state = drive([CHOSEN, reader("†state.chosen.idd")], {0: Returned({"id": 1, "price": 2})})
    message = state.errors[1]["data"]["error"]["message"]
    assert message == (
        "†state.chosen.idd has no value, although every call that can write it did "
        "(call 0 (pick) wrote †state.chosen): the key it reads is absent from what was "
        "written")


def test_took_records_the_alternative_of_every_executed_writer() -> None:
    state = drive([ROUTED, CHOSEN, {"_tool": "f"}], {0: Raised("Declined", "no")})
    assert dict(state.took) == {0: 1, 1: 0}  # fire-and-forget writes nothing


def test_absences_and_wrote_are_pure_functions_of_the_state() -> None:
    state = drive([ROUTED, CHOSEN, {"_tool": "use", "x": "†state.receipt",
                                    "y": "†state.chosen.idd"}],
                  {0: Raised("Declined", "no"), 1: Returned({"id": 1})})
    assert wrote(state, 0, parse_input("†state.error.type")) is True
    assert wrote(state, 0, parse_input("†state.receipt")) is False
    params = state.plan.nodes[2].params
    assert [(case, str(read.reference)) for case, read in absences(state, 2, params)] == [
        (Absence.DEAD, "†state.receipt"), (Absence.WRITTEN_BUT_ABSENT, "†state.chosen.idd")]


def test_an_open_run_parks_a_written_but_absent_read() -> None:
    state = begin(compile_plan([CHOSEN, reader("†state.chosen.idd")]), open=True)
    state, ready = advance(state)
    state = complete(state, ready[0].node, Returned({"id": 1}), DATE)
    state, ready = advance(state)
    assert not ready and state.status[1] is Status.PENDING


def test_a_skip_names_every_writer_of_a_null() -> None:
    # A void tool, then another writing the same path: both wrote null.
    touch = {"_tool": "touch", "_outputPath": "†state.touched"}
    state = drive([touch, {**touch, "_tool": "again"}, reader("†state.touched")],
                  {0: Returned(None), 1: Returned(None)})
    assert state.reasons[2] == "†state.touched is null (written by call 0 (touch) and call 1 (again))"


def test_a_dead_branch_names_a_denied_or_invalid_writer() -> None:
    from obelisk.interpreters.machine import decide
    from obelisk.interpreters.outcomes import Deny

    state = begin(compile_plan([CHOSEN, reader("†state.chosen")], context=[]))
    state, ready = advance(state)
    state, _ = decide(state, ready[0], Deny("not today"))
    state, _ = advance(state)
    assert state.reasons[1] == "dead branch: †state.chosen was not written (call 0 (pick) was denied)"
    plan = compile_plan([{**CHOSEN, "_outputMethod": "nope"}, reader("†state.chosen")], context=[])
    state, _ = advance(begin(plan, isolate_invalid=True))
    assert state.reasons[1] == "dead branch: †state.chosen was not written (call 0 (pick) is invalid)"

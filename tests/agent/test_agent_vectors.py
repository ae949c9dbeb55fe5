"""The agent-vector runner (the kit's agent op and judging): a vector that holds passes, one
that does not says what differs, and a malformed vector fails rather than being skipped."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from obelisk.kit.conformance import check_vector, run

PACK = pathlib.Path(__file__).resolve().parents[1] / "conformance" / "agent.json"
TOOLS = [{"type": "object", "properties": {"_tool": {"const": "refund"},
                                           "_output": {"type": "object"}}}]
VECTOR: dict[str, Any] = {
    "id": "agent/test", "tools": TOOLS, "mocks": {"refund": {"return": {"id": "r-1"}}},
    "solutions": [{"calls": [{"_tool": "refund", "_outputPath": "†state.r"}], "output": None},
                  {"calls": [], "output": "†state.r.id"}],
    "expect": {"status": "completed", "ticks": 2, "output": "r-1", "errors": [],
               "values": [{"ref": "†state.r.id", "value": "r-1"}]},
}


def with_expect(**expect: Any) -> dict[str, Any]:
    return {**VECTOR, "expect": {**VECTOR["expect"], **expect}}


def test_the_pack_has_at_least_25_agent_vectors_and_all_pass() -> None:
    vectors = json.loads(PACK.read_text())
    assert len(vectors) >= 25
    outcomes, _ = run([str(PACK)])
    assert [o.id for o in outcomes if not o.passed] == []


def test_a_vector_that_holds_passes() -> None:
    assert check_vector(VECTOR) == []


@pytest.mark.parametrize(("expect", "says"), [
    ({"status": "stalled"}, 'status: expected "stalled", got "completed"'),
    ({"ticks": 3}, "ticks: expected 3, got 2"),
    ({"output": "r-2"}, 'output: expected "r-2"'),
    ({"errors": [{"tick": 1, "type": "NoProgress"}]}, "errors: expected"),
    ({"values": [{"ref": "†state.r.id", "value": "x"}]}, "values[0]"),
])
def test_a_vector_that_does_not_hold_says_what_differs(expect: dict[str, Any], says: str) -> None:
    problems = check_vector(with_expect(**expect))
    assert len(problems) == 1 and says in problems[0]


@pytest.mark.parametrize(("change", "says"), [
    ({"plan": []}, "unknown field 'plan'"),
    ({"solutions": {}}, '"solutions" must be an array'),
    ({"mode": "busy"}, '"mode" must be'),
    ({"max_ticks": 0}, '"max_ticks" must be'),
    ({"latent": {"refund": 1}}, '"latent" must map'),
    ({"expect": {"state": 1}}, "expect: unknown field 'state'"),
    ({"expect": {"errors": [{"type": "X"}]}}, "needs a tick"),
    ({"tools": [{"type": "object"}]}, "the agent cannot run"),
    ({"reviews": "approve"}, '"reviews" must be an array'),
    ({"reviews": ["yes"]}, 'reviews[0] must be "approve"'),
    ({"reviews": [{"reject": 1}]}, 'reviews[0] must be "approve"'),
])
def test_a_malformed_vector_fails(change: dict[str, Any], says: str) -> None:
    problems = check_vector({**VECTOR, **change})
    assert problems and any(says in p for p in problems), problems


def test_reviews_reach_the_reviewer_in_order() -> None:
    # The pack's review vectors hold only when each plan gets its own verdict.
    rejected = {**VECTOR, "mode": "lazy", "reviews": [{"reject": "no"}],
                "solutions": [VECTOR["solutions"][0], {"calls": [], "output": "done"}],
                "expect": {"status": "completed", "ticks": 2,
                           "errors": [{"tick": 1, "type": "Denied"}],
                           "values": [{"ref": "†state.r", "missing": True}]}}
    assert check_vector(rejected) == []
    assert check_vector({**rejected, "reviews": ["approve"]})  # the refund ran: it differs

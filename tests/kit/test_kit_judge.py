"""obelisk/kit/judge.py on answers the protocol's shape check allows: the runner judges
every one of them (a pass or a problem naming what differs), and never crashes."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.kit.conformance import judge
from obelisk.kit.pack import pack_files
from obelisk.kit.protocol import AGENT_STATUSES, OUTCOMES, SEVERITIES, Op, response_problems


class Canned:
    """An implementation answering every request of an op with one canned answer."""

    def __init__(self, answers: Mapping[Op, Any]) -> None:
        self.answers = answers

    def supports(self, op: Op) -> bool:
        return op in self.answers

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.answers[Op(request["op"])]
        return answer


CHECK_VECTOR = {"id": "t/check", "plan": [{"_tool": "t", "p": "†state.none"}],
                "expect": {"diagnostics": [{"code": "dangling-reference", "call": 0}]}}


@pytest.mark.parametrize(("diagnostic", "words"), [
    ({"code": "cycle", "severity": "error"}, "cycle (no call, no pointer)"),
    ({"code": "cycle", "severity": "error", "call": 2}, "cycle at call 2 (no pointer)"),
    ({"code": "cycle", "severity": "error", "pointer": "/p"}, "cycle (no call) at /p"),
    ({"code": "cycle", "severity": "error", "call": 1, "pointer": "/p"}, "cycle at call 1 /p"),
])
def test_a_diagnostic_without_call_or_pointer_is_described_not_a_crash(
        diagnostic: dict[str, Any], words: str) -> None:
    answer = {"diagnostics": [diagnostic]}
    assert response_problems(Op.CHECK, answer) == []
    verdict = judge(CHECK_VECTOR, Canned({Op.CHECK: answer}))
    assert verdict.problems == (
        'expected diagnostic {"code": "dangling-reference", "call": 0} was not reported '
        f"(reported: {words})",
        f"unexpected error {words}: ")


def _pack() -> list[Any]:
    vectors: list[Any] = []
    for path in pack_files():
        vectors.extend(json.loads(pathlib.Path(path).read_text(encoding="utf-8")))
    return vectors


PACK = _pack()

_json = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
_index = st.integers(0, 3)
_names = st.sampled_from(["", "x", "state", "input", "system", "①", "error"]) | st.text(max_size=3)


def _optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


_diagnostic = st.fixed_dictionaries(
    {"code": st.sampled_from(["cycle", "dangling-reference", "x"]),
     "severity": st.sampled_from(sorted(SEVERITIES))},
    optional={"call": st.none() | _index, "pointer": st.none() | st.text(max_size=3),
              "calls": st.lists(_index, max_size=3), "message": _json})
_views = st.dictionaries(_names, st.dictionaries(_names | st.just("global"), _json, max_size=2)
                         | st.dictionaries(st.just("global"), st.fixed_dictionaries(
                             {"error": st.text(max_size=2)})), max_size=3)
_failure = st.fixed_dictionaries({"failure": st.text(max_size=3)})
ANSWERS: dict[Op, st.SearchStrategy[Any]] = {
    Op.RESOLVE: st.one_of(
        st.fixed_dictionaries({"value": _json}), st.just({"missing": True}),
        st.fixed_dictionaries({"error": st.sampled_from(["syntax", "write"])},
                              optional={"message": st.text(max_size=3)}), _failure),
    Op.CHECK: st.one_of(st.fixed_dictionaries({"diagnostics": st.lists(_diagnostic,
                                                                        max_size=3)}), _failure),
    Op.RUN: st.one_of(st.fixed_dictionaries(
        {"status": st.sampled_from(["completed", "invalid", ""]),
         "calls": st.lists(st.fixed_dictionaries(
             {"call": _index, "outcome": st.sampled_from(sorted(OUTCOMES))},
             optional={"instance": st.none() | _names, "error": st.none() | st.text(max_size=3),
                       "reason": _json}), max_size=3),
         "views": _views},
        optional={"diagnostics": st.lists(_diagnostic, max_size=2),
                  "errors": st.lists(_json, max_size=2)}), _failure),
    Op.AGENT: st.one_of(st.fixed_dictionaries(
        {"status": st.sampled_from(sorted(AGENT_STATUSES)), "ticks": _index, "output": _json,
         "views": _views,
         "errors": st.lists(st.fixed_dictionaries(
             {"tick": _index, "type": st.text(max_size=3)},
             optional={"call": _json, "instance": _json}), max_size=2)}), _failure),
}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PACK), st.fixed_dictionaries(ANSWERS))
def test_the_judge_takes_every_answer_the_shape_check_allows(
        vector: Any, answers: dict[Op, Any]) -> None:
    for op, answer in answers.items():
        assert response_problems(op, answer) == [], (op, answer)  # the strategy's promise
    verdict = judge(vector, Canned(answers))  # raises nothing: a pass or problems
    assert all(isinstance(p, str) and p for p in verdict.problems)

"""obelisk/kit/protocol.py: the shapes of requests and answers, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from obelisk.kit.protocol import Op, request_problems, response_problems

GOOD_ANSWERS: list[tuple[Op, Any]] = [
    (Op.HELLO, {"protocol": 1, "name": "x", "version": "1", "ops": ["resolve"]}),
    (Op.HELLO, {"protocol": 1, "name": "x", "version": "1", "ops": []}),
    (Op.RESOLVE, {"value": None}),
    (Op.RESOLVE, {"missing": True}),
    (Op.RESOLVE, {"error": "syntax", "message": "m"}),
    (Op.RESOLVE, {"error": "write"}),
    (Op.RESOLVE, {"failure": "cannot"}),
    (Op.CHECK, {"diagnostics": []}),
    (Op.CHECK, {"diagnostics": [{"code": "cycle", "severity": "error", "call": None,
                                 "pointer": None, "calls": [0, 1]}]}),
    (Op.RUN, {"status": "completed", "calls": [{"call": 0, "instance": None,
                                                 "outcome": "executed"}],
              "errors": [], "views": {"state": {"global": 1}}}),
    (Op.AGENT, {"status": "completed", "ticks": 1, "output": None, "views": {},
                "errors": [{"tick": 1, "type": "NoProgress"}]}),
]

BAD_ANSWERS: list[tuple[Op, Any, str]] = [
    (Op.HELLO, {"protocol": 2, "name": "x", "version": "1", "ops": []}, '"protocol" must be 1'),
    (Op.HELLO, {"protocol": 1, "name": "x", "version": "1", "ops": ["fly"]}, "'fly'"),
    (Op.HELLO, {"protocol": 1, "version": "1", "ops": []}, '"name" must be a string'),
    (Op.HELLO, {"failure": "no"}, '"protocol" must be 1'),
    (Op.RESOLVE, [1], "a response is a JSON object, got an array"),
    (Op.RESOLVE, {}, "exactly one of"),
    (Op.RESOLVE, {"value": 1, "missing": True}, "exactly one of"),
    (Op.RESOLVE, {"missing": False}, '"missing" must be true'),
    (Op.RESOLVE, {"error": "oops"}, '"error" must be "syntax" or "write"'),
    (Op.RESOLVE, {"failure": 3}, '"failure" must be a string'),
    (Op.CHECK, {}, '"diagnostics" must be an array'),
    (Op.CHECK, {"diagnostics": [{"code": "x", "severity": "fatal"}]}, "severity"),
    (Op.CHECK, {"diagnostics": [{"code": "x", "severity": "error", "call": -1}]}, "call index"),
    (Op.CHECK, {"diagnostics": [{"code": "x", "severity": "error", "calls": ["a"]}]}, "calls"),
    (Op.RUN, {"status": "completed", "calls": [{"call": 0, "outcome": "done"}], "views": {}},
     "outcome must be one of"),
    (Op.RUN, {"status": "completed", "calls": [], "views": []}, '"views" must be an object'),
    (Op.RUN, {"calls": [], "views": {}}, '"status" must be a string'),
    (Op.AGENT, {"status": "done", "ticks": 1, "output": None, "views": {}, "errors": []},
     '"status" must be one of'),
]


@pytest.mark.parametrize(("op", "answer"), GOOD_ANSWERS)
def test_good_answers_have_no_problems(op: Op, answer: Any) -> None:
    assert response_problems(op, answer) == []


@pytest.mark.parametrize(("op", "answer", "words"), BAD_ANSWERS)
def test_bad_answers_say_what_is_wrong(op: Op, answer: Any, words: str) -> None:
    problems = response_problems(op, answer)
    assert problems and any(words in p for p in problems), problems


@pytest.mark.parametrize(("request_", "words"), [
    ([], "a request is a JSON object"),
    ({"op": "fly"}, '"op" must be one of'),
    ({"op": "resolve", "context": {}, "ref": "†a"}, '"context" must be an array'),
    ({"op": "resolve", "context": [], "ref": 1}, '"ref" must be a string'),
    ({"op": "check", "context": [], "plan": {}}, '"plan" must be an array'),
    ({"op": "check", "context": [], "plan": [], "tools": {}}, '"tools" must be an array'),
    ({"op": "run", "context": [], "plan": [], "mocks": []}, '"mocks" must be an object'),
])
def test_bad_requests_say_what_is_wrong(request_: Any, words: str) -> None:
    assert any(words in p for p in request_problems(request_))


def test_good_requests() -> None:
    assert request_problems({"op": "hello"}) == []
    assert request_problems({"op": "resolve", "context": [], "ref": "†a",
                             "instance": None}) == []
    assert request_problems({"op": "run", "context": [], "tools": None, "plan": [],
                             "mocks": {}, "instances": False}) == []

"""`obelisk adapter` (kit/server.py, kit/local.py) and AdapterClient (kit/client.py)."""

from __future__ import annotations

import io
import json
import subprocess

import pytest
from kit_helpers import OBELISK_ADAPTER, script

from obelisk import ObeliskError
from obelisk.kit import local
from obelisk.kit.client import AdapterClient, AdapterError
from obelisk.kit.protocol import Op
from obelisk.kit.server import local_answer, serve

CONTEXT = [{"type": "state", "state": {"a": [1, 2, 3]}},
           {"type": "state", "state": {"a": {"b": 1}}, "_instance": "①"}]

# (request, answer): obelisk's own answers, as a table.
ANSWERS = [
    ({"op": "resolve", "context": CONTEXT, "ref": "†state.a.-1", "instance": None},
     {"value": 3}),
    ({"op": "resolve", "context": CONTEXT, "ref": "†state.a.b", "instance": "①"},
     {"value": 1}),
    ({"op": "resolve", "context": CONTEXT, "ref": "†state.nope", "instance": None},
     {"missing": True}),
    ({"op": "resolve", "context": [], "ref": "†state.nope || 'x'", "instance": None},
     {"value": "x"}),
    ({"op": "check", "context": [], "tools": None, "plan": [{"_tool": "t", "a": "†state.x"}],
      "instances": False},
     {"diagnostics": [{"code": "dangling-reference", "call": 0, "pointer": "/a",
                       "severity": "error"}]}),
    ({"op": "run", "context": [], "tools": None, "plan": [{"_tool": "t",
                                                           "_outputPath": "†state.r"}],
      "mocks": {"t": {"return": 5}}, "instances": False},
     {"status": "completed", "views": {"state": {"global": {"r": 5}}},
      "calls": [{"call": 0, "instance": None, "outcome": "executed"}]}),
    ({"op": "run", "context": [], "tools": None, "plan": [{"_tool": "t"}],
      "mocks": {"t": {"bogus": 1}}, "instances": False}, {"failure": "invalid mocks"}),
    # An empty script runs out at once: the run fails after one tick.
    ({"op": "agent", "context": [], "solutions": []},
     {"status": "failed", "ticks": 1, "output": None, "views": {}}),
    ({"op": "agent", "context": [], "solutions": [{"calls": [], "output": 7}]},
     {"status": "completed", "ticks": 1, "output": 7, "errors": []}),
    ({"op": "fly"}, {"failure": "bad request"}),
]


def contains(answer: object, want: object) -> bool:
    """``want`` is a part of ``answer``: a subset of keys, a prefix of a string."""
    if isinstance(want, dict):
        return isinstance(answer, dict) and all(
            k in answer and contains(answer[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(answer, list) and len(answer) == len(want) and all(
            contains(a, w) for a, w in zip(answer, want, strict=True))
    if isinstance(want, str) and isinstance(answer, str):
        return want in answer
    return answer == want


@pytest.mark.parametrize(("request_", "want"), ANSWERS)
def test_local_answers(request_: dict[str, object], want: dict[str, object]) -> None:
    assert contains(local.answer(request_), want), local.answer(request_)


def test_hello_lists_the_four_ops() -> None:
    assert local.answer({"op": "hello"}) == {
        "protocol": 1, "name": "obelisk", "version": local.hello()["version"],
        "ops": ["resolve", "check", "run", "agent"]}


def test_serve_answers_line_by_line_and_survives_garbage() -> None:
    lines = "\n".join([json.dumps({"op": "hello"}), "{not json", "", "[1]",
                       json.dumps(ANSWERS[0][0], ensure_ascii=False)]) + "\n"
    out = io.StringIO()
    assert serve(io.StringIO(lines), out, local_answer()) == 0
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(answers) == 4  # the blank line gets no answer
    assert answers[0]["name"] == "obelisk"
    assert "not JSON" in answers[1]["failure"]
    assert "bad request" in answers[2]["failure"]
    assert answers[3] == {"value": 3}


@pytest.mark.slow
def test_obelisk_adapter_as_a_subprocess() -> None:
    requests = [{"op": "hello"}, ANSWERS[0][0], ANSWERS[5][0]]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    done = subprocess.run(OBELISK_ADAPTER.split(), input=text.encode(), capture_output=True,
                          check=True, timeout=60)
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert answers[0]["ops"] == ["resolve", "check", "run", "agent"]
    assert answers[1] == {"value": 3}
    assert contains(answers[2], ANSWERS[5][1])


@pytest.mark.slow
def test_client_talks_to_obelisk_adapter() -> None:
    with AdapterClient(OBELISK_ADAPTER) as client:
        assert client.supports(Op.RUN) and client.supports(Op.AGENT)
        assert (client.name, client.ops) == ("obelisk",
                                             frozenset({"resolve", "check", "run", "agent"}))
        for request, want in ANSWERS[:6]:
            assert contains(client.ask(request), want)
        assert client.restarts == 0


@pytest.mark.slow
@pytest.mark.parametrize(("ref", "words"), [
    ("†crash", "the adapter exited without answering (exit status 3)"),
    ("†garbage", "the answer is not a line of UTF-8 JSON"),
    ("†array", "a response is a JSON object, got an array"),
    ("†hang", "no answer within 1 s"),
])
def test_a_broken_answer_fails_only_that_request_and_the_adapter_restarts(
        ref: str, words: str) -> None:
    with AdapterClient(script("misbehaving"), timeout=1) as client:
        good = {"op": "resolve", "context": CONTEXT, "ref": "†state.a.0", "instance": None}
        assert client.ask(good) == {"value": 1}
        with pytest.raises(AdapterError) as caught:
            client.ask({**good, "ref": ref})
        message = str(caught.value)
        assert message.startswith("request #3 (resolve): ") and words in message, message
        assert "starts again for the next request" in message
        assert caught.value.restarted
        assert client.ask(good) == {"value": 1}  # started again, and the run goes on
        assert client.restarts == 1


@pytest.mark.slow
def test_a_wrong_shape_fails_the_request_and_keeps_the_process() -> None:
    with AdapterClient(script("misbehaving")) as client:
        good = {"op": "resolve", "context": [], "ref": "†state.a", "instance": None}
        with pytest.raises(AdapterError, match=r"request #2 \(resolve\): the answer has the "
                           r"wrong shape: give exactly one of"):
            client.ask({**good, "ref": "†shape"})
        assert client.ask(good) == {"missing": True}
        assert client.restarts == 0


@pytest.mark.parametrize(("command", "words"), [
    ("", "the adapter command is empty"),
    ("'unbalanced", "cannot split the adapter command"),
    ("/nonexistent/adapter --x", "cannot start the adapter '/nonexistent/adapter --x'"),
])
def test_commands_that_cannot_start(command: str, words: str) -> None:
    with pytest.raises(AdapterError, match=words):
        AdapterClient(command).start()


@pytest.mark.slow
def test_a_bad_hello_is_reported() -> None:
    with pytest.raises(AdapterError, match=r"request #1 \(hello\).*\"protocol\" must be 1"):
        AdapterClient(script("misbehaving", "--bad-hello")).start()


def test_adapter_errors_are_obelisk_errors() -> None:
    assert issubclass(AdapterError, ObeliskError)

"""Approval of destructive calls in ``obelisk mcp-server``'s ``run_plan``: the verdicts
and channels as tables, the rounds of a 2026-07-28 connection on their own, and the
whole thing driven by the SDK's own client on both channels (an elicitation request on a
handshake-era connection, ``InputRequiredResult`` rounds on a 2026-07-28 one)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp_servers import free_port, obelisk_path, stdio_spec

from obelisk.core.errors import ObeliskError
from obelisk.interpreters.outcomes import Approve, Deny
from obelisk.mcp import McpServers
from obelisk.mcp.asking import Ask, Channel, Rounds, channel, verdict
from obelisk.mcp.serve import build_server

APPROVED = types.ElicitResult(action="accept", content={"approve": True})


@pytest.mark.parametrize(("answer", "expected"), [
    (APPROVED, Approve()),
    (types.ElicitResult(action="accept", content={"approve": False}),
     Deny("the user did not approve the call (accept)")),
    (types.ElicitResult(action="accept", content={"approve": "yes"}),
     Deny("the user did not approve the call (accept)")),
    (types.ElicitResult(action="accept"), Deny("the user did not approve the call (accept)")),
    (types.ElicitResult(action="decline"), Deny("the user did not approve the call (decline)")),
    (types.ElicitResult(action="cancel"), Deny("the user did not approve the call (cancel)")),
    (types.ListRootsResult(roots=[]), Deny("the client answered the approval question with a "
                                           "ListRootsResult, not an elicitation result")),
])
def test_only_an_accepted_yes_approves(answer: object, expected: object) -> None:
    assert verdict(answer) == expected


_FORM = types.ElicitationCapability(form=types.FormElicitationCapability())
_URL = types.ElicitationCapability(url=types.UrlElicitationCapability())


@pytest.mark.parametrize(("elicitation", "version", "expected"), [
    (_FORM, "2025-11-25", Channel.REQUEST),
    (types.ElicitationCapability(), "2025-06-18", Channel.REQUEST),  # bare {} is form
    (_FORM, "2026-07-28", Channel.ROUNDS),
    (types.ElicitationCapability(), "2026-07-28", Channel.ROUNDS),
    (_URL, "2026-07-28", None),  # URL mode only: no form to ask with
    (None, "2026-07-28", None),
    (None, "2025-11-25", None),
])
def test_the_channel_follows_the_version_and_the_capability(
        elicitation: types.ElicitationCapability | None, version: str,
        expected: Channel | None) -> None:
    capabilities = types.ClientCapabilities(elicitation=elicitation)
    ctx = SimpleNamespace(session=SimpleNamespace(client_capabilities=capabilities),
                          protocol_version=version)
    assert channel(ctx) is expected


# -- the rounds on their own -----------------------------------------------------------------


def _params(state: str | None = None, answers: dict[str, Any] | None = None,
            calls: list[Any] | None = None) -> types.CallToolRequestParams:
    return types.CallToolRequestParams(name="run_plan", arguments={"calls": calls or [1]},
                                       request_state=state, input_responses=answers)


class _Plan:
    """A stand-in for run_plan: asks about each name in turn, records the verdicts."""

    def __init__(self, *names: str, work: float = 0.0) -> None:
        self.names, self.work = names, work
        self.starts = 0
        self.verdicts: list[Approve | Deny] = []
        self.cancelled = False

    async def __call__(self, ask: Ask) -> types.CallToolResult:
        self.starts += 1
        try:
            for name in self.names:
                self.verdicts.append(await ask({"_tool": "wipe", "name": name}))
                await asyncio.sleep(self.work)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return types.CallToolResult(content=[], structured_content={"done": len(self.names)})


def _asked(reply: object) -> tuple[str, str, str]:
    assert isinstance(reply, types.InputRequiredResult), reply
    assert reply.input_requests is not None and reply.request_state is not None
    ((key, request),) = reply.input_requests.items()
    assert isinstance(request, types.ElicitRequest)
    return key, request.params.message, reply.request_state


def test_one_run_spans_the_rounds_and_asks_one_question_each() -> None:
    async def main() -> None:
        rounds, plan = Rounds(), _Plan("a", "b")
        key, message, state = _asked(await rounds.call(_params(), plan))
        assert '{"name": "a"}' in message
        again = _asked(await rounds.call(_params(state), plan))  # no answer: asked again
        assert again == (key, message, state)
        stale = _asked(await rounds.call(_params(state, {"approve-9": APPROVED}), plan))
        assert stale[0] == key  # an answer to another question is not this one's
        second, message, state = _asked(await rounds.call(_params(state, {key: APPROVED}),
                                                          plan))
        assert second != key and '{"name": "b"}' in message
        done = await rounds.call(_params(state, {second: types.ElicitResult(
            action="decline")}), plan)
        assert isinstance(done, types.CallToolResult) and done.structured_content == {"done": 2}
        assert plan.starts == 1
        assert plan.verdicts == [Approve(), Deny("the user did not approve the call (decline)")]
        with pytest.raises(ObeliskError, match="names no run waiting"):
            await rounds.call(_params(state, {second: APPROVED}), plan)  # delivered: gone

    asyncio.run(main())


def test_a_run_that_asks_nothing_answers_in_the_first_round() -> None:
    async def main() -> object:
        return await Rounds().call(_params(), _Plan())

    done = asyncio.run(main())
    assert isinstance(done, types.CallToolResult) and done.structured_content == {"done": 0}


def test_a_question_left_unanswered_is_a_refusal_and_the_run_goes_on() -> None:
    async def main() -> None:
        rounds, plan = Rounds(timeout=0.05, keep=60), _Plan("a")
        _, _, state = _asked(await rounds.call(_params(), plan))
        while not plan.verdicts:
            await asyncio.sleep(0.01)
        done = await rounds.call(_params(state, {"approve-1": APPROVED}), plan)  # too late
        assert isinstance(done, types.CallToolResult)
        assert plan.verdicts == [Deny("approval was asked and no answer came within 0.05 s")]

    asyncio.run(main())


def test_a_request_state_is_good_only_for_its_run_and_its_calls() -> None:
    async def main() -> None:
        rounds, plan = Rounds(), _Plan("a")
        _, _, state = _asked(await rounds.call(_params(), plan))
        with pytest.raises(ObeliskError, match="call run_plan again without requestState"):
            await rounds.call(_params("forged", {"approve-1": APPROVED}), plan)
        with pytest.raises(ObeliskError, match="the calls differ"):
            await rounds.call(_params(state, {"approve-1": APPROVED}, calls=[2]), plan)
        assert plan.verdicts == []  # neither answer reached the run
        await rounds.aclose()
        assert plan.cancelled

    asyncio.run(main())


def test_a_cancelled_round_cancels_its_run() -> None:
    async def main() -> None:
        rounds, plan = Rounds(), _Plan("a", work=10)
        _, _, state = _asked(await rounds.call(_params(), plan))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(rounds.call(_params(state, {"approve-1": APPROVED}), plan),
                                   0.1)
        await asyncio.sleep(0)
        assert plan.verdicts == [Approve()] and plan.cancelled

    asyncio.run(main())


# -- the SDK's own client against obelisk mcp-server ------------------------------------------

ANSWERS = [APPROVED, types.ElicitResult(action="decline"), types.ElicitResult(action="cancel")]


def _wipe(name: str, trace: pathlib.Path) -> dict[str, Any]:
    return {"calls": [{"_tool": "t.wipe", "name": name, "trace": str(trace),
                       "_outputPath": "†state.w"}], "output": "†state.w.result"}


def _obelisk(*extra: str) -> list[str]:
    return [sys.executable, "-m", "obelisk", "mcp-server", "--mcp", stdio_spec(), *extra]


@pytest.fixture
def http_obelisk() -> Iterator[str]:
    """``obelisk mcp-server --http`` on a free port: its URL once it listens."""
    port = free_port()
    process = subprocess.Popen(_obelisk("--http", f"127.0.0.1:{port}"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": obelisk_path()})
    try:
        deadline = time.monotonic() + 30
        while not _listens(port):
            assert process.poll() is None, "obelisk mcp-server --http exited"
            assert time.monotonic() < deadline, "obelisk mcp-server --http did not listen"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _listens(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
@pytest.mark.parametrize(("transport", "mode", "version"), [
    ("stdio", "legacy", "2025-11-25"), ("stdio", "auto", "2026-07-28"),
    ("http", "legacy", "2025-11-25"), ("http", "auto", "2026-07-28")])
def test_destructive_calls_are_put_to_the_user_on_either_channel(
        transport: str, mode: str, version: str, tmp_path: pathlib.Path,
        request: pytest.FixtureRequest) -> None:
    trace = tmp_path / "trace.txt"
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params.message)
        return ANSWERS[len(asked) - 1]

    target: Any = (request.getfixturevalue("http_obelisk") if transport == "http" else
                   StdioServerParameters(command=_obelisk()[0], args=_obelisk()[1:],
                                         env={"PYTHONPATH": obelisk_path()}))

    async def main() -> tuple[str, list[types.CallToolResult]]:
        async with Client(target, elicitation_callback=elicit, mode=mode) as client:
            return client.protocol_version, [
                await client.call_tool("run_plan", _wipe(name, trace))
                for name in ("approved", "declined", "cancelled")]

    negotiated, results = anyio.run(main)
    assert negotiated == version
    assert trace.read_text(encoding="utf-8") == "approved\n"  # only the approved call ran
    assert len(asked) == 3 and all("'t.wipe'" in m for m in asked)
    approved, declined, cancelled = (r.structured_content for r in results)
    assert approved is not None and declined is not None and cancelled is not None
    assert approved["output"] == "wiped approved" and approved["errors"] == []
    for denied, action in ((declined, "decline"), (cancelled, "cancel")):
        (error,) = denied["errors"]
        assert error["error"] == {"type": "Denied",
                                  "message": f"the user did not approve the call ({action})"}


@pytest.mark.slow
def test_a_plan_over_rounds_runs_each_call_once() -> None:
    # tick counts its calls in the downstream server: a plan started again at each round
    # would call it again (3 rounds here: two questions, then the result).
    plan = {"calls": [
        {"_tool": "t.tick", "_outputPath": "†state.first"},
        {"_tool": "t.wipe", "name": "a", "_outputPath": "†state.a"},
        {"_tool": "t.wipe", "name": "†state.a.result", "_outputPath": "†state.b"},
        {"_tool": "t.tick", "after": "†state.b.result", "_outputPath": "†state.second"}],
        "output": {"first": "†state.first.result", "b": "†state.b.result",
                   "second": "†state.second.result"}}
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return APPROVED

    async def main() -> types.CallToolResult:
        server = build_server(McpServers([stdio_spec()]))
        async with Client(server, elicitation_callback=elicit) as client:
            assert client.protocol_version == "2026-07-28"
            return await client.call_tool("run_plan", plan)

    result = anyio.run(main)
    assert result.structured_content is not None and not result.is_error, result
    assert result.structured_content["output"] == {"first": 1, "b": "wiped wiped a",
                                                   "second": 2}
    assert len(asked) == 2



@pytest.mark.slow
def test_a_client_cancelling_a_round_cancels_the_run(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "cancelled"  # the downstream sleep writes it when cancelled
    plan = {"calls": [{"_tool": "t.wipe", "name": "a", "_outputPath": "†state.a"},
                      {"_tool": "t.sleep", "ms": 30000, "marker": str(marker)}]}

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return APPROVED

    async def main() -> None:
        async with Client(build_server(McpServers([stdio_spec()])),
                          elicitation_callback=elicit) as client:
            first = await client.session.call_tool("run_plan", plan, allow_input_required=True)
            key, _, state = _asked(first)
            with anyio.move_on_after(0.5):  # the round waits for the sleep: given up
                await client.session.call_tool(
                    "run_plan", plan, allow_input_required=True, request_state=state,
                    input_responses={key: APPROVED})
                raise AssertionError("the round ended before the sleep")
            with anyio.fail_after(20):
                while not marker.exists():
                    await anyio.sleep(0.05)

    anyio.run(main)

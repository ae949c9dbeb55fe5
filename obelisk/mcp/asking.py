"""Asking an MCP client's user whether a destructive call may run (``run_plan`` of
``obelisk mcp-server``), by MCP elicitation, over whichever channel the connection has.

- A handshake-era connection (up to the 2025-11-25 revision, what desktop clients speak)
  carries server-to-client requests: the question is an ``elicitation/create`` request
  sent while ``run_plan`` runs (:func:`by_request`).
- A 2026-07-28 connection carries none. There ``run_plan`` answers "input required" (an
  ``InputRequiredResult``) whose embedded elicitation request is the question; the client
  asks its user and calls ``run_plan`` again with the answer and the ``requestState`` it
  was given. The run waits for that answer in :class:`Rounds`: it is one run, started by
  the first call and continued by the next ones, so no call of the plan runs twice.

Which one a request gets is :func:`channel`'s choice; a client that declares no form
elicitation cannot be asked at all (None). Either way a question that gets no answer
within the timeout is a refusal, and the run goes on without that call.
"""

from __future__ import annotations

import asyncio
import enum
import json
import secrets
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

import mcp_types as types
from attrs import frozen
from mcp.shared.exceptions import NoBackChannelError
from mcp_types.version import is_version_at_least

from obelisk.core.errors import ObeliskError
from obelisk.interpreters.outcomes import Approve, Deny

__all__ = ["DEFAULT_APPROVAL_TIMEOUT", "Ask", "Channel", "Rounds", "by_request", "channel",
           "question", "verdict"]

#: Seconds a question may wait for the user's answer before the call is refused.
DEFAULT_APPROVAL_TIMEOUT = 600.0

#: The first revision whose ``tools/call`` asks through ``InputRequiredResult``.
_ROUNDS_VERSION = "2026-07-28"

Ask = Callable[[dict[str, Any]], Awaitable[Approve | Deny]]
"""Asks the user about one call (its resolved parameters): the approval hook's ``ask``."""

Answer = Callable[[Ask], Coroutine[Any, Any, types.CallToolResult]]
"""Runs ``run_plan`` to its result, asking the user with the ``Ask`` it is given."""


class Channel(enum.Enum):
    """How a connection's client can be asked."""

    REQUEST = "an elicitation/create request while the call runs (handshake era)"
    ROUNDS = "an InputRequiredResult, answered by calling again (2026-07-28)"


def channel(ctx: Any) -> Channel | None:
    """The channel of this request's connection, or None when its client declares no
    form elicitation (a bare ``elicitation: {}`` counts as form, as the spec says)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return None
    if is_version_at_least(ctx.protocol_version, _ROUNDS_VERSION):
        return Channel.ROUNDS
    return Channel.REQUEST


def question(call: dict[str, Any]) -> types.ElicitRequestFormParams:
    """The question put to the user about ``call``: one yes/no field, ``approve``."""
    shown = json.dumps({k: v for k, v in call.items() if not k.startswith("_")},
                       ensure_ascii=False)
    return types.ElicitRequestFormParams(
        message=f"Run the destructive tool {call.get('_tool')!r} with {shown}?",
        requested_schema={"type": "object", "properties": {"approve": {
            "type": "boolean", "description": "true to run the call"}},
            "required": ["approve"]})


def verdict(answer: object) -> Approve | Deny:
    """The approval hook's verdict for the client's answer: only an accepted form with
    ``approve: true`` runs the call."""
    if not isinstance(answer, types.ElicitResult):
        return Deny(f"the client answered the approval question with a "
                    f"{type(answer).__name__}, not an elicitation result")
    if answer.action == "accept" and (answer.content or {}).get("approve") is True:
        return Approve()
    return Deny(f"the user did not approve the call ({answer.action})")


def by_request(ctx: Any, timeout: float = DEFAULT_APPROVAL_TIMEOUT) -> Ask:
    """Asks with an ``elicitation/create`` request related to this ``tools/call``."""

    async def ask(call: dict[str, Any]) -> Approve | Deny:
        form = question(call)
        try:
            answer = await asyncio.wait_for(ctx.session.elicit_form(
                form.message, form.requested_schema, related_request_id=ctx.request_id),
                timeout)
        except NoBackChannelError:
            return Deny("this destructive call needs approval, and this client connection "
                        "cannot be asked (it carries no server-to-client requests): start "
                        "obelisk mcp-server with --allow-destructive to allow destructive "
                        "tools")
        except asyncio.TimeoutError:
            return Deny(_unanswered(timeout))
        except Exception as exc:  # noqa: BLE001 - the client failed to answer: refused
            return Deny(f"approval was asked by elicitation and not given: {exc}")
        return verdict(answer)

    return ask


def _unanswered(timeout: float) -> str:
    return f"approval was asked and no answer came within {timeout:g} s"


@frozen
class _Question:
    """The question a waiting run asked, under the key its answer must come back with."""

    key: str
    form: types.ElicitRequestFormParams
    answer: asyncio.Future[Approve | Deny]


class _Run:
    """One ``run_plan`` that spans rounds: its task, and the question it waits on.

    Invariant: at most one question is open at a time (the interpreter asks about one
    call at a time), and ``news`` is set whenever a new one is asked.
    """

    def __init__(self, token: str, arguments: Mapping[str, Any], timeout: float) -> None:
        self.token, self.arguments, self.timeout = token, arguments, timeout
        self.asked: _Question | None = None
        self.count = 0
        self.news = asyncio.Event()
        self.task: asyncio.Task[types.CallToolResult] | None = None

    async def ask(self, call: dict[str, Any]) -> Approve | Deny:
        self.count += 1
        future: asyncio.Future[Approve | Deny] = asyncio.get_running_loop().create_future()
        self.asked = _Question(f"approve-{self.count}", question(call), future)
        self.news.set()
        try:
            return await asyncio.wait_for(future, self.timeout)
        except asyncio.TimeoutError:
            return Deny(_unanswered(self.timeout))
        finally:
            self.asked = None

    def answer(self, responses: Mapping[str, object]) -> None:
        """Give the open question its answer, when ``responses`` carries it."""
        asked = self.asked
        if asked is not None and not asked.answer.done() and asked.key in responses:
            asked.answer.set_result(verdict(responses[asked.key]))

    async def next(self) -> types.CallToolResult | types.InputRequiredResult:
        """The run's result, or the next question it asks, whichever comes first."""
        assert self.task is not None
        while not self.task.done():
            asked = self.asked
            if asked is not None and not asked.answer.done():
                return types.InputRequiredResult(
                    input_requests={asked.key: types.ElicitRequest(params=asked.form)},
                    request_state=self.token)
            self.news.clear()
            news = asyncio.ensure_future(self.news.wait())
            try:
                await asyncio.wait((self.task, news), return_when=asyncio.FIRST_COMPLETED)
            finally:
                news.cancel()
        return self.task.result()


class Rounds:
    """The ``run_plan`` calls waiting for their client's answer (2026-07-28 connections).

    A run is found again by its ``requestState``: a random token, only good for a call
    with the same arguments. A question waits ``timeout`` seconds for its answer; a
    finished run whose client has not come back for its result is forgotten ``keep``
    seconds later (``timeout`` by default); :meth:`aclose` cancels the runs still going.
    """

    def __init__(self, timeout: float = DEFAULT_APPROVAL_TIMEOUT,
                 keep: float | None = None) -> None:
        self.timeout = timeout
        self.keep = timeout if keep is None else keep
        self._runs: dict[str, _Run] = {}

    async def call(self, params: types.CallToolRequestParams, answer: Answer
                   ) -> types.CallToolResult | types.InputRequiredResult:
        """One round of ``run_plan``: the first starts the run, the next ones bring the
        answer to its question. Cancelling a round cancels the run.

        Raises ObeliskError for a ``requestState`` of no waiting run (or other arguments).
        """
        arguments = dict(params.arguments or {})
        token = params.request_state
        if token is None:
            run = self._start(arguments, answer)
        else:
            found = self._runs.get(token)
            if found is None or found.arguments != arguments:
                raise ObeliskError(
                    "this run_plan call's requestState names no run waiting for an answer "
                    "(it expired, the server restarted, or the calls differ from the first "
                    "call's): call run_plan again without requestState to start the plan "
                    "anew")
            run = found
            run.answer(params.input_responses or {})
        try:
            reply = await run.next()
        except BaseException:
            self._forget(run.token)
            raise
        if isinstance(reply, types.CallToolResult):
            self._runs.pop(run.token, None)
        return reply

    def _start(self, arguments: Mapping[str, Any], answer: Answer) -> _Run:
        run = _Run(secrets.token_urlsafe(24), arguments, self.timeout)
        loop = asyncio.get_running_loop()
        run.task = loop.create_task(answer(run.ask))
        run.task.add_done_callback(
            lambda _: loop.call_later(self.keep, self._runs.pop, run.token, None))
        self._runs[run.token] = run
        return run

    def _forget(self, token: str) -> None:
        run = self._runs.pop(token, None)
        if run is not None and run.task is not None:
            run.task.cancel()

    async def aclose(self) -> None:
        """Cancel every run still going, and wait for them to end."""
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        self._runs.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

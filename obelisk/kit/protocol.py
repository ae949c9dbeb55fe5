"""The adapter protocol: the requests obelisk sends an implementation and the answers it
accepts, as JSON Lines over the implementation's standard input and output.

One request per line, one response per line, in order. ``hello`` comes first and says
which of the judged ops (``resolve``, ``check``, ``run``, ``agent``) the implementation
answers. Any op but ``hello`` may also be answered ``{"failure": M}`` when the
implementation cannot answer the request at all (invalid mocks, a tool schema it cannot
compile); the vector or case in flight then fails with ``M``.

:func:`request_problems` and :func:`response_problems` are pure: a JSON value in, a list
of what is wrong with its shape out (empty when it is well formed).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any

from obelisk import ObeliskError

#: The protocol version a ``hello`` answer must carry.
PROTOCOL_VERSION = 1


class Op(str, enum.Enum):
    """The requests of the protocol."""

    HELLO = "hello"
    RESOLVE = "resolve"
    CHECK = "check"
    RUN = "run"
    AGENT = "agent"


#: The ops a vector can need, in the order a ``hello`` lists them.
JUDGED_OPS = (Op.RESOLVE, Op.CHECK, Op.RUN, Op.AGENT)
OUTCOMES = frozenset({"executed", "skipped", "failed"})
SEVERITIES = frozenset({"error", "warning", "info"})
AGENT_STATUSES = frozenset({"completed", "max_ticks", "stalled", "failed"})
RESOLVE_ERRORS = frozenset({"syntax", "write"})


class ProtocolError(ObeliskError):
    """A request or a response that is not of the protocol's shape; ``problems`` lists why."""

    def __init__(self, what: str, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(f"{what}: " + "; ".join(problems))


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _type_name(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             type(None): "null", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


# -- requests (what an adapter receives) -------------------------------------------------


def _context_problems(request: Mapping[str, Any]) -> list[str]:
    if not isinstance(request.get("context"), list):
        return ['"context" must be an array of messages']
    return []


def _plan_problems(request: Mapping[str, Any]) -> list[str]:
    problems = _context_problems(request)
    if request.get("tools") is not None and not isinstance(request["tools"], list):
        problems.append('"tools" must be an array of tool schemas or null')
    if not isinstance(request.get("plan"), list):
        problems.append('"plan" must be an array of calls')
    if not isinstance(request.get("instances", False), bool):
        problems.append('"instances" must be true or false')
    return problems


def _resolve_request(request: Mapping[str, Any]) -> list[str]:
    problems = _context_problems(request)
    if not isinstance(request.get("ref"), str):
        problems.append('"ref" must be a string')
    if request.get("instance") is not None and not isinstance(request["instance"], str):
        problems.append('"instance" must be a string or null')
    return problems


def _run_request(request: Mapping[str, Any]) -> list[str]:
    problems = _plan_problems(request)
    if not isinstance(request.get("mocks", {}), Mapping):
        problems.append('"mocks" must be an object of tool name -> mock')
    return problems


def _agent_request(request: Mapping[str, Any]) -> list[str]:
    problems = _context_problems(request)
    if not isinstance(request.get("solutions"), list):
        problems.append('"solutions" must be an array')
    problems.extend(review_problems(request.get("reviews", [])))
    return problems


def review_problems(reviews: Any) -> list[str]:
    """Why ``reviews`` (a lazy-mode reviewer's verdicts, in order) is not an array of
    ``"approve"``, ``{"reject": reason}`` or ``{"edit": [calls]}`` (empty when it is)."""
    if not isinstance(reviews, list):
        return ['"reviews" must be an array']
    problems = []
    for number, review in enumerate(reviews):
        if review == "approve" or (isinstance(review, Mapping) and len(review) == 1 and (
                isinstance(review.get("reject"), str) or isinstance(review.get("edit"), list))):
            continue
        problems.append(f'reviews[{number}] must be "approve", {{"reject": "reason"}} or '
                        '{"edit": [calls]}')
    return problems


_REQUESTS: dict[Op, Callable[[Mapping[str, Any]], list[str]]] = {
    Op.HELLO: lambda request: [],
    Op.RESOLVE: _resolve_request,
    Op.CHECK: _plan_problems,
    Op.RUN: _run_request,
    Op.AGENT: _agent_request,
}


def request_problems(request: Any) -> list[str]:
    """Why ``request`` is not a well-formed protocol request (empty when it is)."""
    if not isinstance(request, Mapping):
        return [f"a request is a JSON object, got {_type_name(request)}"]
    try:
        op = Op(request.get("op"))
    except ValueError:
        return [f'"op" must be one of {", ".join(o.value for o in Op)}, '
                f"got {request.get('op')!r}"]
    return _REQUESTS[op](request)


# -- responses (what obelisk accepts back) ------------------------------------------------


def _hello(response: Mapping[str, Any]) -> list[str]:
    problems = []
    if response.get("protocol") != PROTOCOL_VERSION:
        problems.append(f'"protocol" must be {PROTOCOL_VERSION}, got {response.get("protocol")!r}')
    for key in ("name", "version"):
        if not isinstance(response.get(key), str):
            problems.append(f'"{key}" must be a string')
    ops = response.get("ops")
    known = {o.value for o in JUDGED_OPS}
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
        problems.append('"ops" must be an array of op names')
    else:
        problems.extend(f'"ops" lists {o!r}, which is not one of {sorted(known)}'
                        for o in ops if o not in known)
    return problems


def _resolve(response: Mapping[str, Any]) -> list[str]:
    given = [k for k in ("value", "missing", "error") if k in response]
    if len(given) != 1:
        return [f'give exactly one of "value", "missing", "error" (got {given or "none"})']
    if given == ["missing"] and response["missing"] is not True:
        return ['"missing" must be true']
    if given == ["error"]:
        if response["error"] not in RESOLVE_ERRORS:
            return [f'"error" must be "syntax" or "write", got {response["error"]!r}']
        if not isinstance(response.get("message", ""), str):
            return ['"message" must be a string']
    return []


def _diagnostics(value: Any, where: str) -> list[str]:
    if not isinstance(value, list):
        return [f'"{where}" must be an array of diagnostics']
    problems = []
    for number, d in enumerate(value):
        at = f"{where}[{number}]"
        if not isinstance(d, Mapping):
            problems.append(f"{at} must be an object")
            continue
        if not isinstance(d.get("code"), str):
            problems.append(f'{at}.code must be a string')
        if d.get("severity") not in SEVERITIES:
            problems.append(f'{at}.severity must be one of {sorted(SEVERITIES)}')
        if d.get("call") is not None and not _is_index(d["call"]):
            problems.append(f"{at}.call must be a call index or null")
        if d.get("pointer") is not None and not isinstance(d["pointer"], str):
            problems.append(f"{at}.pointer must be a JSON Pointer string or null")
        if "calls" in d and not (isinstance(d["calls"], list) and all(map(_is_index, d["calls"]))):
            problems.append(f"{at}.calls must be an array of call indexes")
    return problems


def _check(response: Mapping[str, Any]) -> list[str]:
    return _diagnostics(response.get("diagnostics"), "diagnostics")


def _views(value: Any) -> list[str]:
    if not isinstance(value, Mapping):
        return ['"views" must be an object of kind -> {"global" or instance id -> value}']
    return [f'"views.{kind}" must be an object of "global" or instance id -> value'
            for kind, per in value.items() if not isinstance(per, Mapping)]


def _run(response: Mapping[str, Any]) -> list[str]:
    problems = []
    if not isinstance(response.get("status"), str):
        problems.append('"status" must be a string')
    if "diagnostics" in response:
        problems.extend(_diagnostics(response["diagnostics"], "diagnostics"))
    calls = response.get("calls")
    if not isinstance(calls, list):
        problems.append('"calls" must be an array')
    else:
        for number, c in enumerate(calls):
            at = f"calls[{number}]"
            if not isinstance(c, Mapping):
                problems.append(f"{at} must be an object")
                continue
            if not _is_index(c.get("call")):
                problems.append(f"{at}.call must be a call index")
            if c.get("instance") is not None and not isinstance(c["instance"], str):
                problems.append(f"{at}.instance must be a string or null")
            if c.get("outcome") not in OUTCOMES:
                problems.append(f"{at}.outcome must be one of {sorted(OUTCOMES)}, "
                                f"got {c.get('outcome')!r}")
            if c.get("error") is not None and not isinstance(c["error"], str):
                problems.append(f"{at}.error must be an error type (a string)")
    if not isinstance(response.get("errors", []), list):
        problems.append('"errors" must be an array of error messages')
    problems.extend(_views(response.get("views")))
    return problems


def _agent(response: Mapping[str, Any]) -> list[str]:
    problems = []
    if response.get("status") not in AGENT_STATUSES:
        problems.append(f'"status" must be one of {sorted(AGENT_STATUSES)}')
    if not _is_index(response.get("ticks")):
        problems.append('"ticks" must be a whole number')
    if "output" not in response:
        problems.append('"output" is required (null when there is none)')
    problems.extend(_views(response.get("views")))
    errors = response.get("errors")
    if not isinstance(errors, list) or not all(
            isinstance(e, Mapping) and _is_index(e.get("tick")) and isinstance(e.get("type"), str)
            for e in errors):
        problems.append('"errors" must be an array of {"tick", "call"?, "instance"?, "type"}')
    return problems


_RESPONSES: dict[Op, Callable[[Mapping[str, Any]], list[str]]] = {
    Op.HELLO: _hello, Op.RESOLVE: _resolve, Op.CHECK: _check, Op.RUN: _run, Op.AGENT: _agent,
}


def response_problems(op: Op, response: Any) -> list[str]:
    """Why ``response`` is not a well-formed answer to an ``op`` request (empty when it is)."""
    if not isinstance(response, Mapping):
        return [f"a response is a JSON object, got {_type_name(response)}"]
    if op is not Op.HELLO and "failure" in response:
        return [] if isinstance(response["failure"], str) else ['"failure" must be a string']
    return _RESPONSES[op](response)


def failure_of(response: Mapping[str, Any]) -> str | None:
    """The message of a ``{"failure": M}`` answer, else None."""
    failure = response.get("failure")
    return failure if isinstance(failure, str) else None

"""Judging answers against a vector's expectations: resolve cases, a plan's diagnostics
and run, an agent's result. The answers come from any :class:`Implementation` (obelisk in
process, or an adapter), so the same rules judge obelisk and every other implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from obelisk import Context
from obelisk.jsonio import InputError, dumps
from obelisk.kit import local
from obelisk.kit.protocol import Op, failure_of, review_problems

#: What a ``{"failure": ""}`` answer fails with (an empty problem would read as nothing).
_NO_MESSAGE = 'the implementation answered {"failure": ""}: no answer, and no message'
CASE_FIELDS = frozenset({"ref", "instance", "value", "missing", "error"})
CASE_ERRORS = frozenset({"syntax", "write"})


class Implementation(Protocol):
    """What the runner judges: the ops it answers, and its answer to one request.

    ``ask`` returns the protocol response (possibly ``{"failure": M}``) and raises an
    :class:`~obelisk.ObeliskError` when no answer could be had (a crashed adapter).
    """

    def supports(self, op: Op) -> bool:
        """Whether the implementation answers ``op`` requests."""

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The implementation's response to ``request``."""


def case_problems(case: Any) -> list[str]:
    """Why a resolve case is not of the vector format's shape (empty when it is)."""
    if not isinstance(case, Mapping):
        return ["a case must be a JSON object"]
    unknown = [k for k in case if k not in CASE_FIELDS]
    if unknown:
        return [f"unknown field {k!r} (fields: {', '.join(sorted(CASE_FIELDS))})" for k in unknown]
    ref = case.get("ref")
    if not isinstance(ref, str):
        return ['"ref" must be a string']
    given = [k for k in ("value", "missing", "error") if k in case]
    if len(given) != 1:
        return [f"{ref}: give exactly one of value, missing, error (got {given or 'none'})"]
    if "missing" in case and case["missing"] is not True:
        return [f'{ref}: "missing" must be true']
    if "error" in case and case["error"] not in CASE_ERRORS:
        return [f'{ref}: "error" must be one of {sorted(CASE_ERRORS)}']
    instance = case.get("instance")
    if instance is not None and not isinstance(instance, str):
        return [f'{ref}: "instance" must be a string']
    return []


def judge_case(case: Mapping[str, Any], response: Mapping[str, Any]) -> list[str]:
    """How a well-formed resolve case fails on a ``resolve`` answer (empty when it holds)."""
    ref, instance = case["ref"], case.get("instance")
    failure = failure_of(response)
    if failure is not None:
        return [f"{ref}: no answer: {failure or _NO_MESSAGE}"]
    detail = ""
    got: tuple[str, Any]
    if "error" in response:
        got = ("error", response["error"])
        detail = str(response.get("message", ""))
    elif "missing" in response:
        got = ("missing", True)
    else:
        got = ("value", response["value"])
    given = next(k for k in ("value", "missing", "error") if k in case)
    want = (given, case[given])
    if got[0] == want[0] and json_equal(got[1], want[1]):
        return []
    return [f"{ref}{' for instance ' + instance if instance else ''}: "
            f"expected {_show(want)}, got {_show(got)}" + (f"\n{detail}" if detail else "")]


def check_case(case: Any, context: Context) -> list[str]:
    """How a resolve case fails against ``context`` with obelisk's resolver (empty when
    it holds)."""
    bad = case_problems(case)
    if bad:
        return bad
    return judge_case(case, local.resolve_in(context, case["ref"], case.get("instance")))


def context_of_views(views: Mapping[str, Any]) -> Context:
    """A context whose reads give exactly ``views`` (a run answer's final values).

    Each kind's global value is set at the root, and each instance's value is set at the
    root for that instance, so instance reads see that value and nothing of the global
    one. A view written ``{"error": M}`` stands for a kind that cannot be read: a write
    that cannot be applied is put in its place, so reading it is a write error.
    """
    messages: list[Any] = []
    for kind, per in views.items():
        if not isinstance(per, Mapping):
            continue
        for layer, value in per.items():
            message: dict[str, Any] = {"type": "data", "kind": kind, "data": value,
                                       "_outputMethod": "set"}
            if layer != "global":
                message["_instance"] = layer
            messages.append(message)
            if isinstance(value, Mapping) and set(value) == {"error"} and isinstance(
                    value["error"], str):
                # Pushing onto an object cannot be applied: reads of this layer fail.
                messages.append({**message, "data": 0, "_outputMethod": "push"})
    return Context.of(messages)


RUN_FIELDS = ("values", "executed", "skipped", "failed", "errors")
EXPECT_FIELDS = frozenset({"diagnostics", "only_listed_errors", "not_reported", *RUN_FIELDS})
MATCH_FIELDS = frozenset({"code", "severity", "call", "calls", "pointer"})


def _diagnostic_problems(expect: Mapping[str, Any],
                         found: list[Mapping[str, Any]]) -> list[str]:
    """How the diagnostics ``found`` fail ``expect``: a listed one missing, one matching
    ``not_reported``, an error not listed (unless ``only_listed_errors`` is false)."""
    problems: list[str] = []
    for matcher in expect.get("diagnostics", []):
        bad = _bad_matcher(matcher)
        if bad:
            problems.append(f"expect.diagnostics: {bad}")
        elif not any(_matches(matcher, d) for d in found):
            problems.append(f"expected diagnostic {dumps(matcher, indent=None)} was not reported"
                            + _found_text(found))
    for matcher in expect.get("not_reported", []):
        bad = _bad_matcher(matcher)
        if bad:
            problems.append(f"expect.not_reported: {bad}")
        for d in found:
            if not bad and _matches(matcher, d):
                problems.append(f"diagnostic {_described(d)} matches not_reported "
                                f"{dumps(matcher, indent=None)}: {d.get('message', '')}")
    if expect.get("only_listed_errors", True):
        listed = expect.get("diagnostics", [])
        for d in found:
            if d["severity"] == "error" and not any(_matches(m, d) for m in listed
                                                     if not _bad_matcher(m)):
                problems.append(f"unexpected error {_described(d)}: {d.get('message', '')}")
    return problems


def check_plan(vector: Mapping[str, Any], implementation: Implementation) -> list[str]:
    """How a plan vector fails: its diagnostics, then (when it runs) its dry run, judged
    on the implementation's ``check`` or ``run`` answer."""
    from obelisk.planfile import plan_file_of

    expect = vector.get("expect")
    if not isinstance(expect, Mapping):
        return ['a vector with "plan" needs an "expect" object']
    unknown = [k for k in expect if k not in EXPECT_FIELDS]
    if unknown:
        return [f"expect: unknown field {k!r} (fields: {', '.join(sorted(EXPECT_FIELDS))})"
                for k in unknown]
    shape = _expect_shape_problems(expect)
    if shape:
        return shape
    try:
        pf = plan_file_of({k: v for k, v in vector.items()
                           if k not in ("cases", "expect")}, str(vector.get("id")))
    except InputError as exc:
        return [f"the plan cannot be compiled: {exc}"]
    wants_run = any(k in expect for k in RUN_FIELDS)
    request: dict[str, Any] = {
        "op": "run" if wants_run else "check", "context": pf.context,
        "tools": vector.get("tools"), "plan": pf.plan, "instances": pf.instances}
    if wants_run:
        request["mocks"] = pf.mocks
    response = implementation.ask(request)
    failure = failure_of(response)
    if failure is not None:
        return [failure or _NO_MESSAGE]
    found: list[Mapping[str, Any]] = list(response.get("diagnostics", []))
    problems = _diagnostic_problems(expect, found)
    if not wants_run:
        return problems
    if any(d["severity"] == "error" for d in found) or response.get("status") == "invalid":
        return problems + ["the vector expects a run, but the plan has errors and cannot run"]
    problems.extend(judge_run(expect, response))
    return problems


def judge_run(expect: Mapping[str, Any], response: Mapping[str, Any]) -> list[str]:
    """How a ``run`` answer fails the run fields of ``expect`` (values, executed, skipped,
    failed, errors)."""
    problems: list[str] = []
    if "values" in expect:
        final = context_of_views(response["views"])
        for number, case in enumerate(expect["values"]):
            problems.extend(f"values[{number}]: {p}" for p in check_case(case, final))
    calls = response["calls"]

    def ident(call: Mapping[str, Any]) -> Any:
        return call["call"] if call.get("instance") is None else [call["call"], call["instance"]]
    for key in ("executed", "skipped", "failed"):
        if key in expect:
            want = sorted(map(_key, expect[key]))
            got = sorted(_key(ident(c)) for c in calls if c["outcome"] == key)
            if want != got:
                problems.append(f"{key}: expected {_ids(want)}, got {_ids(got)}")
    if "errors" in expect:
        want_errors = sorted(
            (_key(e.get("call") if "instance" not in e else [e["call"], e["instance"]]),
             str(e.get("instance")), e.get("type")) for e in expect["errors"])
        got_errors = sorted((_key(ident(c)), str(c.get("instance")), c["error"])
                            for c in calls if c.get("error"))
        if want_errors != got_errors:
            problems.append(f"errors: expected {want_errors}, got {got_errors}")
    return problems


AGENT_EXPECT = frozenset({"status", "ticks", "output", "values", "errors"})


AGENT_ERROR_FIELDS = frozenset({"tick", "call", "instance", "type"})


def agent_problems(vector: Mapping[str, Any]) -> list[str]:
    """Why an agent vector is not of the format's shape (empty when it is)."""
    problems = []
    if not isinstance(vector.get("solutions"), list):
        problems.append('"solutions" must be an array of solutions')
    if vector.get("mode", "eager") not in ("eager", "lazy"):
        problems.append('"mode" must be "eager" or "lazy"')
    max_ticks = vector.get("max_ticks", 25)
    if not isinstance(max_ticks, int) or isinstance(max_ticks, bool) or max_ticks < 1:
        problems.append('"max_ticks" must be a positive integer')
    latent = vector.get("latent", {})
    if not isinstance(latent, Mapping) or not all(isinstance(v, list) for v in latent.values()):
        problems.append('"latent" must map tool names to arrays of answers')
    problems += review_problems(vector.get("reviews", []))
    expect = vector.get("expect")
    if not isinstance(expect, Mapping):
        return [*problems, 'an agent vector needs an "expect" object']
    problems += [f"expect: unknown field {k!r} (fields: {', '.join(sorted(AGENT_EXPECT))})"
                 for k in sorted(expect) if k not in AGENT_EXPECT]
    errors = expect.get("errors", [])
    for number, error in enumerate(errors if isinstance(errors, list) else [None]):
        if not isinstance(error, Mapping) or not isinstance(error.get("type"), str) \
                or not isinstance(error.get("tick"), int):
            problems.append(f"expect.errors[{number}] needs a tick and a string type")
        elif any(k not in AGENT_ERROR_FIELDS for k in error):
            problems.append(f"expect.errors[{number}]: fields are "
                            f"{', '.join(sorted(AGENT_ERROR_FIELDS))}")
    return problems


def judge_agent(vector: Mapping[str, Any], implementation: Implementation) -> list[str]:
    """How an agent vector fails on the implementation's ``agent`` answer."""
    problems = agent_problems(vector)
    if problems:
        return problems
    expect: Mapping[str, Any] = vector["expect"]
    request = {"op": "agent", "context": vector.get("context", []),
               "tools": vector.get("tools"), "output_schema": vector.get("output_schema"),
               "mode": vector.get("mode", "eager"), "max_ticks": vector.get("max_ticks", 25),
               "solutions": vector.get("solutions"), "latent": vector.get("latent", {}),
               "mocks": vector.get("mocks", {})}
    for key in ("requests", "max_delegate_depth", "reviews"):  # sent only when given
        if key in vector:
            request[key] = vector[key]
    response = implementation.ask(request)
    failure = failure_of(response)
    if failure is not None:
        return [failure or _NO_MESSAGE]
    problems = []
    for key in ("status", "ticks", "output"):
        if key in expect and not json_equal(expect[key], response.get(key)):
            problems.append(f"{key}: expected {dumps(expect[key], indent=None)}, "
                            f"got {dumps(response.get(key), indent=None)}")
    if "values" in expect:
        final = context_of_views(response["views"])
        for number, case in enumerate(expect["values"]):
            problems.extend(f"values[{number}]: {p}" for p in check_case(case, final))
    if "errors" in expect:
        def tick_key(e: Mapping[str, Any]) -> tuple[Any, ...]:
            return (e.get("tick"), e.get("call", -1), str(e.get("instance")), e.get("type"))
        want = sorted(map(tick_key, expect["errors"]), key=str)
        got = sorted(map(tick_key, response["errors"]), key=str)
        if want != got:
            problems.append(f"errors: expected {want}, got {got}")
    return problems


ERROR_FIELDS = frozenset({"call", "instance", "type"})


def _is_call_id(value: Any) -> bool:
    # A call is its index, or [index, instance] when it carries an instance.
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 0
    return (isinstance(value, list) and len(value) == 2 and _is_call_id(value[0])
            and isinstance(value[1], str))


def _expect_shape_problems(expect: Mapping[str, Any]) -> list[str]:
    """Every member of ``expect`` that is not of the shape docs/conformance-vectors.md describes."""
    problems = []
    for key in ("diagnostics", "not_reported", "values", "errors"):
        if key in expect and not isinstance(expect[key], list):
            problems.append(f"expect.{key} must be an array")
    if "only_listed_errors" in expect and not isinstance(expect["only_listed_errors"], bool):
        problems.append("expect.only_listed_errors must be true or false")
    for key in ("executed", "skipped", "failed"):
        if key in expect and (not isinstance(expect[key], list)
                              or not all(_is_call_id(c) for c in expect[key])):
            problems.append(f"expect.{key} must be an array of call indexes or "
                            "[index, instance] pairs")
    for number, error in enumerate(expect.get("errors", []) if isinstance(
            expect.get("errors"), list) else []):
        if not isinstance(error, Mapping):
            problems.append(f"expect.errors[{number}] must be an object with call and type")
            continue
        unknown = sorted(k for k in error if k not in ERROR_FIELDS)
        if unknown:
            problems.append(f"expect.errors[{number}]: unknown field(s) {unknown} "
                            f"(fields: {', '.join(sorted(ERROR_FIELDS))})")
        if not _is_call_id(error.get("call")) or not isinstance(error.get("type"), str):
            problems.append(f"expect.errors[{number}] needs a call index and a string type")
        if "instance" in error and not isinstance(error["instance"], str):
            problems.append(f"expect.errors[{number}].instance must be a string")
    return problems


def _key(call: Any) -> Any:
    return (call, "") if not isinstance(call, list) else (call[0], str(call[1]))


def _ids(keys: list[Any]) -> str:
    return "[" + ", ".join(str(k[0]) if not k[1] else f"[{k[0]}, {k[1]}]" for k in keys) + "]"


def _bad_matcher(matcher: Any) -> str:
    if not isinstance(matcher, Mapping):
        return "a matcher is an object"
    unknown = [k for k in matcher if k not in MATCH_FIELDS]
    return f"unknown matcher field(s) {unknown}" if unknown else ""


def _matches(matcher: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    for key, want in matcher.items():
        if key == "calls":
            if sorted(found.get("calls", [])) != sorted(want):
                return False
        elif found.get(key) != want:
            return False
    return True


def _found_text(found: Sequence[Mapping[str, Any]]) -> str:
    if not found:
        return " (no diagnostics were reported)"
    return " (reported: " + "; ".join(_described(d) for d in found[:6]) + ")"


def _described(diagnostic: Mapping[str, Any]) -> str:
    """A reported diagnostic's code and place, saying which of ``call`` and ``pointer``
    the answer left out (the protocol lets it: a diagnostic of the whole plan has none)."""
    call, pointer = diagnostic.get("call"), diagnostic.get("pointer")
    if call is None and pointer is None:
        return f"{diagnostic['code']} (no call, no pointer)"
    where = f"at call {call}" if call is not None else "(no call) at"
    return f"{diagnostic['code']} {where} {pointer if pointer is not None else '(no pointer)'}"


def _show(outcome: tuple[str, Any]) -> str:
    kind, value = outcome
    if kind == "value":
        return f"value {dumps(value, indent=None)}"
    if kind == "missing":
        return "MISSING"
    return f"a {value} error"


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0, key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b

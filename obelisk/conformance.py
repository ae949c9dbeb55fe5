"""The conformance runner (CONFORMANCE.md): vectors in, one PASS/FAIL line each out.

A vector FAILS, never skips, when it cannot be read or uses a field the format does not
describe. :func:`check_vector` is pure (vector in, list of problems out); the command line
prints the results.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from attrs import frozen

from obelisk import resolve
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, MessageError, WriteError
from obelisk.core.values import MISSING
from obelisk.jsonio import InputError, dumps, load_json

VECTOR_FIELDS = frozenset(
    {"id", "description", "context", "tools", "cases", "plan", "instances", "mocks", "expect"}
)

CASE_FIELDS = frozenset({"ref", "instance", "value", "missing", "error"})
CASE_ERRORS = frozenset({"syntax", "write"})


@frozen
class Outcome:
    """The result of one vector: its id, where it came from, and what did not match."""

    id: str
    source: str
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems


def find_vector_files(paths: Sequence[str]) -> Iterator[str]:
    """Every file named, and every ``*.json`` below every folder named, sorted."""
    for path in paths:
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, files in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, f) for f in files if f.endswith(".json"))
            yield from sorted(found)
        else:
            yield path


def load_vectors(path: str) -> list[tuple[Any, str]]:
    """The vectors in one file (an object or an array of them), with their source."""
    data = load_json(path)
    items = data if isinstance(data, list) else [data]
    return [(item, f"{path}[{i}]" if isinstance(data, list) else path) for i, item in enumerate(items)]


def check_vector(vector: Any, interpreter: str = "sync") -> list[str]:
    """Every way ``vector`` fails to hold; an empty list means it passes."""
    if not isinstance(vector, Mapping):
        return [f"a vector must be a JSON object, got {type(vector).__name__}"]
    if "solutions" in vector:
        from obelisk.conformance_agent import check_agent  # it reuses this module's helpers

        return check_agent(vector)
    problems = [f"unknown field {k!r} (fields: {', '.join(sorted(VECTOR_FIELDS))})"
                for k in vector if k not in VECTOR_FIELDS]
    if not isinstance(vector.get("id"), str) or not vector.get("id"):
        problems.append('"id" must be a non-empty string')
    if "cases" not in vector and "plan" not in vector:
        problems.append('a vector needs "cases", "plan", or both')
    raw_context = vector.get("context", [])
    if not isinstance(raw_context, list):
        return problems + ['"context" must be an array of messages']
    try:
        context = Context.of(raw_context)
    except MessageError as exc:
        return problems + [f"context: {exc}"]
    if problems:
        return problems
    cases = vector.get("cases", [])
    if not isinstance(cases, list):
        return ['"cases" must be an array']
    for number, case in enumerate(cases):
        problems.extend(f"case {number}: {p}" for p in check_case(case, context))
    if "plan" in vector:
        problems.extend(check_plan(vector, context, interpreter))
    elif "expect" in vector:
        problems.append('"expect" describes a plan run, but the vector has no "plan"')
    return problems


def check_case(case: Any, context: Context) -> list[str]:
    """How a resolve case fails against ``context`` (empty when it holds)."""
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
    try:
        value = resolve(context, ref, instance)
        got: tuple[str, Any] = ("missing", True) if value is MISSING else ("value", value)
    except ExpressionSyntaxError as exc:
        got = ("error", "syntax")
        detail = exc.render()
    except WriteError as exc:
        got = ("error", "write")
        detail = str(exc)
    else:
        detail = ""
    want = (given[0], case[given[0]])
    if got[0] == want[0] and json_equal(got[1], want[1]):
        return []
    return [f"{ref}{' for instance ' + instance if instance else ''}: "
            f"expected {_show(want)}, got {_show(got)}" + (f"\n{detail}" if detail else "")]


RUN_FIELDS = ("values", "executed", "skipped", "failed", "errors")
EXPECT_FIELDS = frozenset({"diagnostics", "only_listed_errors", "not_reported", *RUN_FIELDS})
MATCH_FIELDS = frozenset({"code", "severity", "call", "calls", "pointer"})


def check_plan(vector: Mapping[str, Any], context: Context, interpreter: str) -> list[str]:
    """How a plan vector fails: its diagnostics, then (when it runs) its dry run."""
    from obelisk.compiler.plan import PlanError, compile_plan
    from obelisk.compiler.tools import ToolError
    from obelisk.interpreters.dryrun import MockError, dry_run
    from obelisk.interpreters.machine import PlanRefused
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
        plan = compile_plan(pf.plan, tools=pf.tools, context=context, instances=pf.instances)
    except (InputError, PlanError, ToolError) as exc:
        return [f"the plan cannot be compiled: {exc}"]
    problems: list[str] = []
    found = [d.to_json() for d in plan.diagnostics]
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
                problems.append(f"diagnostic {d['code']} at call {d['call']} {d['pointer']} "
                                f"matches not_reported {dumps(matcher, indent=None)}: {d['message']}")
    if expect.get("only_listed_errors", True):
        listed = expect.get("diagnostics", [])
        for d in found:
            if d["severity"] == "error" and not any(_matches(m, d) for m in listed
                                                     if not _bad_matcher(m)):
                problems.append(f"unexpected error {d['code']} at call {d['call']} "
                                f"{d['pointer'] or ''}: {d['message']}")
    wants_run = any(k in expect for k in RUN_FIELDS)
    if not wants_run:
        return problems
    if not plan.ok:
        return problems + ["the vector expects a run, but the plan has errors and cannot run"]
    try:
        result = dry_run(plan, context, mocks=pf.mocks, interpreter=interpreter)
    except (MockError, PlanRefused) as exc:
        return problems + [str(exc)]
    final = result.context
    for number, case in enumerate(expect.get("values", [])):
        problems.extend(f"values[{number}]: {p}" for p in check_case(case, final))
    def ident(call: Any) -> Any:
        return call.call if call.instance is None else [call.call, call.instance]
    for key in ("executed", "skipped", "failed"):
        if key in expect:
            want = sorted(map(_key, expect[key]))
            got = sorted(_key(ident(c)) for c in result.calls if c.outcome == key)
            if want != got:
                problems.append(f"{key}: expected {_ids(want)}, got {_ids(got)}")
    if "errors" in expect:
        want = sorted((_key(e.get("call") if "instance" not in e else [e["call"], e["instance"]]),
                       str(e.get("instance")), e.get("type")) for e in expect["errors"])
        got = [(_key(ident(c)), str(c.instance), c.error) for c in result.calls if c.error]
        got.sort()
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
    """Every member of ``expect`` that is not of the shape CONFORMANCE.md describes."""
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


def _found_text(found: list[dict[str, Any]]) -> str:
    if not found:
        return " (no diagnostics were reported)"
    return " (reported: " + "; ".join(
        f"{d['code']} call {d['call']} {d['pointer']}".strip() for d in found[:6]) + ")"


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
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def run(paths: Sequence[str], interpreter: str = "sync") -> tuple[list[Outcome], list[str]]:
    """Check every vector under ``paths``. Returns outcomes and unreadable-file problems."""
    outcomes: list[Outcome] = []
    seen: dict[str, str] = {}
    for path in find_vector_files(paths):
        try:
            vectors = load_vectors(path)
        except InputError as exc:
            outcomes.append(Outcome(id=path, source=path, problems=(str(exc),)))
            continue
        for vector, source in vectors:
            vid = vector.get("id") if isinstance(vector, Mapping) else None
            name = vid if isinstance(vid, str) and vid else source
            try:
                problems = check_vector(vector, interpreter)
            except Exception as exc:  # a vector never stops the others, whatever it holds
                problems = [f"the runner could not check this vector ({type(exc).__name__}: "
                            f"{exc}); this is a bug in obelisk or a vector shape it does "
                            "not recognise"]
            if name in seen:
                problems = [f"duplicate id (also in {seen[name]})", *problems]
            seen.setdefault(name, source)
            outcomes.append(Outcome(id=name, source=source, problems=tuple(problems)))
    return outcomes, []


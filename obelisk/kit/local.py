"""obelisk's own answer to each protocol request, computed in process.

This is what ``obelisk adapter`` writes back, what the in-process conformance runner
judges, and the side of every ``obelisk fuzz`` comparison that is taken as right.
:func:`answer` never raises for a request: a request it cannot answer gets
``{"failure": M}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from obelisk import (
    MISSING,
    CompiledPlan,
    Context,
    ExpressionSyntaxError,
    MessageError,
    MockError,
    PlanError,
    PlanRefused,
    ToolError,
    WriteError,
    __version__,
    compile_plan,
    dry_run,
    resolve,
)
from obelisk.jsonio import InputError
from obelisk.kit.protocol import PROTOCOL_VERSION, Op, request_problems
from obelisk.planfile import plan_file_of

#: The ops obelisk answers (``agent`` arrives with the agent loop).
OPS: tuple[Op, ...] = (Op.RESOLVE, Op.CHECK, Op.RUN)
INTERPRETERS = ("sync", "asyncio")


def hello(ops: tuple[Op, ...] = OPS) -> dict[str, Any]:
    """The ``hello`` answer: protocol version, name, version and the ops answered."""
    return {"protocol": PROTOCOL_VERSION, "name": "obelisk", "version": __version__,
            "ops": [op.value for op in ops]}


def answer(request: Any, interpreter: str = "sync") -> dict[str, Any]:
    """obelisk's response to one protocol request (``{"failure": M}`` when it has none)."""
    problems = request_problems(request)
    if problems:
        return {"failure": "bad request: " + "; ".join(problems)}
    op = Op(request["op"])
    if op is Op.HELLO:
        return hello()
    if op not in OPS:
        return {"failure": f"obelisk does not answer {op.value!r} requests yet"}
    if op is Op.RESOLVE:
        return answer_resolve(request["context"], request["ref"], request.get("instance"))
    compiled = _compile(request)
    if isinstance(compiled, dict):
        return compiled
    plan, context = compiled
    if op is Op.CHECK:
        return {"diagnostics": [d.to_json() for d in plan.diagnostics]}
    return answer_run(plan, context, request.get("mocks", {}), interpreter)


def answer_resolve(messages: list[Any], ref: str, instance: str | None) -> dict[str, Any]:
    """The ``resolve`` answer: ``value``, ``missing`` or ``error`` with a message."""
    try:
        context = Context.of(messages)
    except MessageError as exc:
        return {"failure": f"context: {exc}"}
    return resolve_in(context, ref, instance)


def resolve_in(context: Context, ref: str, instance: str | None) -> dict[str, Any]:
    """The ``resolve`` answer for an already built context."""
    try:
        value = resolve(context, ref, instance)
    except ExpressionSyntaxError as exc:
        return {"error": "syntax", "message": exc.render()}
    except WriteError as exc:
        return {"error": "write", "message": str(exc)}
    return {"missing": True} if value is MISSING else {"value": value}


def _compile(request: Mapping[str, Any]) -> tuple[CompiledPlan, Context] | dict[str, Any]:
    """The compiled plan and context of a ``check`` or ``run`` request, or a failure."""
    fields = {"context": request["context"], "tools": request.get("tools") or [],
              "plan": request["plan"], "instances": request.get("instances", False)}
    try:
        pf = plan_file_of(fields, "the request")
        context = Context.of(pf.context)
    except (InputError, MessageError) as exc:
        return {"failure": f"the plan cannot be compiled: {exc}"}
    try:
        plan = compile_plan(pf.plan, tools=pf.tools, context=context, instances=pf.instances)
    except (PlanError, ToolError) as exc:
        return {"failure": f"the plan cannot be compiled: {exc}"}
    return plan, context


def answer_run(plan: CompiledPlan, context: Context, mocks: Mapping[str, Any],
               interpreter: str) -> dict[str, Any]:
    """The ``run`` answer: the dry-run report less its trace (status ``invalid`` when
    the plan has errors and nothing ran)."""
    from obelisk.interpreters.dryrun import report

    if not plan.ok:
        return {"status": "invalid", "diagnostics": [d.to_json() for d in plan.diagnostics],
                "calls": [], "errors": [], "views": {}}
    try:
        result = dry_run(plan, context, mocks=mocks, interpreter=interpreter)
    except (MockError, PlanRefused) as exc:
        return {"failure": str(exc)}
    out = report(result.run)
    del out["trace"]
    return out

"""obelisk's own answer to each protocol request, computed in process.

This is what ``obelisk adapter`` writes back, what the in-process conformance runner
judges, and the side of every ``obelisk fuzz`` comparison that is taken as right.
:func:`answer` never raises for a request: a request it cannot answer gets
``{"failure": M}``.
"""

from __future__ import annotations

import json
import pathlib
import tempfile
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

#: The ops obelisk answers.
OPS: tuple[Op, ...] = (Op.RESOLVE, Op.CHECK, Op.RUN, Op.AGENT)
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
    if op is Op.AGENT:
        return answer_agent(request)
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
    from obelisk.interpreters.reporting import report

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


def answer_agent(request: Mapping[str, Any], *, stream: bool = False) -> dict[str, Any]:
    """The ``agent`` answer: the loop run with a scripted LLM answering ``solutions`` (and
    latent sub-requests from ``latent``, per tool), each tick's plan a dry run with
    ``mocks``: ``{status, ticks, output, views, errors}``. (The loop runs each tick under
    the asyncio interpreter whatever ``obelisk adapter --interpreter`` says; ``stream``
    streams each eager tick, which must give the same answer.)"""
    from obelisk import ScriptedLLM, run_agent_sync, views

    latent: Mapping[str, Any] = request.get("latent") or {}
    mocks = {k: v for k, v in (request.get("mocks") or {}).items() if k not in latent}
    with tempfile.TemporaryDirectory(prefix="obelisk-requests-") as root:
        try:
            _save_requests(pathlib.Path(root), request.get("requests") or {})
            result = run_agent_sync(
                Context.of(request.get("context") or []),
                ScriptedLLM(list(request["solutions"]), latent=dict(latent)),
                tools=request.get("tools") or (), output_schema=request.get("output_schema"),
                mode=request.get("mode"), max_ticks=request.get("max_ticks") or 25,
                mocks=mocks, latent_tools=latent.keys(), delegate_root=root,
                max_delegate_depth=request.get("max_delegate_depth", 8), stream=stream,
                on_plan=reviewer(request.get("reviews")))
        except (MessageError, ToolError, MockError, PlanError, InputError) as exc:
            return {"failure": f"the agent cannot run: {exc}"}
    return {"status": result.status.value, "ticks": len(result.ticks),
            "output": result.output, "views": views(result.context),
            "errors": agent_errors(result)}


def reviewer(reviews: list[Any] | None) -> Any:
    """The ``on_plan`` hook of an agent vector's ``reviews``: each compiled plan gets the
    next verdict (``"approve"``, ``{"reject": reason}``, ``{"edit": calls}``); a plan past
    the list is approved, and without ``reviews`` there is no hook (every plan runs)."""
    from obelisk.agent import ApprovePlan, EditPlan, RejectPlan

    if reviews is None:
        return None
    verdicts = iter(reviews)

    def review(plan: Any) -> Any:
        verdict = next(verdicts, "approve")
        if isinstance(verdict, Mapping) and "reject" in verdict:
            return RejectPlan(verdict["reject"], by="the vector's reviewer")
        if isinstance(verdict, Mapping):
            return EditPlan(list(verdict["edit"]), by="the vector's reviewer")
        return ApprovePlan(by="the vector's reviewer")

    return review


def _save_requests(root: pathlib.Path, requests: Mapping[str, Any]) -> None:
    """Write a vector's saved requests under ``root``; a name leaving it is bad input."""
    for name, saved in requests.items():
        target = (root / name).resolve()
        if pathlib.PurePosixPath(name).is_absolute() or root.resolve() not in target.parents:
            raise InputError(f"requests: {name!r} is not a relative path inside the root")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(saved), encoding="utf-8")


def agent_errors(result: Any) -> list[dict[str, Any]]:
    """The error messages of an agent run as ``{tick, call?, instance?, type}``, in order:
    each tick's call errors (by call and instance), then its errors without a call."""
    found: list[dict[str, Any]] = []
    for tick in result.ticks:
        for outcome in tick.outcomes:
            if outcome.error is not None:
                entry: dict[str, Any] = {"tick": tick.number, "call": outcome.call,
                                         "type": outcome.error}
                if outcome.instance is not None:
                    entry["instance"] = outcome.instance
                found.append(entry)
        found.extend({"tick": tick.number, "type": etype} for etype in tick.errors)
    return found


"""obelisk: the reference implementation of the Call/Plan protocol for LLM agents.

The public API is the names in ``__all__``; everything else is reachable through the
subpackages ``obelisk.core``, ``obelisk.compiler`` and ``obelisk.interpreters``.
"""

from __future__ import annotations

# Names added by the architecture work (issue 7): the codes table, the run's events and
# statuses, replay, the executor seam; the LLM adapters and the agent's request.
from obelisk.agent import (
    AgentResult,
    AgentStatus,
    ApprovePlan,
    EditPlan,
    Mode,
    RejectPlan,
    Transcript,
    build_latent_request,
    build_request,
    run_agent,
    run_agent_sync,
    solution_schema,
)
from obelisk.compiler.codes import DiagnosticCode
from obelisk.compiler.diagnostics import Diagnostic, Severity, render_text, summary
from obelisk.compiler.parse import parse_input, parse_output
from obelisk.compiler.plan import CompiledPlan, PlanError, compile_plan
from obelisk.compiler.tools import (
    Tool,
    ToolError,
    ToolRegistry,
    compose_calls_schema,
    resolve_activity,
)
from obelisk.core.ast import Expr
from obelisk.core.context import Context
from obelisk.core.errors import (
    ExpressionSyntaxError,
    MessageError,
    NotJSONError,
    ObeliskError,
    WriteError,
)
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.text import plural
from obelisk.core.values import MISSING, Json, Missing, thaw
from obelisk.interpreters.activities import Activity, ActivityError, Branch
from obelisk.interpreters.aio import run_async
from obelisk.interpreters.common import gc_tuned
from obelisk.interpreters.dryrun import (
    DryRunResult,
    MockError,
    dry_run,
    invalid_report,
    report,
    views,
)
from obelisk.interpreters.events import EventKind, RunEvent, RunStatus, Status
from obelisk.interpreters.executors import LatentExecutor, Registry, choose_executor
from obelisk.interpreters.machine import (
    Approve,
    CallOutcome,
    Deny,
    PlanRefused,
    Replace,
    RunResult,
)
from obelisk.interpreters.replay import replay
from obelisk.interpreters.sync import run_sync
from obelisk.journal import (
    Durability,
    Journal,
    JournalError,
    JournalUnreadable,
    JournalWriteError,
    RecordKind,
    idempotency_key,
    recorded,
    resume,
    resume_agent,
    resume_async,
    run_durable,
    run_durable_async,
)
from obelisk.journal import history as journal_history
from obelisk.llm import (
    LLM,
    AnthropicLLM,
    LLMError,
    OpenAILLM,
    Refusal,
    Reply,
    Request,
    RetryPolicy,
    ScriptedLLM,
    ScriptExhausted,
    Usage,
)

__version__ = "0.1.0"


def resolve(context: Context, expression: str | Expr, instance: str | None = None) -> Json | Missing:
    """The value of an input expression in ``context``, for ``instance`` (or global data).

    Returns a plain JSON value, or :data:`MISSING`. Raises :class:`ExpressionSyntaxError`
    for an expression that does not parse and :class:`WriteError` when the context holds a
    write that cannot be applied.
    """
    expr = parse_input(expression) if isinstance(expression, str) else expression
    value = evaluate(expr, lookup_in(context, instance))
    return MISSING if value is MISSING else thaw(value)


__all__ = [
    "MISSING",
    "Activity",
    "ActivityError",
    "Approve",
    "Branch",
    "CallOutcome",
    "CompiledPlan",
    "Context",
    "Deny",
    "Diagnostic",
    "Durability",
    "DryRunResult",
    "ExpressionSyntaxError",
    "Journal",
    "JournalError",
    "JournalUnreadable",
    "JournalWriteError",
    "MessageError",
    "MockError",
    "ObeliskError",
    "PlanError",
    "PlanRefused",
    "RecordKind",
    "Replace",
    "RunResult",
    "Severity",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "WriteError",
    "compile_plan",
    "compose_calls_schema",
    "dry_run",
    "gc_tuned",
    "idempotency_key",
    "invalid_report",
    "journal_history",
    "parse_input",
    "parse_output",
    "recorded",
    "render_text",
    "report",
    "resolve",
    "resolve_activity",
    "resume",
    "resume_agent",
    "resume_async",
    "run_async",
    "run_durable",
    "run_durable_async",
    "run_sync",
    "summary",
    "thaw",
    "views",
    "LLM", "AnthropicLLM", "DiagnosticCode", "EventKind", "LLMError", "LatentExecutor",
    "Mode", "NotJSONError", "OpenAILLM", "Refusal", "Registry", "Reply", "Request",
    "RetryPolicy", "RunEvent", "RunStatus", "ScriptExhausted", "ScriptedLLM", "Status",
    "Transcript", "Usage", "build_latent_request", "build_request", "choose_executor",
    "replay", "solution_schema", "AgentResult", "AgentStatus", "ApprovePlan", "EditPlan",
    "RejectPlan", "run_agent", "run_agent_sync", "plural",
]

"""obelisk: the reference implementation of the Call/Plan protocol for LLM agents.

The public API is the names in ``__all__``; everything else is reachable through the
subpackages ``obelisk.core``, ``obelisk.compiler`` and ``obelisk.interpreters``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from obelisk.core.lazy import LazyExports

if TYPE_CHECKING:
    # What the names below are, for type checkers; at run time each is imported on first
    # use (see __getattr__), so ``import obelisk`` and the command line's ``--help`` do not
    # pay for the agent, the journal, the LLM adapters or the interpreters they never use.
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
    from obelisk.compiler.compose import compose_calls_schema
    from obelisk.compiler.diagnostics import Diagnostic, Severity, render_text, summary
    from obelisk.compiler.nodes import CompiledPlan
    from obelisk.compiler.parse import parse_input, parse_output
    from obelisk.compiler.plan import compile_plan
    from obelisk.compiler.tools import Tool, ToolRegistry, resolve_activity
    from obelisk.core.ast import Expr
    from obelisk.core.context import Context
    from obelisk.core.errors import (
        ActivityError,
        ExpressionSyntaxError,
        MessageError,
        MockError,
        NotJSONError,
        ObeliskError,
        PlanError,
        PlanRefused,
        ToolError,
        WriteError,
    )
    from obelisk.core.plain import thaw
    from obelisk.core.text import plural
    from obelisk.core.values import MISSING, Json, Missing
    from obelisk.dask import ActivityPath, DaskInterpreter, resume_dask, run_dask
    from obelisk.interpreters.activities import Activity, Branch
    from obelisk.interpreters.aio import run_async
    from obelisk.interpreters.collector import gc_tuned
    from obelisk.interpreters.dryrun import DryRunResult, dry_run
    from obelisk.interpreters.events import EventKind, RunEvent, RunStatus, Status
    from obelisk.interpreters.outcomes import Approve, Deny, Replace
    from obelisk.interpreters.replaying import Replayed, replay, replay_more, replay_open
    from obelisk.interpreters.reporting import invalid_report, report, views
    from obelisk.interpreters.result import CallOutcome, RunResult
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

#: Each public name's home module, imported when the name is first used.
_HOMES: dict[str, tuple[str, ...]] = {
    "obelisk.agent": ("AgentResult", "AgentStatus", "ApprovePlan", "EditPlan", "Mode",
        "RejectPlan", "Transcript", "build_latent_request", "build_request", "run_agent",
        "run_agent_sync", "solution_schema"),
    "obelisk.compiler.codes": ("DiagnosticCode",),
    "obelisk.compiler.diagnostics": ("Diagnostic", "Severity", "render_text", "summary"),
    "obelisk.compiler.parse": ("parse_input", "parse_output"),
    "obelisk.compiler.nodes": ("CompiledPlan",),
    "obelisk.compiler.plan": ("compile_plan",),
    "obelisk.compiler.compose": ("compose_calls_schema",),
    "obelisk.compiler.tools": ("Tool", "ToolRegistry", "resolve_activity"),
    "obelisk.core.ast": ("Expr",),
    "obelisk.core.context": ("Context",),
    "obelisk.core.errors": ("ActivityError", "ExpressionSyntaxError", "MessageError",
        "MockError", "NotJSONError", "ObeliskError", "PlanError", "PlanRefused", "ToolError",
        "WriteError"),
    "obelisk.core.text": ("plural",),
    "obelisk.core.plain": ("thaw",),
    "obelisk.core.values": ("MISSING", "Json", "Missing"),
    # The obelisk[dask] extra: Dask is imported with the first of these names used.
    "obelisk.dask": ("ActivityPath", "DaskInterpreter", "resume_dask", "run_dask"),
    "obelisk.interpreters.activities": ("Activity", "Branch"),
    "obelisk.interpreters.aio": ("run_async",),
    "obelisk.interpreters.collector": ("gc_tuned",),
    "obelisk.interpreters.dryrun": ("DryRunResult", "dry_run"),
    "obelisk.interpreters.events": ("EventKind", "RunEvent", "RunStatus", "Status"),
    "obelisk.interpreters.outcomes": ("Approve", "Deny", "Replace"),
    "obelisk.interpreters.replaying": ("Replayed", "replay", "replay_more", "replay_open"),
    "obelisk.interpreters.reporting": ("invalid_report", "report", "views"),
    "obelisk.interpreters.result": ("CallOutcome", "RunResult"),
    "obelisk.interpreters.sync": ("run_sync",),
    "obelisk.journal": ("Durability", "Journal", "JournalError", "JournalUnreadable",
        "JournalWriteError", "RecordKind", "idempotency_key", "recorded", "resume", "resume_agent",
        "resume_async", "run_durable", "run_durable_async"),
    "obelisk.llm": ("LLM", "AnthropicLLM", "LLMError", "OpenAILLM", "Refusal", "Reply", "Request",
        "RetryPolicy", "ScriptedLLM", "ScriptExhausted", "Usage"),
}
#: The name whose attribute in its home module is spelled differently.
_RENAMED = {"journal_history": ("obelisk.journal", "history")}
# A Context reads each message's _outputPath with the compiler's parser, which the compiler
# plugs into core when imported: a Context from here comes with it, as it always did.
_EXPORTS = LazyExports(globals(), _HOMES, _RENAMED,
                       plugins={"obelisk.core.context": "obelisk.compiler.parse"})
__getattr__, __dir__ = _EXPORTS.getattr, _EXPORTS.dir

__version__ = "0.1.0"


def resolve(context: Context, expression: str | Expr, instance: str | None = None) -> Json | Missing:
    """The value of an input expression in ``context``, for ``instance`` (or global data).

    Returns a plain JSON value, or :data:`MISSING`. Raises :class:`ExpressionSyntaxError`
    for an expression that does not parse and :class:`WriteError` when the context holds a
    write that cannot be applied.
    """
    from obelisk.compiler.parse import parse_input
    from obelisk.core.plain import thaw
    from obelisk.core.resolve import evaluate, lookup_in
    from obelisk.core.values import MISSING

    expr = parse_input(expression) if isinstance(expression, str) else expression
    value = evaluate(expr, lookup_in(context, instance))
    return MISSING if value is MISSING else thaw(value)


#: Names the command line takes from the facade (it may import nothing beneath it) that
#: are not part of the public API: they may change in any release. ``from obelisk import
#: NAME`` works for each; ``__all__`` leaves them out. (An interpreter's seams,
#: ``Registry``, ``LatentExecutor`` and ``choose_executor``, are ``obelisk.interpreters``'.)
_FOR_THE_SHELL = (
    "Replayed", "invalid_report", "journal_history", "plural", "replay_more", "replay_open",
    "thaw",
)

#: The public API.
__all__ = [
    "MISSING",
    "Activity",
    "ActivityError",
    "AgentResult",
    "AgentStatus",
    "AnthropicLLM",
    "Approve",
    "ApprovePlan",
    "Branch",
    "CallOutcome",
    "CompiledPlan",
    "Context",
    "Deny",
    "Diagnostic",
    "DiagnosticCode",
    "DryRunResult",
    "Durability",
    "EditPlan",
    "EventKind",
    "ExpressionSyntaxError",
    "Journal",
    "JournalError",
    "JournalUnreadable",
    "JournalWriteError",
    "LLM",
    "LLMError",
    "MessageError",
    "MockError",
    "Mode",
    "NotJSONError",
    "ObeliskError",
    "OpenAILLM",
    "PlanError",
    "PlanRefused",
    "RecordKind",
    "Refusal",
    "RejectPlan",
    "Replace",
    "Reply",
    "Request",
    "RetryPolicy",
    "RunEvent",
    "RunResult",
    "RunStatus",
    "ScriptExhausted",
    "ScriptedLLM",
    "Severity",
    "Status",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "Transcript",
    "Usage",
    "WriteError",
    "build_latent_request",
    "build_request",
    "compile_plan",
    "compose_calls_schema",
    "dry_run",
    "gc_tuned",
    "idempotency_key",
    "parse_input",
    "parse_output",
    "recorded",
    "render_text",
    "replay",
    "report",
    "resolve",
    "resolve_activity",
    "resume",
    "resume_agent",
    "resume_async",
    "run_agent",
    "run_agent_sync",
    "run_async",
    "run_durable",
    "run_durable_async",
    "run_sync",
    "solution_schema",
    "summary",
    "views",
    # the obelisk[dask] extra, imported on first use
    "ActivityPath", "DaskInterpreter", "resume_dask", "run_dask",
]

if TYPE_CHECKING:
    # mypy --strict takes a name as re-exported when __all__ lists it: so, for the type
    # checker only, the shell's names are listed too (tests/test_cli_commands.py checks
    # that this list is _FOR_THE_SHELL). At run time __all__ is the public API.
    __all__ += ["Replayed", "invalid_report", "journal_history", "plural", "replay_more",
                "replay_open", "thaw"]

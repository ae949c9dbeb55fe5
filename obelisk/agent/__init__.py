"""The agent: the request an LLM is given, the schema of its solution, the loop that runs
solutions tick by tick, and latent execution through the LLM."""

from obelisk.agent.budget import BudgetExceeded, Budgets
from obelisk.agent.checks import resolve_output
from obelisk.agent.hooks import (
    AgentError,
    AgentEvent,
    ApprovePlan,
    Asked,
    CallStarted,
    Delegated,
    EditPlan,
    PlanVerdict,
    Ran,
    RejectPlan,
    TickEnded,
)
from obelisk.agent.latent import LLMLatent
from obelisk.agent.loop import run_agent, run_agent_sync
from obelisk.agent.probe import agent_request
from obelisk.agent.request import (
    TEMPLATE_VERSION,
    Request,
    RequestError,
    Role,
    Transcript,
    Turn,
    build_latent_request,
    build_request,
)
from obelisk.agent.result import AgentResult, AgentStatus, PlanOutcome, Tick
from obelisk.agent.schema import Mode, solution_schema
from obelisk.llm.strict import drop_forced_nulls, strict_schema

__all__ = [
    "BudgetExceeded",
    "Budgets",
    "TEMPLATE_VERSION",
    "AgentError",
    "AgentEvent",
    "AgentResult",
    "AgentStatus",
    "ApprovePlan",
    "Asked",
    "CallStarted",
    "Delegated",
    "EditPlan",
    "LLMLatent",
    "PlanOutcome",
    "PlanVerdict",
    "Ran",
    "RejectPlan",
    "Tick",
    "TickEnded",
    "agent_request",
    "resolve_output",
    "run_agent",
    "run_agent_sync",
    "Mode",
    "Request",
    "RequestError",
    "Role",
    "Transcript",
    "Turn",
    "build_latent_request",
    "build_request",
    "drop_forced_nulls",
    "solution_schema",
    "strict_schema",
]

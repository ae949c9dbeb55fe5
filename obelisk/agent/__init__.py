"""The agent: the request an LLM is given and the schema of its solution (SEMANTICS of the
loop live here as it is built)."""

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
from obelisk.agent.schema import Mode, drop_forced_nulls, solution_schema, strict_schema

__all__ = [
    "TEMPLATE_VERSION",
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

"""The request an adapter is given: provider-neutral system text, turns and schema.

Built by :func:`obelisk.agent.request.build_request` (a tick's solution) and
:func:`obelisk.agent.request.build_latent_request` (a latent call's result); defined here,
below the agent, because every adapter takes one.
"""

from __future__ import annotations

import enum
import json
from typing import Any

from attrs import frozen

__all__ = ["TEMPLATE_VERSION", "Request", "Role", "Turn"]

#: The version of every template the requests are rendered with; bump it when any text the
#: LLM sees changes (the templates are in :mod:`obelisk.agent.request`).
TEMPLATE_VERSION = 2


class Role(str, enum.Enum):
    """Who a rendered turn speaks as."""

    SYSTEM = "system"
    USER = "user"


@frozen
class Turn:
    """One rendered message of a request: its role and text."""

    role: Role
    content: str

    def to_json(self) -> dict[str, str]:
        """``{"role": ..., "content": ...}``, as chat APIs take it."""
        return {"role": self.role.value, "content": self.content}


@frozen
class Request:
    """A provider-neutral request: system text, rendered turns and the answer's schema.

    ``schema_text`` is the schema as JSON text, keys in the order the LLM should see them
    (frozen maps would forget that order); :attr:`schema` parses it. ``name`` names the
    schema for providers that want one (``solution``, or ``latent`` for a sub-request);
    ``tool`` is the tool a sub-request executes (None for a solution request).
    """

    system: str
    messages: tuple[Turn, ...]
    schema_text: str
    name: str = "solution"
    template_version: int = TEMPLATE_VERSION
    tool: str | None = None

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema the answer must match (a fresh copy)."""
        value: dict[str, Any] = json.loads(self.schema_text)
        return value

    def turns_json(self) -> list[dict[str, str]]:
        """The turns as ``{"role", "content"}`` objects, the system text first."""
        return [{"role": "system", "content": self.system}] + [t.to_json() for t in self.messages]

    def to_json(self) -> dict[str, Any]:
        """The request as provider-neutral JSON: ``name``, ``template_version``, ``tool``
        (a sub-request's), ``system``, ``messages`` (``{"role", "content"}``) and
        ``schema`` (``obelisk request --json``)."""
        return {"name": self.name, "template_version": self.template_version,
                "tool": self.tool, "system": self.system,
                "messages": [t.to_json() for t in self.messages], "schema": self.schema}

    def render(self) -> str:
        """The whole request as one text (system, turns, schema): what golden tests pin."""
        parts = [f"[system]\n{self.system}"]
        parts += [f"[{t.role.value}]\n{t.content}" for t in self.messages]
        parts.append(f"[schema: {self.name}]\n{self.schema_text}")
        return "\n\n".join(parts) + "\n"

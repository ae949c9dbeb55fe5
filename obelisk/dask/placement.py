"""Where a call runs: on the Dask cluster or in the client (``"x-obelisk-executor"``).

A tool's schema may say ``"x-obelisk-executor": "local"`` or ``"dask"``; a tool that says
nothing takes the run's default. Cheap or I/O-bound calls (an LLM request, an MCP call
whose session cannot travel) stay in the client's event loop; heavy ones go to the
cluster. Latent calls and delegates never reach an activity, so they always run in the
client. The sync and asyncio interpreters ignore the key.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from obelisk.compiler.tools import Tool
from obelisk.core.errors import ToolError

__all__ = ["EXECUTOR", "Placement", "check_tools", "placement_of"]

#: The schema keyword that chooses where a tool's calls run.
EXECUTOR = "x-obelisk-executor"


class Placement(str, enum.Enum):
    """Where an activity's call runs."""

    LOCAL = "local"  #: in the client's event loop, as under the asyncio interpreter
    DASK = "dask"  #: in a Dask worker

    @classmethod
    def of(cls, value: Any, where: str) -> Placement:
        """``value`` (``"local"`` or ``"dask"``) as a placement; raises ``ValueError``
        naming ``where`` it was given for anything else."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"{where} is {value!r}: use \"local\" or \"dask\"") from None


def placement_of(tool: Mapping[str, Any] | None, default: Placement, name: Any) -> Placement:
    """Where a call of tool ``name`` (its schema as an activity receives it, or None) runs:
    what the schema says, else ``default``. Raises ``ValueError`` for a value that is
    neither."""
    if tool is None or EXECUTOR not in tool:
        return default
    return Placement.of(tool[EXECUTOR], f'tool {name!r}: "{EXECUTOR}"')


def check_tools(tools: Iterable[Tool]) -> None:
    """Refuse, before a run starts, a tool whose ``"x-obelisk-executor"`` is neither
    ``"local"`` nor ``"dask"``: raises :class:`ToolError` located at the keyword."""
    for index, tool in enumerate(tools):
        schema = tool.schema
        if isinstance(schema, Mapping) and EXECUTOR in schema and \
                schema[EXECUTOR] not in ("local", "dask"):
            raise ToolError(f"{schema[EXECUTOR]!r} is not an executor: use \"local\" (in the "
                            "client) or \"dask\" (on the cluster)", index=index,
                            pointer=f"/{EXECUTOR}", name=tool.name)

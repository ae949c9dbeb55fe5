"""The tools ``obelisk mcp-server`` offers, as an MCP client's LLM reads them.

Their names, descriptions and input schemas are a promise to every client: a golden
test (tests/mcp/golden/server-tools.json) pins them, so a change is made on purpose.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOOLS"]

_CALLS = {
    "type": "array",
    "description": "The plan: a list of calls. Each call is an object with \"_tool\" (a tool "
                   "named by describe_tools), its parameters, and \"_outputPath\" (where its "
                   "result goes, such as \"†state.weather\"). A parameter may be a reference "
                   "to an earlier result, such as \"†state.weather.temperature\".",
    "items": {"type": "object"},
}
_OUTPUT = {
    "description": "What you want back once the calls ran: any JSON value whose strings "
                   "may be references, such as \"†state.summary\" or {\"t\": "
                   "\"†state.weather.temperature\"}. It is returned resolved as \"output\"."
}
_CONTEXT = {
    "type": "array", "items": {"type": "object"},
    "description": "Optional context messages the plan reads, such as "
                   "[{\"type\": \"input\", \"city\": \"Paris\"}] for \"†input.city\".",
}

#: The annotations of the tools that only read (every one but run_plan).
_READS = {"readOnlyHint": True, "idempotentHint": True, "destructiveHint": False,
          "openWorldHint": False}

#: The server's tools, in the order they are listed.
TOOLS: list[dict[str, Any]] = [
    {
        "name": "describe_tools",
        "description": (
            "Start here. Returns the tools you can plan with (\"calls\": the JSON Schema of "
            "a plan's calls, one branch per tool, with each tool's parameters and the "
            "schema of its result as \"_output\"), a \"guide\" to writing plans (references "
            "such as \"†state.x\", \"_outputPath\", \"||\" for alternatives and \"&&\" for "
            "values needed together), and which tools are read-only or destructive. Call "
            "it again if a tool you expected is missing: the list is refreshed when the "
            "servers change it."),
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": _READS,
    },
    {
        "name": "validate_plan",
        "description": (
            "Check a whole plan without running anything. Returns \"ok\" and every "
            "diagnostic (unknown tools, wrong parameters, references nothing writes, "
            "cycles, type mismatches), each with a \"text\" that says what to change. Fix "
            "them and validate again before run_plan."),
        "inputSchema": {"type": "object", "properties": {"calls": _CALLS, "context": _CONTEXT},
                        "required": ["calls"]},
        "annotations": _READS,
    },
    {
        "name": "dry_run_plan",
        "description": (
            "Simulate a plan: no tool runs; each call's result is made up from its tool's "
            "output schema (or taken from \"mocks\", by tool name, such as {\"weather\": "
            "{\"return\": {\"temperature\": 20}}}). Shows which calls would run or be "
            "skipped, and what \"output\" would resolve to."),
        "inputSchema": {"type": "object", "properties": {
            "calls": _CALLS, "output": _OUTPUT, "context": _CONTEXT,
            "mocks": {"type": "object", "description": "Optional results by tool name."}},
            "required": ["calls"]},
        "annotations": _READS,
    },
    {
        "name": "run_plan",
        "description": (
            "Run a whole plan in one step: independent calls run in parallel, a call runs "
            "once the results it references exist, a failure goes to the last alternative "
            "of its \"_outputPath\" (\"†state.ok || †state.error\") or becomes an error. "
            "Returns each call's outcome, the errors with what to correct, and \"output\" "
            "resolved. Destructive tools are run only when the user approves (or the "
            "server allows them). An invalid plan is refused with its diagnostics: "
            "nothing runs."),
        "inputSchema": {"type": "object", "properties": {
            "calls": _CALLS, "output": _OUTPUT, "context": _CONTEXT}, "required": ["calls"]},
        "annotations": {"readOnlyHint": False, "idempotentHint": False,
                        "destructiveHint": True, "openWorldHint": True},
    },
]

"""Each command's ``--help``: a description and examples (issue 28: every subcommand has
both; a test walks every parser, and every option has help text too).

Plain strings only: ``obelisk --help`` and each command's parser read this table without
importing any command's module.
"""

from __future__ import annotations

#: Command (as typed, ``mcp list`` for a nested one) -> (description, examples).
HELP: dict[str, tuple[str, str]] = {
    "resolve": (
        "Print the value an expression reads from a context (an array of messages), or "
        "MISSING (exit 1); a malformed expression is shown with a caret.",
        "obelisk resolve examples/context.json '†state.user.status'"),
    "validate": (
        "Check plan files (or agent files) and report every problem with its place in the "
        "file; exit 1 when a diagnostic reaches --fail-on, 2 for a file that cannot be read.",
        "obelisk validate examples/refund.json\n"
        "obelisk validate plans/ --format sarif > results.sarif\n"
        "obelisk validate examples/agent/refund.json"),
    "graph": (
        "Print a plan's dataflow graph (Mermaid, DOT or JSON), even of an invalid plan.",
        "obelisk graph examples/weather.json --format dot | dot -Tsvg > plan.svg"),
    "schema": (
        "Print the calls schema composed from a plan file's tools (the solution schema for "
        "an agent file), or the JSON Schema of the plan-file format.",
        "obelisk schema examples/refund.json\n"
        "obelisk schema --plan-file > plan-file.schema.json"),
    "dry-run": (
        "Simulate a plan with mocks: no activity runs. --explore tries every branch.",
        "obelisk dry-run examples/weather.json --explore\n"
        "obelisk dry-run examples/moderation.json --json"),
    "run": (
        "Run a plan with real activities (a dict importable as pkg.mod:NAME, or MCP "
        "servers' tools); --journal records it so that obelisk resume can continue it.",
        "obelisk run examples/order.json --activities obelisk.examples.shop:ACTIVITIES\n"
        "obelisk run examples/order.json --activities obelisk.examples.shop:ACTIVITIES "
        "--journal run.db --events run.jsonl"),
    "resume": (
        "Continue a run recorded with --journal after a crash: recorded outcomes are not "
        "produced again (an agent run takes --llm).",
        "obelisk resume run.db --activities obelisk.examples.shop:ACTIVITIES"),
    "history": (
        "Print the events a journal recorded for a run (the newest, or --run ID).",
        "obelisk history run.db\nobelisk history run.db --run r1 --json"),
    "report": (
        "Write one self-contained HTML page of a run (its graph, a timeline of its calls, "
        "each call's details, a summary) from an events file, a journal or a --json report.",
        "obelisk report run.db -o run.html\nobelisk report run.jsonl -o run.html"),
    "submit": (
        "Record a plan's run in a shared journal for a worker (obelisk worker) to run.",
        "obelisk submit plan.json --journal postgresql://host/db"),
    "worker": (
        "Run the runs a shared journal holds for workers, until stopped (or --until-idle).",
        "obelisk worker --journal postgresql://host/db "
        "--activities obelisk.examples.shop:ACTIVITIES"),
    "agent": (
        "Run an agent: an LLM plans calls tick by tick until it gives an output matching "
        "the file's output_schema; exit 0 when it completed.",
        "obelisk agent examples/agent/refund.json "
        "--llm script:examples/agent/refund.solutions.json\n"
        "obelisk agent examples/agent/refund.json --llm openai:MODEL "
        "--base-url http://127.0.0.1:8000/v1"),
    "request": (
        "Print exactly what an agent's LLM is sent (system text, turns, solution schema): "
        "at the first tick, or at any tick of a run recorded with --journal.",
        "obelisk request examples/agent/refund.json\n"
        "obelisk request examples/agent/refund.json --journal run.db --tick 2 --json"),
    "mcp": (
        "MCP servers as obelisk sees them.",
        "obelisk mcp list 'notes=stdio:python examples/mcp/notes_server.py'"),
    "mcp list": (
        "List MCP servers' tools as obelisk sees them: names, hints, the policy applied.",
        "obelisk mcp list 'notes=stdio:python examples/mcp/notes_server.py'\n"
        "obelisk mcp list --mcp-config servers.json --json"),
    "mcp-server": (
        "Serve plan mode to MCP clients: one run_plan tool over the tools of the MCP "
        "servers given (stdio, or streamable HTTP with --http).",
        "obelisk mcp-server --mcp-config servers.json\n"
        "obelisk mcp-server --mcp 'notes=stdio:python notes.py' --http 127.0.0.1:8765"),
    "conformance": (
        "Run conformance vectors (the bundled pack, or files and directories) against "
        "obelisk or, with --against, another implementation's adapter.",
        "obelisk conformance -q\n"
        "obelisk conformance --against './my-engine --adapter'"),
    "adapter": (
        "Speak the adapter protocol on stdin/stdout: obelisk as an implementation under "
        "test (one JSON request per line, one answer per line).",
        "obelisk conformance --against 'obelisk adapter'"),
    "fuzz": (
        "Fuzz another implementation against obelisk: generated plans and contexts, each "
        "difference shrunk to a small case (needs obelisk[testing]).",
        "obelisk fuzz --against './my-engine --adapter' --examples 500 --seed 1"),
}


def epilog(examples: str) -> str:
    """The examples as ``--help`` shows them, under the options."""
    return "examples:\n" + "\n".join(f"  {line}" for line in examples.splitlines())

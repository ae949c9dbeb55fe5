"""``obelisk request FILE [--context FILE] [--input JSON|@FILE] [--tick N --journal JOURNAL
[--run ID]] [--json]``: print the request the LLM is sent (docs/agent.md).

The agent loop builds it, with the builder its ticks use: at the first tick for the agent
file, or, with ``--journal``, at tick ``--tick`` (default: the newest the run reaches, the
next one it would send when it goes on) of the recorded run, replayed on a copy of the
journal (nothing is written to it, and a run in progress may be read). Text shows the
system text, each turn and the solution schema as the adapters are given them; ``--json``
the provider-neutral request.
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import tempfile
from typing import Any, TextIO

from obelisk.cli.agentfile import agent_context, file_request, read_agent_file
from obelisk.cli.common import EXIT_OK, Command, load_activities
from obelisk.cli.safe import inert, inert_lines, json_text
from obelisk.jsonio import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """[FILE], ``--tick``, ``--journal``, ``--run``, ``--activities``, ``--mode``,
    ``--json`` and the MCP options."""
    parser.add_argument("file", metavar="FILE", nargs="?",
                        help="agent file: context, tools, output_schema (optional with "
                             "--journal, which holds the run's start)")
    parser.add_argument("--tick", type=int, metavar="N",
                        help="the tick whose request to print (needs --journal; default: "
                             "the newest the run reaches)")
    parser.add_argument("--journal", metavar="JOURNAL",
                        help="the journal file an agent run was recorded in (obelisk agent "
                             "--journal): its ticks are replayed on a copy")
    parser.add_argument("--run", dest="run_id", metavar="ID",
                        help="the run in the journal (default: the newest)")
    parser.add_argument("--activities", metavar="pkg.mod:NAME",
                        help="the activities the agent runs with (their names shape the "
                             "solution schema; none runs)")
    parser.add_argument("--mode", choices=["eager", "lazy"],
                        help="eager: calls and output each tick; lazy: a plan to review "
                             "(default: the file's mode, else eager)")
    parser.add_argument("--json", action="store_true",
                        help="print the provider-neutral request as JSON")
    from obelisk.cli.llmargs import add_context_options

    add_context_options(parser)
    from obelisk.cli.mcp import add_mcp_arguments  # declares options only: no SDK

    add_mcp_arguments(parser)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the request; exit 2 when the file, the journal or the tick cannot be read."""
    if args.tick is not None and args.tick < 1:
        raise InputError("--tick must be at least 1")
    if args.journal is None:
        if args.file is None:
            raise InputError("request needs an agent FILE, or --journal JOURNAL")
        if args.tick not in (None, 1):
            raise InputError(f"--tick {args.tick} needs --journal: without a recorded run, "
                             "the first tick's request is the one known")
        tick, request = 1, file_request(read_agent_file(args.file), args.file, args, err)
    else:
        tick, request = _recorded(args, err)
    if args.json:
        print(json_text({"tick": tick, **request.to_json()}, stream=out), file=out)
    else:
        out.write(inert_lines(request.render()))
    return EXIT_OK


def _recorded(args: argparse.Namespace, err: TextIO) -> tuple[int, Any]:
    """The tick and request of ``--journal``'s run, replayed on a copy of the journal."""
    from obelisk.agent import AgentError
    from obelisk.cli.mcp import activities_for, servers_for
    from obelisk.cli.run import open_journal
    from obelisk.journal import JournalUnreadable, recorded_agent, recorded_request, run_kind

    spec = read_agent_file(args.file) if args.file is not None else {}
    servers = servers_for(args, err, spec.get("mcp"), args.file or "")
    tools = (servers.tools if servers is not None else []) + list(spec.get("tools", []))
    loaded = load_activities(args.activities) if args.activities else None
    names = list(activities_for(args, err, loaded))
    with tempfile.TemporaryDirectory(prefix="obelisk-request-") as folder:
        copy = _copy(args.journal, pathlib.Path(folder) / "journal.db")
        with open_journal(copy, create=False) as journal:
            try:
                if run_kind(journal, args.run_id) == "plan":
                    raise InputError(f"{args.journal}: run "
                                     f"{journal.run_header(args.run_id).run_id} is a plan's "
                                     "run: obelisk request shows an agent run's requests")
                run = recorded_agent(journal, args.run_id)
                where = f"{args.journal}: run {run.header.run_id}"
                if args.file is not None and (
                        agent_context(spec, args.file, args).messages
                        != run.context.messages
                        or tools != list(run.tools)):
                    raise InputError(f"{args.file} is not the agent {where} started with "
                                     "(their contexts or tools differ): give the file the "
                                     "run was started with, or no FILE")
                asked = recorded_request(journal, run.header.run_id, tick=args.tick,
                                         activity_names=names)
            except (AgentError, JournalUnreadable) as exc:
                raise InputError(str(exc).replace(journal.name, args.journal)) from None
    print(inert(f"the request of tick {asked.tick} of {where}"), file=err)
    return asked.tick, asked.request


def _copy(path: str, to: pathlib.Path) -> str:
    """A consistent copy of the SQLite journal at ``path`` (read only: nothing is written
    to it, and a run writing to it meanwhile is not disturbed)."""
    import sqlite3

    from obelisk.urls import is_url, shown

    if is_url(path):
        raise InputError(f"--journal {shown(path)}: obelisk request replays a copy of a journal "
                         "file; a PostgreSQL journal cannot be copied so")
    source = pathlib.Path(path)
    if not source.is_file():
        raise InputError(f"cannot read {path}: no such journal file")
    try:
        with contextlib.closing(sqlite3.connect(source.resolve().as_uri() + "?mode=ro",
                                                uri=True)) as db, \
                contextlib.closing(sqlite3.connect(to)) as copied:
            db.backup(copied)
    except sqlite3.Error as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    return str(to)


REQUEST = Command("request", "print the request the LLM is sent at a tick of an agent",
                  add_arguments, run)

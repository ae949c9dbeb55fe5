"""obelisk/cli/: the command table, the typed run report, and the facade the CLI uses."""

from __future__ import annotations

import argparse
import ast
import io
import pathlib
from typing import TextIO

import pytest

import obelisk
from obelisk import dry_run
from obelisk.cli import COMMANDS, build_parser, main
from obelisk.cli.common import EXIT_OK, Command
from obelisk.cli.report import RunReport, View, render_report
from obelisk.planfile import read_plan_file

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_row_of_the_table_is_a_command() -> None:
    names = [c.name for c in COMMANDS]
    assert len(names) == len(set(names))
    assert names == ["resolve", "validate", "graph", "schema", "dry-run", "run", "resume",
                     "history", "report", "submit", "worker", "agent", "request", "mcp",
                     "mcp-server", "conformance", "adapter", "fuzz"]
    help_text = build_parser().format_help()
    for command in COMMANDS:
        assert command.name in help_text and command.help in help_text


def test_a_new_command_is_one_row() -> None:
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("word")

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        print(args.word.upper(), file=out)
        return EXIT_OK

    parser = build_parser((*COMMANDS, Command("shout", "say it louder", add_arguments, run)))
    args = parser.parse_args(["shout", "hello"])
    out = io.StringIO()
    assert args.run(args, out, io.StringIO()) == EXIT_OK
    assert out.getvalue() == "HELLO\n"


# ``run x.json`` without --activities is no longer a usage error: MCP servers (--mcp, or
# the file's "mcp" field) may give the activities instead; see the test below it.
@pytest.mark.parametrize("argv", [["frobnicate"], ["validate"], ["run"],
                                  ["run", "x.json", "--interpreter", "threads"]])
def test_usage_errors_exit_2_without_a_traceback(argv: list[str]) -> None:
    err = io.StringIO()
    assert main(argv, out=io.StringIO(), err=err) == 2
    assert err.getvalue().startswith("usage: obelisk")
    assert "Traceback" not in err.getvalue()


def test_run_without_activities_names_both_ways_to_give_them(tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"plan": [{"_tool": "x"}]}', encoding="utf-8")
    err = io.StringIO()
    assert main(["run", str(plan)], out=io.StringIO(), err=err) == 2
    assert err.getvalue() == ("error: run needs --activities MODULE:NAME (or MCP servers: "
                              "--mcp SPEC)\n")


def test_the_usage_error_is_an_obelisk_error() -> None:
    from obelisk.cli import UsageError
    assert issubclass(UsageError, obelisk.ObeliskError)


def test_the_typed_report_keeps_every_row_in_order() -> None:
    pf = read_plan_file(str(ROOT / "examples/weather.json"))
    result = dry_run(pf.plan, pf.context, mocks=pf.mocks, tools=pf.tools, explore=True)
    data = result.report()
    report = RunReport.of(data)
    assert report.status == data["status"]
    assert [c.call for c in report.calls] == [c["call"] for c in data["calls"]]
    assert list(report.views) == [View(kind, layer, value) for kind, per in data["views"].items()
                                  for layer, value in per.items()]
    assert report.explore is not None
    assert len(report.explore.combinations) == len(data["explore"]["combinations"])
    out = io.StringIO()
    render_report(report, out)
    assert out.getvalue().endswith(f"\nstatus: {data['status']}\n")


def test_the_facade_has_what_the_cli_needs() -> None:
    for name in ("render_text", "summary", "report", "views"):
        assert name in obelisk.__all__ and hasattr(obelisk, name)
    assert all(hasattr(obelisk, name) for name in obelisk.__all__)


def _facade_names_imported_by(folder: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "obelisk":
                names.update(alias.name for alias in node.names)
    return names


def test_all_lists_the_public_api_only() -> None:
    """What only the command line uses is importable from the facade but not public."""
    shell = set(obelisk._FOR_THE_SHELL)
    for name in ("plural", "invalid_report", "replay_open", "replay_more", "Replayed",
                 "journal_history"):
        assert name in shell and name not in obelisk.__all__, name
    assert all(hasattr(obelisk, name) for name in shell)
    used = _facade_names_imported_by(ROOT / "obelisk" / "cli")
    assert used <= set(obelisk.__all__) | shell | {"__version__"}, used - set(obelisk.__all__)
    assert shell <= used
    tree = ast.parse((ROOT / "obelisk" / "__init__.py").read_text(encoding="utf-8"))
    [typed] = [node.value for node in ast.walk(tree) if isinstance(node, ast.AugAssign)]
    assert set(ast.literal_eval(typed)) == shell  # what mypy takes as re-exported
    namespace: dict[str, object] = {}
    exec("from obelisk import *", namespace)
    assert not shell & set(namespace)

"""Start-up: the facade imports each public name on first use, and the command line
imports only what the command it runs uses (which modules load, not how long they take)."""

from __future__ import annotations

import ast
import importlib
import json
import pathlib
import subprocess
import sys

import pytest

import obelisk
import obelisk.cli
from obelisk.cli import COMMANDS, build_parser

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: Never needed to print help, check a plan file without tools, or read an expression.
#: jsonschema (with referencing and the metaschemas) checks tools and calls against them,
#: through a tool's shape: without tools there is nothing to check. The run's events and
#: machine run nothing here; a run's report, SARIF, suggestions for misspelt names
#: (difflib) and the clock (datetime) are not needed either. (pathlib, which validate
#: imports only for a directory, is not listed: an editable install's finder imports it.)
NOT_FOR_SIMPLE_COMMANDS = ("rich", "sqlite3", "asyncio", "hypothesis", "httpx", "argcomplete",
                           "obelisk.llm", "obelisk.agent", "obelisk.journal", "obelisk.kit",
                           "obelisk.interpreters.aio", "obelisk.interpreters.dryrun",
                           "jsonschema", "referencing", "jsonschema_specifications",
                           "obelisk.compiler.shape", "obelisk.interpreters.events",
                           "obelisk.interpreters.machine", "obelisk.cli.report", "obelisk.sarif",
                           "difflib", "datetime", "mcp", "obelisk.mcp", "httpx2", "anyio",
                           "dask", "distributed", "obelisk.dask")
#: Not needed for ``--help`` either: ``--help`` uses none of the library.
NOT_FOR_HELP = (*NOT_FOR_SIMPLE_COMMANDS, "jsonschema", "lark", "attrs", "pyrsistent", "obelisk.compiler",
                "obelisk.interpreters", "obelisk.core.context")


def test_every_public_name_resolves_and_is_listed() -> None:
    listed = dir(obelisk)
    for name in obelisk.__all__:
        assert name in listed
        assert getattr(obelisk, name) is not None


def test_each_name_is_the_object_of_its_home_module() -> None:
    for name, (module, attribute) in obelisk._EXPORTS.where.items():
        assert getattr(obelisk, name) is getattr(importlib.import_module(module), attribute)
    assert obelisk.journal_history is importlib.import_module("obelisk.journal").history


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        obelisk.nothing_here  # noqa: B018 - the access is what is tested
    with pytest.raises(ImportError):
        exec("from obelisk import nothing_here", {})


def test_the_type_checking_imports_and_the_table_agree() -> None:
    # The static imports (what mypy sees) and the run-time table must name the same
    # objects, or a name would be typed as one thing and be another.
    tree = ast.parse((ROOT / "obelisk" / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    static = {alias.asname or alias.name: (node.module, alias.name)
              for node in block.body if isinstance(node, ast.ImportFrom)
              for alias in node.names}
    assert static == obelisk._EXPORTS.where
    assert set(obelisk.__all__) <= set(static) | {"resolve"}


def test_the_command_table_repeats_each_module_row() -> None:
    for row in COMMANDS:
        deferred = row.run.__self__  # type: ignore[attr-defined]
        own = deferred.command()
        assert (own.name, own.help) == (row.name, row.help)


def test_help_lists_the_same_commands_without_their_arguments() -> None:
    assert build_parser(arguments_for=()).format_help() == build_parser().format_help()


def test_the_cli_keeps_its_names() -> None:
    assert obelisk.cli.Progress is importlib.import_module("obelisk.cli.terminal").Progress
    assert callable(obelisk.cli.terminal_approval)
    with pytest.raises(AttributeError):
        obelisk.cli.nothing_here  # noqa: B018


def modules_after(argv: list[str]) -> set[str]:
    """The modules loaded by a fresh interpreter that ran ``obelisk ARGV``."""
    code = ("import io, json, sys\n"
            "from obelisk.cli import main\n"
            f"code = main({argv!r}, out=io.StringIO(), err=io.StringIO())\n"
            "print(json.dumps([code, sorted(sys.modules)]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    code, modules = json.loads(done.stdout.splitlines()[-1])
    assert code == 0
    return set(modules)


def test_import_obelisk_imports_no_layer() -> None:
    done = subprocess.run([sys.executable, "-c", "import json, sys, obelisk; "
                           "print(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert {m for m in loaded if m.startswith("obelisk.")} == {"obelisk.core", "obelisk.core.lazy"}


def test_a_context_from_the_facade_reads_output_paths() -> None:
    # The compiler plugs the reference parser into core; a Context taken from the facade
    # brings it along, as it did when the facade imported everything.
    code = ("from obelisk import Context\n"
            "c = Context.of([{'type': 'state', 'state': {'a': 1}, '_outputPath': '†state.a'}])\n"
            "print(len(c))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"


@pytest.mark.parametrize("package", ["obelisk.core", "obelisk.interpreters"])
def test_the_layers_export_their_names_on_first_use(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert name in dir(module)
    for name, (home, attribute) in module._EXPORTS.where.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), attribute)
    # Every public name is in the first-use table or already a plain attribute (no module).
    assert set(module.__all__) <= set(module._EXPORTS.where) | set(vars(module))
    for name in set(module.__all__) - set(module._EXPORTS.where):
        assert not isinstance(getattr(module, name), type(module))
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nothing'"):
        module.nothing  # noqa: B018


def test_help_imports_none_of_the_heavy_modules() -> None:
    loaded = modules_after(["--help"])
    assert not [m for m in NOT_FOR_HELP if m in loaded]


@pytest.mark.slow
def test_validate_without_tools_and_resolve_import_only_what_they_use(
        tmp_path: pathlib.Path) -> None:
    calls = [{"_tool": "fetch", "id": "†input.userId", "_outputPath": "†state.s0"}]
    calls += [{"_tool": "step", "previous": f"†state.s{i - 1}", "_outputPath": f"†state.s{i}"}
              for i in range(1, 20)]
    plan = tmp_path / "twenty.json"
    plan.write_text(json.dumps({"context": [{"type": "input", "input": {"userId": "u"}}],
                                "plan": calls}), encoding="utf-8")
    for argv in (["validate", str(plan)],
                 ["resolve", str(ROOT / "examples" / "context.json"), "†state.user.name"]):
        loaded = modules_after(argv)
        assert "obelisk.compiler" in loaded  # it did the work
        assert not [m for m in NOT_FOR_SIMPLE_COMMANDS if m in loaded]
        # Plain references never reach the grammar's parser, so lark is not imported.
        assert "lark" not in loaded and "obelisk.compiler.grammar" not in loaded
    # An expression that is not a plain reference brings the grammar in.
    loaded = modules_after(["resolve", str(ROOT / "examples" / "context.json"),
                            "†state.nothing || †state.user.name"])
    assert "lark" in loaded and "obelisk.compiler.grammar" in loaded


@pytest.mark.slow
def test_a_command_that_needs_more_still_gets_it() -> None:
    loaded = modules_after(["conformance", "--help"])
    assert "obelisk.cli.kit" in loaded


@pytest.mark.slow
def test_a_plan_command_without_mcp_imports_no_mcp(tmp_path: pathlib.Path) -> None:
    # --mcp is declared on every plan command, but obelisk.mcp and the SDK are imported
    # only when a server is named.
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps({"plan": [{"_tool": "x", "_output": 1}]}), encoding="utf-8")
    for argv in (["dry-run", str(plan)], ["mcp", "--help"]):
        loaded = modules_after(argv)
        assert "obelisk.cli.mcp" in loaded or argv[0] == "mcp"
        assert not {"mcp", "obelisk.mcp", "mcp_types"} & loaded


@pytest.mark.slow
def test_a_run_without_dask_imports_no_dask(tmp_path: pathlib.Path) -> None:
    # --interpreter dask is declared on run, resume and agent, but obelisk.dask and Dask
    # are imported only when it is chosen; the facade names run_dask without importing it.
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps({"plan": [{"_tool": "x", "_output": 1}]}), encoding="utf-8")
    for argv in (["dry-run", str(plan)], ["run", "--help"], ["agent", "--help"]):
        loaded = modules_after(argv)
        assert not {"dask", "distributed", "obelisk.dask"} & loaded, argv
    done = subprocess.run([sys.executable, "-c", "import sys, obelisk; obelisk.run_sync; "
                           "print('distributed' in sys.modules, 'dask' in sys.modules)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.slow
def test_validate_with_tools_imports_jsonschema_and_checks_the_schemas(
        tmp_path: pathlib.Path) -> None:
    # In a fresh process, where nothing imported jsonschema before: the tools are checked
    # against the metaschema and the calls against the tools.
    tool = {"type": "object", "properties": {"_tool": {"const": "pay"},
                                             "amount": {"type": "number", "minimum": 0}},
            "required": ["amount"]}
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"tools": [tool], "plan": [{"_tool": "pay", "amount": 3}]}),
                    encoding="utf-8")
    loaded = modules_after(["validate", str(good)])
    assert {"jsonschema", "referencing"} <= loaded
    bad_call = tmp_path / "bad-call.json"
    bad_call.write_text(json.dumps({"tools": [tool], "plan": [{"_tool": "pay", "amount": -1}]}),
                        encoding="utf-8")
    bad_tool = tmp_path / "bad-tool.json"
    bad_tool.write_text(json.dumps({"tools": [{**tool, "required": 3}],
                                    "plan": [{"_tool": "pay", "amount": 3}]}), encoding="utf-8")
    for path, code, expected in (
            (bad_call, 1, "error[param-schema]: amount: -1 is less than the minimum of 0"),
            (bad_tool, 2, "at /required: not a valid JSON Schema (Draft 2020-12)")):
        done = subprocess.run([sys.executable, "-m", "obelisk", "validate", str(path)],
                              capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == code and expected in done.stdout + done.stderr

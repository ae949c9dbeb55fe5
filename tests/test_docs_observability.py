"""docs/observability.md runs as a user pastes it: each Python block alone, in a fresh
process, in an empty folder, offline (the collector example prints its spans with the
console exporter); each block of command lines in order, in one shell; and the span
tree it draws for an agent run with a delegate is the tree the SDK records.

tests/test_docs.py runs the page's Python blocks too, one after the other in one
namespace; here each block is run on its own, as it is pasted. The lines left out are
named in :data:`NOT_RUN`, with why.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from test_docs import _checked, _fenced
from test_spans import Telemetry, otel  # noqa: F401 - the fixture

import obelisk
from obelisk.llm.scripted import ScriptedLLM

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "observability.md"
#: The lines of the page's command blocks not run here: installing reaches the network,
#: and the command line under ``opentelemetry-instrument`` is tests/test_otel_instrument.py's
#: (it needs the SDK's auto-configuration, which this test's offline guard would meet).
NOT_RUN = ("pip install 'obelisk[otel]'",
           "pip install opentelemetry-distro",
           "OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none "
           "opentelemetry-instrument obelisk run ex/payment.json "
           "--activities obelisk.examples.shop:ACTIVITIES")
#: Imported first by every process the examples start: a connection anywhere but this
#: machine fails.
OFFLINE = '''import socket
_connect = socket.socket.connect
def _here_only(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in (
            "127.0.0.1", "::1", "localhost"):
        raise OSError(f"the docs' examples run offline: {address!r}")
    return _connect(self, address)
socket.socket.connect = _here_only
socket.socket.connect_ex = _here_only
'''


@pytest.fixture
def pasted(tmp_path: pathlib.Path) -> dict[str, str]:
    """The environment of an example's process: offline, in ``tmp_path``, the venv's
    commands first, no provider or content variable of the caller's."""
    offline = tmp_path / ".offline"
    offline.mkdir()
    (offline / "sitecustomize.py").write_text(OFFLINE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONPATH=os.pathsep.join([str(offline), str(ROOT / "tests")]),
               PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               NO_COLOR="1")
    return env


def run(command: list[str], env: dict[str, str], cwd: pathlib.Path) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_offline_guard_refuses_the_network(pasted: dict[str, str],
                                               tmp_path: pathlib.Path) -> None:
    code = "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80), 1)\n" \
           "except OSError as e:\n    print(e)\n"
    assert "run offline" in run([sys.executable, "-c", code], pasted, tmp_path)


@pytest.mark.slow
def test_each_python_block_runs_alone_as_pasted(pasted: dict[str, str],
                                                tmp_path: pathlib.Path) -> None:
    blocks = _fenced(PAGE)
    assert len(blocks) == 2  # the collector example, the on_event example
    printed = []
    for _, code, needs in blocks:
        assert not needs
        checked = _checked(code)
        if "_printed(" in checked:
            checked = "from test_docs import _printed\n" + checked
        printed.append(run([sys.executable, "-c", checked], pasted, tmp_path))
    # The collector example: every span printed on the console, the run's and its call's.
    names = re.findall(r'^    "name": "([^"]+)"', printed[0], re.M)
    assert names == ["execute_tool add", "invoke_workflow obelisk"], printed[0]


def plain_blocks() -> list[list[str]]:
    """The page's blocks fenced without a language: their lines."""
    found: list[list[str]] = []
    fence: str | None = None  # the info string of the open block (None: outside)
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = line[3:] if fence is None else None
            if fence == "":
                found.append([])
        elif fence == "":
            found[-1].append(line)
    return found


def command_blocks() -> list[list[str]]:
    """The page's blocks of command lines (the span tree's drawing is not one)."""
    return [block for block in plain_blocks() if not block[0].startswith("invoke_agent")]


@pytest.mark.slow
def test_the_command_lines_run_in_order(pasted: dict[str, str],
                                        tmp_path: pathlib.Path) -> None:
    left_out = []
    for block in command_blocks():
        lines = [line for line in block if line.strip()]
        shown = [line for line in lines if line not in NOT_RUN]
        left_out += [line for line in lines if line in NOT_RUN]
        if shown:
            run(["bash", "-ec", "\n".join(shown)], pasted, tmp_path)
    assert sorted(left_out) == sorted(NOT_RUN)  # a new line is run, not left out
    html = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert "processPayment" in html and (tmp_path / "run.jsonl").exists()


# -- the span tree of an agent run with a delegate -------------------------------------------

_BRANCH = re.compile(r"^((?:│   |    )*)(?:├── |└── )?(.+?)(?:\s{2,}\(.*\))?$")


def drawn() -> list[tuple[int, str]]:
    """The page's drawing of the span tree: (depth, name) per line, "..." for more."""
    (drawing,) = [block for block in plain_blocks() if block[0].startswith("invoke_agent")]
    out = []
    for line in drawing:
        match = _BRANCH.match(line)
        assert match is not None, line
        depth = 0 if line.startswith("invoke_agent") else len(match.group(1)) // 4 + 1
        out.append((depth, match.group(2).strip()))
    return out


def recorded(spans: list[ReadableSpan]) -> list[tuple[int, str]]:
    """The spans as the drawing draws them: children in the order they began."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        by_parent.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    out: list[tuple[int, str]] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(by_parent.get(parent, []),
                           key=lambda s: (s.start_time, s.attributes.get("obelisk.call", 0))):
            out.append((depth, span.name))
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return out


def matches(drawing: list[tuple[int, str]], tree: list[tuple[int, str]]) -> bool:
    """Whether ``tree`` is what ``drawing`` draws, a "..." standing for any further
    siblings (and what they hold) at its depth, or none."""
    if not drawing:
        return not tree
    (depth, name), rest = drawing[0], drawing[1:]
    if name == "...":
        return any(matches(rest, tree[cut:]) for cut in range(len(tree) + 1)
                   if all(d >= depth for d, _ in tree[:cut]))
    return bool(tree) and tree[0] == (depth, name) and matches(rest, tree[1:])


class Gpt4o(ScriptedLLM):
    """The scripted adapter, named as the model the drawing shows."""

    model = "gpt-4o"


def test_the_span_tree_drawn_is_the_one_recorded(otel: Telemetry) -> None:  # noqa: F811
    summarise = {"type": "object", "properties": {
        "_tool": {"const": "summarise"}, "text": {"type": "string"},
        "_delegate": {"const": "anonymous"}, "_output": {"type": "string"}}}
    add = {"type": "object", "properties": {"_tool": {"const": "add"}}}
    llm = Gpt4o([{"calls": [{"_tool": "summarise", "text": "long", "_outputPath": "†state.s"},
                            {"_tool": "add", "_outputPath": "†sum"}], "output": None},
                 {"calls": [], "output": "short"},
                 {"calls": [], "output": "†sum"}])
    result = obelisk.run_agent_sync([{"type": "input", "input": "go"}], llm,
                                    tools=[summarise, add], activities={"add": lambda *_: 3})
    assert result.status == "completed"
    tree = recorded(otel.spans())
    assert matches(drawn(), tree), "\n".join("    " * d + n for d, n in tree)


@pytest.mark.parametrize(("tree", "expected"), [
    ([(0, "a"), (1, "b")], True),
    ([(0, "a"), (1, "b"), (1, "c"), (2, "d")], True),   # "..." holds c and what c holds
    ([(0, "a")], False),                                # b is drawn
    ([(0, "a"), (1, "x")], False),
    ([(0, "a"), (1, "b"), (0, "c")], False),            # "..." is at depth 1 only
])
def test_a_drawing_matches_only_its_tree(tree: list[tuple[int, str]], expected: bool) -> None:
    assert matches([(0, "a"), (1, "b"), (1, "...")], tree) is expected


def test_the_drawing_is_read_as_drawn() -> Any:
    assert drawn()[:4] == [(0, "invoke_agent obelisk"), (1, "plan obelisk"),
                           (2, "chat gpt-4o"), (1, "execute_tool summarise")]


def test_the_functions_and_commands_named_take_events(
        capsys: pytest.CaptureFixture[str]) -> None:
    # (The page named resume_plan, which obelisk does not export, and left out dry_run.)
    import inspect

    from obelisk.cli import main

    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    said = re.search(r"((?:`\w+`,? (?:and )?)+)take `on_event`", text)
    assert said is not None
    names = re.findall(r"`(\w+)`", said.group(1))
    assert {"run_sync", "dry_run", "resume", "run_agent"} <= set(names)
    for name in names:
        function = getattr(obelisk, name)
        if name == "run_agent_sync":  # (its options are run_agent's)
            function = obelisk.run_agent
        assert "on_event" in inspect.signature(function).parameters, name
    said = re.search(r"((?:`obelisk [\w-]+`,? (?:and )?)+)take\s+`--events FILE`", text)
    assert said is not None
    for command in re.findall(r"`obelisk ([\w-]+)`", said.group(1)):
        assert main([command, "--help"]) == 0
        assert "--events FILE" in capsys.readouterr().out, command

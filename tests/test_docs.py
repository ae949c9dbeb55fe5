"""Every Python example in docs/ and the README runs: the blocks of a page run in order,
in one namespace, after the page's prelude below (the names a page's text introduces in
prose or JSON, such as the weather tool's schema). A line ``x  # value`` whose comment is
a Python literal is checked: ``x`` must equal it.

No page is left out, and none reaches the network. The pages that construct the provider
adapters (docs/agent.md) run with placeholder API keys in the environment, and the one
address they show for a model server on the user's machine (:data:`LOCAL_MODEL_SERVER`) is
replaced by the loopback fake server of tests/llm/servers.py, which answers as the
provider would; the test checks that the example did ask it.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import pathlib
import re
import sys
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "llm"))
from test_tools import SENTIMENT, WEATHER  # noqa: E402

_TOOLS = [WEATHER, {"type": "object", "properties": {
    "_tool": {"const": "greet"}, "name": {"type": "string"}}}]

PRELUDES: dict[str, dict[str, Any]] = {
    "tools.md": {"sentiment_schema": SENTIMENT, "weather_schema": WEATHER},
    "validation.md": {
        "calls": [{"_tool": "weatherCheck", "location": "†input.city",
                   "_outputPath": "†state.weather"}],
        "tool_schemas": _TOOLS,
        "messages": [{"type": "input", "input": {"city": "Paris"}}],
    },
    "semantics.md": {"messages": [{"type": "state", "user": {"name": "Alex"}}]},
    "dry-run.md": {"plan": [{"_tool": "weatherCheck", "location": "Paris",
                             "_outputPath": "†state.weather"}],
                   "context": [], "tools": [WEATHER],
                   "mocks": {"weatherCheck": {"return": {"temperature": 20,
                                                          "conditions": "sunny"}}}},
}
#: The address docs/agent.md shows for an OpenAI-compatible server on the user's machine.
LOCAL_MODEL_SERVER = "http://127.0.0.1:8000"
#: What the fake server answers, to any number of requests: a solution that ends the run.
_SERVER_ANSWER = {"calls": [], "output": "done"}
_PYTHON = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)


def _pages() -> list[pathlib.Path]:
    return sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def _blocks(page: pathlib.Path) -> list[tuple[int, str]]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _PYTHON.finditer(text):
        indent, body = match.groups()
        code = "\n".join(line[len(indent):] for line in body.splitlines())
        found.append((text[:match.start()].count("\n") + 1, code))
    return found


def _checked(code: str) -> str:
    """The block with each ``expression  # literal`` line turned into an assertion."""
    lines = []
    for line in code.splitlines():
        match = re.match(r"^([^#\s].*?)\s+#\s*(.+)$", line)
        if match and not match.group(1).startswith("print(") and "..." not in match.group(2):
            expression, comment = match.groups()
            try:
                ast.parse(expression, mode="eval")
                expected = ast.literal_eval(comment.split("  ")[0].strip())
            except (SyntaxError, ValueError):
                lines.append(line)
                continue
            lines.append(f"assert ({expression}) == {expected!r}, {expression!r}")
        else:
            lines.append(line)
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_python_example_of_the_page_runs(page: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from servers import openai_completion, serve

    monkeypatch.chdir(ROOT)
    # A page may set OpenTelemetry's global tracer provider (docs/observability.md): it is
    # this test's alone, restored after it, so the tests after it run untraced.
    from opentelemetry import trace

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", trace.Once())
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(key, "placeholder-key-for-the-docs-examples")
    namespace: dict[str, Any] = {"__name__": "__doc_example__", **PRELUDES.get(page.name, {})}
    blocks = _blocks(page)
    local = any(LOCAL_MODEL_SERVER in code for _, code in blocks)
    with serve([openai_completion(json.dumps(_SERVER_ANSWER))] * 20) as server:
        # The SDKs' own base-URL variables: an adapter made without base_url asks the
        # loopback server too, never the provider.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.root_url)
        for line, code in blocks:
            code = code.replace(LOCAL_MODEL_SERVER, server.root_url)
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(_checked(code), f"{page.name}:{line}", "exec"), namespace)
    assert bool(server.requests) == local  # the local-server example asked the fake server


def test_every_page_with_examples_is_run() -> None:
    assert sum(len(_blocks(p)) for p in _pages()) >= 20
    pages = {p.name for p in _pages()}
    assert {"agent.md", "architecture.md"} <= pages  # no page is left out
    assert all(p.name in pages for p in (ROOT / "docs").glob("*.md"))


# -- the command lines shown in the docs ---------------------------------------------------

_BLOCK = re.compile(r"```(json|text|console)\n(.*?)```", re.S)
#: Pages whose ``$ obelisk ...`` examples are run here (validation.md's are run, with its
#: JSON examples, by tests/test_cli_validate.py).
CONSOLE_PAGES = ("running.md", "dry-run.md", "semantics.md", "expressions.md", "mcp.md")


def _console_examples() -> list[tuple[str, str, str, list[str]]]:
    """(page, the JSON block before the example, the command, the printed lines)."""
    found = []
    for page in CONSOLE_PAGES:
        last_json = ""
        for kind, body in _BLOCK.findall((ROOT / "docs" / page).read_text(encoding="utf-8")):
            if kind == "json":
                last_json = body
            elif body.startswith("$ ") and "obelisk" in body.splitlines()[0]:
                lines = body.splitlines()
                command = [lines.pop(0)[2:]]
                while command[-1].endswith("\\"):
                    command.append(lines.pop(0))
                found.append((page, last_json, "\n".join(command), lines))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("page", "content", "command", "printed"),
                         [pytest.param(*e, id=f"{e[0]}: {e[2][:60]}")
                          for e in _console_examples()])
def test_the_command_lines_print_what_the_docs_show(tmp_path: pathlib.Path, page: str,
                                                    content: str, command: str,
                                                    printed: list[str]) -> None:
    import os
    import shlex
    import subprocess

    # A file the command names that is not in the repository is the JSON block before it
    # ("saved as tiny.json"); the command runs from the repository's root otherwise.
    cwd = ROOT
    named = [w for w in shlex.split(command.replace("\\\n", " ")) if w.endswith(".json")]
    if named and not (ROOT / named[0]).exists():
        (tmp_path / named[0]).write_text(content, encoding="utf-8")
        cwd = tmp_path
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT / "tests"),
           "PATH": f"{pathlib.Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    result = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    expected = [line.rstrip() for line in printed]
    for shown in (result.stdout, result.stdout + result.stderr, result.stderr):
        lines = [line.rstrip() for line in shown.splitlines()]
        if "..." in expected:  # the page leaves out the middle
            cut = expected.index("...")
            head, tail = expected[:cut], expected[cut + 1:]
            if lines[:len(head)] == head and lines[len(lines) - len(tail):] == tail:
                return
        elif lines == expected:
            return
    assert [line.rstrip() for line in result.stdout.splitlines()] == expected, result.stderr


def test_the_docs_show_command_lines() -> None:
    assert len(_console_examples()) >= 25


# -- the agent command lines of docs/agent.md ------------------------------------------------


def _agent_command_lines() -> list[str]:
    """Every ``obelisk agent`` line of docs/agent.md's plain code blocks but the synopsis."""
    found, fence = [], None  # fence: the info string of the open block (None: outside)
    for line in (ROOT / "docs" / "agent.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = line[3:] if fence is None else None
        elif fence == "" and line.startswith("obelisk agent ") and "FILE" not in line:
            found.append(line)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("line", _agent_command_lines())
def test_the_agent_command_lines_of_the_docs_run(line: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # The scripted ones run as shown. The provider ones run against the loopback fake
    # server: the page's local address is replaced by it, and the SDKs' own base-URL
    # variables point there, so a line without --base-url never reaches the network.
    import shlex

    from servers import anthropic_message, openai_completion, serve

    from obelisk.cli import main

    monkeypatch.chdir(ROOT)
    argv = shlex.split(line, comments=True)
    llm = argv[argv.index("--llm") + 1]
    answer = {"calls": [], "output": {"refundId": "rf-1", "amount": 1.0}}
    reply = (anthropic_message(answer) if llm.startswith("anthropic:")
             else openai_completion(json.dumps(answer)))
    out, err = io.StringIO(), io.StringIO()
    with serve([reply]) as server:
        for provider in ("OPENAI", "ANTHROPIC"):
            monkeypatch.setenv(f"{provider}_API_KEY", "placeholder-key-for-the-docs-examples")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.root_url)
        argv = [a.replace(LOCAL_MODEL_SERVER, server.root_url) for a in argv]
        code = main(argv[1:], out=out, err=err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert bool(server.requests) == (not llm.startswith("script:"))
    if "--stream" in argv:  # what the page says this one shows
        assert ("call 0 started (1 call(s) arrived, the solution still arriving)"
                in out.getvalue())


def test_the_agent_page_shows_command_lines() -> None:
    assert len(_agent_command_lines()) >= 5

"""Every Python example in docs/ and the README runs as written: the blocks of a page run
in order, in one namespace that starts empty (a page defines every name it uses). A line
``x  # value`` whose comment is a Python literal is checked: ``x`` must equal it. A block
that needs an optional extra is fenced ```` ```python needs=EXTRA ````; its page runs where
the extra is installed and is skipped, saying so, where it is not (failed instead when
OBELISK_REQUIRE_EXTRAS is set, as CI does). The site shows the fence as a Python block
(mkdocs_hooks.py drops the ``needs=``).

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
#: The address docs/agent.md shows for an OpenAI-compatible server on the user's machine.
LOCAL_MODEL_SERVER = "http://127.0.0.1:8000"
#: What the fake server answers, to any number of requests: a solution that ends the run.
_SERVER_ANSWER = {"calls": [], "output": "done"}
_PYTHON = re.compile(r"^( *)```python(?: needs=([\w,-]+))?\n(.*?)^\1```", re.S | re.M)
#: The module each extra a block may need brings.
EXTRAS = {"mcp": "mcp", "openai": "openai", "anthropic": "anthropic", "postgres": "psycopg",
          "testing": "hypothesis"}


def _pages() -> list[pathlib.Path]:
    return sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def _blocks(page: pathlib.Path) -> list[tuple[int, str]]:
    return [(line, code) for line, code, _ in _fenced(page)]


def _fenced(page: pathlib.Path) -> list[tuple[int, str, list[str]]]:
    """Each Python block of the page: its line, its code, the extras it needs."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _PYTHON.finditer(text):
        indent, needs, body = match.groups()
        code = "\n".join(line[len(indent):] for line in body.splitlines())
        found.append((text[:match.start()].count("\n") + 1, code,
                      needs.split(",") if needs else []))
    return found


def _missing_extras(page: pathlib.Path) -> list[str]:
    """The extras the page's blocks need that are not installed here."""
    import importlib.util

    needed = {extra for _, _, needs in _fenced(page) for extra in needs}
    return sorted(e for e in needed if importlib.util.find_spec(EXTRAS[e]) is None)


def _printed(show: Any, expected: str, where: str) -> None:
    """Run ``show`` (a ``print(...)`` line of a page) and check what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show()
    assert out.getvalue().rstrip("\n") == expected, f"{where} printed {out.getvalue()!r}"


def _checked(code: str) -> str:
    """The block with each ``expression  # literal`` line turned into an assertion, and
    each ``print(...)  # text`` line into a check that it prints the text."""
    lines = []
    for line in code.splitlines():
        match = re.match(r"^([^#\s].*?)\s+#\s*(.+)$", line)
        if match and match.group(1).startswith("print(") and "..." not in match.group(2):
            show, text = match.groups()
            lines.append(f"_printed(lambda: {show}, {text.rstrip()!r}, {show!r})")
        elif match and not match.group(1).startswith("print(") and "..." not in match.group(2):
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

    missing = _missing_extras(page)
    if missing:
        import os

        message = (f"{page.name} needs " + ", ".join(f"pip install 'obelisk[{e}]'"
                                                      for e in missing))
        if os.environ.get("OBELISK_REQUIRE_EXTRAS"):
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.chdir(ROOT)
    # A page may set OpenTelemetry's global tracer provider (docs/observability.md): it is
    # this test's alone, restored after it, so the tests after it run untraced.
    from opentelemetry import trace

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", trace.Once())
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(key, "placeholder-key-for-the-docs-examples")
    namespace: dict[str, Any] = {"__name__": "__doc_example__", "_printed": _printed}
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


def test_every_needs_names_an_extra() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    named = {e for page in _pages() for _, _, needs in _fenced(page) for e in needs}
    assert {"mcp", "openai", "anthropic"} <= named  # the pages that need them say so
    assert named <= EXTRAS.keys() and named <= extras.keys()
    # A block that imports an extra's module is marked (it would fail without the extra).
    for page in _pages():
        for line, code, needs in _fenced(page):
            for extra, module in EXTRAS.items():
                if re.search(rf"^(from|import) {module}\b|obelisk\.{module}\b", code, re.M):
                    assert extra in needs, f"{page.name}:{line} needs {extra}"


def test_the_site_shows_a_needs_fence_as_python() -> None:
    sys.path.insert(0, str(ROOT))
    from mkdocs_hooks import on_page_markdown

    text = "a\n\n```python needs=mcp\nimport mcp\n```\n"
    assert on_page_markdown(text) == "a\n\n```python\nimport mcp\n```\n"


def test_the_pages_say_when_conformance_exits_0() -> None:
    # tests/kit/test_kit_conformance.py pins it: unsupported vectors fail only under
    # --strict. Before, conformance-vectors.md said "exits 0 only when every vector passes".
    page = (ROOT / "docs" / "conformance-vectors.md").read_text(encoding="utf-8")
    assert "exits 0 only when every vector passes" not in page
    assert "it does not fail the run unless `--strict` is given" in page


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
    assert_transcript(printed, result.stdout, result.stderr)


def assert_transcript(printed: list[str], stdout: str, stderr: str) -> None:
    """A ``$ `` transcript shows what the terminal shows, standard error included (a page
    that leaves out a warning or a prompt is wrong): both streams, one after the other in
    the order they were written (standard error first when the command writes it first,
    as a prompt or a note before a report is); ``...`` stands for lines left out."""
    expected = [line.rstrip() for line in printed]
    shown = []
    for text in (stdout + stderr, stderr + stdout):
        lines = [line.rstrip() for line in text.splitlines()]
        shown.append(lines)
        if "..." in expected:  # the page leaves out the middle
            cut = expected.index("...")
            head, tail = expected[:cut], expected[cut + 1:]
            if lines[:len(head)] == head and lines[len(lines) - len(tail):] == tail:
                return
        elif lines == expected:
            return
    assert shown[0] == expected


def test_the_docs_show_command_lines() -> None:
    assert len(_console_examples()) >= 25
    # Every page with a "$ " transcript has it run: here, or validation.md's by
    # tests/test_cli_validate.py.
    shown = {p.name for p in (ROOT / "docs").glob("*.md")
             if re.search(r"^\$ ", p.read_text(encoding="utf-8"), re.M)}
    assert shown <= {*CONSOLE_PAGES, "validation.md"}


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

"""Every Python example in docs/ and the README runs: the blocks of a page run in order,
in one namespace, after the page's prelude below (the names a page's text introduces in
prose or JSON, such as the weather tool's schema). A line ``x  # value`` whose comment is
a Python literal is checked: ``x`` must equal it.

Not run: docs/agent.md (its examples call LLM providers over the network; the agent's
own tests run its loop with a fake client) and docs/architecture*.md (code there shows
how to write a module, with ``...`` for the body).
"""

from __future__ import annotations

import ast
import contextlib
import io
import pathlib
import re
import sys
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
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
SKIPPED = {"agent.md", "architecture.md", "architecture-compiler.md",
           "architecture-interpreters.md"}
_PYTHON = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)


def _pages() -> list[pathlib.Path]:
    return [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in SKIPPED] + [
        ROOT / "README.md"]


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


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_python_example_of_the_page_runs(page: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, Any] = {"__name__": "__doc_example__", **PRELUDES.get(page.name, {})}
    for line, code in _blocks(page):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(_checked(code), f"{page.name}:{line}", "exec"), namespace)


def test_every_page_with_examples_is_run() -> None:
    assert sum(len(_blocks(p)) for p in _pages()) >= 20

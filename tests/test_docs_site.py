"""The documentation site draws its pictures with no network: every ```mermaid block is a
diagram of the built pages, drawn by the copy of mermaid's script served with them, and
every diagram obelisk writes (the docs' and `obelisk graph`'s) parses with that script."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest

from obelisk import compile_plan
from obelisk.planfile import read_plan_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MERMAID_JS = DOCS / "javascripts" / "mermaid.min.js"
_MERMAID_BLOCK = re.compile(r"^```mermaid\n(.*?)^```", re.S | re.M)


def _doc_diagrams() -> list[tuple[str, str]]:
    return [(page.name, match.group(1)) for page in sorted(DOCS.glob("*.md"))
            for match in _MERMAID_BLOCK.finditer(page.read_text(encoding="utf-8"))]


@pytest.mark.slow
def test_the_built_site_draws_mermaid_blocks_with_its_own_script(
        tmp_path: pathlib.Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                           str(site)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    diagrams = _doc_diagrams()
    assert diagrams, "the docs show at least one diagram"
    drawn = 0
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        blocks = html.count('<pre class="mermaid"><code>')
        drawn += blocks
        scripts = re.findall(r'<script src="([^"]+)"', html)
        assert not [s for s in scripts if "//" in s], (page, scripts)  # nothing from a CDN
        if blocks:
            assert any(s.endswith("javascripts/mermaid.min.js") for s in scripts), page
    assert drawn == len(diagrams)
    served = site / "javascripts" / "mermaid.min.js"
    assert served.read_bytes() == MERMAID_JS.read_bytes()
    # The theme fetches mermaid from a CDN only when no script defined it first.
    assert re.search(rb"^\"use strict\";var __esbuild_esm_mermaid", served.read_bytes())


#: Where Debian's packages of node modules are (node-jsdom installs jsdom there).
NODE_PATH = os.pathsep.join(["/usr/share/nodejs", "/usr/lib/nodejs",
                             os.environ.get("NODE_PATH", "")])


def _node() -> str:
    """node, with jsdom (mermaid sanitises labels with DOMPurify, which needs a DOM)."""
    node = shutil.which("node")
    found = node is not None and subprocess.run(
        [node, "-e", "require.resolve('jsdom')"], env={**os.environ, "NODE_PATH": NODE_PATH},
        capture_output=True, check=False).returncode == 0
    if node is None or not found:
        if os.environ.get("OBELISK_REQUIRE_JSDOM"):
            pytest.fail("OBELISK_REQUIRE_JSDOM is set but node or jsdom is not installed")
        pytest.skip("node and jsdom are not installed (apt-get install nodejs node-jsdom)")
    return node


#: Parses each diagram of a JSON array on stdin with the vendored mermaid, in a jsdom
#: window as in a browser; prints, as JSON, null for a diagram that parses and the
#: error's text for one that does not.
PARSE = """
const fs = require("fs"), vm = require("vm"), { JSDOM } = require("jsdom");
const dom = new JSDOM("<!DOCTYPE html><body></body>", { pretendToBeVisual: true });
globalThis.window = dom.window;
for (const name of ["document", "Element", "HTMLElement", "Node", "navigator", "DOMParser"])
  globalThis[name] = dom.window[name];
vm.runInThisContext(fs.readFileSync(process.argv[1], "utf8"));
const diagrams = JSON.parse(fs.readFileSync(0, "utf8"));
Promise.all(diagrams.map(d => mermaid.parse(d).then(() => null, e => String(e.message))))
  .then(r => process.stdout.write(JSON.stringify(r)));
"""


def _graphs() -> list[tuple[str, str]]:
    """obelisk's Mermaid drawings: every example plan, and plans that use every feature
    of the drawing (a cycle, a dangling read, ``&&``, ``||``, instances, odd labels)."""
    found = []
    for path in sorted((ROOT / "examples").glob("*.json")):
        if path.name == "context.json":
            continue
        pf = read_plan_file(str(path))
        plan = compile_plan(pf.plan, context=pf.context, tools=pf.tools,
                            instances=pf.instances)
        found += [(path.name, plan.to_mermaid()), (path.name, plan.to_mermaid(legend=False))]
    odd: list[Any] = [
        {"_tool": "a", "p": "†state.y", "_outputPath": "†state.x"},
        {"_tool": "b", "p": "†state.x", "_outputPath": "†state.y"},
        {"_tool": "c", "p": "†state.nowhere", "q": "†input.q"},
        {"_tool": "w", "_outputPath": "†state.f && †state.g"},
        {"_tool": "r", "p": "†state.f", "q": "†state.g"},
        {"_tool": "t", "_outputPath": "(†state.ok && †state.ok2) || †state.err"},
        {"_tool": 'say "hi" #1', "p": "†state.ok", "e": "†state.err"},
        {"_tool": "u", "p": '†state."a \\"b\\" #x;"', "_outputPath": "†data.\"x\ny\""},
    ]
    plan = compile_plan(odd)
    found += [("odd", plan.to_mermaid()), ("odd", plan.to_mermaid(legend=False))]
    return found


@pytest.mark.slow
def test_every_diagram_parses_with_the_served_mermaid() -> None:
    node = _node()
    diagrams = _doc_diagrams() + _graphs()
    env = {**os.environ, "NODE_PATH": NODE_PATH}
    done = subprocess.run([node, "-e", PARSE, str(MERMAID_JS)],
                          input=json.dumps([text for _, text in diagrams]), env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    errors = {f"{name} #{number}": error for number, ((name, _), error) in
              enumerate(zip(diagrams, json.loads(done.stdout), strict=True)) if error}
    assert errors == {}
    # The check can fail: a broken diagram is refused.
    done = subprocess.run([node, "-e", PARSE, str(MERMAID_JS)], env=env,
                          input=json.dumps(["flowchart LR\n  a -->"]), capture_output=True,
                          text=True, timeout=300)
    assert json.loads(done.stdout)[0].startswith("Parse error")

"""Layering: obelisk.llm never imports obelisk.agent; the request and schema modules are
pure (no I/O, clock, randomness, asyncio or threads)."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMPURE = {"asyncio", "threading", "time", "random", "os", "io", "socket", "subprocess",
          "datetime", "logging", "pathlib"}


def test_the_llm_layer_does_not_import_the_agent() -> None:
    # Read statically: importing obelisk.llm runs the facade (obelisk/__init__.py), which
    # imports every layer, so sys.modules cannot tell. (lint-imports checks this too.)
    for module in sorted((ROOT / "obelisk" / "llm").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith("obelisk.agent") for n in names), module.name


@pytest.mark.parametrize("module", ["obelisk/agent/request.py", "obelisk/agent/schema.py",
                                    "obelisk/llm/request.py", "obelisk/llm/strict.py"])
def test_pure_modules_import_nothing_impure(module: str) -> None:
    tree = ast.parse((ROOT / module).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported & IMPURE == set()

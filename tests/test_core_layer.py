"""core is the lowest layer: none of its modules imports the compiler or the interpreters."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "core"


@pytest.mark.parametrize("module", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_imports_nothing_above_it(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    above = [m for m in imported if m.startswith(("obelisk.compiler", "obelisk.interpreters",
                                                  "compiler", "interpreters"))]
    assert above == [], f"{module.name} imports {above}"

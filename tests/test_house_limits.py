"""The house limits, in every package of obelisk: no module over 400 lines, no function
over 60, and no import circle (each module imports only what sits below it).

A function's length runs from its ``def`` line to its last line (decorators left out,
its docstring in). An import counts wherever it is written, inside a function too; one
under ``if TYPE_CHECKING:`` does not (it is never executed).
"""

from __future__ import annotations

import ast
import os
import pathlib
from collections.abc import Iterator

import grimp
import pytest

import obelisk

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

ROOT = pathlib.Path(obelisk.__file__).resolve().parent.parent


def modules() -> Iterator[pathlib.Path]:
    """Every module of the package, once (core/, compiler/ and interpreters/ are reached
    through obelisk/'s symbolic links, as examples/ is), as its real path."""
    seen: set[pathlib.Path] = set()
    for folder, _, files in os.walk(pathlib.Path(obelisk.__file__).parent, followlinks=True):
        for name in files:
            path = (pathlib.Path(folder) / name).resolve()
            if name.endswith(".py") and path not in seen:
                seen.add(path)
                yield path


def where(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Each function's qualified name and length in lines, nested ones too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            yield prefix + node.name, node.end_lineno - node.lineno + 1
            yield from functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, prefix + node.name + ".")
        else:
            yield from functions(node, prefix)


def test_the_walk_sees_every_layer() -> None:
    found = {where(path).split("/")[0] for path in modules()}
    assert found == {"core", "compiler", "interpreters", "examples", "obelisk"}


def test_no_module_is_over_400_lines() -> None:
    over = {where(path): n for path in modules()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not over, over


@pytest.mark.slow
def test_no_function_is_over_60_lines() -> None:
    over = {}
    for path in modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, length in functions(tree):
            if length > MAX_FUNCTION_LINES:
                over[f"{where(path)}:{name}"] = length
    assert not over, over


def circles(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """The import circles among obelisk's modules: the strongly connected components
    of more than one module (Tarjan's algorithm, iteratively)."""
    names = sorted(m for m in graph.modules if m.split(".")[0] == "obelisk")
    edges = {m: sorted(n for n in graph.find_modules_directly_imported_by(m)
                       if n.split(".")[0] == "obelisk") for m in names}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for root in names:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(edges[child])))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("obelisk", exclude_type_checking_imports=True, cache_dir=None)


def test_no_import_circle(graph: grimp.ImportGraph) -> None:
    found = [sorted(c) for c in circles(graph)]
    assert not found, found


def test_the_circle_finder_finds_a_circle_through_a_function_level_import(
        graph: grimp.ImportGraph) -> None:
    # (A check that cannot fail is no check.) CompiledPlan's exports import their module
    # inside the methods only, and that import counts.
    assert graph.direct_import_exists(importer="obelisk.compiler.nodes",
                                      imported="obelisk.compiler.export")
    looped = grimp.build_graph("obelisk", exclude_type_checking_imports=True, cache_dir=None)
    looped.add_import(importer="obelisk.core.values", imported="obelisk.core.context",
                      line_number=1, line_contents="from obelisk.core import context")
    assert frozenset({"obelisk.core.values", "obelisk.core.context", "obelisk.core.messages"}
                     ) <= {m for c in circles(looped) for m in c}

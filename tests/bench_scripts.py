"""Loading a script of bench/ as a module, for the tests that check its workloads."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench"


def load_script(name: str, module: str | None = None) -> ModuleType:
    """``bench/<name>.py`` as a module, registered as ``module`` (when given)."""
    spec = importlib.util.spec_from_file_location(module or name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    if module is not None:
        sys.modules.setdefault(module, loaded)
    spec.loader.exec_module(loaded)
    return loaded

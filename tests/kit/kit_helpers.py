"""Helpers shared by the kit's tests: commands for adapters, and running the CLI."""

from __future__ import annotations

import pathlib
import shlex
import sys

HERE = pathlib.Path(__file__).resolve().parent
PYTHON = shlex.quote(sys.executable)
#: `obelisk adapter`, as installed next to this interpreter.
OBELISK = shlex.quote(str(pathlib.Path(sys.executable).parent / "obelisk"))
OBELISK_ADAPTER = f"{OBELISK} adapter"


def script(name: str, *args: str) -> str:
    """The command line that runs one of the test adapters (defects/ or adapters/)."""
    path = HERE / "defects" / f"{name}.py"
    if not path.exists():
        path = HERE / "adapters" / f"{name}.py"
    return " ".join([PYTHON, shlex.quote(str(path)), *map(shlex.quote, args)])

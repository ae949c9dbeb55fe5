"""Run the ``obelisk`` command line in process, for the tests.

``cli("run", "plan.json")`` returns the exit code, what was printed on standard output and
what on standard error, exactly as a user's terminal would have them; ``terminal`` runs
it in a pseudo-terminal instead.
"""

from __future__ import annotations

import io
import os
import pathlib
import sys

import pexpect

from obelisk.cli import main

TESTS = pathlib.Path(__file__).resolve().parent


def cli(*argv: str) -> tuple[int, str, str]:
    """Run ``obelisk *argv`` in process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def terminal(args: list[str], cwd: pathlib.Path, **env: str) -> pexpect.spawn:
    """``python -m obelisk ARGS`` in a pseudo-terminal (100 columns, colour allowed, no
    editor set), with the tests' helper modules importable."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "EDITOR", "VISUAL")}
    environ.update(TERM="xterm-256color", COLUMNS="100", PYTHONPATH=str(TESTS), **env)
    return pexpect.spawn(sys.executable, ["-m", "obelisk", *args], cwd=str(cwd), env=environ,
                         encoding="utf-8", timeout=60, dimensions=(40, 100))

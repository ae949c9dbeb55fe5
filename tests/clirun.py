"""Run the ``obelisk`` command line in process, for the tests.

``cli("run", "plan.json")`` returns the exit code, what was printed on standard output and
what on standard error, exactly as a user's terminal would have them.
"""

from __future__ import annotations

import io

from obelisk.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    """Run ``obelisk *argv`` in process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()

"""Shared by the seeded-defect adapters: obelisk's own answers, with one area perturbed.

Each defect script calls :func:`serve_with` with a function that rewrites a request
before obelisk answers it, or rewrites obelisk's answer, or both.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import Any

from obelisk.kit import local
from obelisk.kit.server import serve

Request = dict[str, Any]
Answer = dict[str, Any]


def serve_with(before: Callable[[Request], Request] = lambda r: r,
               after: Callable[[Request, Answer], Answer] = lambda r, a: a) -> None:
    """Serve the protocol on stdin/stdout with obelisk's answers, perturbed."""
    def answer(request: Any) -> Answer:
        if not isinstance(request, dict) or request.get("op") == "hello":
            return local.answer(request)
        return after(request, local.answer(before(request)))

    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8")
    sys.exit(serve(stdin, stdout, answer))

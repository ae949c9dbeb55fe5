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


def with_method(old: str, new: str) -> Callable[[Request], Request]:
    """A ``before`` that writes every ``_outputMethod: old`` of the request (its context
    and its plan) as ``new``."""
    def swap(item: Any) -> Any:
        if isinstance(item, dict):
            out = {k: swap(v) for k, v in item.items()}
            if out.get("_outputMethod") == old:
                out["_outputMethod"] = new
            return out
        if isinstance(item, list):
            return [swap(v) for v in item]
        return item

    return lambda request: {**request, "context": swap(request["context"]),
                            **({"plan": swap(request["plan"])} if "plan" in request else {})}


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

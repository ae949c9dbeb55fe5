"""Seeded defect (instance shadowing): an instance read returns the global value whenever
there is one, so instance data never shadows global data."""

from typing import Any

from _wrap import serve_with

from obelisk.kit import local


def shadow(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") != "resolve" or request.get("instance") is None:
        return answer
    global_answer = local.answer({**request, "instance": None})
    return global_answer if "value" in global_answer else answer


serve_with(after=shadow)

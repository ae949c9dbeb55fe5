"""Seeded defect (a write method): `merge` is shallow, as `assign` is: a nested object of
the written value replaces the one at its key instead of merging into it. That holds for
a message's default method too (a message without `_outputPath` merges at its kind's root)."""

from typing import Any

from _wrap import serve_with, with_method

explicit = with_method("merge", "assign")
DATA = ("data", "state", "input", "user")  # the kinds the fuzzer writes


def shallow(request: dict[str, Any]) -> dict[str, Any]:
    request = explicit(request)
    context = [{**m, "_outputMethod": "assign"}
               if isinstance(m, dict) and m.get("type") in DATA
               and "_outputPath" not in m and "_outputMethod" not in m else m
               for m in request["context"]]
    return {**request, "context": context}


serve_with(before=shallow)

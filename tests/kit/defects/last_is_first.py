"""Seeded defect (negative indexes): index -1 reads the first element instead of the last
(in resolve's expressions and in a plan's parameters)."""

import re
from typing import Any

from _wrap import serve_with

#: A path segment -1 (not a quoted key "-1", not a number in a literal).
MINUS_ONE = re.compile(r"(?<=\.)-1(?=$|[.\s|&)])")


def first(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("†"):
        return MINUS_ONE.sub("0", value)
    if isinstance(value, dict):
        return {k: v if k.startswith("_") else first(v) for k, v in value.items()}
    if isinstance(value, list):
        return [first(v) for v in value]
    return value


def reads_first(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") == "resolve":
        return {**request, "ref": first(request["ref"])}
    if "plan" in request:
        return {**request, "plan": [first(c) if isinstance(c, dict) else c
                                    for c in request["plan"]]}
    return request


serve_with(before=reads_first)

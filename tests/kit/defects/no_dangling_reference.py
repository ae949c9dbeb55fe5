"""Seeded defect (a diagnostic): `dangling-reference` is never reported."""

from typing import Any

from _wrap import serve_with


def drop(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    if "diagnostics" not in answer:
        return answer
    return {**answer, "diagnostics": [d for d in answer["diagnostics"]
                                      if d["code"] != "dangling-reference"]}


serve_with(after=drop)

"""Seeded defect (`||` waiting): a call does not wait for the writer of the left side of
`||`; when that side is MISSING at the start, it takes the fallback at once."""

from typing import Any

from _wrap import serve_with

from obelisk.kit import local


def eager(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") not in ("run", "check"):
        return request
    context = request["context"]
    plan = []
    for call in request["plan"]:
        if isinstance(call, dict):
            call = dict(call)
            for key, value in list(call.items()):
                if key.startswith("_") or not isinstance(value, str) or " || " not in value:
                    continue
                left, rest = value.split(" || ", 1)
                if left.startswith("†") and local.answer_resolve(
                        context, left, call.get("_instance")) == {"missing": True}:
                    # Read at once, the left side is MISSING: only the rest counts.
                    call[key] = "†input.never_written || " + rest
        plan.append(call)
    return {**request, "plan": plan}


serve_with(before=eager)

"""Seeded defect (an error routed to the wrong branch): when a call with alternatives
raises, the error object is written to its first (value) alternative."""

from typing import Any

from _wrap import serve_with


def as_value(mock: Any) -> Any:
    if not isinstance(mock, dict):
        return mock
    if "raise" in mock:
        error = mock["raise"]
        return {"return": {"type": error["type"], "message": error.get("message", "")}}
    if "by_instance" in mock:
        return {**mock, "by_instance": {k: as_value(v) for k, v in mock["by_instance"].items()}}
    if "sequence" in mock:
        return {**mock, "sequence": [as_value(v) for v in mock["sequence"]]}
    return mock


def misroute(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") != "run":
        return request
    branching = {call.get("_tool") for call in request["plan"]
                 if isinstance(call, dict) and "||" in str(call.get("_outputPath", ""))}
    mocks = {tool: as_value(mock) if tool in branching else mock
             for tool, mock in request.get("mocks", {}).items()}
    return {**request, "mocks": mocks}


serve_with(before=misroute)

"""Seeded defect (instance layers): an instance's writes fold before the global ones, so a
global write made after an instance's write to the same path hides it from that instance
(the protocol folds the instance's writes on top of every global write)."""

from typing import Any

from _wrap import serve_with


def global_on_top(request: dict[str, Any]) -> dict[str, Any]:
    instance = request.get("instance")
    if request.get("op") != "resolve" or instance is None:
        return request
    own, shared = [], []
    for message in request["context"]:
        if isinstance(message, dict) and "_instance" in message:
            if message["_instance"] == instance:
                own.append({k: v for k, v in message.items() if k != "_instance"})
        else:
            shared.append(message)
    # The instance's writes first, as global ones, then the global writes on top.
    return {**request, "context": own + shared, "instance": None}


serve_with(before=global_on_top)

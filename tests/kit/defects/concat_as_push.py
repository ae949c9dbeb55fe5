"""Seeded defect (a write method): `concat` is applied as `push`."""

from _wrap import serve_with


def swap(item: object) -> object:
    if isinstance(item, dict):
        out = {k: swap(v) for k, v in item.items()}
        if out.get("_outputMethod") == "concat":
            out["_outputMethod"] = "push"
        return out
    if isinstance(item, list):
        return [swap(v) for v in item]
    return item


serve_with(before=lambda request: {**request, "context": swap(request["context"]),
                                   **({"plan": swap(request["plan"])} if "plan" in request
                                      else {})})

"""A test adapter that answers like obelisk but makes other examples from `_output` schemas.

CONFORMANCE leaves the example a dry run writes for a tool without a mock to each
implementation; this one's examples differ from obelisk's wherever a different value is
still valid (every number one more, every string with a suffix). Any pack vector that
fails on it pins obelisk's own example generator instead of what the protocol fixes.
"""

from __future__ import annotations

import pathlib
import sys
from typing import Any

from jsonschema import Draft202012Validator

from obelisk.compiler.tools import Tool
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING
from obelisk.interpreters.dryrun import example_of_tool

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "defects"))
from _wrap import serve_with  # noqa: E402 - found once the defects' folder is on the path


def other(value: Any) -> Any:
    """``value`` with every number one more and every string longer."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "~"
    if isinstance(value, list):
        return [other(v) for v in value]
    return {k: other(v) for k, v in value.items()}


def with_other_examples(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") != "run" or not isinstance(request.get("tools"), list):
        return request
    mocks = dict(request.get("mocks") or {})
    own_output = {c.get("_tool") for c in request["plan"] if isinstance(c, dict) and "_output" in c}
    for schema in request["tools"]:
        try:
            tool = Tool.of(schema)
        except Exception:
            continue
        if tool.name in mocks or tool.name in own_output or not tool.output_schema:
            continue
        example = example_of_tool(tool)
        if example is MISSING:
            continue
        changed = other(thaw(example))
        if Draft202012Validator(thaw(tool.output_schema)).is_valid(changed):
            mocks[tool.name] = {"return": changed}
    return {**request, "mocks": mocks}


serve_with(before=with_other_examples)

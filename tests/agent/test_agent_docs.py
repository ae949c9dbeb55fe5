"""docs/agent.md shows a request in full: this test makes it, and the page must hold
exactly that text (OBELISK_UPDATE_GOLDEN=1 rewrites the page's block)."""

from __future__ import annotations

import json
import os
import pathlib
import re

from obelisk import Context
from obelisk.agent import build_request

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "agent.md"
BLOCK = re.compile(r"(<!-- request:begin -->\n)(.*?)(<!-- request:end -->)", re.S)

# The example on the page, exactly as it is written there.
CONTEXT = [
    {"type": "system", "text": "You help customers with refunds."},
    {"type": "input", "input": {"customerId": "c-1", "orderId": "A-1009"}},
    {"type": "state", "state": {"refund": {"status": "pending"}},
     "_outputPath": "†state.refund.status", "_date": "2026-11-22T12:00:00Z"},
    {"type": "state", "state": {"refund": {"status": "approved"}}, "_instance": "②"},
]
TOOLS = [{
    "type": "object", "description": "Refund an order.",
    "properties": {"_tool": {"const": "issueRefund"}, "orderId": {"type": "string"},
                   "amount": {"type": "number"}},
    "required": ["orderId"],
}]


def shown() -> str:
    request = build_request(Context.of(CONTEXT), tools=TOOLS, activity_names=["issueRefund"])
    turns = "\n\n".join(f"[{t['role']}]\n{t['content']}" for t in request.turns_json())
    schema = json.dumps(request.schema, ensure_ascii=False, indent=2)
    return f"```text\n{turns}\n```\n\nand the solution schema:\n\n```json\n{schema}\n```\n"


def test_the_page_shows_the_request_this_code_builds() -> None:
    text = DOC.read_text()
    match = BLOCK.search(text)
    assert match, "docs/agent.md lost its <!-- request:begin/end --> markers"
    if os.environ.get("OBELISK_UPDATE_GOLDEN") == "1":
        DOC.write_text(text[:match.start(2)] + shown() + text[match.end(2):])
        text = DOC.read_text()
        match = BLOCK.search(text)
        assert match
    assert match.group(2) == shown()

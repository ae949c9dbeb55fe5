"""Activities for the Ctrl-C tests (tests/test_cli_interrupt.py). Not a test module.

``refundOrder`` is a plain function (a worker thread under asyncio) that touches the file
named by ``SHOP_STARTED`` when it starts, sleeps ``SHOP_REFUND_DELAY`` seconds, then
appends its name to ``SHOP_COUNT``: the side effect a resume must not repeat. ``notify``
appends its own name.
"""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any


def _count(name: str) -> None:
    # One O_APPEND write per line: whole lines, even when the process dies.
    fd = os.open(os.environ["SHOP_COUNT"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{name}\n".encode())
    finally:
        os.close(fd)


def refund(call: dict[str, Any], tool: Any, context: Any) -> Any:
    pathlib.Path(os.environ["SHOP_STARTED"]).touch()
    time.sleep(float(os.environ.get("SHOP_REFUND_DELAY", "0")))
    _count("refundOrder")
    return {"refunded": call.get("amount", 0)}


def notify(call: dict[str, Any], tool: Any, context: Any) -> Any:
    _count("notify")
    return "sent"


ACTIVITIES = {"refundOrder": refund, "notify": notify}
PLAN = [{"_tool": "refundOrder", "amount": 5, "_outputPath": "†state.refund"},
        {"_tool": "notify", "about": "†state.refund", "_outputPath": "†state.note"}]

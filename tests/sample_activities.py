"""Activities for the command-line tests (``obelisk run --activities sample_activities:ACTIVITIES``).

They implement the tools of examples/payment.json and a few helpers. Not a test module.
"""

from __future__ import annotations

import asyncio
from typing import Any

from obelisk import ActivityError, Context


def process_payment(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Charge up to 100; more is declined (routed to the error branch by the plan)."""
    if call["amount"] > 100:
        raise ActivityError("CardDeclined", "Your card was declined.", {"code": "card_declined"})
    return {"receiptId": f"rcpt_{call['amount']:g}"}


async def confirm_order(call: dict[str, Any], tool: Any, context: Context) -> Any:
    await asyncio.sleep(0)
    return {"status": "confirmed", "receipt": call["receipt"]["receiptId"]}


def report_failure(call: dict[str, Any], tool: Any, context: Context) -> Any:
    return {"status": "Failed", "notified": True, "why": call["error"]["type"]}


async def hang(call: dict[str, Any], tool: Any, context: Context) -> Any:
    await asyncio.sleep(60)


def echo(call: dict[str, Any], tool: Any, context: Context) -> Any:
    return {k: v for k, v in call.items() if not k.startswith("_")}


ACTIVITIES = {
    "processPayment": process_payment,
    "confirmOrder": confirm_order,
    "reportFailure": report_failure,
    "hang": hang,
    "echo": echo,
}

NOT_A_DICT = [process_payment]
NOT_CALLABLE = {"processPayment": "process_payment"}

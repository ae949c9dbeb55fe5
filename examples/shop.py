"""Activities for the shop's examples: ``--activities obelisk.examples.shop:ACTIVITIES``.

A card is charged up to 100 (more is declined, an ``ActivityError`` the plans route to
their error branch), a parcel takes two seconds to ship (time to interrupt a durable run
and resume it), and orders and refunds come from small tables. Nothing leaves the
process, and every run gives the same results.
"""

from __future__ import annotations

import asyncio
from typing import Any

from obelisk import ActivityError, Context

Call = dict[str, Any]

#: The orders ``lookupOrder`` knows, by id.
ORDERS = {
    "A-1009": {"status": "delivered", "total": 49.9},
    "A-1010": {"status": "shipped", "total": 120.0},
}
#: How long ``shipParcel`` takes, in seconds.
SHIPPING_SECONDS = 2.0


def process_payment(call: Call, tool: Any, context: Context) -> Any:
    """Charge up to 100; more is declined."""
    amount = call["amount"]
    if amount > 100:
        raise ActivityError("CardDeclined", f"Your card was declined for {amount:g}.",
                            {"code": "card_declined"})
    return {"receiptId": f"rcpt_{amount:g}"}


async def ship_parcel(call: Call, tool: Any, context: Context) -> Any:
    """Hand the parcel to the courier, which takes :data:`SHIPPING_SECONDS`."""
    await asyncio.sleep(SHIPPING_SECONDS)
    return {"trackingId": f"trk_{call['receipt']['receiptId']}", "to": call["address"]}


def confirm_order(call: Call, tool: Any, context: Context) -> Any:
    """Confirm a paid order (and its parcel, when there is one)."""
    out = {"status": "confirmed", "receipt": call["receipt"]["receiptId"]}
    if isinstance(call.get("parcel"), dict):
        out["trackingId"] = call["parcel"]["trackingId"]
    return out


def report_failure(call: Call, tool: Any, context: Context) -> Any:
    """Tell the customer what went wrong."""
    return {"status": "Failed", "notified": True, "why": call["error"]["type"]}


def check_billing_history(call: Call, tool: Any, context: Context) -> Any:
    """A customer's billing history."""
    return {"orders": 5, "lastChargeback": "2025-09-10"}


def lookup_order(call: Call, tool: dict[str, Any] | None, context: Context) -> Any:
    """An order by its id; an unknown id is a ``NoSuchOrder`` error.

    The shop's order system is a legacy one: it gives amounts as text (``"49.90"``)
    unless the tool's ``_output`` schema declares the total a number (the agents'
    ``lookupOrder`` does, ``agent/self-correct.json``'s does not: its agent corrects itself).
    """
    order = ORDERS.get(call["orderId"])
    if order is None:
        raise ActivityError("NoSuchOrder", f"no order {call['orderId']!r}")
    output = (tool or {}).get("properties", {}).get("_output", {})  # tool: its schema
    if output.get("properties", {}).get("total", {}).get("type") == "number":
        return dict(order)
    return {**order, "total": f"{order['total']:.2f}"}


def issue_refund(call: Call, tool: Any, context: Context) -> Any:
    """Refund an order (the agents' tool) or a customer (``refund.json``'s tool)."""
    if call["amount"] <= 0:
        raise ActivityError("InvalidAmount", "a refund is of a positive amount")
    if "orderId" in call:
        return {"id": "rf-311"}
    return {"confirmationId": "refund_xyz789",
            "message": "The refund has been processed successfully."}


def escalate_to_supervisor(call: Call, tool: Any, context: Context) -> Any:
    """Open a ticket for a human supervisor."""
    return {"ticket": "sup-1", "customerId": call["customerId"]}


def draft_apology(call: Call, tool: Any, context: Context) -> Any:
    """A short apology for a customer's request."""
    return {"text": "We are sorry about your order; your refund is on its way."}


ACTIVITIES = {
    "processPayment": process_payment,
    "shipParcel": ship_parcel,
    "confirmOrder": confirm_order,
    "reportFailure": report_failure,
    "checkBillingHistory": check_billing_history,
    "lookupOrder": lookup_order,
    "issueRefund": issue_refund,
    "escalateToSupervisor": escalate_to_supervisor,
    "draftApology": draft_apology,
}

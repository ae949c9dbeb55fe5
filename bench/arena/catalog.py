"""The five tasks, each with its tools, latencies and known answer.

Shapes from LLMCompiler's and BFCL's evaluations: parallel lookups then a combination
(ParallelQA), a chain of dependent calls, a fan-out over ten items then an aggregate, a
lookup that fails and a fallback, and a multi-turn session against a stateful account
(BFCL's trading sessions). Tools are plain Python with latencies of 50-500 ms; each
task's ``tools()`` makes a fresh environment, so a run never sees another's state.
"""

from __future__ import annotations

from typing import Any

from .tasks import First, Ref, Step, Task, Tool, Turn

__all__ = ["TASKS"]

STRING, INTEGER, NUMBER, OBJECT = ({"type": t} for t in ("string", "integer", "number", "object"))

# -- parallel lookups, then a combination ---------------------------------------------------

CITIES = {"paris": ("Paris", 18, 0.30), "oslo": ("Oslo", 9, 0.45), "cairo": ("Cairo", 31, 0.35),
          "lima": ("Lima", 22, 0.40), "tokyo": ("Tokyo", 24, 0.50)}


def _weather_tools() -> tuple[Tool, ...]:
    by_name = {name: celsius for name, celsius, _ in CITIES.values()}

    def get_weather(city: str) -> Any:
        return {"city": city, "celsius": by_name[city]}

    def warmest(readings: dict[str, Any]) -> Any:
        best = max(readings.values(), key=lambda r: r["celsius"])
        return {"city": best["city"], "celsius": best["celsius"]}

    delays = {name: seconds for name, _, seconds in CITIES.values()}
    return (Tool("get_weather", "The temperature in a city now.", {"city": STRING},
                 lambda city: delays[city], get_weather),
            Tool("warmest", "The warmest of some weather readings.", {"readings": OBJECT},
                 0.05, warmest))


PARALLEL = Task(
    "parallel", "ParallelQA: 5 lookups, then a combination",
    (Turn("Which of Paris, Oslo, Cairo, Lima and Tokyo is warmest now, and how warm?",
          tuple(Step(f"weather.{key}", "get_weather", {"city": name})
                for key, (name, _, _) in CITIES.items())
          + (Step("hottest", "warmest", {"readings": Ref("weather")}),),
          {"city": Ref("hottest.city"), "celsius": Ref("hottest.celsius")},
          {"city": "Cairo", "celsius": 31}),),
    _weather_tools)

# -- a chain of dependent calls -------------------------------------------------------------

PEOPLE = {"e-204": {"name": "Ana Ruiz", "manager": "e-117", "email": "ana@example.com"},
          "e-117": {"name": "Ben Okafor", "manager": "e-001", "email": "ben@example.com"}}


def _ticket_tools() -> tuple[Tool, ...]:
    sent: list[Any] = []

    def get_ticket(id: str) -> Any:
        return {"id": id, "author": "e-204", "summary": "Checkout fails on Safari 17"}

    def get_employee(id: str) -> Any:
        return {"id": id, **PEOPLE[id]}

    def send_email(to: str, subject: str) -> Any:
        sent.append((to, subject))
        return {"messageId": f"m-{len(sent)}", "to": to}

    return (Tool("get_ticket", "A support ticket by id.", {"id": STRING}, 0.2, get_ticket),
            Tool("get_employee", "An employee by id: name, manager id, email.", {"id": STRING},
                 0.15, get_employee),
            Tool("send_email", "Send an email.", {"to": STRING, "subject": STRING}, 0.3,
                 send_email))


CHAIN = Task(
    "chain", "a chain of 4 dependent calls",
    (Turn("Email the manager of whoever filed ticket T-17 the ticket's summary.",
          (Step("ticket", "get_ticket", {"id": "T-17"}),
           Step("author", "get_employee", {"id": Ref("ticket.author")}),
           Step("manager", "get_employee", {"id": Ref("author.manager")}),
           Step("mail", "send_email", {"to": Ref("manager.email"),
                                       "subject": Ref("ticket.summary")})),
          {"to": Ref("manager.name"), "messageId": Ref("mail.messageId")},
          {"to": "Ben Okafor", "messageId": "m-1"}),),
    _ticket_tools)

# -- a fan-out over ten items, then an aggregate --------------------------------------------

SKUS = [f"A{101 + i}" for i in range(10)]


def _stock_tools() -> tuple[Tool, ...]:
    def check_stock(sku: str) -> Any:
        n = int(sku[1:]) - 100
        return {"sku": sku, "units": 3 * n, "price": 2.5 * n}

    def total_value(items: dict[str, Any]) -> Any:
        return {"units": sum(i["units"] for i in items.values()),
                "value": sum(i["units"] * i["price"] for i in items.values())}

    return (Tool("check_stock", "Units in stock and unit price of a SKU.", {"sku": STRING},
                 lambda sku: 0.08 + 0.02 * (int(sku[1:]) - 100), check_stock),
            Tool("total_value", "Units and value of some stock records.", {"items": OBJECT},
                 0.05, total_value))


FAN_OUT = Task(
    "fan-out", "the same lookup for 10 items, then an aggregate",
    (Turn(f"How many units of {', '.join(SKUS)} are in stock, and what are they worth?",
          tuple(Step(f"stock.{sku}", "check_stock", {"sku": sku}) for sku in SKUS)
          + (Step("total", "total_value", {"items": Ref("stock")}),),
          {"units": Ref("total.units"), "value": Ref("total.value")},
          {"units": 165, "value": 2887.5}),),
    _stock_tools)

# -- a lookup that fails, and a fallback ----------------------------------------------------


def _rate_tools() -> tuple[Tool, ...]:
    def rate_primary(pair: str) -> Any:
        raise ConnectionError("the rates service is unavailable (HTTP 503)")

    def rate_backup(pair: str) -> Any:
        return {"pair": pair, "rate": 0.92}

    def convert(amount: float, rate: float) -> Any:
        return {"amount": round(amount * rate, 2), "rate": rate}

    return (Tool("rate_primary", "An exchange rate, from the main rates service.",
                 {"pair": STRING}, 0.25, rate_primary),
            Tool("rate_backup", "An exchange rate, from the slower backup service.",
                 {"pair": STRING}, 0.4, rate_backup),
            Tool("convert", "Convert an amount at a rate.", {"amount": NUMBER, "rate": NUMBER},
                 0.05, convert))


BRANCH = Task(
    "branch", "a lookup that fails, a fallback, then a use of it",
    (Turn("Convert 250 USD to EUR.",
          (Step("rate", "rate_primary", {"pair": "USD/EUR"}),
           Step("rateBackup", "rate_backup", {"pair": "USD/EUR"}, after_failure="rate"),
           Step("converted", "convert",
                {"amount": 250, "rate": First((Ref("rate.rate"), Ref("rateBackup.rate")))})),
          {"eur": Ref("converted.amount"), "rate": Ref("converted.rate")},
          {"eur": 230.0, "rate": 0.92}),),
    _rate_tools, fails=frozenset({"rate"}))

# -- a multi-turn session against a stateful account ----------------------------------------

PRICES = {"ACME": 41.5, "GLOBEX": 118.25}


def _trading_tools() -> tuple[Tool, ...]:
    account: dict[str, Any] = {"cash": 10_000.0, "positions": {}, "orders": 0}

    def get_price(symbol: str) -> Any:
        return {"symbol": symbol, "price": PRICES[symbol]}

    def place_order(symbol: str, side: str, qty: int) -> Any:
        signed = qty if side == "buy" else -qty
        held = account["positions"].get(symbol, 0)
        if held + signed < 0:
            raise ValueError(f"cannot sell {qty} {symbol}: {held} held")
        account["positions"][symbol] = held + signed
        account["cash"] -= signed * PRICES[symbol]
        account["orders"] += 1
        return {"orderId": f"o-{account['orders']}", "symbol": symbol, "side": side,
                "qty": qty, "price": PRICES[symbol], "cash": account["cash"]}

    def get_position(symbol: str) -> Any:
        return {"symbol": symbol, "qty": account["positions"].get(symbol, 0),
                "cash": account["cash"]}

    return (Tool("get_price", "The market price of a stock.", {"symbol": STRING}, 0.2,
                 get_price),
            Tool("place_order", "Buy or sell shares at the market price.",
                 {"symbol": STRING, "side": {"enum": ["buy", "sell"]}, "qty": INTEGER}, 0.3,
                 place_order),
            Tool("get_position", "Shares held of a stock, and the cash left.",
                 {"symbol": STRING}, 0.1, get_position))


SESSION = Task(
    "session", "3 user turns against a stateful trading account",
    (Turn("What do ACME and GLOBEX trade at?",
          (Step("price.ACME", "get_price", {"symbol": "ACME"}),
           Step("price.GLOBEX", "get_price", {"symbol": "GLOBEX"})),
          {"ACME": Ref("price.ACME.price"), "GLOBEX": Ref("price.GLOBEX.price")},
          {"ACME": 41.5, "GLOBEX": 118.25}),
     Turn("Buy 10 ACME.",
          (Step("buy", "place_order", {"symbol": "ACME", "side": "buy", "qty": 10}),),
          {"order": Ref("buy.orderId"), "cash": Ref("buy.cash")},
          {"order": "o-1", "cash": 9585.0}),
     Turn("Sell 4 of them, then tell me how many ACME I hold and my cash.",
          (Step("sale", "place_order", {"symbol": "ACME", "side": "sell", "qty": 4}),
           Step("position", "get_position", {"symbol": Ref("sale.symbol")})),
          {"qty": Ref("position.qty"), "cash": Ref("position.cash")},
          {"qty": 6, "cash": 9751.0})),
    _trading_tools)

#: Every task, in the order the table prints them.
TASKS = (PARALLEL, CHAIN, FAN_OUT, BRANCH, SESSION)

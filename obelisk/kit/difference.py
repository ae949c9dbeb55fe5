"""What ``obelisk fuzz`` compares, and how a difference found is made minimal.

:func:`compare` asks obelisk (in process) and the adapter the same request and says
whether they differ in what the protocol fixes (:func:`essence`); :func:`prune` and
:func:`simplify` then take out of a differing request every call, message and member
the difference does not need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from obelisk.kit import local
from obelisk.kit.judge import Implementation, json_equal
from obelisk.kit.protocol import failure_of

#: The codes a ``check`` comparison looks at (an implementation may report more).
CODES = frozenset({
    "syntax", "unknown-tool", "param-schema", "invalid-output-method", "invalid-output-target",
    "dangling-reference", "cycle", "unknown-field", "invalid-scope", "type-mismatch",
    "write-race", "unreachable", "scope-race", "external-reference"})


# -- what is compared ------------------------------------------------------------------------


def essence(op: str, response: Mapping[str, Any]) -> Any:
    """What the comparison looks at in a response to an ``op`` request."""
    failure = failure_of(response)
    if failure is not None:
        return ("failure", failure)
    if op == "resolve":
        if "error" in response:
            return ("error", response["error"])
        if "missing" in response:
            return ("missing",)
        return ("value", response["value"])
    # (code, call, calls); a diagnostic of the whole plan (call null) sorts first.
    diagnostics = sorted(
        ([d["code"], d.get("call"), sorted(d.get("calls", []))]
         for d in response.get("diagnostics", [])
         if d.get("severity") == "error" and d.get("code") in CODES),
        key=lambda d: (d[1] is not None, d[1] or 0, d[0], d[2]))
    if op == "check":
        return ("diagnostics", _unique(diagnostics))
    calls = sorted((c["call"], c.get("instance") or "", c["outcome"], c.get("error") or "")
                   for c in response["calls"])
    return ("run", response.get("status") == "invalid", [list(c) for c in calls],
            response["views"])


def _unique(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def differ(op: str, ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Whether the adapter's answer differs from obelisk's in what ``op`` compares."""
    return not json_equal(_plain(essence(op, ours)), _plain(essence(op, theirs)))


def _plain(value: Any) -> Any:
    """Tuples as lists, so that the comparison is JSON equality."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def ask_safely(adapter: Implementation, request: Mapping[str, Any]) -> dict[str, Any]:
    """The adapter's answer, or ``{"failure": ...}`` when it gave none (a crash, a hang)."""
    from obelisk import ObeliskError

    try:
        return adapter.ask(request)
    except ObeliskError as exc:
        return {"failure": f"no answer: {exc}"}


def compare(adapter: Implementation, op: str, request: dict[str, Any]) -> bool:
    """Whether the adapter and obelisk disagree on ``request`` (False when obelisk has no
    answer to compare with, or, for ``run``, when the plan is invalid: check covers it)."""
    ours = local.answer(request)
    if failure_of(ours) is not None:
        return False
    if op == "run" and ours.get("status") == "invalid":
        return False
    return differ(op, ours, ask_safely(adapter, request))


def prune(adapter: Implementation, op: str, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` less every call and context message that the difference does not need.

    Hypothesis's shrinker works on the choices that drew the case; removing a whole call
    from the middle of a plan is a move it rarely finds within the budget. This pass
    tries exactly those removals, one at a time, keeping each that keeps the difference.
    """
    for field in ("plan", "context"):
        index = 0
        while index < len(request.get(field, [])):
            items = request[field]
            candidate = {**request, field: items[:index] + items[index + 1:]}
            if field == "plan" and "mocks" in request:
                tools = {c.get("_tool") for c in candidate["plan"] if isinstance(c, dict)}
                candidate["mocks"] = {t: m for t, m in request["mocks"].items() if t in tools}
            if compare(adapter, op, candidate):
                request = candidate
            else:
                index += 1
    return request


def simplify(adapter: Implementation, op: str, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` less every optional member of a message or a call that the difference
    does not need: a message's meta-properties (``_call``, an ``_outputMethod`` that
    changes nothing, ``_instance``...) and ``kind``; a call's parameters and
    meta-properties but ``_tool``. Hypothesis's shrinker keeps a member whose choice does
    not shrink to its absence; this pass tries each removal, keeping those that keep the
    difference.
    """
    for field in ("context", "plan"):
        for index in range(len(request.get(field, []))):
            item = request[field][index]
            if not isinstance(item, dict):
                continue
            for key in [k for k in item if _optional(field, k)]:
                items = request[field]
                smaller = {k: v for k, v in items[index].items() if k != key}
                candidate = {**request, field: [*items[:index], smaller, *items[index + 1:]]}
                if compare(adapter, op, candidate):
                    request = candidate
    return request


def _optional(field: str, key: str) -> bool:
    """Whether a member of a context message (``field`` context) or a call (plan) may be
    tried without."""
    if field == "context":
        return key.startswith("_") or key == "kind"
    return key != "_tool"

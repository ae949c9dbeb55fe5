"""core/resolve.py and the facade's resolve(): evaluating input expressions (SEMANTICS §3, §4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import obelisk
from obelisk import MISSING, Context, ExpressionSyntaxError, WriteError, resolve
from obelisk.compiler.parse import parse_input
from obelisk.core.ast import Reference
from obelisk.core.plain import thaw
from obelisk.core.resolve import evaluate, fold_value, lookup_in
from obelisk.core.values import Frozen, Missing, freeze


def strict(value: Any) -> str:
    return "MISSING" if value is MISSING else json.dumps(value, sort_keys=True)


CONTEXT = Context.of([
    {"type": "system", "text": "You help."},
    {"type": "input", "input": {"userId": "u-17", "orderId": "A-1009", "count": 0,
                                "empty": "", "flag": False, "nothing": None}},
    {"type": "state", "user": {"name": "Alex", "status": "active", "tags": ["new"],
                               "email": None}},
    {"type": "data", "kind": "billing", "data": {"history": [{"amount": 50}, {"amount": 70}]}},
    {"type": "state", "state": {"user": {"status": "inactive"}}, "_outputPath": "†state.user.status"},
    {"type": "state", "state": {"user": {"tags": "vip"}}, "_outputPath": "†state.user.tags",
     "_outputMethod": "push"},
    {"type": "state", "state": {"user": {"status": "suspended", "note": "①"}}, "_instance": "①"},
    {"type": "state", "state": {"пользователь": {"имя": "Алекс"}, "my key": {"x": 1}}},
])

# (expression, instance, expected: plain JSON or MISSING)
RESOLVE = [
    # references
    ("†state.user.status", None, "inactive"),
    ("†state.user.status", "①", "suspended"),  # the instance shadows
    ("†state.user.name", "①", "Alex"),  # path by path
    ("†state.user.note", None, MISSING),  # a call with no instance sees global only
    ("†state.user.note", "①", "①"),
    ("†state.user.status", "②", "inactive"),
    ("†state.user.tags", None, ["new", "vip"]),
    ("†state.user.tags.-1", None, "vip"),
    ("†state.user.tags.0", None, "new"),
    ("†state.user.tags.2", None, MISSING),
    ("†state.user.tags.-3", None, MISSING),
    ("†billing.history.-1.amount", None, 70),
    ("†billing.history.-2.amount", None, 50),
    ("†state.user.email", None, None),  # null is a value
    ("†state.user.missing", None, MISSING),
    ("†state.user.name.first", None, MISSING),  # through a scalar
    ("†state.пользователь.имя", None, "Алекс"),
    ('†state."my key".x', None, 1),
    ("†state.'my key'", None, {"x": 1}),
    ("†input.userId", None, "u-17"),
    ("†input", "①", {"userId": "u-17", "orderId": "A-1009", "count": 0, "empty": "",
                     "flag": False, "nothing": None}),
    ("†nokind.x", None, MISSING),
    ("†system", None, MISSING),  # non-data messages are never read
    ("†text", None, MISSING),
    # literals are themselves
    ("'x'", None, "x"),
    ('"†state.user"', None, "†state.user"),
    ("12", None, 12),
    ("1.5", None, 1.5),
    ("true", None, True),
    ("false", None, False),
    ("null", None, None),
    # || : the first present operand (neither MISSING nor null), else MISSING
    ("†state.user.missing || 'none'", None, "none"),
    ("†state.user.email || 'none'", None, "none"),  # null is not present
    ("†state.user.name || 'none'", None, "Alex"),
    ("†input.count || 5", None, 0),  # 0, "" and false are present
    ("†input.empty || 'x'", None, ""),
    ("†input.flag || true", None, False),
    ("†state.a || †state.b || †state.user.name", None, "Alex"),
    ("†state.a || †state.b", None, MISSING),
    ("†state.user.email || †state.b", None, MISSING),  # null and MISSING: MISSING
    ("†input.nothing || null", None, MISSING),
    ("null || 'x'", None, "x"),
    ("null || null", None, MISSING),
    ("'a' || 'b'", None, "a"),
    ("†state.user.note || 'global'", None, "global"),
    ("†state.user.note || 'global'", "①", "①"),
    # && : the last operand when every one is present, else MISSING
    ("†state.user.name && †input.userId", None, "u-17"),
    ("†state.user.name && 'yes'", None, "yes"),
    ("†state.user.missing && 'yes'", None, MISSING),
    ("†state.user.email && 'yes'", None, MISSING),  # null is not present
    ("'yes' && †state.user.email", None, MISSING),
    ("'yes' && null", None, MISSING),
    ("†input.count && †input.flag", None, False),
    ("†input.empty && 0", None, 0),
    ("'a' && 'b' && 'c'", None, "c"),
    # precedence and parentheses
    ("†state.x && 'a' || 'b'", None, "b"),  # (x && a) || b
    ("'b' || †state.x && 'a'", None, "b"),
    ("(†state.x || 'a') && 'c'", None, "c"),
    ("†state.x || 'a' && 'c'", None, "c"),
    ("(†state.x || null) && 'c'", None, MISSING),
    ("((†state.user.status))", "①", "suspended"),
]


@pytest.mark.parametrize(("expression", "instance", "expected"), RESOLVE)
def test_resolve(expression: str, instance: str | None, expected: Any) -> None:
    result = resolve(CONTEXT, expression, instance)
    assert strict(result) == strict(expected)


@pytest.mark.parametrize(("expression", "instance", "expected"), RESOLVE)
def test_evaluate_through_lookup_in(expression: str, instance: str | None, expected: Any) -> None:
    value = evaluate(parse_input(expression), lookup_in(CONTEXT, instance))
    assert strict(value if value is MISSING else thaw(value)) == strict(expected)


def test_resolve_returns_plain_json() -> None:
    value = resolve(CONTEXT, "†state.user")
    assert type(value) is dict
    assert type(value["tags"]) is list
    assert list(value) == sorted(value)


def test_resolve_accepts_a_parsed_expression() -> None:
    assert resolve(CONTEXT, parse_input("†state.user.name")) == "Alex"


def test_resolve_raises_a_syntax_error() -> None:
    with pytest.raises(ExpressionSyntaxError) as info:
        resolve(CONTEXT, "†state.user.")
    assert info.value.column == 13


BROKEN = CONTEXT.append(
    {"type": "state", "state": {"user": {"name": 1}}, "_outputPath": "†state.user.name",
     "_outputMethod": "push"}
)


@pytest.mark.parametrize(
    "expression",
    [
        "†state.user.name",
        "†state.anything",
        "'x' || †state.user",  # every operand is read: a broken write is never masked
        "†input.userId || †state.user",
        "†state.user && 'x'",
        "†input.missing && †state.user",
    ],
)
def test_a_broken_kind_raises_write_error(expression: str) -> None:
    with pytest.raises(WriteError) as info:
        resolve(BROKEN, expression)
    assert info.value.message_index == len(CONTEXT)


def test_a_broken_kind_does_not_affect_other_kinds() -> None:
    assert resolve(BROKEN, "†input.userId || †billing.x") == "u-17"


def test_evaluate_with_a_custom_lookup() -> None:
    seen: list[str] = []

    def lookup(ref: Reference) -> Frozen | Missing:
        seen.append(str(ref))
        return freeze({"a": None, "b": 2}).get(ref.path[0], MISSING) if ref.path else MISSING

    assert evaluate(parse_input("†k.a || †k.b || †k.c"), lookup) == 2
    assert seen == ["†k.a", "†k.b", "†k.c"]


# -- fold_value: the definition ---------------------------------------------------------

FOLD = [
    # (messages, kind, path, instance, expected)
    ([], "state", (), None, MISSING),
    ([{"type": "state", "a": 1}, {"type": "state", "b": 2}], "state", (), None, {"a": 1, "b": 2}),
    ([{"type": "state", "a": {"x": 1}}, {"type": "state", "a": {"y": 2}}], "state", ("a",), None,
     {"x": 1, "y": 2}),  # two data messages of one kind combine (deep merge)
    ([{"type": "data", "kind": "user", "data": {"a": 1}},
      {"type": "data", "kind": "user", "data": {"b": 2}}], "user", (), None, {"a": 1, "b": 2}),
    ([{"type": "state", "a": 1, "_instance": "i"}, {"type": "state", "a": 2}], "state", ("a",), "i", 1),
    ([{"type": "state", "a": 1, "_instance": "i"}, {"type": "state", "a": 2}], "state", ("a",), None, 2),
    ([{"type": "state", "a": 1, "_instance": "i"}], "state", ("a",), "j", MISSING),
    ([{"type": "state", "state": [1]}, {"type": "state", "state": 2, "_outputMethod": "push"}],
     "state", (-1,), None, 2),
]


@pytest.mark.parametrize(("messages", "kind", "path", "instance", "expected"), FOLD)
def test_fold_value(
    messages: list[Any], kind: str, path: tuple[Any, ...], instance: str | None, expected: Any
) -> None:
    value = fold_value(messages, kind, path, instance)
    assert strict(value if value is MISSING else thaw(value)) == strict(expected)
    fast = Context.of(messages).value(kind, path, instance)
    assert strict(fast if fast is MISSING else thaw(fast)) == strict(expected)


def test_fold_value_names_the_failing_message() -> None:
    messages = [
        {"type": "state", "a": 1},
        {"type": "text", "text": "x"},
        {"type": "state", "state": {"a": 2}, "_outputPath": "†state.a", "_outputMethod": "push",
         "_instance": "i"},
    ]
    assert fold_value(messages, "state", ("a",)) == 1
    with pytest.raises(WriteError) as info:
        fold_value(messages, "state", ("a",), "i")
    assert (info.value.message_index, info.value.instance) == (2, "i")


def test_facade_exports() -> None:
    assert set(obelisk.__all__) >= {
        "Context", "MISSING", "parse_input", "parse_output", "resolve", "ObeliskError",
        "ExpressionSyntaxError", "WriteError", "MessageError",
    }
    for name in ("ExpressionSyntaxError", "WriteError", "MessageError"):
        assert issubclass(getattr(obelisk, name), obelisk.ObeliskError)

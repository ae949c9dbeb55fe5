"""compiler/diagnostics.py: the codes and severities, the deterministic order, the JSON
form, and the text a compiler prints (CONFORMANCE.md "Diagnostic codes")."""

from __future__ import annotations

import json

import pytest

from obelisk.compiler.diagnostics import (
    CODES,
    Diagnostic,
    Severity,
    render_text,
    sort_diagnostics,
    summary,
)
from obelisk.core.ast import Span

# CONFORMANCE.md's table, as written there.
CONFORMANCE_CODES = {
    "syntax": "error",
    "unknown-tool": "error",
    "param-schema": "error",
    "invalid-output-method": "error",
    "invalid-output-target": "error",
    "dangling-reference": "error",
    "cycle": "error",
    "unknown-field": "warning",
    "type-mismatch": "error",
    "write-race": "warning",
    "unreachable": "warning",
    "scope-race": "warning",
    "external-reference": "info",
    "invalid-scope": "error",
}
OWN_CODES = {"invalid-call": "error", "invalid-meta": "error", "no-instances": "info",
             "too-many": "info", "too-dense": "error", "confusable-kind": "warning",
             "slow-pattern": "warning", "unchecked-pattern": "warning", "no-tools": "info"}


def test_codes_are_the_conformance_table_then_obelisks_own() -> None:
    assert {code: s.value for code, s in CODES.items()} == {**CONFORMANCE_CODES, **OWN_CODES}
    assert list(CODES)[:len(CONFORMANCE_CODES)] == list(CONFORMANCE_CODES)


@pytest.mark.parametrize("code", sorted(CODES))
def test_severity_defaults_to_the_codes(code: str) -> None:
    diagnostic = Diagnostic(code, "m")
    assert diagnostic.severity is CODES[code]
    assert diagnostic.is_error == (CODES[code] is Severity.ERROR)


def test_an_unknown_code_is_refused() -> None:
    with pytest.raises(KeyError):
        Diagnostic("no-such-code", "m")


def test_severity_can_be_given() -> None:
    assert Diagnostic("cycle", "m", severity=Severity.WARNING).severity is Severity.WARNING


def test_diagnostics_are_frozen_values() -> None:
    d = Diagnostic("cycle", "m", call=1, calls=(1, 2))
    assert d == Diagnostic("cycle", "m", call=1, calls=(1, 2))
    assert hash(d) == hash(Diagnostic("cycle", "m", call=1, calls=(1, 2)))
    with pytest.raises(AttributeError):
        d.call = 3  # type: ignore[misc]


# -- order ---------------------------------------------------------------------------------


def test_order_is_call_instance_pointer_column_code_message() -> None:
    plan_wide = Diagnostic("too-many", "z")
    unsorted = [
        Diagnostic("write-race", "b", call=2, pointer="/_outputPath"),
        Diagnostic("dangling-reference", "a", call=1, pointer="/b", span=Span(0, 3)),
        Diagnostic("dangling-reference", "a", call=1, pointer="/a", span=Span(5, 8)),
        Diagnostic("dangling-reference", "a", call=1, pointer="/a", span=Span(2, 3)),
        Diagnostic("syntax", "a", call=1, pointer="/a", span=Span(2, 3)),
        Diagnostic("dangling-reference", "a", call=1, instance="②", pointer="/a"),
        Diagnostic("dangling-reference", "a", call=1, instance="①", pointer="/a"),
        Diagnostic("unknown-tool", "b", call=0, pointer="/_tool"),
        Diagnostic("unknown-tool", "a", call=0, pointer="/_tool"),
        plan_wide,
    ]
    ordered = sort_diagnostics(unsorted)
    assert [(d.call, d.instance, d.pointer, d.span.start if d.span else None, d.code, d.message)
            for d in ordered] == [
        (None, None, "", None, "too-many", "z"),
        (0, None, "/_tool", None, "unknown-tool", "a"),
        (0, None, "/_tool", None, "unknown-tool", "b"),
        (1, None, "/a", 2, "dangling-reference", "a"),
        (1, None, "/a", 2, "syntax", "a"),
        (1, None, "/a", 5, "dangling-reference", "a"),
        (1, None, "/b", 0, "dangling-reference", "a"),
        (1, "①", "/a", None, "dangling-reference", "a"),
        (1, "②", "/a", None, "dangling-reference", "a"),
        (2, None, "/_outputPath", None, "write-race", "b"),
    ]
    assert sort_diagnostics(reversed(unsorted)) == ordered


def test_sorting_drops_exact_duplicates_only() -> None:
    a = Diagnostic("cycle", "m", call=0, calls=(0, 1))
    b = Diagnostic("cycle", "m", call=0, calls=(0, 2))
    assert sort_diagnostics([a, b, a, b, a]) == (a, b)


# -- JSON ------------------------------------------------------------------------------------


def test_json_has_the_conformance_fields_and_leaves_out_empty_ones() -> None:
    assert Diagnostic("too-many", "3 more").to_json() == {
        "code": "too-many", "severity": "info", "message": "3 more", "call": None,
        "pointer": ""}
    full = Diagnostic("dangling-reference", "msg", call=1, pointer="/p", span=Span(4, 9),
                      expression="'x' || †state.y", calls=(0, 1), hint="h", instance="①",
                      tool="t")
    assert full.to_json() == {
        "code": "dangling-reference", "severity": "error", "message": "msg", "call": 1,
        "pointer": "/p", "calls": [0, 1], "instance": "①", "tool": "t",
        "span": {"start": 4, "end": 9, "column": 5}, "expression": "'x' || †state.y",
        "hint": "h"}
    json.dumps(full.to_json())  # plain JSON


# -- text --------------------------------------------------------------------------------------

# (diagnostic, source, printed text)
RENDERED = [
    (Diagnostic("too-many", "5 more write races not reported"), "plan",
     "plan: info[too-many]: 5 more write races not reported"),
    (Diagnostic("invalid-call", "a call must be a JSON object, got integer", call=3), "p.json",
     "p.json: call 3: error[invalid-call]: a call must be a JSON object, got integer"),
    (Diagnostic("unknown-tool", "no tool named 'x'", call=0, pointer="/_tool", tool="x",
                hint="did you mean 'y'?"), "plan",
     "plan: call 0 (x) /_tool: error[unknown-tool]: no tool named 'x'\n"
     "    hint: did you mean 'y'?"),
    (Diagnostic("dangling-reference", "†state.recipt is read here", call=1, tool="confirm",
                pointer="/receipt", span=Span(0, 13), expression="†state.recipt",
                instance="①"), "plan.json",
     "plan.json: call 1 (confirm) [instance ①] /receipt: error[dangling-reference]: "
     "†state.recipt is read here\n"
     "    †state.recipt\n"
     "    ^^^^^^^^^^^^^"),
    (Diagnostic("syntax", "the expression ends too early", call=2, pointer="/p",
                span=Span(11, 12), expression="†state.a ||"), "plan",
     "plan: call 2 /p: error[syntax]: the expression ends too early\n"
     "    †state.a ||\n"
     "               ^"),
    (Diagnostic("cycle", "calls 0, 1 depend on each other", call=0, calls=(0, 1),
                hint="break the loop"), "plan",
     "plan: call 0: error[cycle]: calls 0, 1 depend on each other\n"
     "    calls: 0, 1\n"
     "    hint: break the loop"),
]


@pytest.mark.parametrize(("diagnostic", "source", "text"), RENDERED)
def test_render_text(diagnostic: Diagnostic, source: str, text: str) -> None:
    assert render_text(diagnostic, source) == text


def test_render_text_source_defaults_to_plan() -> None:
    assert render_text(Diagnostic("too-many", "m")) == "plan: info[too-many]: m"


def test_render_text_cuts_a_long_expression_around_the_caret() -> None:
    expression = "†state." + ".".join(["k"] * 2000)
    d = Diagnostic("syntax", "too long", call=0, pointer="/p", span=Span(2000, 2003),
                   expression=expression)
    head, shown, caret = render_text(d).split("\n")
    assert head == "plan: call 0 /p: error[syntax]: too long"
    assert shown.startswith("    …") and shown.endswith("…")
    assert len(shown) <= 4 + 102
    assert caret.strip() == "^^^"
    # The caret stands under the spanned text.
    start = caret.index("^")
    assert shown[start:start + 3] == expression[2000:2003]


def test_render_text_caret_is_at_least_one_wide() -> None:
    d = Diagnostic("syntax", "m", call=0, pointer="/p", span=Span(3, 3), expression="†s.")
    assert render_text(d).split("\n")[-1] == "       ^"


@pytest.mark.parametrize(("codes", "text"), [
    ([], "no problems"),
    (["cycle"], "1 error"),
    (["cycle", "syntax", "write-race"], "2 errors, 1 warning"),
    (["write-race", "write-race", "external-reference"], "2 warnings, 1 info"),
    (["external-reference", "too-many"], "2 infos"),
])
def test_summary(codes: list[str], text: str) -> None:
    assert summary([Diagnostic(c, "m") for c in codes]) == text

"""Messages and hints: did-you-mean for names (compiler/hints.py), a self-cycle told as
such, the type-mismatch hint that names the context, and the grammar of every message."""

from __future__ import annotations

import re
from typing import Any

import pytest

from obelisk import compile_plan
from obelisk.compiler.hints import METHOD_ALIASES, closest
from obelisk.core.methods import Method

METHODS = [m.value for m in Method]
PLAN_FILE_FIELDS = ["id", "description", "context", "tools", "plan", "instances", "mocks"]

CLOSEST: list[tuple[str, list[str], Any, str | None]] = [
    ("tool", PLAN_FILE_FIELDS, None, "tools"),
    ("mock", PLAN_FILE_FIELDS, None, "mocks"),
    ("instance", PLAN_FILE_FIELDS, None, "instances"),
    ("Context", PLAN_FILE_FIELDS, None, "context"),
    ("xyz", PLAN_FILE_FIELDS, None, None),
    ("append", METHODS, METHOD_ALIASES, "push"),
    ("extend", METHODS, METHOD_ALIASES, "concat"),
    ("update", METHODS, METHOD_ALIASES, "merge"),
    ("deep-merge", METHODS, METHOD_ALIASES, "merge"),
    ("REPLACE", METHODS, METHOD_ALIASES, "set"),
    ("sett", METHODS, METHOD_ALIASES, "set"),
    ("push", METHODS, METHOD_ALIASES, "push"),
    ("append", METHODS, None, None),  # without the aliases, nothing is close
]


@pytest.mark.parametrize(("word", "choices", "aliases", "expected"), CLOSEST)
def test_closest(word: str, choices: list[str], aliases: Any, expected: str | None) -> None:
    assert closest(word, choices, aliases=aliases) == expected


def hints(plan: list[Any], **kw: Any) -> list[tuple[str, str, str | None]]:
    return [(d.code, d.message, d.hint) for d in compile_plan(plan, **kw).diagnostics]


def test_output_method_append_suggests_push() -> None:
    assert hints([{"_tool": "a", "_outputMethod": "append", "_outputPath": "†state.x"}]) == [(
        "invalid-output-method",
        "_outputMethod 'append' is not set, merge, assign, push or concat",
        "did you mean 'push'?")]


def test_a_call_reading_its_own_output_is_a_self_cycle_not_a_suggestion_of_itself() -> None:
    found = hints([{"_tool": "a", "n": "†state.n.m", "_outputPath": "†state.n"}])
    assert found == [(
        "dangling-reference",
        "†state.n.m is read here, but only this call writes it (its _outputPath writes "
        "†state.n): a call cannot wait for its own output (a self-cycle), and the context "
        "does not provide it",
        "give †state.n.m a starting value in the context, or read it from another call's "
        "output")]


def test_another_writer_is_still_suggested() -> None:
    (found,) = hints([{"_tool": "a", "_outputPath": "†state.name"},
                      {"_tool": "b", "n": "†state.nmae"}])
    assert found[2] == "did you mean †state.name (written by call 0 (a))?"


def test_the_type_mismatch_hint_names_the_context_when_the_type_comes_from_it() -> None:
    tool = {"type": "object", "properties": {"_tool": {"const": "c"}, "n": {"type": "integer"}},
            "required": ["_tool"]}
    (found,) = hints([{"_tool": "c", "n": "†state.x"}], tools=[tool],
                     context=[{"type": "state", "x": "s"}])
    assert found == (
        "type-mismatch",
        "†state.x can only be a string (the value in the context), but parameter 'n' of c "
        "needs an integer",
        "change the value the context gives for †state.x to the type the parameter needs, "
        "or read another path")


@pytest.mark.parametrize(("kind", "words"), [("input", "an input message"),
                                              ("state", "a state message"),
                                              ("error", "an error message")])
def test_the_generic_hint_takes_the_right_article(kind: str, words: str) -> None:
    (found,) = hints([{"_tool": "a", "x": f"†{kind}.zzzzzz"}],
                     context=[{"type": "input", "input": {}}] if kind == "input" else [])
    assert found[2] == ("write it with an earlier call's _outputPath, or add "
                        f"{words} to the context")


# Plans that make every kind of message the checks write (hints included).
GRAMMAR_PLANS: list[tuple[list[Any], dict[str, Any]]] = [
    ([{"_tool": "a", "n": "†state.n", "_outputPath": "†state.n"}], {}),
    ([{"_tool": "a", "x": "†input.zz"}], {"context": [{"type": "input", "input": {}}]}),
    ([{"_tool": "a", "x": "†error.zz"}], {}),
    ([{"_tool": "a", "_outputMethod": "append"}], {}),
    ([{"_tool": "a", "p": "†state.b", "_outputPath": "†state.a"},
      {"_tool": "b", "p": "†state.a", "_outputPath": "†state.b"}], {}),
    ([{"_tool": "a", "_outputPath": "†state.r"}, {"_tool": "b", "_outputPath": "†state.r"}], {}),
    ([{"_tool": "pick", "_outputPath": "†state.c || †state.e"},
      {"_tool": "u", "x": "†state.e.tpye", "y": "†state.c && †state.e"}], {}),
    ([{"_tool": "a", "_scopes": ["system"], "_outputPath": "†text.x"}], {}),
]

#: Slips a message must not make: a/an before the wrong sound, doubled words or spaces,
#: "(s)" plurals, a space before punctuation.
SLIPS = [re.compile(p) for p in (
    r"\ba [aeiou]", r"\ban [bcdfghjklmnpqrstvwxz]", r"\b(\w+) \1\b", r"  ", r"\(s\)",
    r" [,.;:?]")]


@pytest.mark.parametrize(("plan", "kw"), GRAMMAR_PLANS)
def test_grammar_of_every_message(plan: list[Any], kw: dict[str, Any]) -> None:
    found = hints(plan, **kw)
    assert found
    for _, message, hint in found:
        for text in (message, hint or ""):
            for slip in SLIPS:
                assert not slip.search(text), (slip.pattern, text)


def test_a_plan_file_field_gets_a_did_you_mean() -> None:
    from obelisk.jsonio import InputError
    from obelisk.planfile import plan_file_of

    with pytest.raises(InputError) as info:
        plan_file_of({"tool": [], "plan": []}, "f.json")
    assert str(info.value).startswith(
        "f.json: unknown field(s) 'tool' (did you mean 'tools'?); a plan file has ")


def test_a_null_in_the_context_is_not_provided_and_the_hint_says_so() -> None:
    # Provided means present: the null path dangles, and the hint never suggests the path
    # that was read (nor another null one) as if it were there.
    context = [{"type": "state", "x": None, "xx": None, "other": 1}]
    ((code, message, hint),) = hints([{"_tool": "a", "p": "†state.x"}], context=context)
    assert code == "dangling-reference" and message.startswith("†state.x is read here")
    assert hint == ("†state.x is null in the context, and a null does not count as a value: "
                    "give it a value, or read it with a default (†state.x || <default>)")
    ((_, _, hint),) = hints([{"_tool": "a", "p": "†input.n"}],
                            context=[{"type": "input", "input": {"n": None}}])
    assert hint is not None and hint.endswith(", or declare it in the input message's schema")
    ((_, _, hint),) = hints([{"_tool": "a", "p": "†state.xxx"}], context=context)
    assert hint is not None and "†state.xx " not in hint and "†state.x " not in hint

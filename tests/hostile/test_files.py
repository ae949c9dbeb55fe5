"""Files read as input (issue 26, item 17): duplicate keys, odd delegate names, saved requests.

Before: a key written twice in a plan, agent or context file was read silently (the last
one won, so a reviewer and obelisk could read two different files); a saved request that
was broken, or named oddly, failed its call with raw Python error types (``TypeError``,
``AttributeError``, ``ValueError: embedded null byte``, ``OSError``, ``RuntimeError``);
a saved request with a byte order mark was refused. Each was tested before its fix.
"""

from __future__ import annotations

import io
import json
import pathlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.agent import run_agent_sync
from obelisk.agent.delegate import DelegateError, load_saved_request, missing_delegates
from obelisk.cli import main
from obelisk.core.plain import thaw
from obelisk.jsonio import InputError, parse_json
from obelisk.llm import ScriptedLLM
from obelisk.positions import first_duplicate


def cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue() + err.getvalue()


# -- duplicate keys ---------------------------------------------------------------------------

PLAN_DUPLICATE = ('{"plan": [{"_tool": "pay", "amount": 5,\n'
                  '           "_outputPath": "†state.receipt", "_outputPath": "†state.x"}]}')


@pytest.mark.parametrize(("command", "argv", "text"), [
    ("validate", ["validate", "{f}"], PLAN_DUPLICATE),
    ("dry-run", ["dry-run", "{f}"], PLAN_DUPLICATE),
    ("mocks", ["dry-run", "{ok}", "--mocks", "{f}"],
     '{"pay": {"return": 1},\n           "pay": {"raise": {"type": "Declined", "message": "no"}}}'),
    ("context", ["validate", "{ok}", "--context", "{f}"],
     '[{"type": "state",\n           "user": {"name": "a", "_outputPath": "b", "name": "c"}}]'),
    ("agent", ["agent", "{f}", "--llm", "script:{ok}"],
     '{"context": [], "tools": [],\n           "mode": "eager", "mode": "lazy"}'),
    ("script", ["agent", "{agent}", "--llm", "script:{f}"],
     '{"solutions": [{"calls": [], "output": 1,\n           "output": 2}]}'),
])
def test_a_key_written_twice_is_refused_with_its_line_and_column(
        tmp_path: pathlib.Path, command: str, argv: list[str], text: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    ok, agent = tmp_path / "ok.json", tmp_path / "agent.json"
    ok.write_text('{"plan": []}')
    agent.write_text('{"context": [], "tools": []}')
    code, printed = cli(*(a.format(f=bad, ok=ok, agent=agent) for a in argv))
    assert code == 2, printed
    assert f"{bad}: line 2, column " in printed and "appears twice in the object at" in printed
    assert "Traceback" not in printed and printed.rstrip().endswith("^")  # a caret under it


def test_the_error_names_the_key_and_the_object() -> None:
    with pytest.raises(InputError) as caught:
        parse_json('\ufeff{"a": [1, {"k/~": 1, "x": {}, "k/~": 2}]}', "f.json")
    assert caught.value.message == (
        'f.json: line 1, column 31: the key "k/~" appears twice in the object at /a/1; JSON '
        "readers keep one of the two silently, so remove the one that is not meant")
    assert caught.value.excerpt == ('{"a": [1, {"k/~": 1, "x": {}, "k/~": 2}]}', 31)


@pytest.mark.parametrize(("text", "found"), [
    ('{"a": 1, "b": {"y": [{"z": 1, "z": 2}]}, "a": 3}', (30, "z", "/b/y/0")),  # text order
    ('[{}, [], {"a": [1, {}], "b": {}, "a": 5}]', (33, "a", "/2")),
    ('{"a": {"a": 1}, "b": {"a": 2}}', None),  # the same key in other objects is fine
    ('{"a~b/c": {"s": 1, "s": 1}}', (19, "s", "/a~0b~1c")),
    ('{"\\u0041": 1, "A": 2}', (14, "A", "")),  # equal once decoded
    ("[]", None), ("3", None), ('"{\\"a\\": 1, \\"a\\": 2}"', None),
])
def test_the_first_duplicate_in_text_order(text: str, found: Any) -> None:
    assert first_duplicate(text) == found


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=4), max_leaves=20)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(JSON)
def test_json_without_duplicates_reads_as_before(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=1)
    assert parse_json(text, "f") == json.loads(text) and first_duplicate(text) is None


# -- saved requests ----------------------------------------------------------------------------

SAVED = {"context": [{"type": "system", "text": "You write poems."}], "schema": {"type": "string"}}


@pytest.mark.parametrize(("content", "words"), [
    (json.dumps(SAVED)[:-1] + ', "schema": {"type": "integer"}}',
     'line 1, column 93: the key "schema" appears twice in the object at /'),
    ('{"context": [1], "schema": {}}', "its context: message 0: a message must be a JSON object"),
    ('{"context": [], "schema": {"type": 5}}', '"schema" is not a JSON Schema (Draft 2020-12): '
                                               "at /type"),
    ('{"context": [], "schema": "\\ud800"}', "holds a lone surrogate"),
    ('{"context": [], "schema": "text"}', '"schema" must be a JSON Schema'),
    ('{"context": [], "tools": [{"type": "object"}]}', "its tools: tool 0"),
    ('{"context": [], "max_ticks": NaN}', "NaN is not a JSON number"),
    ('{"context": [', "is not valid JSON"),
    ("\xff", "is not UTF-8 text"),
])
def test_a_broken_saved_request_is_delegate_not_found_saying_what_is_wrong(
        tmp_path: pathlib.Path, content: str, words: str) -> None:
    (tmp_path / "r.json").write_bytes(content.encode("utf-8", "surrogateescape")
                                      if content != "\xff" else b"\xff")
    with pytest.raises(DelegateError) as caught:
        load_saved_request(tmp_path, "r.json")
    assert caught.value.type == "DelegateNotFound" and words in str(caught.value), caught.value
    assert "r.json" in str(caught.value)
    assert missing_delegates([{"properties": {"_delegate": {"const": "r.json"}}}], tmp_path)


def test_a_saved_request_with_a_byte_order_mark_is_read(tmp_path: pathlib.Path) -> None:
    (tmp_path / "r.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(SAVED).encode())
    assert load_saved_request(tmp_path, "r.json").schema == {"type": "string"}


def delegate_errors(root: pathlib.Path, name: str) -> list[dict[str, Any]]:
    """The errors of a run whose one call is delegated to ``name`` under ``root``."""
    tool = {"type": "object", "properties": {"_tool": {"const": "t"}, "_delegate": {
        "enum": [name]}, "_output": {"type": "string"}}}
    llm = ScriptedLLM([{"calls": [{"_tool": "t", "_delegate": name, "_outputPath": "†state.r"}],
                        "output": None}, {"calls": [], "output": "done"}])
    result = run_agent_sync([], llm, tools=[tool], delegate_root=root, max_ticks=2)
    return [thaw(m)["data"]["error"] for m in result.context.messages if m.get("type") == "error"]


@pytest.mark.parametrize(("name", "words"), [
    ("a\x00b", "it holds a NUL character"),
    ("x" * 5000, "the name is too long for the file system"),
    ("a/" * 3000 + "b", "the name is too long for the file system"),
    ("loop", "its symbolic links loop"),
])
def test_an_odd_delegate_name_fails_with_a_delegate_error(tmp_path: pathlib.Path, name: str,
                                                          words: str) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    (error,) = delegate_errors(tmp_path, name)
    assert error["type"] == "DelegateNotFound" and words in error["message"], error
    assert len(error["message"]) < 400  # the name is quoted, cut short
    assert missing_delegates([{"properties": {"_delegate": {"const": name}}}], tmp_path)


def test_the_agent_command_reports_a_broken_saved_request_before_the_run(
        tmp_path: pathlib.Path) -> None:
    (tmp_path / "r.json").write_text('{"context": [], "schema": {"type": 5}}')
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"context": [], "tools": [{"type": "object", "properties": {
        "_tool": {"const": "t"}, "_delegate": {"const": "r.json"}}}]}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"solutions": [{"calls": [], "output": 1}]}))
    code, printed = cli("agent", str(agent), "--llm", f"script:{script}",
                        "--delegate-root", str(tmp_path))
    assert code == 2 and '"schema" is not a JSON Schema' in printed and "tick" not in printed


@pytest.mark.parametrize(("text", "where", "word"), [
    ('{"plan": [\n  {"_tool": "t", "x": NaN}]}', "line 2, column 23", "NaN"),
    ('{"s": "NaN -Infinity", "n": -Infinity}', "line 1, column 29", "-Infinity"),
    ('[1, Infinity]', "line 1, column 5", "Infinity"),
])
def test_nan_and_infinity_are_refused_with_their_line_and_column(text: str, where: str,
                                                                 word: str) -> None:
    # docs/plan-files.md promises the place; before, only "NaN is not a JSON number".
    with pytest.raises(InputError) as caught:
        parse_json(text, "plan.json")
    assert str(caught.value).startswith(f"plan.json: {where}: {word} is not a JSON number")
    assert caught.value.excerpt is not None  # the line, with a caret under it

"""obelisk/positions.py and what uses it: every diagnostic's line and column in the plan
file (text, JSON and SARIF output), found only when something is reported."""

from __future__ import annotations

import json
import pathlib

import pytest
from clirun import cli as run
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.positions import Source, locate, string_offsets, where_all

TOOL = {"type": "object",
        "properties": {"_tool": {"const": "pay"}, "amount": {"type": "integer", "minimum": 0}},
        "required": ["amount"]}

PLAN = """{
  "tools": [TOOL],
  "plan": [
    {"_tool": "pay", "amount": -1, "_outputPath": "\\u2020state.receipt"},
    {"_tool": "pay", "amount": "†state.reciept"},
    {"_tool": "pay"},
    {"_tool": "pya", "amount": 1, "x": "†state.a", "_outputPath": "†state.b"},
    {"_tool": "pay", "amount": "†state.b", "_outputPath": "†state.a"}
  ]
}
""".replace("TOOL", json.dumps(TOOL))


# -- the scanner ---------------------------------------------------------------------------


def test_locate_finds_values_keys_and_ancestors() -> None:
    text = '{"a": [1, {"b/c": "x", "d~e": [true]}], "f": null}'
    found = locate(text, ["/a/1/b~1c", "/a/1/d~0e/0", "/a/5", "/g"])
    assert text[found["/a/1/b~1c"].start:found["/a/1/b~1c"].end] == '"x"'
    assert text[found["/a/1/b~1c"].key or 0:].startswith('"b/c"')
    assert text[found["/a/1/d~0e/0"].start:].startswith("true")
    assert "/a/5" not in found and "/g" not in found and "/a" in found and "" in found


def test_string_offsets_count_escapes_as_one_character() -> None:
    assert string_offsets('"a\\u2020b"') == [1, 2, 8, 9]
    assert string_offsets('"\\ud83d\\ude00!"') == [1, 13, 14]
    assert string_offsets('"\\"x"') == [1, 3, 4]


def test_line_and_column_are_one_based_and_count_characters() -> None:
    source = Source.of('{\n  "†": "x"\n}')
    assert source.line_column(0) == (1, 1)
    assert source.line_column(source.text.index('"x"')) == (2, 8)
    assert source.line(2) == '  "†": "x"'


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=20),
       st.sampled_from([None, 2]), st.booleans())
def test_every_pointer_locates_its_own_value(value: object, indent: int | None,
                                             ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    pointers: dict[str, object] = {}

    def walk(v: object, pointer: str) -> None:
        pointers[pointer] = v
        items = (v.items() if isinstance(v, dict)
                 else enumerate(v) if isinstance(v, list) else ())
        for k, item in items:
            walk(item, f"{pointer}/{str(k).replace('~', '~0').replace('/', '~1')}")

    walk(value, "")
    found = locate(text, pointers)
    for pointer, expected in pointers.items():
        position = found[pointer]
        assert json.loads(text[position.start:position.end]) == expected


# -- the command line -----------------------------------------------------------------------


def test_text_output_is_file_line_column_with_a_caret_in_the_expression(
        tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(PLAN, encoding="utf-8")
    code, out, _ = run("validate", str(path))
    assert code == 1
    lines = out.splitlines()
    # param-schema: a snippet and a caret like every other code.
    assert lines[:4] == [
        f"{path}:4:32: error[param-schema]: amount: -1 is less than the minimum of 0",
        '    4 |     {"_tool": "pay", "amount": -1, "_outputPath": "\\u2020state.receipt"},',
        "      |                                ^^",
        "    in call 0 (pay) at /amount"]
    # The caret is under the exact span inside the JSON string.
    i = lines.index(f"{path}:5:33: error[dangling-reference]: †state.reciept is read here, "
                    "but no call writes it and the context does not provide it")
    assert lines[i + 1:i + 3] == [
        '    5 |     {"_tool": "pay", "amount": "†state.reciept"},',
        "      |                                 ^^^^^^^^^^^^^^"]
    # A cycle prints one edge per line.
    i = next(n for n, line in enumerate(lines) if "error[cycle]" in line)
    assert lines[i].startswith(f"{path}:7:5: error[cycle]: ")
    assert lines[i + 4:i + 6] == [
        "    call 3 (pya) writes †state.b, read by call 4 (pay) as †state.b",
        "    call 4 (pay) writes †state.a, read by call 3 (pya) as †state.a"]


def test_a_caret_in_an_escaped_string_is_under_the_escape(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('[{"_tool": "a", "p": "\\u2020state.x \\u2020state.y"}]', encoding="utf-8")
    _, out, _ = run("validate", str(path))
    head, snippet, caret = out.splitlines()[:3]
    # The space after "\u2020state.x": column 36 in the file, 13 characters of the text
    # after the opening quote for 8 characters of the expression.
    assert head.startswith(f"{path}:1:36: error[syntax]")
    assert caret.index("^") == snippet.index("\\u2020state.x") + len("\\u2020state.x")


def test_json_and_sarif_carry_line_and_column(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(PLAN, encoding="utf-8")
    _, out, _ = run("validate", "--format", "json", str(path))
    first = json.loads(out)[0]
    assert (first["file"], first["line"], first["column"], first["endColumn"]) == (
        str(path), 4, 32, 34)
    _, out, _ = run("validate", "--format", "sarif", str(path))
    log = json.loads(out)
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"
    region = log["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 5, "startColumn": 33, "endColumn": 47}


def test_a_plan_in_a_context_message_is_located_there(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"context": [\n {"type": "plan", "plan": [\n  {"_tool": "a", '
                    '"p": "†state.nope"}]}]}', encoding="utf-8")
    _, out, _ = run("validate", str(path))
    assert out.startswith(f"{path}:3:24: error[dangling-reference]")


def test_a_clean_file_is_never_scanned(tmp_path: pathlib.Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object) -> None:
        raise AssertionError("scanned a clean file")

    monkeypatch.setattr("obelisk.cli.render.where_all", fail)
    monkeypatch.setattr("obelisk.cli.render.Source.of", fail)
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"tools": [TOOL], "plan": [{"_tool": "pay", "amount": 1}]}),
                    encoding="utf-8")
    for fmt in ("text", "json", "sarif"):
        assert run("validate", "--format", fmt, str(path))[0] == 0


def test_where_all_marks_a_missing_member_at_its_object() -> None:
    source = Source.of('[\n  {"_tool": "pay"}\n]')
    (where,) = where_all(source, [("/0/amount", None, None)])
    assert (where.line, where.column, where.end_column) == (2, 3, 4)


def test_dry_run_json_of_an_invalid_plan_carries_positions(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('[\n  {"_tool": "a", "p": "†state.x"}\n]', encoding="utf-8")
    code, out, _ = run("dry-run", str(path), "--json")
    (diagnostic,) = json.loads(out)["diagnostics"]
    assert code == 1
    assert (diagnostic["line"], diagnostic["column"], diagnostic["endColumn"]) == (2, 24, 32)

"""Hostile input, command by command: the exit code and the message a user gets.

Each row of :data:`CASES` is one hostile input to one command: the files it writes, the
arguments, what standard input holds, the exit code expected and a fragment the output
(stdout + stderr) must contain. Every row also checks what holds for all input: no
internal error, no traceback, and nothing from the input reaches the terminal as a raw
control character (escape, carriage return, bidi override, zero-width character, ...).

To add a case, add a row: files are named by the placeholders in ``argv`` ("{plan}" is the
file ``plan.json``); a file's content is JSON (a Python value), text (``str``: written as
UTF-8 as it is) or ``bytes``. ``{activities}`` is an importable name of a module written
from ``modules``.
"""

from __future__ import annotations

import io
import itertools
import json
import pathlib
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from attrs import field, frozen
from hypothesis import given
from hypothesis import strategies as st

from obelisk.cli import main
from obelisk.cli.safe import inert, inert_lines, json_text

#: What a terminal must never receive from input: C0 (but newline) and C1 controls, DEL,
#: bidi overrides and isolates, zero-width characters, lone surrogates.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069"
                 "\u2028\u2029\ufeff\ud800-\udfff]")

ESC = "\x1b"
FORGE = f"t{ESC}[2K\rstatus: completed"  # erases the line, then writes a false status
BIDI = "pay\u202eyrev"  # shows as "payverY..." reversed
TOOL = {"type": "object", "properties": {"_tool": {"const": "t"}, "x": {"type": "string"}}}
BIG = "9" * 5000


@frozen
class Case:
    """One hostile input to one command."""

    name: str
    argv: list[str]
    files: dict[str, Any]
    code: int
    fragment: str
    stdin: str = ""
    modules: dict[str, str] = field(factory=dict)
    absent: tuple[str, ...] = ()  # text the output must not contain


def plan(calls: list[Any], **extra: Any) -> dict[str, Any]:
    return {"plan": calls, **extra}


def basics(command: str, extra: list[str]) -> Iterator[Case]:
    """The basic hostile files every command that reads a plan file refuses (exit 2)."""
    rows: list[tuple[str, Any, str]] = [
        ("malformed", "{nope", "is not valid JSON"),
        ("truncated", '{"plan": [{"_tool": "t", "x": "†sta', "Unterminated string"),
        ("empty", "", "is not valid JSON"),
        ("deeply-nested", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("not-an-object", '"plan"', "a plan file is a JSON object"),
        ("not-utf8", b'{"plan": [{"_tool": "\xff"}]}', "is not UTF-8 text"),
        ("nan", '{"plan": [{"_tool": "t", "x": NaN}]}', "NaN is not a JSON number"),
        ("lone-surrogate", '{"plan": [{"_tool": "t", "x": "ab\\ud800"}]}', "/plan/0/x"),
        ("lone-low-surrogate", '{"plan": [{"_tool": "t"}],\n "context": [{"type": "state",'
         ' "a": "\\udc00"}]}', "line 2, column"),
        ("surrogate-in-key", '{"plan": [{"_tool": "t", "\\udbff": 1}]}', "lone surrogate"),
        ("big-integer", '{"plan": [{"_tool": "t", "x": ' + BIG + "}]}", "5000 digits"),
        ("big-negative-integer", '{"plan": [],\n"context": [{"type": "state", "a": -' + BIG
         + "}]}", "line 2"),
        ("control-in-path", None, "cannot read"),
    ]
    for name, content, fragment in rows:
        if content is None:  # a file name that carries an escape sequence, and is missing
            yield Case(f"{command}-{name}", [command, f"nope{FORGE}.json", *extra], {}, 2,
                       fragment, absent=("\nstatus: completed",))
            continue
        yield Case(f"{command}-{name}", [command, "{plan}", *extra], {"plan": content}, 2,
                   fragment)
    # A plan whose calls wait for each other: read, then refused by the compiler.
    cyclic = plan([{"_tool": "t", "x": "†state.b", "_outputPath": "†state.a"},
                   {"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}], tools=[TOOL])
    code, fragment = {"validate": (1, "error[cycle]"), "graph": (0, "the plan has errors"),
                      "schema": (0, '"const": "t"')}.get(command, (1, "nothing ran"))
    yield Case(f"{command}-cyclic-plan", [command, "{plan}", *extra], {"plan": cyclic}, code,
               fragment)
    # A byte order mark is accepted (editors on Windows write one).
    yield Case(f"{command}-bom", [command, "{plan}", *extra],
               {"plan": b"\xef\xbb\xbf" + json.dumps(plan([{"_tool": "echo", "x": "a"}],
                                                          mocks={"echo": {"return": 1}})).encode()},
               0, "")
    # A 4,300-digit integer is within Python's limit, and accepted.
    yield Case(f"{command}-integer-at-the-limit", [command, "{plan}", *extra],
               {"plan": '{"plan": [], "tools": [], "context": [{"type": "state", "a": '
                        + "9" * 4300 + "}]}"}, 0, "")


SYS_EXIT = "import sys\nsys.exit(3)\n"
SYS_EXIT_0 = "raise SystemExit(0)\n"
GEN_EXIT = "raise GeneratorExit('at import')\n"
CONTROLS = ("def t(call, tool, context):\n"
            "    return {'v': 'ok\\x1b[2K\\rstatus: completed\\u202e'}\n"
            "def boom(call, tool, context):\n"
            "    raise ValueError('line\\x1b[1A\\rstatus: completed')\n"
            "ACTIVITIES = {'t': t, 'boom': boom}\n")
BIG_RESULT = ("def t(call, tool, context):\n"
              "    return {'v': 10 ** 5000}\n"
              "ACTIVITIES = {'t': t}\n")
SURROGATE_RESULT = ("def t(call, tool, context):\n"
                    "    return {'v': 'a\\ud800'}\n"
                    "ACTIVITIES = {'t': t}\n")
ECHO = ("def t(call, tool, context):\n"
        "    return {'x': call.get('x')}\n"
        "ACTIVITIES = {'t': t}\n")
OUT_PLAN = plan([{"_tool": "t", "x": "a", "_outputPath": "†state.r"}])


CASES: list[Case] = [
    # -- resolve -------------------------------------------------------------------------
    Case("resolve-malformed", ["resolve", "{ctx}", "†state.a"], {"ctx": "[{"}, 2,
         "is not valid JSON"),
    Case("resolve-deeply-nested", ["resolve", "{ctx}", "†state.a"],
         {"ctx": "[" * 100_000 + "]" * 100_000}, 2, "nested too deeply"),
    Case("resolve-lone-surrogate", ["resolve", "{ctx}", "†state.a"],
         {"ctx": '[{"type": "state", "a": "\\ud800"}]'}, 2, "/0/a"),
    Case("resolve-lone-surrogate-says-where", ["resolve", "{ctx}", "†state.a"],
         {"ctx": '[{"type": "state",\n  "a": "x\\ud800"}]'}, 2, "line 2, column 8"),
    Case("resolve-surrogate-pair-is-a-character", ["resolve", "{ctx}", "†state.a"],
         {"ctx": '[{"type": "state", "a": "\\ud83d\\ude00"}]'}, 0, "\U0001f600"),
    Case("resolve-escaped-backslash-is-not-a-surrogate", ["resolve", "{ctx}", "†state.a"],
         {"ctx": '[{"type": "state", "a": "\\\\ud800"}]'}, 0, '"\\\\ud800"'),
    Case("resolve-big-integer", ["resolve", "{ctx}", "†state.a"],
         {"ctx": '[{"type": "state", "a": ' + BIG + "}]"}, 2, "more than 4300 digits"),
    Case("resolve-bom", ["resolve", "{ctx}", "†state.a"],
         {"ctx": b'\xef\xbb\xbf[{"type": "state", "a": 1}]'}, 0, "1"),
    Case("resolve-bom-on-stdin", ["resolve", "-", "†state.a"], {}, 0, "1",
         stdin='\ufeff[{"type": "state", "a": 1}]'),
    Case("resolve-surrogate-on-stdin", ["resolve", "-", "†state.a"], {}, 2,
         "standard input", stdin='[{"type": "state", "a": "\\udfff"}]'),
    Case("resolve-controls-in-value", ["resolve", "{ctx}", "†state.a"],
         {"ctx": [{"type": "state", "a": f"{FORGE}\u202e\x9b\x7f\u200b"}]}, 0, "\\u202e"),
    Case("resolve-controls-in-missing-note", ["resolve", "{ctx}", f"†state.{FORGE}"],
         {"ctx": [{"type": "state", "a": 1}]}, 1, "\\x1b[2K\\r",
         absent=("\nstatus: completed",)),
    Case("resolve-controls-in-instance", ["resolve", "{ctx}", "†state.a", "--instance", FORGE],
         {"ctx": [{"type": "state", "a": 1}]}, 0, "1"),
    Case("resolve-controls-in-syntax-error", ["resolve", "{ctx}", f"†state.a {FORGE}"],
         {"ctx": [{"type": "state", "a": 1}]}, 1, "\\x1b"),
    # -- validate ------------------------------------------------------------------------
    *basics("validate", []),
    Case("validate-cycle", ["validate", "{plan}"], {"plan": plan([
        {"_tool": "t", "x": "†state.b", "_outputPath": "†state.a"},
        {"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}], tools=[TOOL])}, 1,
        "cycle"),
    Case("validate-array-of-non-calls", ["validate", "{plan}"], {"plan": [1, "x", None]}, 1,
         "invalid-call"),
    Case("validate-forged-tool-name", ["validate", "{plan}"],
         {"plan": plan([{"_tool": FORGE}], tools=[TOOL])}, 1, "\\x1b[2K\\r",
         absent=("\nstatus: completed",)),
    Case("validate-controls-in-expression", ["validate", "{plan}"],
         {"plan": plan([{"_tool": "t", "x": f"†state.{ESC}[31m\u202e"}], tools=[TOOL])}, 1,
         "\\u202e"),
    Case("validate-controls-in-file-name", ["validate", "{plan}"], {}, 0, "\\x1b"),
    Case("validate-json-bidi", ["validate", "{plan}", "--format", "json"],
         {"plan": plan([{"_tool": BIDI}], tools=[TOOL])}, 1, "\\u202e"),
    Case("validate-sarif-bidi", ["validate", "{plan}", "--format", "sarif"],
         {"plan": plan([{"_tool": BIDI}], tools=[TOOL])}, 1, "\\u202e"),
    Case("validate-huge-file", ["validate", "{plan}"],
         {"plan": plan([{"_tool": "t", "x": "a" * 5_000_000}], tools=[TOOL])}, 0,
         "no problems"),
    # -- graph ---------------------------------------------------------------------------
    *basics("graph", []),
    Case("graph-forged-tool-mermaid", ["graph", "{plan}"],
         {"plan": plan([{"_tool": FORGE, "_outputPath": "†state.a"},
                        {"_tool": "t", "x": f"†state.a{BIDI}"}])}, 0, "\\x1b"),
    Case("graph-forged-tool-dot", ["graph", "{plan}", "--format", "dot"],
         {"plan": plan([{"_tool": FORGE}])}, 0, "\\x1b"),
    Case("graph-json-surrogate-free", ["graph", "{plan}", "--format", "json"],
         {"plan": plan([{"_tool": BIDI + "\x85"}])}, 0, "\\u202e"),
    # -- schema --------------------------------------------------------------------------
    *basics("schema", []),
    Case("schema-bidi-in-description", ["schema", "{plan}"],
         {"plan": plan([], tools=[{**TOOL, "description": f"{BIDI}{FORGE}"}])}, 0, "\\u202e"),
    Case("schema-activities-sys-exit", ["schema", "{plan}", "--activities",
                                        "{activities}:ACTIVITIES"],
         {"plan": plan([], tools=[TOOL])}, 2, "SystemExit", modules={"m": SYS_EXIT}),
    Case("schema-activities-sys-exit-0", ["schema", "{plan}", "--activities",
                                          "{activities}:ACTIVITIES"],
         {"plan": plan([], tools=[TOOL])}, 2, "cannot import", modules={"m": SYS_EXIT_0}),
    # -- dry-run -------------------------------------------------------------------------
    *basics("dry-run", []),
    Case("dry-run-forged-status", ["dry-run", "{plan}"],
         {"plan": plan([{"_tool": FORGE, "_outputPath": "†state.a"}],
                       mocks={FORGE: {"raise": {"type": f"E{ESC}[31m",
                                                "message": f"boom\r{ESC}[2Kok\u202e"}}})},
         1, "t\\x1b[2K\\rstatus: completed  failed     E\\x1b[31m: boom\\r\\x1b[2Kok\\u202e"),
    Case("dry-run-controls-in-values", ["dry-run", "{plan}"],
         {"plan": plan([{"_tool": "t", "_outputPath": "†state.a"}],
                       mocks={"t": {"return": {"v": f"{FORGE}\u2066\x85"}}})}, 0,
         "\\u2066"),
    Case("dry-run-json-bidi", ["dry-run", "{plan}", "--json"],
         {"plan": plan([{"_tool": "t", "_outputPath": "†state.a"}],
                       mocks={"t": {"return": BIDI}})}, 0, "\\u202e"),
    Case("dry-run-mocks-file-surrogate", ["dry-run", "{plan}", "--mocks", "{mocks}"],
         {"plan": plan([{"_tool": "t"}]), "mocks": '{"t": {"return": "\\ud800"}}'}, 2,
         "mocks.json"),
    Case("dry-run-mocks-file-big-integer", ["dry-run", "{plan}", "--mocks", "{mocks}"],
         {"plan": plan([{"_tool": "t"}]), "mocks": '{"t": {"return": ' + BIG + "}}"}, 2,
         "mocks.json"),
    Case("dry-run-mocks-file-bom", ["dry-run", "{plan}", "--mocks", "{mocks}"],
         {"plan": plan([{"_tool": "t"}]), "mocks": b'\xef\xbb\xbf{"t": {"return": 1}}'}, 0,
         "status: completed"),
    # -- run -----------------------------------------------------------------------------
    *basics("run", ["--activities", "sample_activities:ACTIVITIES"]),
    Case("run-activities-sys-exit", ["run", "{plan}", "--activities", "{activities}:ACTIVITIES"],
         {"plan": OUT_PLAN}, 2, "SystemExit", modules={"m": SYS_EXIT}),
    Case("run-activities-generator-exit", ["run", "{plan}", "--activities",
                                           "{activities}:ACTIVITIES"],
         {"plan": OUT_PLAN}, 2, "GeneratorExit", modules={"m": GEN_EXIT}),
    Case("run-controls-in-results-and-errors", ["run", "{plan}", "--activities",
                                                "{activities}:ACTIVITIES"],
         {"plan": plan([{"_tool": "t", "_outputPath": "†state.a"}, {"_tool": "boom"}])}, 1,
         "status: completed", modules={"m": CONTROLS}, absent=("\nstatus: completed\n\n",)),
    Case("run-big-integer-result", ["run", "{plan}", "--activities", "{activities}:ACTIVITIES",
                                    "--out", "{out}"],
         {"plan": OUT_PLAN}, -1, "", modules={"m": BIG_RESULT}),
    Case("run-surrogate-result", ["run", "{plan}", "--activities", "{activities}:ACTIVITIES",
                                  "--out", "{out}"],
         {"plan": OUT_PLAN}, -1, "", modules={"m": SURROGATE_RESULT}),
    Case("run-approval-edit-surrogate", ["run", "{plan}", "--activities",
                                         "{activities}:ACTIVITIES", "--approve"],
         {"plan": OUT_PLAN}, 0, "lone surrogate", modules={"m": ECHO},
         stdin='e\n{"x": "\\ud800"}\ne\n{"x": "b"}\n'),
    Case("run-approval-prompt-controls", ["run", "{plan}", "--activities",
                                          "{activities}:ACTIVITIES", "--approve"],
         {"plan": plan([{"_tool": "t", "x": FORGE}])}, 0, "\\u001b[2K", modules={"m": ECHO},
         stdin="a\n"),
    Case("run-approval-deny-reason-surrogate", ["run", "{plan}", "--activities",
                                                "{activities}:ACTIVITIES", "--approve"],
         {"plan": OUT_PLAN}, 1, "Denied: no\ufffdpe", modules={"m": ECHO},
         stdin="d\nno\udcffpe\n"),
    Case("run-activities-keyboard-interrupt", ["run", "{plan}", "--activities",
                                               "{activities}:ACTIVITIES"],
         {"plan": OUT_PLAN}, 130, "interrupted", modules={"m": "raise KeyboardInterrupt\n"}),
    # -- conformance ---------------------------------------------------------------------
    Case("conformance-deeply-nested", ["conformance", "{vector}"],
         {"vector": "[" * 100_000 + "]" * 100_000}, 1, "nested too deeply"),
    Case("conformance-truncated", ["conformance", "{vector}"],
         {"vector": '{"id": "v", "plan": [{"_tool": "t", "x": "†sta'}, 1, "Unterminated string"),
    Case("conformance-lone-surrogate", ["conformance", "{vector}"],
         {"vector": '{"id": "v", "plan": [], "context": [{"type": "state", "a": "\\ud800"}]}'},
         1, "lone surrogate"),
    Case("conformance-big-integer", ["conformance", "{vector}"],
         {"vector": '{"id": "v", "plan": [], "x": ' + BIG + "}"}, 1, "more than 4300 digits"),
    Case("conformance-malformed", ["conformance", "{vector}"], {"vector": "{"}, 1,
         "not valid JSON"),
    Case("conformance-forged-id", ["conformance", "{vector}"],
         {"vector": {"id": FORGE, "plan": [], "nope": 1}}, 1, "FAIL t\\x1b[2K\\r",
         absent=("\nstatus: completed",)),
    Case("conformance-bom", ["conformance", "{vector}"],
         {"vector": b'\xef\xbb\xbf{"id": "v", "plan": [], "expect": {"diagnostics": []}}'},
         0, "1 passed"),
]


def _write(path: pathlib.Path, content: Any) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")


_modules = itertools.count()


def invoke(case: Case, tmp_path: pathlib.Path,
           monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """Write the case's files and modules, run ``main`` in process, return its results."""
    names: dict[str, str] = {}
    for key, content in case.files.items():
        filename = f"plan{FORGE}.json" if case.name.endswith("controls-in-file-name") else (
            f"{key}.json")
        path = tmp_path / filename
        _write(path, content)
        names[key] = str(path)
    if case.name.endswith("controls-in-file-name"):
        _write(tmp_path / f"plan{FORGE}.json", plan([], tools=[TOOL]))
        names["plan"] = str(tmp_path / f"plan{FORGE}.json")
    names.setdefault("out", str(tmp_path / "out.json"))
    for source in case.modules.values():
        module = f"hostile_activities_{next(_modules)}"
        (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
        names["activities"] = module
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent))
    monkeypatch.setattr(sys, "stdin", io.StringIO(case.stdin))
    argv = [a.format(**names) if "{" in a and "}" in a and "†" not in a else a
            for a in case.argv]
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case: Case, tmp_path: pathlib.Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = invoke(case, tmp_path, monkeypatch)
    both = out + err
    assert "internal error" not in both, both[:2000]
    assert "Traceback" not in both, both[:2000]
    if case.code >= 0:
        assert code == case.code, both[:2000]
    else:
        assert code in (0, 1, 2), both[:2000]
    assert case.fragment in both, both[:2000]
    raw = RAW.search(both)
    assert raw is None, (f"raw {raw.group()!r} at {raw.start()}", both[:2000])
    for text in case.absent:
        assert text not in both, both[:2000]
    if code == 2 and case.fragment:
        assert err.startswith("error: ") and out == "", both[:2000]


def test_a_file_written_by_out_reads_back(tmp_path: pathlib.Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``--out`` writes JSON that the reading side accepts (lossless for every string)."""
    case = Case("out", ["run", "{plan}", "--activities", "{activities}:ACTIVITIES",
                        "--out", "{out}"], {"plan": OUT_PLAN}, 0, "",
                modules={"m": ("def t(call, tool, context):\n"
                               "    return {'v': 'a\\u202e\\x1b\\x85\U0001f600'}\n"
                               "ACTIVITIES = {'t': t}\n")})
    code, _, err = invoke(case, tmp_path, monkeypatch)
    assert code == 0, err
    code, out, err = invoke(Case("back", ["resolve", str(tmp_path / "out.json"), "†state.r.v"],
                                 {}, 0, ""), tmp_path, monkeypatch)
    assert (code, err) == (0, "")
    assert json.loads(out) == "a\u202e\x1b\x85\U0001f600"


# -- the function every row relies on ----------------------------------------------------

TEXT = st.text(st.characters(codec=None), max_size=40) | st.sampled_from(
    [FORGE, BIDI, "\x9b31m", "\u200b\u200d\ufeff", "\U000e0041", "\ud800", "a\\x1b"])


@given(TEXT)
def test_inert_leaves_only_printable_text_and_is_stable(text: str) -> None:
    shown = inert(text)
    assert shown.isprintable()
    assert RAW.search(shown) is None
    assert inert(shown) == shown
    assert len(inert_lines(text).split("\n")) == text.count("\n") + 1


@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E)))
def test_inert_keeps_printable_ascii(text: str) -> None:
    assert inert(text) == text


def test_inert_keeps_letters_of_every_script() -> None:
    assert inert("†state.пользователь 名前 😀 é") == "†state.пользователь 名前 😀 é"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20)


@given(JSON, st.sampled_from([None, 2]))
def test_json_text_reads_back_to_the_same_value(value: Any, indent: int | None) -> None:
    text = json_text(value, indent=indent)
    assert RAW.search(text.replace("\n", "")) is None
    text.encode("utf-8")  # always writable
    assert json.loads(text) == value


def test_json_text_writes_integers_past_pythons_limit() -> None:
    value = {"a": [10 ** 5000, -(10 ** 4400)], "b": 1}
    text = json_text(value)
    assert json.loads(text, parse_int=len) == {"a": [5001, 4402], "b": 1}


def test_json_text_to_an_ascii_stream_is_ascii() -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert json_text({"†": "пользователь\ud800"}, stream=stream).isascii()

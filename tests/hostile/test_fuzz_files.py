"""A fuzzer over plan files: random files through every command, in process.

Hypothesis builds JSON with protocol-shaped pieces (calls, messages, tools, mocks,
expressions) and hostile ones (control characters, bidi overrides, lone surrogates,
integers past 4,300 digits, byte order marks, truncation, deep nesting) and runs each
file through one command with ``obelisk.cli.main``. Whatever the file, the command:

- exits 0, 1 or 2, with no internal error and no traceback;
- ends within a bound (a hang is a failure, reported by an alarm, not a time measure);
- prints nothing from the input raw to the terminal (no escape, carriage return, ...);
- prints valid JSON when asked for JSON and it exits 0.

To extend it, add pieces to the strategies (``KEYS``, ``STRINGS``, ``calls``, ...) or a
command to ``COMMANDS``. Under CI (``CI`` set) it runs derandomized.
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from obelisk.cli import main

RAW = "".join(chr(c) for c in [*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0)]) \
    + "\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\ufeff"
BIG = "__BIG__"  # replaced in the text by an integer of 4,301+ digits
LIMIT_SECONDS = 20  # far above any example's time: only a hang reaches it

KEYS = ["_tool", "_outputPath", "_outputMethod", "_instance", "_scopes", "_output", "_activity",
        "x", "y", "type", "kind", "data", "state", "input", "plan", "context", "tools",
        "mocks", "instances", "properties", "return", "raise", "branch", "sequence",
        "by_instance", "echo", "const", "message", "id", "expect"]
STRINGS = ["t", "u", "†state.a", "†state.", "†input.q || 'z'", "†state.a && †b.c", "",
           "\\†x", "†state.a.-1", "†data.d.e", "set", "merge", "push", "concat", "state",
           "input", "data", "object", "string", "\x1b[2K\rstatus: completed", "pay\u202eyrev",
           "\ud800", "\udfff", "a\u200b", "\x9b31m", "\x7f", "line\nbreak", "†state.\x1b[31m",
           "\U0001f600", "\ufeff", BIG]

text = st.sampled_from(STRINGS) | st.text(max_size=8)
scalar = st.none() | st.booleans() | st.integers(-2, 3) | st.floats(allow_nan=False,
                                                                    allow_infinity=False) | text
json_value = st.recursive(
    scalar, lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(KEYS) | text, inner, max_size=4), max_leaves=12)

call = st.fixed_dictionaries(
    {"_tool": st.sampled_from(["t", "u", "\x1b[31mt", "pay\u202e"]) | json_value},
    optional={"x": text | json_value, "_outputPath": text, "_outputMethod": text,
              "_instance": text, "_scopes": st.lists(text, max_size=2), "_output": json_value})
message = st.one_of(
    st.fixed_dictionaries({"type": st.just("state")}, optional={"a": json_value, "b": json_value}),
    st.fixed_dictionaries({"type": st.just("input"), "input": json_value}),
    st.fixed_dictionaries({"type": st.just("data"), "kind": text, "data": json_value},
                          optional={"_instance": text}),
    json_value)
tool = st.one_of(
    st.builds(lambda name, t: {"type": "object", "properties": {
        "_tool": {"const": name}, "x": {"type": t}, "_output": {"type": "object"}}},
        st.sampled_from(["t", "u", "\x1b[2Kt"]), st.sampled_from(["string", "integer", "object"])),
    json_value)
mock = st.one_of(
    st.fixed_dictionaries({"return": json_value}), st.just({"echo": True}),
    st.fixed_dictionaries({"raise": st.fixed_dictionaries({"type": text, "message": text})}),
    st.fixed_dictionaries({"sequence": st.lists(st.fixed_dictionaries({"return": json_value}),
                                                max_size=2)}),
    json_value)
plan_file = st.one_of(
    st.fixed_dictionaries(
        {"plan": st.lists(call | json_value, max_size=4)},
        optional={"context": st.lists(message, max_size=3), "tools": st.lists(tool, max_size=2),
                  "mocks": st.dictionaries(st.sampled_from(["t", "u"]) | text, mock, max_size=2),
                  "instances": st.booleans() | text, "id": text}),
    st.lists(call, max_size=3),
    json_value)


@st.composite
def file_text(draw: st.DrawFn) -> str:
    """The file's text: the JSON of a plan file, then perhaps damaged."""
    body = json.dumps(draw(plan_file), ensure_ascii=draw(st.booleans()))
    body = body.replace(f'"{BIG}"', "-" * draw(st.integers(0, 1)) + "7" * 4301)
    damage = draw(st.sampled_from(["none"] * 6 + ["bom", "truncate", "control", "deep"]))
    if damage == "bom":
        body = "\ufeff" + body
    elif damage == "truncate":
        body = body[:draw(st.integers(0, max(0, len(body) - 1)))]
    elif damage == "control":
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from(["\x1b", "\r", "\u202e", "\x00"])) + body[at:]
    elif damage == "deep":
        body = '{"plan": [], "context": ' + "[" * 3000 + "]" * 3000 + "}"
    return body


ACTIVITIES = "hostile_fuzz_activities"
ACTIVITIES_SOURCE = '''
def t(call, tool, context):
    return {"echo": call, "odd": "\\x1b[2K\\rstatus: completed\\u202e"}

def u(call, tool, context):
    raise ValueError("\\x1b[1A\\rstatus: completed")

ACTIVITIES = {"t": t, "u": u}
'''

COMMANDS: list[list[str]] = [
    ["validate", "{f}"], ["validate", "{f}", "--format", "json"],
    ["validate", "{f}", "--format", "sarif"], ["graph", "{f}"],
    ["graph", "{f}", "--format", "dot"], ["graph", "{f}", "--format", "json"],
    ["schema", "{f}"], ["dry-run", "{f}"], ["dry-run", "{f}", "--json"],
    ["dry-run", "{f}", "--explore", "--interpreter", "asyncio"],
    ["run", "{f}", "--activities", f"{ACTIVITIES}:ACTIVITIES"],
    ["run", "{f}", "--activities", f"{ACTIVITIES}:ACTIVITIES", "--interpreter", "asyncio",
     "--out", "{out}"],
    ["resolve", "{f}", "†state.a"], ["resolve", "{f}", "†state.a.x || †input"],
    ["conformance", "{f}"],
]


class Hang(Exception):
    """The command did not end within LIMIT_SECONDS."""


@contextlib.contextmanager
def bounded(seconds: int) -> Iterator[None]:
    """Raise Hang in this (main) thread if the block runs longer than ``seconds``."""
    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    path = tmp_path_factory.mktemp("fuzz")
    (path / f"{ACTIVITIES}.py").write_text(ACTIVITIES_SOURCE, encoding="utf-8")
    sys.path.insert(0, str(path))
    yield path
    sys.path.remove(str(path))


# Each command gets its own examples (a drawn command would favour the first ones):
# 15 x 15 commands, about 200 files in all.
@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="the hang bound needs SIGALRM")
@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:1] + c[2:]) for c in COMMANDS])
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                  HealthCheck.too_slow,
                                                  HealthCheck.data_too_large])
@given(body=file_text())
def test_no_plan_file_makes_a_command_fail_badly(workdir: pathlib.Path, body: str,
                                                 argv: list[str]) -> None:
    path = workdir / "plan.json"
    path.write_text(body, encoding="utf-8", errors="surrogatepass")
    args = [a.format(f=path, out=workdir / "out.json") for a in argv]
    out, err = io.StringIO(), io.StringIO()
    with bounded(LIMIT_SECONDS):
        code = main(args, out=out, err=err)
    shown = out.getvalue() + err.getvalue()
    event(f"exit {code}")  # pytest --hypothesis-show-statistics shows the mix
    assert code in (0, 1, 2), (args, body[:500], shown[:2000])
    assert "internal error" not in shown, (args, body[:500], shown[:2000])
    assert "Traceback" not in shown, (args, body[:500], shown[:2000])
    raw = [c for c in shown if c in RAW or "\ud800" <= c <= "\udfff"]
    assert not raw, (raw[:5], args, body[:500], shown[:2000])
    if code == 0 and ("--json" in args or args[-2:] in (["--format", "json"],
                                                          ["--format", "sarif"])):
        json.loads(out.getvalue())

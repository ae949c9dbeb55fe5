"""obelisk/cli.py: exit codes and output of ``obelisk resolve`` and ``obelisk conformance``."""

from __future__ import annotations

import io
import json
import pathlib
from typing import Any

import pytest
from clirun import cli as run

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples/context.json")


def write(tmp_path: pathlib.Path, content: Any, name: str = "context.json") -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return str(path)


# -- resolve: values ---------------------------------------------------------------------

# (expression, extra arguments, printed JSON value)
VALUES = [
    ("†state.user.status", [], "inactive"),
    ("†state.user.status", ["--instance", "②"], "suspended"),
    ("†state.user.name", ["--instance", "②"], "Alex"),
    ("†billing.history.-1.amount", [], 50),
    ("†state.user.tags", [], ["new", "vip"]),
    ("†state.user", [], {"name": "Alex", "status": "inactive", "tags": ["new", "vip"]}),
    ("†state.user.email || 'none'", [], "none"),
    ("†input.userId && †input.orderId", [], "A-1009"),
    ("null", [], None),
]


@pytest.mark.parametrize(("expression", "extra", "expected"), VALUES)
def test_resolve_prints_the_value_as_json(expression: str, extra: list[str], expected: Any) -> None:
    code, out, err = run("resolve", EXAMPLE, expression, *extra)
    assert code == 0, err
    assert json.loads(out) == expected
    assert err == ""


def test_resolve_keeps_unicode_and_sorts_keys(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, [{"type": "state", "пользователь": {"имя": "Алекс", "b": 1, "a": 2}}])
    code, out, _ = run("resolve", path, "†state.пользователь")
    assert code == 0
    assert "Алекс" in out  # not \u escapes
    assert list(json.loads(out)) == ["a", "b", "имя"]


def test_resolve_accepts_an_object_with_a_context_array(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"context": [{"type": "state", "a": 1}]})
    assert run("resolve", path, "†state.a")[:2] == (0, "1\n")


def test_resolve_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('[{"type": "state", "a": [1, 2]}]'))
    code, out, _ = run("resolve", "-", "†state.a.-1")
    assert (code, out) == (0, "2\n")


# -- resolve: MISSING and errors (exit 1) -----------------------------------------------


@pytest.mark.parametrize(
    ("expression", "extra"),
    [
        ("†state.user.email", []),
        ("†state.user.status.x", []),
        ("†state.user.tags.5", []),
        ("†nokind", []),
        ("†state.a || †state.b", []),
        ("†state.user.email", ["--instance", "②"]),
    ],
)
def test_resolve_missing_prints_missing_and_exits_1(expression: str, extra: list[str]) -> None:
    code, out, err = run("resolve", EXAMPLE, expression, *extra)
    assert (code, out) == (1, "MISSING\n")
    assert expression in err
    if extra:
        assert "②" in err


@pytest.mark.parametrize(
    ("expression", "column"),
    [("†state.user.", 13), ("state.user", 1), ("†a | †b", 4), ("(†a", 4), ("", 1)],
)
def test_resolve_syntax_error_shows_a_caret_and_exits_1(expression: str, column: int) -> None:
    code, out, err = run("resolve", EXAMPLE, expression)
    assert code == 1
    assert out == ""
    assert f"column {column}" in err
    lines = err.splitlines()
    caret = next(line for line in lines if line.strip() and set(line.strip()) == {"^"})
    shown = lines[lines.index(caret) - 1]
    assert len(caret) - len(caret.lstrip()) == len(shown) - len(shown.lstrip()) + column - 1
    assert "Traceback" not in err


def test_resolve_over_the_length_limit_exits_1() -> None:
    code, _, err = run("resolve", EXAMPLE, "†a." + "b" * 5000)
    assert code == 1
    assert "4096" in err and "Traceback" not in err


def test_resolve_write_error_exits_1(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, [
        {"type": "state", "user": {"name": "Alex"}},
        {"type": "state", "state": {"user": 1}, "_outputPath": "†state.user", "_outputMethod": "push"},
    ])
    code, out, err = run("resolve", path, "†state.user.name")
    assert (code, out) == (1, "")
    assert "push" in err and "message 1" in err
    assert "Traceback" not in err


# -- resolve: unreadable input and bad usage (exit 2, never a traceback) -------------------

BAD_FILES = [
    ("not json", b"{nope", "not valid JSON"),
    ("empty", b"", "not valid JSON"),
    ("not utf-8", b'[{"type": "state", "a": "\xff"}]', "UTF-8"),
    ("NaN", b'[{"type": "state", "a": NaN}]', "NaN"),
    ("huge number", b'[{"type": "state", "a": 1e400}]', "number"),
    ("a bare object", b'{"type": "state"}', "context"),
    ("a string", b'"text"', "array"),
    ("a malformed message", b'[{"type": "state", "state": 1, "x": 2}]', "message 0"),
    ("not a message", b"[1]", "message 0"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, ""),
    ("bad _outputPath", b'[{"type": "state", "a": 1, "_outputPath": "state.a"}]', "_outputPath"),
]


@pytest.mark.parametrize(("name", "content", "word"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_resolve_unreadable_context_exits_2(
    tmp_path: pathlib.Path, name: str, content: bytes, word: str
) -> None:
    path = write(tmp_path, content)
    code, out, err = run("resolve", path, "†state.a")
    assert code == 2, err
    assert out == ""
    assert err.startswith("error: ")
    assert word in err
    assert "Traceback" not in err


def test_resolve_missing_file_exits_2(tmp_path: pathlib.Path) -> None:
    code, _, err = run("resolve", str(tmp_path / "nope.json"), "†state.a")
    assert code == 2
    assert "cannot read" in err


def test_resolve_directory_exits_2(tmp_path: pathlib.Path) -> None:
    code, _, err = run("resolve", str(tmp_path), "†state.a")
    assert code == 2
    assert "cannot read" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["resolve"],
        ["resolve", EXAMPLE],
        ["frobnicate"],
        ["resolve", EXAMPLE, "†state.a", "--bogus"],
        ["resolve", EXAMPLE, "†state.a", "--instance"],
        ["conformance", "--against"],
    ],
)
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(*argv)
    captured = capsys.readouterr()
    assert code == 2
    assert "usage:" in err + captured.err
    assert "Traceback" not in err + captured.err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run("--help")
    assert code == 0
    assert "resolve" in out + capsys.readouterr().out


# -- conformance -------------------------------------------------------------------------


def test_conformance_passes_on_good_vectors(tmp_path: pathlib.Path) -> None:
    vector = {"id": "t/one", "context": [{"type": "state", "a": 1}],
              "cases": [{"ref": "†state.a", "value": 1}, {"ref": "†state.b", "missing": True},
                        {"ref": "†state.", "error": "syntax"}]}
    path = write(tmp_path, [vector], "v.json")
    code, out, _ = run("conformance", path)
    assert code == 0
    assert "PASS t/one" in out
    assert out.splitlines()[-1] == "1 passed, 0 failed"


def test_conformance_fails_on_a_failing_vector(tmp_path: pathlib.Path) -> None:
    vector = {"id": "t/bad", "context": [{"type": "state", "a": 1}],
              "cases": [{"ref": "†state.a", "value": 2}]}
    write(tmp_path, [vector], "v.json")
    code, out, _ = run("conformance", "-q", str(tmp_path))
    assert code == 1
    assert "FAIL t/bad" in out
    assert "PASS" not in out
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_conformance_reports_an_unreadable_file_as_a_failure(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, b"{broken", "v.json")
    code, out, err = run("conformance", path)
    assert code == 1
    assert "FAIL" in out
    assert "Traceback" not in out + err

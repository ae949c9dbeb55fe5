"""``validate``, ``dry-run``, ``run`` and ``conformance`` use colour on a terminal (issue 28,
item 4): through a pseudo-terminal their words are painted; with ``NO_COLOR``, and on
anything that is not a terminal, the text is the same without a single escape code."""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
import sys

import pexpect
import pytest

from obelisk.cli import main
from obelisk.cli.paint import paint_for, plain

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAYMENT = str(ROOT / "examples/payment.json")
VECTORS = str(ROOT / "obelisk/kit/vectors/seed-examples.json")
ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7]m")  # a foreground colour


@pytest.fixture
def bad_plan(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"plan": [{"_tool": "a", "x": "†state.nope"}]}),
                    encoding="utf-8")
    return str(path)


def commands(bad_plan: str) -> list[tuple[list[str], str]]:
    """Each command with a word it paints."""
    return [(["validate", bad_plan], "error[dangling-reference]"),
            (["dry-run", PAYMENT], "completed"),
            (["run", PAYMENT, "--activities", "sample_activities:ACTIVITIES"], "executed"),
            (["conformance", VECTORS], "PASS")]


def through_a_terminal(argv: list[str], **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environ.update(TERM="xterm-256color", PYTHONPATH=str(ROOT / "tests"), **env)
    child = pexpect.spawn(sys.executable, ["-m", "obelisk", *argv], cwd=str(ROOT),
                          env=environ, encoding="utf-8", timeout=60, dimensions=(40, 200))
    child.expect(pexpect.EOF)
    text: str = child.before
    child.close()
    return text.replace("\r\n", "\n")


@pytest.mark.slow
def test_a_terminal_gets_colour_and_no_color_plain_text(bad_plan: str) -> None:
    for argv, painted in commands(bad_plan):
        coloured = through_a_terminal(argv)
        assert COLOUR.search(coloured), argv
        assert re.search(r"\x1b\[[0-9;]*m" + re.escape(painted), coloured), argv
        bare = through_a_terminal(argv, NO_COLOR="1")
        assert not COLOUR.search(bare), argv
        if argv[0] == "run":  # the live display (bold and dim, no colour) went before it
            coloured, bare = (text[text.index("call  instance"):] for text in (
                ESCAPE.sub("", coloured), bare))
        assert not ESCAPE.search(bare), argv
        assert ESCAPE.sub("", coloured) == bare, argv  # the same text, only painted


def test_what_is_not_a_terminal_gets_plain_text(bad_plan: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    for argv, painted in commands(bad_plan):
        out, err = io.StringIO(), io.StringIO()
        main(argv, out=out, err=err)
        assert painted in out.getvalue() and "\x1b" not in out.getvalue() + err.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("env", "terminal", "painted"), [
    ({}, True, True), ({"NO_COLOR": "1"}, True, False), ({}, False, False),
    ({"NO_COLOR": ""}, True, True)])  # an empty NO_COLOR is not set
def test_when_colour_is_used(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                             terminal: bool, painted: bool) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    paint = paint_for(_Terminal() if terminal else io.StringIO())
    assert (paint is not plain) is painted
    assert ESCAPE.sub("", paint("word", "bold red")) == "word"

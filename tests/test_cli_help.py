"""Every command's ``--help`` (issue 28 item 8): a description and examples, and help text
for every option; the examples parse. The walk covers every parser, nested ones too, so a
new command or option without them fails here."""

from __future__ import annotations

import argparse
import io
import shlex
from collections.abc import Iterator

import pytest

from obelisk.cli import COMMANDS, UsageError, build_parser, main
from obelisk.cli.helptext import HELP


def parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
            ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every sub-command's parser under ``parser``, with the words that name it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, nested in action.choices.items():
                yield (*path, word), nested
                yield from parsers(nested, (*path, word))


ALL = dict(parsers(build_parser()))


def test_the_walk_finds_every_command_and_the_nested_ones() -> None:
    names = {" ".join(path) for path in ALL}
    assert {c.name for c in COMMANDS} | {"mcp list"} == names
    assert {"mcp-server", "mcp list", "worker", "submit", "request"} <= names
    assert names == set(HELP)  # no row for a command that does not exist


@pytest.mark.parametrize("path", sorted(ALL), ids=" ".join)
def test_every_command_has_a_description_and_an_example(path: tuple[str, ...]) -> None:
    parser = ALL[path]
    name = " ".join(path)
    assert parser.description and len(parser.description) > 20, name
    assert parser.epilog and parser.epilog.startswith("examples:\n"), name
    help_text = parser.format_help()
    assert parser.description.split()[0] in help_text and f"obelisk {name}" in help_text


@pytest.mark.parametrize("path", sorted(ALL), ids=" ".join)
def test_every_option_has_help_text(path: tuple[str, ...]) -> None:
    missing = [action.option_strings or action.dest for action in ALL[path]._actions
               if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
               and (not action.help or action.help == argparse.SUPPRESS)]
    assert missing == [], f"obelisk {' '.join(path)}: options without help: {missing}"


def examples() -> Iterator[tuple[str, str]]:
    for name, (_, text) in sorted(HELP.items()):
        for line in text.splitlines():
            yield name, line


@pytest.mark.parametrize(("name", "line"), list(examples()))
def test_every_example_parses(name: str, line: str) -> None:
    # The command line up to a pipe or a redirection, as the shell would split it.
    words = shlex.split(line.split(" | ")[0].split(" > ")[0])
    assert words[0] == "obelisk"
    try:
        args = build_parser().parse_args(words[1:])
    except UsageError as exc:
        pytest.fail(f"{line}: {exc}")
    assert args.command == words[1]


def test_help_shows_the_description_and_examples_and_exits_0() -> None:
    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        assert main(["request", "--help"], out=io.StringIO(), err=io.StringIO()) == 0
    text = out.getvalue()
    assert "Print exactly what an agent's LLM is sent" in text
    assert "examples:\n  obelisk request examples/agent/refund.json" in text

"""``obelisk agent``'s options (issue 28 item 7): --input and --context as run has them,
the adapter's --temperature, --max-answer-tokens, --max-attempts and --timeout, and a failure
hint that names only options the command has."""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

import pytest
from clirun import cli

from obelisk.cli import build_parser

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "llm"))
from servers import error, openai_completion, serve  # noqa: E402

EXAMPLES = ROOT / "examples" / "agent"
REFUND = str(EXAMPLES / "refund.json")
SCRIPT = f"script:{EXAMPLES / 'refund.solutions.json'}"


def options_of(command: str) -> set[str]:
    parser = build_parser(arguments_for=[command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o for action in sub.choices[command]._actions for o in action.option_strings}


def test_the_give_up_hint_names_only_options_agent_has() -> None:
    # Before: "(raise max_attempts or timeout, ...)", a library's names, on the command line.
    with serve([error(503, retry_after="0")] * 2) as server:
        code, out, err = cli("agent", REFUND, "--llm", "openai:test-model", "--base-url",
                             server.base_url, "--max-attempts", "2", "--timeout", "5")
        assert len(server.requests) == 2  # --max-attempts 2
    assert code == 1, out + err
    failed = next(line for line in out.splitlines() if line.startswith("failed: "))
    assert "gave up after 2 attempts" in failed
    named = set(re.findall(r"--[a-z][a-z-]*", failed))
    assert named == {"--max-attempts", "--timeout"}
    assert named <= options_of("agent")


def test_temperature_and_max_answer_tokens_reach_the_provider() -> None:
    # --max-tokens is the run's budget (every answer's tokens together); one answer's
    # bound is --max-answer-tokens.
    solution = {"calls": [], "output": {"refundId": "r", "amount": 1}}
    with serve([openai_completion(json.dumps(solution))]) as server:
        code, out, err = cli("agent", REFUND, "--llm", "openai:test-model", "--base-url",
                             server.base_url, "--temperature", "0.25", "--max-answer-tokens", "300")
        body = server.requests[0].body
    assert code == 0, out + err
    assert body["temperature"] == 0.25 and body["max_completion_tokens"] == 300


def test_input_and_context_extend_the_files_context(tmp_path: pathlib.Path) -> None:
    context = tmp_path / "ctx.json"
    context.write_text(json.dumps([{"type": "system", "text": "Answer in French."}]),
                       encoding="utf-8")
    given = tmp_path / "input.json"
    given.write_text(json.dumps({"orderId": "B-2"}), encoding="utf-8")
    for value in ('{"orderId": "B-2"}', f"@{given}"):
        code, out, err = cli("agent", REFUND, "--llm", SCRIPT, "--json", "--context",
                             str(context), "--input", value)
        assert code == 0, err
        code, sent, err = cli("request", REFUND, "--context", str(context), "--input", value)
        assert code == 0, err
        assert sent.index("Answer in French.") < sent.index("You help customers")
        assert '"orderId": "B-2"' in sent and "A-1009" not in sent


@pytest.mark.parametrize(("argv", "message"), [
    (["--llm", SCRIPT, "--temperature", "0.5"], "--temperature sets the openai: and "
     "anthropic: adapters"),
    (["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--max-attempts", "0"],
     "--max-attempts must be at least 1"),
    (["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "-1"],
     "--timeout must be a positive number of seconds"),
    (["--llm", SCRIPT, "--input", "{nope"], "--input"),
    (["--llm", SCRIPT, "--input", "@/no/such/file.json"], "/no/such/file.json"),
])
def test_bad_options_exit_2_naming_the_option(argv: list[str], message: str) -> None:
    code, out, err = cli("agent", REFUND, *argv)
    assert code == 2 and message in err, out + err

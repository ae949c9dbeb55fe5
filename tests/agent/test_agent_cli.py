"""``obelisk agent``: the examples offline with a script, lazy approval at the terminal,
bad input, and the same agent through the OpenAI and Anthropic adapters against the
loopback servers of tests/llm/servers.py."""

from __future__ import annotations

import io
import json
import pathlib
import sys
from typing import Any

import pytest

from obelisk.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "llm"))
from servers import anthropic_message, openai_completion, serve  # noqa: E402

EXAMPLES = ROOT / "examples" / "agent"


def agent(*argv: str, stdin: str = "", monkeypatch: pytest.MonkeyPatch | None = None
          ) -> tuple[int, str, str]:
    if monkeypatch is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    code = main(["agent", *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def example(name: str, *extra: str, **kw: Any) -> tuple[int, str, str]:
    return agent(str(EXAMPLES / f"{name}.json"),
                 "--llm", f"script:{EXAMPLES / name}.solutions.json", *extra, **kw)


def test_the_refund_example_completes_in_two_ticks() -> None:
    code, out, err = example("refund")
    assert code == 0, err
    assert "tick 1: asking the LLM" in out and "tick 2: asking the LLM" in out
    assert "call 0 lookupOrder: executed" in out and "completed" in out
    assert '"refundId": "rf-311"' in out


def test_the_refund_example_as_json() -> None:
    code, out, _ = example("refund", "--json")
    result = json.loads(out)
    assert code == 0 and result["status"] == "completed"
    assert result["output"] == {"refundId": "rf-311", "amount": 49.9}
    assert [t["tick"] for t in result["ticks"]] == [1, 2]
    assert result["usage"]["input_tokens"] > 0


def test_the_self_correcting_example_shows_the_error_fed_back() -> None:
    code, out, _ = example("self-correct")
    assert code == 0
    assert "call 1 issueRefund: failed (ParamSchema)" in out
    assert "error fed back: ParamSchema" in out


def test_the_lazy_example_shows_the_plan_and_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = example("lazy-approve", "--approve", stdin="a\n", monkeypatch=monkeypatch)
    assert code == 0
    assert "the plan:" in err and "[a]pprove, [e]dit, [r]eject the plan?" in err
    assert "sorry" in out


def test_a_rejected_lazy_plan_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = example("lazy-approve", "--approve", "--max-ticks", "1", stdin="r\n",
                           monkeypatch=monkeypatch)
    assert code == 1
    assert "error fed back: Denied" in out and "max_ticks" in out
    assert "executed" not in out


def test_a_script_that_runs_out_fails_with_exit_1(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "s.json"
    script.write_text("[]")
    code, out, _ = agent(str(EXAMPLES / "refund.json"), "--llm", f"script:{script}")
    assert code == 1 and "failed" in out


@pytest.mark.parametrize(("argv", "says"), [
    (["--llm", "nope:x"], "unknown adapter"),
    (["--llm", "script"], "--llm takes"),
    (["--llm", "script:/no/such/file.json"], "/no/such/file.json"),
    (["--llm", "script:{refund}", "--max-ticks", "0"], "--max-ticks must be a positive"),
])
def test_bad_input_is_exit_2(argv: list[str], says: str) -> None:
    argv = [a.replace("{refund}", str(EXAMPLES / "refund.solutions.json")) for a in argv]
    code, out, err = agent(str(EXAMPLES / "refund.json"), *argv)
    assert code == 2 and says in err and "Traceback" not in err


def test_a_bad_agent_file_is_exit_2(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "a.json"
    bad.write_text(json.dumps({"context": [], "plan": []}))
    code, _, err = agent(str(bad), "--llm", f"script:{EXAMPLES / 'refund.solutions.json'}")
    assert code == 2 and "unknown field" in err


def solutions() -> list[Any]:
    return json.loads((EXAMPLES / "refund.solutions.json").read_text())


@pytest.mark.slow
def test_the_same_agent_against_a_local_openai_compatible_server() -> None:
    answers = [openai_completion(json.dumps(s, ensure_ascii=False)) for s in solutions()]
    with serve(answers) as server:
        code, out, err = agent(str(EXAMPLES / "refund.json"), "--llm", "openai:local-model",
                               "--base-url", server.base_url, "--json")
        sent = [r.body for r in server.requests]
    assert code == 0, err
    result = json.loads(out)
    assert result["output"] == {"refundId": "rf-311", "amount": 49.9}
    assert result["usage"] == {"input_tokens": 22, "output_tokens": 14, "requests": 2}
    assert [b["model"] for b in sent] == ["local-model", "local-model"]
    assert sent[0]["response_format"]["type"] == "json_schema"


@pytest.mark.slow
def test_the_same_agent_against_a_local_anthropic_compatible_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    answers = [anthropic_message(s) for s in solutions()]
    with serve(answers) as server:
        code, out, err = agent(str(EXAMPLES / "refund.json"), "--llm", "anthropic:local-model",
                               "--base-url", server.root_url, "--json")
        sent = [r.body for r in server.requests]
    assert code == 0, err
    assert json.loads(out)["status"] == "completed"
    assert sent[0]["tool_choice"]["name"] == "solution"


def test_activities_run_the_calls_instead_of_the_mocks(tmp_path: pathlib.Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shop_activities.py").write_text(
        "def lookup(call, tool, context):\n"
        "    return {'status': 'delivered', 'total': 12.5}\n"
        "def refund(call, tool, context):\n"
        "    return {'id': 'real-' + call['orderId']}\n"
        "ACTIVITIES = {'lookupOrder': lookup, 'issueRefund': refund}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = example("refund", "--activities", "shop_activities:ACTIVITIES", "--json")
    assert code == 0
    assert json.loads(out)["output"] == {"refundId": "real-A-1009", "amount": 12.5}


def test_lazy_mode_shows_the_plan_without_asking_when_not_told_to_approve() -> None:
    code, out, err = example("lazy-approve")
    assert code == 0 and err == ""
    assert out.index("the plan:") < out.index("call 0 lookupOrder: executed")
    assert "draftApology" in out


@pytest.mark.parametrize("page", ["README.md", "docs/agent.md"])
def test_the_quickstart_prints_what_the_page_shows(page: str) -> None:
    text = (ROOT / page).read_text()
    command = "obelisk agent examples/agent/refund.json --llm script:examples/agent/refund.solutions.json"
    after = text[text.index(command):]
    shown = after[after.index("```text\n") + len("```text\n"):]
    shown = shown[:shown.index("```")]
    code, out, _ = example("refund")
    assert code == 0 and out == shown


def test_eager_approve_asks_before_each_call_and_records_the_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The refund agent's first tick runs two calls: approve the first, deny the second.
    code, out, err = example("refund", "--approve", "--json", stdin="a\nd\nnot now\n",
                             monkeypatch=monkeypatch)
    assert "about to run 'lookupOrder'" in err and "about to run 'issueRefund'" in err
    assert code == 1  # a denied call adds an error message: the run did not complete well
    assert "Denied" in out

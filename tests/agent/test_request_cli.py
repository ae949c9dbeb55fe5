"""``obelisk request`` and agent files given to ``validate`` and ``schema`` (issue 28
item 6): what is printed is what the agent loop sends, tick by tick, built by the loop."""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Any

import pytest
from clirun import cli

from obelisk import Context, ScriptedLLM, run_agent_sync
from obelisk.agent import AgentError, run_agent
from obelisk.agent.probe import Probe
from obelisk.llm import Reply, Request

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "agent"


class Recording(ScriptedLLM):
    """A scripted LLM that keeps every request it is sent."""

    def __init__(self, solutions: list[Any]) -> None:
        super().__init__(solutions)
        self.sent: list[Request] = []

    async def solve(self, request: Request) -> Reply:
        self.sent.append(request)
        return await super().solve(request)


def sent_by_the_loop(name: str) -> list[Request]:
    """The requests ``obelisk agent`` sends for the example (its mocks answer the calls)."""
    spec = json.loads((EXAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    script = json.loads((EXAMPLES / f"{name}.solutions.json").read_text(encoding="utf-8"))
    llm = Recording(script if isinstance(script, list) else script["solutions"])
    run_agent_sync(Context.of(spec["context"]), llm, tools=spec["tools"],
                   output_schema=spec["output_schema"], mode=spec.get("mode"),
                   mocks=spec.get("mocks", {}))
    return llm.sent


def test_request_prints_what_the_first_tick_sends() -> None:
    first = sent_by_the_loop("refund")[0]
    code, out, err = cli("request", str(EXAMPLES / "refund.json"))
    assert code == 0, err
    assert out == first.render()
    code, out, err = cli("request", str(EXAMPLES / "refund.json"), "--json")
    assert code == 0, err
    assert json.loads(out) == {"tick": 1, **first.to_json()}
    assert json.loads(out)["schema"]["properties"]["output"]  # the solution schema


def test_request_of_a_recorded_tick_is_what_that_tick_sent(tmp_path: pathlib.Path) -> None:
    sent = sent_by_the_loop("refund")
    db = tmp_path / "run.db"
    code, _, err = cli("agent", str(EXAMPLES / "refund.json"), "--llm",
                       f"script:{EXAMPLES / 'refund.solutions.json'}", "--journal", str(db))
    assert code == 0, err
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for tick, request in enumerate(sent, 1):
        code, out, err = cli("request", str(EXAMPLES / "refund.json"), "--journal", str(db),
                             "--tick", str(tick))
        assert code == 0, err
        assert out == request.render() and f"the request of tick {tick} of" in err
    code, out, _ = cli("request", "--journal", str(db))  # the newest: the last tick's
    assert code == 0 and out == sent[-1].render()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # a copy was replayed
    code, out, err = cli("request", "--journal", str(db), "--tick", "3")
    assert code == 2 and "no tick 3: it ended after tick 2" in err
    code, out, err = cli("request", str(EXAMPLES / "self-correct.json"), "--journal", str(db))
    assert code == 2 and "self-correct.json is not the agent" in err and "tools differ" in err


def test_request_of_the_next_tick_of_a_run_that_goes_on(tmp_path: pathlib.Path) -> None:
    # A script that runs out at tick 2: the run fails there and a resume goes on with tick
    # 2's request, which is the newest one.
    sent = sent_by_the_loop("refund")
    script = json.loads((EXAMPLES / "refund.solutions.json").read_text(encoding="utf-8"))
    short = tmp_path / "short.json"
    short.write_text(json.dumps(script[:1]), encoding="utf-8")
    db = tmp_path / "run.db"
    code, out, err = cli("agent", str(EXAMPLES / "refund.json"), "--llm", f"script:{short}",
                         "--journal", str(db))
    assert code == 1 and "\nfailed: " in out, out + err
    code, out, err = cli("request", "--journal", str(db))
    assert code == 0, err
    assert out == sent[1].render() and "the request of tick 2 of" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--tick", "2"], "--tick 2 needs --journal"),
    (["--tick", "0"], "--tick must be at least 1"),
])
def test_request_refuses_a_tick_it_cannot_know(argv: list[str], message: str) -> None:
    code, _, err = cli("request", str(EXAMPLES / "refund.json"), *argv)
    assert code == 2 and message in err


def test_request_of_a_plans_run_says_it_is_one(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "run.db"
    from obelisk import Journal, run_durable

    with Journal.open(db) as journal:
        run_durable([{"_tool": "t"}], journal=journal, run_id="p1",
                    activities={"t": lambda call, tool, ctx: 1})
    code, _, err = cli("request", "--journal", str(db))
    assert code == 2 and "run p1 is a plan's run: obelisk request shows an agent run" in err


def test_request_without_a_file_or_journal_and_with_a_postgres_url() -> None:
    code, _, err = cli("request")
    assert code == 2 and "request needs an agent FILE, or --journal JOURNAL" in err
    code, _, err = cli("request", "--journal", "postgresql://u:secret@localhost/db")
    assert code == 2 and "cannot be copied" in err and "secret" not in err


def test_a_tick_the_run_reaches_only_by_asking_is_refused() -> None:
    # Tick 2 comes only after the LLM answers tick 1: the probe never answers, so the
    # request of tick 2 would not be the one the run sends.
    probe = Probe(2)
    with pytest.raises(AgentError, match="tick 2 cannot be shown as it would be sent: the "
                       "LLM would be asked after tick 1"):
        import asyncio

        asyncio.run(probe.run(run_agent([], probe, observer=probe.observer)))


def test_validate_and_schema_take_an_agent_file() -> None:
    # Before: "unknown field(s) 'output_schema'", exit 2.
    path = str(EXAMPLES / "refund.json")
    code, out, err = cli("validate", path)
    assert code == 0, err
    assert out.startswith(f"{path}: agent file, 2 tools, 2 messages: no problems")
    first = sent_by_the_loop("refund")[0]
    code, out, err = cli("schema", path)
    assert code == 0, err
    assert json.loads(out) == first.schema


def test_validate_reports_a_bad_agent_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"output_schema": {"type": 5}}), encoding="utf-8")
    code, _, err = cli("validate", str(path))
    assert code == 2 and "output_schema/type is not a valid JSON Schema" in err
    path.write_text(json.dumps({"mode": "eager", "tools": [{"properties": {}}]}),
                    encoding="utf-8")
    code, _, err = cli("validate", str(path))
    assert code == 2 and f"{path}: " in err and "_tool" in err
    path.write_text(json.dumps({"mode": "eager", "plan": []}), encoding="utf-8")
    code, _, err = cli("validate", str(path))
    assert code == 2 and "unknown field(s) 'plan'" in err
    path.write_text(json.dumps({"mode": "eager", "max_ticks": 0}), encoding="utf-8")
    code, _, err = cli("validate", str(path))
    assert code == 2 and '"max_ticks" must be a positive integer, got 0' in err
    code, _, err = cli("validate", str(EXAMPLES / "refund.json"), "--tools", str(path))
    assert code == 2 and "--tools and --context apply to plan files" in err

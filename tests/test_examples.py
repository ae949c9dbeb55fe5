"""The plan files in examples/: the protocol's own scenarios, dry-run through the command
line under both interpreters, with their key outcomes checked."""

from __future__ import annotations

import io
import json
import pathlib
from typing import Any

import pytest

from obelisk import Context, compile_plan, dry_run, resolve
from obelisk.cli import main
from obelisk.planfile import read_plan_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def dry(name: str, *extra: str) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["dry-run", str(EXAMPLES / name), "--json", *extra], out=out, err=err)
    assert err.getvalue() == ""
    return code, json.loads(out.getvalue())


def outcomes(report: dict[str, Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {"executed": [], "skipped": [], "failed": []}
    for call in report["calls"]:
        key = call["call"] if call["instance"] is None else [call["call"], call["instance"]]
        found[call["outcome"]].append(key)
    return found


@pytest.fixture(params=["sync", "asyncio"])
def interpreter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


PLAN_FILES = sorted(p.name for p in EXAMPLES.glob("*.json") if p.name != "context.json")


def test_the_expected_examples_are_there() -> None:
    assert PLAN_FILES == ["moderation.json", "order.json", "payment.json", "refund.json",
                          "translation.json", "weather.json"]


@pytest.mark.parametrize("name", PLAN_FILES)
def test_every_example_is_valid_and_race_free(name: str) -> None:
    pf = read_plan_file(str(EXAMPLES / name))
    plan = compile_plan(pf.plan, tools=pf.tools, context=pf.context, instances=pf.instances)
    assert plan.ok
    assert not [d for d in plan.diagnostics if d.severity.value == "warning"]


@pytest.mark.parametrize("name", PLAN_FILES)
def test_both_interpreters_give_the_same_report_less_the_trace(name: str) -> None:
    reports = [dry(name, "--interpreter", i)[1] for i in ("sync", "asyncio")]
    for report in reports:
        report.pop("trace")
    assert reports[0] == reports[1]


def test_refund_with_billing_history(interpreter: str) -> None:
    code, report = dry("refund.json", "--interpreter", interpreter)
    assert code == 0 and report["status"] == "completed"
    assert outcomes(report) == {"executed": [0, 1], "skipped": [], "failed": []}
    state = report["views"]["state"]["global"]
    assert state["billingHistory"] == {"orders": 5, "lastChargeback": "2025-09-10"}
    assert state["refund"]["confirmationId"] == "refund_xyz789"


def test_refund_plan_comes_from_the_plan_message() -> None:
    pf = read_plan_file(str(EXAMPLES / "refund.json"))
    assert [c["_tool"] for c in pf.plan] == ["checkBillingHistory", "issueRefund"]
    assert {t["properties"]["_tool"]["const"] for t in pf.tools} == {
        "checkBillingHistory", "issueRefund", "escalateToSupervisor"}


def test_payment_failure_goes_to_the_error_branch(interpreter: str) -> None:
    code, report = dry("payment.json", "--interpreter", interpreter)
    assert code == 0, "a failure the plan handles itself adds no error message"
    assert outcomes(report) == {"executed": [0, 2], "skipped": [1], "failed": []}
    assert report["errors"] == []
    state = report["views"]["state"]["global"]
    assert state["error"] == {"type": "CardDeclined", "message": "Your card was declined.",
                              "data": {"code": "card_declined"}}
    assert "receipt" not in state and "confirmation" not in state
    assert report["calls"][1]["reason"] == ("dead branch: †state.receipt was not written "
                                          "(call 0 (processPayment) took †state.error instead)")


def test_payment_success_with_other_mocks(tmp_path: pathlib.Path, interpreter: str) -> None:
    mocks = tmp_path / "mocks.json"
    mocks.write_text(json.dumps({"processPayment": {"return": {"receiptId": "rcpt_1"}}}))
    code, report = dry("payment.json", "--mocks", str(mocks), "--interpreter", interpreter)
    assert code == 0
    assert outcomes(report) == {"executed": [0, 1], "skipped": [2], "failed": []}
    assert report["views"]["state"]["global"]["confirmation"] == {"status": "confirmed"}


def test_weather_takes_one_exclusive_branch(interpreter: str) -> None:
    code, report = dry("weather.json", "--interpreter", interpreter)
    assert code == 0
    assert outcomes(report) == {"executed": [0, 2, 3], "skipped": [1], "failed": []}
    state = report["views"]["state"]["global"]
    assert state["answer"] == {"suggestion": "a matinee at the BFI"}
    assert "sunny" not in state


def test_weather_explored(interpreter: str) -> None:
    code, report = dry("weather.json", "--explore", "--interpreter", interpreter)
    assert code == 0
    explore = report["explore"]
    assert (explore["total"], explore["run"], explore["truncated"]) == (3, 3, False)
    found = [(c["choices"][0]["alternative"], c["executed"], c["skipped"])
             for c in explore["combinations"]]
    assert found == [(1, [0, 1, 3], [2]), (2, [0, 2, 3], [1]), (3, [0], [1, 2, 3])]
    sunny = explore["combinations"][0]["views"]["state"]["global"]
    assert sunny["answer"] == {"suggestion": "a walk in Hyde Park"}


def test_translation_guided_by_schemas(interpreter: str) -> None:
    code, report = dry("translation.json", "--interpreter", interpreter)
    assert code == 0
    assert outcomes(report)["executed"] == [0, 1, 2]
    assert report["views"]["state"]["global"] == {
        "language": "fr", "isEnglish": False, "translatedText": "Hello world"}


def test_translation_tools_come_from_tool_messages() -> None:
    pf = read_plan_file(str(EXAMPLES / "translation.json"))
    assert [t["properties"]["_tool"]["const"] for t in pf.tools] == [
        "detectLanguage", "isEnglish", "translateText"]
    assert "isEnglish" not in pf.mocks  # its result is an example made from its _output schema


def test_translation_type_checks_against_the_tools(tmp_path: pathlib.Path) -> None:
    # Wiring the language code into the boolean parameter is caught before anything runs.
    data = json.loads((EXAMPLES / "translation.json").read_text(encoding="utf-8"))
    data["plan"][2]["isEnglish"] = "†state.language"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = main(["dry-run", str(path), "--json"], out=out, err=err)
    report = json.loads(out.getvalue())
    assert code == 1 and report["status"] == "invalid"
    assert [d["code"] for d in report["diagnostics"]] == ["type-mismatch"]


def test_moderation_over_instances(interpreter: str) -> None:
    code, report = dry("moderation.json", "--interpreter", interpreter)
    assert code == 0
    assert outcomes(report)["executed"] == [[call, i] for call in range(3) for i in "①②③"]
    state = report["views"]["state"]
    assert "global" not in state
    assert {i: state[i]["decision"] for i in "①②③"} == {"①": "approve", "②": "approve",
                                                       "③": "reject"}
    assert state["③"]["keywords"] == ["spam"]


def test_moderation_messages_are_tagged_with_their_instance(interpreter: str) -> None:
    pf = read_plan_file(str(EXAMPLES / "moderation.json"))
    result = dry_run(pf.plan, pf.context, tools=pf.tools, mocks=pf.mocks,
                     instances=pf.instances, interpreter=interpreter)
    written = [m for m in result.context.to_json() if "_outputPath" in m]
    assert len(written) == 9
    assert sorted(m["_instance"] for m in written) == sorted("①②③" * 3)
    assert all(m["_date"] == "1970-01-01T00:00:00Z" for m in written)
    context = Context.of(result.context.to_json())
    assert resolve(context, "†state.decision", "③") == "reject"


# -- the Python examples of docs/running.md and docs/dry-run.md -------------------------


def doc_examples() -> list[tuple[str, int, str, str]]:
    """Every ```python block followed by a ```text block: (file, line, code, output)."""
    import re

    found = []
    for name in ("running.md", "dry-run.md"):
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        for match in re.finditer(r"```python\n((?:(?!```).)*)```\n+```text\n((?:(?!```).)*)```", text, re.S):
            line = text[:match.start()].count("\n") + 1
            found.append((name, line, match.group(1), match.group(2)))
    return found


def normalise(text: str) -> list[str]:
    import re

    text = re.sub(r"'_date': '[^']*'", "'_date': DATE", text)
    return [line.rstrip() for line in text.strip().splitlines()]


@pytest.mark.parametrize(("name", "line", "code", "output"), doc_examples(),
                         ids=lambda v: str(v) if isinstance(v, (int, str)) and len(str(v)) < 12 else "")
def test_doc_examples_print_what_the_docs_say(name: str, line: int, code: str, output: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, f"docs/{name}:{line}", "exec"), {"__name__": "__doc_example__"})
    assert normalise(capsys.readouterr().out) == normalise(output)


def test_the_docs_have_examples() -> None:
    assert len(doc_examples()) >= 7

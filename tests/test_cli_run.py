"""obelisk/cli.py: ``obelisk dry-run`` and ``obelisk run``.

Exit codes: 0 when the plan ran and added no error message; 1 when the plan is invalid,
the run added error messages, or it did not complete; 2 for unreadable input, bad mocks
or activities that cannot be imported.
"""

from __future__ import annotations

import io
import json
import pathlib
import sys
from typing import Any

import pytest
from clirun import cli as run

from obelisk import dry_run
from obelisk.planfile import read_plan_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
PAYMENT = str(ROOT / "examples/payment.json")
MODERATION = str(ROOT / "examples/moderation.json")
ACTIVITIES = "sample_activities:ACTIVITIES"


def write(tmp_path: pathlib.Path, content: Any, name: str = "plan.json") -> str:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))


# -- dry-run: text ----------------------------------------------------------------------


def test_dry_run_text() -> None:
    code, out, err = run("dry-run", PAYMENT)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["call", "instance", "tool", "outcome", "reason"]
    assert lines[1].split(None, 3) == ["0", "processPayment", "executed",
                                       "CardDeclined routed to alternative 2"]
    assert "dead branch: †state.receipt was not written" in lines[2]
    assert "values:" in out and '"type": "CardDeclined"' in out
    assert out.rstrip().endswith("status: completed")


def test_dry_run_text_lists_errors_and_exits_1(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "t", "_outputPath": "†state.r"}]})
    code, out, err = run("dry-run", plan)
    assert code == 1
    assert "errors:\n  t: NoMock: no mock for tool 't'" in out


def test_dry_run_text_shows_instances() -> None:
    code, out, _ = run("dry-run", MODERATION)
    assert code == 0
    assert "†state  [instance ③] = {" in out and '"decision": "reject"' in out
    assert out.count("executed") == 9


# -- dry-run: --json --------------------------------------------------------------------


def test_dry_run_json_is_exactly_the_report() -> None:
    code, out, _ = run("dry-run", PAYMENT, "--json")
    assert code == 0
    report = json.loads(out)
    assert list(report) == ["status", "diagnostics", "calls", "errors", "views", "trace"]
    pf = read_plan_file(PAYMENT)
    expected = dry_run(pf.plan, pf.context, tools=pf.tools, mocks=pf.mocks).report()
    assert report == json.loads(json.dumps(expected, ensure_ascii=False))
    assert report["calls"][0] == {"call": 0, "instance": None, "tool": "processPayment",
                                  "outcome": "executed",
                                  "reason": "CardDeclined routed to alternative 2"}
    assert set(report["views"]) == {"input", "state"}


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_dry_run_json_under_each_interpreter(interpreter: str) -> None:
    code, out, _ = run("dry-run", MODERATION, "--json", "--interpreter", interpreter)
    report = json.loads(out)
    report.pop("trace")
    _, sync_out, _ = run("dry-run", MODERATION, "--json")
    sync = json.loads(sync_out)
    sync.pop("trace")
    assert code == 0 and report == sync


def test_dry_run_json_errors_have_the_message_shape(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "t", "_outputPath": "†state.r"}],
                            "mocks": {"t": {"raise": {"type": "Boom", "message": "m"}}}})
    code, out, _ = run("dry-run", plan, "--json")
    assert code == 1
    assert json.loads(out)["errors"] == [{"type": "error", "data": {
        "call": {"_tool": "t", "_outputPath": "†state.r"},
        "error": {"type": "Boom", "message": "m"}}}]


def test_dry_run_of_an_invalid_plan(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "t", "x": "†state.nowhere"}]})
    code, out, err = run("dry-run", plan, "--json")
    assert code == 1
    report = json.loads(out)
    assert report["status"] == "invalid"
    assert [d["code"] for d in report["diagnostics"]] == ["dangling-reference"]
    assert (report["calls"], report["errors"], report["views"], report["trace"]) == ([], [], {}, [])
    code, out, err = run("dry-run", plan)
    assert code == 1 and out == ""
    assert "dangling-reference" in err and "nothing ran" in err


def test_dry_run_instances_flag(tmp_path: pathlib.Path) -> None:
    data = json.loads(pathlib.Path(MODERATION).read_text(encoding="utf-8"))
    data.pop("instances")
    plan = write(tmp_path, data)
    code, out, _ = run("dry-run", plan, "--json")
    assert code == 1  # not instanced: no global input has a comment, nothing writes one
    report = json.loads(out)
    assert report["status"] == "invalid"
    assert {d["code"] for d in report["diagnostics"]} == {"dangling-reference"}
    code, out, _ = run("dry-run", plan, "--json", "--instances")
    assert code == 0 and len(json.loads(out)["calls"]) == 9


def test_dry_run_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(pathlib.Path(PAYMENT).read_text("utf-8")))
    code, out, _ = run("dry-run", "-", "--json")
    assert code == 0 and json.loads(out)["calls"][2]["outcome"] == "executed"


# -- dry-run: --explore -----------------------------------------------------------------


def test_dry_run_explore_text() -> None:
    code, out, _ = run("dry-run", PAYMENT, "--explore")
    assert code == 0
    assert "explored 2 of 2 branch combinations:" in out
    assert "1. call 0 -> alternative 1: executed [0, 1], skipped [2], failed []" in out
    assert "2. call 0 -> alternative 2: executed [0, 2], skipped [1], failed []" in out


@pytest.mark.slow
def test_dry_run_explore_json_reports_truncation(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [
        {"_tool": "t", "n": i, "_outputPath": f"†state.ok{i} || †state.err{i}"} for i in range(9)],
        "mocks": {"t": {"return": 1}}})
    code, out, _ = run("dry-run", plan, "--explore", "--json")
    explore = json.loads(out)["explore"]
    assert (explore["total"], explore["run"], explore["truncated"]) == (512, 256, True)
    code, out, _ = run("dry-run", plan, "--explore")
    assert "explored 256 of 512 branch combinations (truncated):" in out


# -- dry-run: --mocks -------------------------------------------------------------------


def test_mocks_file_adds_to_and_overrides_the_plan_files(tmp_path: pathlib.Path) -> None:
    mocks = write(tmp_path, {"processPayment": {"return": {"receiptId": "r-9"}}}, "mocks.json")
    code, out, _ = run("dry-run", PAYMENT, "--mocks", mocks, "--json")
    report = json.loads(out)
    assert code == 0
    assert [c["outcome"] for c in report["calls"]] == ["executed", "executed", "skipped"]
    assert report["views"]["state"]["global"]["receipt"] == {"receiptId": "r-9"}


@pytest.mark.parametrize(("mocks", "message"), [
    ({"t": {"retrun": 1}}, "unknown field 'retrun'"),
    ({"t": {"sequence": []}}, "non-empty array"),
    ({"t": {"raise": "boom"}}, "mocks.t.raise"),
    (["not", "an", "object"], "mocks are an object"),
    ("{not json", "line 1"),
])
def test_bad_mocks_exit_2(tmp_path: pathlib.Path, mocks: Any, message: str) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "t", "_outputPath": "†state.r"}]})
    path = write(tmp_path, mocks, "mocks.json")
    code, out, err = run("dry-run", plan, "--mocks", path)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err


def test_bad_mocks_in_the_plan_file_exit_2(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "t"}], "mocks": {"t": {"echo": "yes"}}})
    code, _, err = run("dry-run", plan)
    assert code == 2 and "mocks.t.echo: true" in err


def test_a_missing_mocks_file_exits_2(tmp_path: pathlib.Path) -> None:
    code, _, err = run("dry-run", PAYMENT, "--mocks", str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json" in err


@pytest.mark.parametrize("content", ["{", '"a string"', '{"plan": "x"}', '{"plan": [], "extra": 1}',
                                     '{"context": []}'])
def test_an_unreadable_plan_file_exits_2(tmp_path: pathlib.Path, content: str) -> None:
    code, out, err = run("dry-run", write(tmp_path, content))
    assert code == 2 and out == "" and err.startswith("error: ")


# -- run --------------------------------------------------------------------------------


def test_run_with_activities() -> None:
    code, out, err = run("run", PAYMENT, "--activities", ACTIVITIES)
    assert (code, err) == (0, "")
    assert '"receiptId": "rcpt_50"' in out and '"status": "confirmed"' in out
    assert "reportFailure" in out and "dead branch: †state.error was not written" in out


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_run_routes_a_declined_card(tmp_path: pathlib.Path, interpreter: str) -> None:
    data = json.loads(pathlib.Path(PAYMENT).read_text(encoding="utf-8"))
    data["context"] = [{"type": "input", "amount": 500}]
    out_file = tmp_path / "context.json"
    code, out, _ = run("run", write(tmp_path, data), "--activities", ACTIVITIES,
                       "--interpreter", interpreter, "--out", str(out_file))
    assert code == 0
    context = json.loads(out_file.read_text(encoding="utf-8"))
    written = [m for m in context if "_outputPath" in m]
    assert [m["_outputPath"] for m in written] == ["†state.error", "†state.report"]
    assert written[1]["data"] == {"report": {"status": "Failed", "notified": True,
                                             "why": "CardDeclined"}}
    assert written[0]["_call"] == data["plan"][0] and written[0]["_outputMethod"] == "set"
    assert written[0]["_date"].endswith("Z")


def test_run_out_holds_error_messages_and_exits_1(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "processPayment", "amount": 500,
                                      "_outputPath": "†state.receipt"}]})
    out_file = tmp_path / "out.json"
    code, out, _ = run("run", plan, "--activities", ACTIVITIES, "--out", str(out_file))
    assert code == 1
    context = json.loads(out_file.read_text(encoding="utf-8"))
    assert context[-1]["type"] == "error"
    assert context[-1]["data"]["error"]["type"] == "CardDeclined"
    assert "errors:\n  processPayment: CardDeclined: Your card was declined." in out


def test_run_out_to_an_unwritable_place_exits_2(tmp_path: pathlib.Path) -> None:
    code, _, err = run("run", PAYMENT, "--activities", ACTIVITIES,
                       "--out", str(tmp_path / "no" / "such" / "dir.json"))
    assert code == 2 and "cannot write" in err


def test_run_a_latent_call_without_output_is_no_activity(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "think", "_outputPath": "†state.r"}]})
    code, out, _ = run("run", plan, "--activities", ACTIVITIES)
    assert code == 1 and "NoActivity" in out


def test_run_an_invalid_plan_exits_1(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "echo", "x": "†state.nowhere"}]})
    code, out, err = run("run", plan, "--activities", ACTIVITIES)
    assert code == 1 and out == "" and "dangling-reference" in err


def test_run_timeout_under_asyncio(tmp_path: pathlib.Path) -> None:
    plan = write(tmp_path, {"plan": [{"_tool": "hang", "_outputPath": "†state.r || †state.err"},
                                     {"_tool": "hang", "_outputPath": "†state.s"}]})
    code, out, _ = run("run", plan, "--activities", ACTIVITIES, "--interpreter", "asyncio",
                       "--timeout", "0.05", "--max-concurrency", "1")
    assert code == 1
    assert "Timeout routed to alternative 2" in out
    assert "errors:\n  hang: Timeout: no result within 0.05 s" in out


@pytest.mark.parametrize("option", [["--timeout", "1"], ["--max-concurrency", "2"]])
def test_asyncio_options_need_the_asyncio_interpreter(option: list[str]) -> None:
    code, out, err = run("run", PAYMENT, "--activities", ACTIVITIES, *option)
    assert code == 2 and "--interpreter asyncio" in err


@pytest.mark.parametrize(("option", "message"), [
    (["--timeout", "0"], "--timeout must be a positive"),
    (["--timeout", "nan"], "--timeout must be a positive"),
    (["--max-concurrency", "0"], "--max-concurrency must be at least 1"),
])
def test_asyncio_options_are_checked(option: list[str], message: str) -> None:
    code, out, err = run("run", PAYMENT, "--activities", ACTIVITIES, "--interpreter", "asyncio",
                         *option)
    assert code == 2 and message in err


@pytest.mark.parametrize(("spec", "message"), [
    ("sample_activities", "package.module:NAME"),
    ("no_such_module_xyz:ACTIVITIES", "cannot import 'no_such_module_xyz'"),
    ("sample_activities:MISSING_NAME", "has no attribute 'MISSING_NAME'"),
    ("sample_activities:NOT_A_DICT", "must be a dict of activity name -> callable"),
    ("sample_activities:NOT_CALLABLE", "must be a dict of activity name -> callable"),
])
def test_bad_activities_exit_2(spec: str, message: str) -> None:
    code, out, err = run("run", PAYMENT, "--activities", spec)
    assert code == 2 and out == "" and message in err


def test_an_activities_module_that_fails_to_import_exits_2(tmp_path: pathlib.Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_activities_xyz.py").write_text("raise RuntimeError('no database')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run("run", PAYMENT, "--activities", "broken_activities_xyz:ACTIVITIES")
    assert code == 2
    assert "cannot import 'broken_activities_xyz': RuntimeError: no database" in err


# -- run --approve ----------------------------------------------------------------------


def approve_run(monkeypatch: pytest.MonkeyPatch, answers: str, *extra: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(answers))
    return run("run", PAYMENT, "--activities", ACTIVITIES, "--approve", *extra)


def test_approve_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = approve_run(monkeypatch, "a\ny\n")
    assert code == 0
    assert err.count("[a]pprove, [e]dit, [r]eject?") == 2
    assert "about to run 'processPayment' with:" in err and '"amount": 50.0' in err
    assert '"status": "confirmed"' in out


def test_deny_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = approve_run(monkeypatch, "d\ntoo risky\n")
    assert code == 1
    assert "processPayment: Denied: too risky" in out
    assert "confirmOrder" in out and "skipped" in out
    assert err.count("[a]pprove") == 1  # skipped calls are never asked about


def test_deny_without_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = approve_run(monkeypatch, "n\n\n")
    assert code == 1 and "Denied: denied at the terminal" in out


def test_edit_the_parameters(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    out_file = tmp_path / "out.json"
    code, out, err = approve_run(monkeypatch, 'e\n{"amount": 500}\na\n', "--out", str(out_file))
    assert code == 0
    assert "new parameters as one line of JSON:" in err
    context = json.loads(out_file.read_text(encoding="utf-8"))
    assert [m["_outputPath"] for m in context if "_outputPath" in m] == [
        "†state.error", "†state.report"]  # 500 is declined


def test_bad_edits_are_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = approve_run(monkeypatch, "e\n{not json\ne\n[1]\nwhat?\na\na\n")
    assert code == 0
    assert "the new parameters must be a JSON object" in err
    assert err.count("[a]pprove") == 5


def test_an_edit_that_breaks_the_schema_fails_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = approve_run(monkeypatch, 'e\n{"amount": "lots"}\n')
    assert code == 1 and "processPayment: ParamSchema:" in out


def test_end_of_input_denies(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = approve_run(monkeypatch, "")
    assert code == 1 and "Denied: no answer (end of input)" in out


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_approve_under_each_interpreter(monkeypatch: pytest.MonkeyPatch, interpreter: str) -> None:
    code, out, _ = approve_run(monkeypatch, "a\nd\nlater\n", "--interpreter", interpreter)
    assert code == 1 and "confirmOrder: Denied: later" in out

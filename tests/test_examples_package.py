"""obelisk.examples: the example files and their activities ship in the package, so that
run, resume, history and agent can be tried right after `pip install obelisk`."""

from __future__ import annotations

import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from clirun import cli

from obelisk.examples import folder
from obelisk.examples.__main__ import copy_examples
from obelisk.examples.__main__ import main as copy_main

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHOP, ASSISTANT = "obelisk.examples.shop:ACTIVITIES", "obelisk.examples.assistant:ACTIVITIES"


# (plan file, activities, a line the run prints): every plan example runs for real.
RUNS = [
    ("payment.json", SHOP, '  †state = {"confirmation": {"receipt": "rcpt_50", '
                           '"status": "confirmed"}, "receipt": {"receiptId": "rcpt_50"}}'),
    ("order.json", SHOP, '  †state = {"confirmation": {"receipt": "rcpt_50", "status": '
                         '"confirmed", "trackingId": "trk_rcpt_50"}, "parcel": {"to": '
                         '"1 Quay Street, Lisbon", "trackingId": "trk_rcpt_50"}, '
                         '"receipt": {"receiptId": "rcpt_50"}}'),
    ("refund.json", SHOP, "   1            issueRefund          executed"),
    ("weather.json", ASSISTANT, '  †state = {"answer": {"suggestion": "a matinee at the BFI"}, '
                                '"notSunny": {"sky": "rain", "temperature": 11}, '
                                '"suggestion": "a matinee at the BFI"}'),
    ("moderation.json", ASSISTANT, '  †state  [instance ③] = {"decision": "reject", '
                                   '"keywords": ["spam"], "sentiment": 0.0}'),
    ("translation.json", ASSISTANT, '  †state = {"isEnglish": false, "language": "fr", '
                                    '"translatedText": "Hello world"}'),
]


@pytest.mark.parametrize(("name", "activities", "line"), RUNS, ids=[r[0] for r in RUNS])
def test_every_plan_example_runs_with_the_shipped_activities(
        name: str, activities: str, line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("obelisk.examples.shop.SHIPPING_SECONDS", 0)
    code, out, err = cli("run", str(EXAMPLES / name), "--activities", activities)
    assert code == 0, out + err
    assert line in [printed.rstrip() for printed in out.splitlines()]
    assert out.endswith("status: completed\n")


def test_a_declined_card_is_routed_to_the_error_branch(tmp_path: pathlib.Path) -> None:
    order = json.loads((EXAMPLES / "order.json").read_text(encoding="utf-8"))
    order["context"][0]["amount"] = 150
    (tmp_path / "order.json").write_text(json.dumps(order), encoding="utf-8")
    code, out, _ = cli("run", str(tmp_path / "order.json"), "--activities", SHOP)
    assert code == 0, out
    assert '"report": {"notified": true, "status": "Failed", "why": "CardDeclined"}' in out


# (agent file, activities, the output it ends with): every agent example runs for real.
AGENTS = [
    ("refund", SHOP, {"refundId": "rf-311", "amount": 49.9}),
    ("self-correct", SHOP, {"refundId": "rf-311", "amount": 49.9}),
    ("stream", ASSISTANT, 360),
]


@pytest.mark.parametrize(("name", "activities", "output"), AGENTS, ids=[a[0] for a in AGENTS])
def test_the_agent_examples_run_with_the_shipped_activities(name: str, activities: str,
                                                           output: object) -> None:
    code, out, err = cli("agent", str(EXAMPLES / "agent" / f"{name}.json"), "--llm",
                         f"script:{EXAMPLES / 'agent' / f'{name}.solutions.json'}",
                         "--activities", activities)
    assert code == 0, out + err
    assert "completed: output given" in out
    printed = out.split("output: ", 1)[1].rsplit("tokens:", 1)[0]
    assert json.loads(printed) == output


def test_the_self_correcting_agent_meets_the_legacy_total() -> None:
    code, out, _ = cli("agent", str(EXAMPLES / "agent" / "self-correct.json"), "--llm",
                       f"script:{EXAMPLES / 'agent' / 'self-correct.solutions.json'}",
                       "--activities", SHOP)
    assert code == 0
    assert "call 1 issueRefund: failed (ParamSchema)" in out  # '49.90', as the mocks show


def test_the_examples_copy_themselves(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "ex"
    out = io.StringIO()
    sys_stdout, sys.stdout = sys.stdout, out
    try:
        assert copy_main([str(target)]) == 0
    finally:
        sys.stdout = sys_stdout
    copied = sorted(p.relative_to(target) for p in target.rglob("*.json"))
    shipped = sorted(p.relative_to(EXAMPLES) for p in EXAMPLES.rglob("*.json")
                     if p.parent.name != "mcp")
    assert copied == shipped and len(copied) >= 18
    assert all((target / p).read_bytes() == (EXAMPLES / p).read_bytes() for p in copied)
    assert f"obelisk run {target}/payment.json --activities {SHOP}" in out.getvalue()
    assert pathlib.Path(folder()).resolve() == EXAMPLES.resolve()


def test_a_folder_that_cannot_be_written_is_exit_2(tmp_path: pathlib.Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    assert copy_main([str(blocker / "ex")]) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot copy the examples to {blocker}")
    with pytest.raises(OSError):
        copy_examples(str(blocker / "ex"))


@pytest.mark.slow
def test_a_durable_example_run_interrupted_then_resumed(tmp_path: pathlib.Path) -> None:
    """As the README shows: the order's run, interrupted while the parcel ships, resumed
    without paying again; from a folder with no test suite on the path."""
    bin_dir = pathlib.Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(NO_COLOR="1", PATH=f"{bin_dir}:{env['PATH']}")
    assert subprocess.run([sys.executable, "-m", "obelisk.examples", "ex"], cwd=tmp_path,
                          env=env, capture_output=True, check=False).returncode == 0
    run = subprocess.Popen(["obelisk", "run", "ex/order.json", "--activities", SHOP,
                            "--journal", "run.db"], cwd=tmp_path, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the payment is recorded
        seen = subprocess.run(["obelisk", "history", "run.db", "--json"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=False)
        if seen.returncode == 0 and any(r.get("event") == "finish" for r in
                                        json.loads(seen.stdout)["events"]):
            break
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=30)
    assert run.returncode == 130, stderr
    resumed = subprocess.run(["obelisk", "resume", "run.db", "--activities", SHOP],
                             cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.endswith("status: completed\n")
    history = subprocess.run(["obelisk", "history", "run.db", "--json"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True)
    rows = json.loads(history.stdout)["events"]
    paid = [r for r in rows if r.get("event") == "invoke" and r.get("call") == 0]
    assert len(paid) == 1  # the card was charged once


def test_the_readme_s_command_lines_name_what_exists() -> None:
    """The README's command-line list runs the shipped examples: every file it names is
    in the repository and every --activities names an importable dict (no pkg.mod)."""
    import importlib
    import re
    import shlex

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("### Command line", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    activities = []
    for line in block.splitlines():
        words = shlex.split(line.split("  #", 1)[0])
        for word in words:
            if word.endswith(".json") and not word.startswith("--"):
                assert (ROOT / word).exists(), line
        if "--activities" in words:
            activities.append(words[words.index("--activities") + 1])
    assert len(activities) >= 3
    for spec in activities:
        module, _, name = spec.partition(":")
        assert re.fullmatch(r"obelisk\.examples\.\w+", module), spec
        assert isinstance(getattr(importlib.import_module(module), name), dict)

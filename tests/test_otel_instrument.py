"""``opentelemetry-instrument obelisk run PLAN`` for real (issue 30, G6): the command of
docs/observability.md run in a subprocess, the SDK configured from the ``OTEL_*``
variables by ``opentelemetry-distro`` and printing each span on stdout (its console
exporter): the run's root span, one ``execute_tool`` span per call beneath it."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any

import pytest

TESTS = pathlib.Path(__file__).parent
DOC = TESTS.parent / "docs" / "observability.md"
#: The variables the documented command sets, and the command it runs (after
#: ``python -m obelisk.examples ex``, the line before it in the page).
VARIABLES = {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none",
             "OTEL_LOGS_EXPORTER": "none"}
COMMAND = ["obelisk", "run", "ex/payment.json", "--activities",
           "obelisk.examples.shop:ACTIVITIES"]


def spans_printed(text: str) -> list[dict[str, Any]]:
    """The spans the console exporter printed (JSON objects starting a line), in order."""
    decoder, spans = json.JSONDecoder(), []
    for found in re.finditer(r"^\{", text, re.M):
        value, _ = decoder.raw_decode(text, found.start())
        if isinstance(value, dict) and "context" in value:
            spans.append(value)
    return spans


def test_the_documented_command_is_the_one_tested() -> None:
    command = " ".join([*(f"{k}={v}" for k, v in VARIABLES.items()),
                        "opentelemetry-instrument", *COMMAND])
    page = DOC.read_text(encoding="utf-8")
    assert command in page.splitlines()
    assert page.index("python -m obelisk.examples ex") < page.index(command)


@pytest.mark.slow
def test_opentelemetry_instrument_prints_the_runs_spans(tmp_path: pathlib.Path) -> None:
    instrument = pathlib.Path(sys.executable).with_name("opentelemetry-instrument")
    if not instrument.exists():
        pytest.fail("opentelemetry-instrument is missing: pip install -e '.[dev]' "
                    "(opentelemetry-distro)")
    obelisk = pathlib.Path(sys.executable).with_name("obelisk")
    subprocess.run([sys.executable, "-m", "obelisk.examples", "ex"], cwd=tmp_path,
                   capture_output=True, check=True)
    env = {**os.environ, **VARIABLES}
    done = subprocess.run([str(instrument), str(obelisk), *COMMAND[1:]], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "status: completed" in done.stdout and not done.stderr
    spans = spans_printed(done.stdout)
    [root] = [s for s in spans if s["name"] == "invoke_workflow obelisk"]
    assert root["parent_id"] is None and root["attributes"]["obelisk.status"] == "completed"
    calls = sorted((s for s in spans if s["name"].startswith("execute_tool ")),
                   key=lambda s: s["attributes"]["obelisk.call"])
    plan = json.loads((tmp_path / "ex" / "payment.json").read_text(encoding="utf-8"))["plan"]
    assert [s["name"] for s in calls] == [f"execute_tool {c['_tool']}" for c in plan]
    assert {s["parent_id"] for s in calls} == {root["context"]["span_id"]}
    assert {s["context"]["trace_id"] for s in spans} == {root["context"]["trace_id"]}
    assert calls[2]["attributes"]["obelisk.outcome"] == "skipped"

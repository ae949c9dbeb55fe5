"""``obelisk report`` over every kind of run and every source: a plan run, an agent run,
a run with a delegate, a streamed agent run, a resumed run (plan and agent) and a dry run,
each from its journal (where one exists), its ``--events`` file and its ``--json`` report
(docs/observability.md, "What each source shows")."""

from __future__ import annotations

import io
import json
import pathlib
from typing import Any

import pytest

from obelisk.cli import main

ROOT = pathlib.Path(__file__).parent.parent
PAYMENT = str(ROOT / "examples" / "payment.json")
AGENTS = ROOT / "examples" / "agent"
ACTS = "sample_activities:ACTIVITIES"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def script(name: str) -> str:
    return f"script:{AGENTS / name}.solutions.json"


def made(folder: pathlib.Path, kind: str, *argv: str, journal: bool = True) -> dict[str, Any]:
    """Run ``argv`` with ``--events`` and ``--json`` (and ``--journal``): the sources."""
    db, events, report = folder / f"{kind}.db", folder / f"{kind}.jsonl", folder / f"{kind}.json"
    extra = ["--journal", str(db), "--run", kind] if journal else []
    code, out, err = cli(*argv, *extra, "--events", str(events), "--json")
    assert code == 0, err
    report.write_text(out, encoding="utf-8")
    return {"journal": db if journal else None, "events": events, "json": report}


def resumed(folder: pathlib.Path, kind: str, first: list[str], *again: str) -> dict[str, Any]:
    """A run, then its resume (of an ended run: everything told from the journal)."""
    made(folder, kind + "0", *first)
    db = folder / f"{kind}0.db"
    events, report = folder / f"{kind}.jsonl", folder / f"{kind}.json"
    code, out, err = cli("resume", str(db), *again, "--events", str(events), "--json")
    assert code == 0, err
    report.write_text(out, encoding="utf-8")
    return {"journal": db, "events": events, "json": report}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    import sys

    sys.path.insert(0, str(ROOT / "tests"))  # sample_activities
    folder = tmp_path_factory.mktemp("matrix")
    refund = [str(AGENTS / "refund.json"), "--llm", script("refund"),
              "--activities", "obelisk.examples.shop:ACTIVITIES"]
    return {
        "plan": made(folder, "plan", "run", PAYMENT, "--activities", ACTS),
        "agent": made(folder, "agent", "agent", *refund),
        "delegate": made(folder, "delegate", "agent", str(AGENTS / "producer.json"), "--llm",
                         script("producer"), "--delegate-root", str(AGENTS / "requests")),
        "stream": made(folder, "stream", "agent", str(AGENTS / "stream.json"), "--llm",
                       script("stream"), "--stream"),
        "resumed-plan": resumed(folder, "rplan", ["run", PAYMENT, "--activities", ACTS],
                                "--activities", ACTS),
        "resumed-agent": resumed(folder, "ragent", ["agent", *refund], "--llm",
                                 script("refund"), "--activities",
                                 "obelisk.examples.shop:ACTIVITIES"),
        "dry": made(folder, "dry", "dry-run", PAYMENT, journal=False),
    }


def own_calls(events_file: pathlib.Path) -> int:
    """The run's own calls (a delegate's are in its caller's bar), from its events."""
    nodes = set()
    for line in events_file.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["type"] == "plan" and "delegate" not in event:
            nodes.update((event.get("tick"), n["node"]) for n in event["nodes"])
    return len(nodes)


KINDS = ["plan", "agent", "delegate", "stream", "resumed-plan", "resumed-agent", "dry"]
#: Every kind from every source it has (a dry run records no journal).
CASES = [(kind, source) for kind in KINDS for source in ("journal", "events", "json")
         if (kind, source) != ("dry", "journal")]


@pytest.mark.parametrize(("kind", "source"), CASES)
def test_every_kind_of_run_is_reported_from_every_source(
        runs: dict[str, dict[str, Any]], tmp_path: pathlib.Path, kind: str, source: str) -> None:
    found = runs[kind][source]
    page = tmp_path / "run.html"
    code, _, err = cli("report", str(found), "-o", str(page))
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    calls = own_calls(runs[kind]["events"])
    assert calls > 0
    assert text.count('class="node') == calls and text.count('class="row call"') == calls
    if kind in ("agent", "delegate", "stream", "resumed-agent") and source != "json":
        assert 'class="row llm"' in text  # each tick's LLM request (a --json has no times)

"""``obelisk report``: the page made from an events file, a journal or a ``--json`` report,
self-contained; bad sources are bad input (the browser test is test_report_browser.py)."""

from __future__ import annotations

import io
import json
import pathlib
import re
from typing import Any

import pytest

import obelisk
from obelisk.cli import main
from obelisk.journal.events import recorded_events
from obelisk.runreport import render_page
from obelisk.runreport.model import fold

TESTS = pathlib.Path(__file__).parent
PAYMENT = str(TESTS.parent / "examples" / "payment.json")
ACTS = "sample_activities:ACTIVITIES"


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def self_contained(page: str) -> None:
    """Nothing on the page is fetched: no URL in a src, href or CSS url()."""
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "url(" not in page and "@import" not in page


def test_a_page_from_an_events_file(tmp_path: pathlib.Path) -> None:
    events, page = tmp_path / "e.jsonl", tmp_path / "run.html"
    code, _, _ = cli("run", PAYMENT, "--activities", ACTS, "--events", str(events))
    assert code == 0
    code, _, err = cli("report", str(events), "-o", str(page))
    text = page.read_text(encoding="utf-8")
    assert code == 0 and "report:" in err
    self_contained(text)
    assert text.count('class="node') == 3 and text.count('class="row call"') == 3
    assert "dead branch" in text  # the skipped call's reason, in its details


def test_a_page_from_a_journal_reads_the_same_events(tmp_path: pathlib.Path) -> None:
    db, page, events = tmp_path / "run.db", tmp_path / "run.html", tmp_path / "e.jsonl"
    code, _, _ = cli("run", PAYMENT, "--activities", ACTS, "--journal", str(db), "--run", "R",
                     "--events", str(events))
    assert code == 0
    live = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    with obelisk.Journal.open(db, create=False, read_only=True) as journal:
        again = recorded_events(journal, "R")

    def steps(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(e["type"], e.get("call"), e.get("outcome"), e.get("reason"))
                for e in found]  # the journal records each call's start time too

    assert steps(again) == steps(live)
    code, _, _ = cli("report", str(db), "-o", str(page), "--run", "R")
    assert code == 0 and page.read_text(encoding="utf-8").count('class="node') == 3


def test_a_page_from_a_json_report(tmp_path: pathlib.Path) -> None:
    report, page = tmp_path / "report.json", tmp_path / "run.html"
    code, out, _ = cli("dry-run", PAYMENT, "--json")
    report.write_text(out, encoding="utf-8")
    code, _, _ = cli("report", str(report), "-o", str(page))
    assert code == 0 and page.read_text(encoding="utf-8").count('class="node') == 3


@pytest.mark.parametrize(("content", "expected"), [
    ('{"type": "run_started"}\nnot json\n', ":2:1: not a JSON event"),
    ("[1, 2]\n", ":1: not an event"),
    ("", "no events in it"),
])
def test_a_source_that_is_not_a_run_is_bad_input(tmp_path: pathlib.Path, content: str,
                                                 expected: str) -> None:
    source = tmp_path / "e.jsonl"
    source.write_text(content, encoding="utf-8")
    code, _, err = cli("report", str(source), "-o", str(tmp_path / "r.html"))
    assert code == 2 and expected in err and "e.jsonl" in err


def test_a_missing_source_and_an_unwritable_page_are_bad_input(tmp_path: pathlib.Path) -> None:
    code, _, err = cli("report", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "r.html"))
    assert code == 2 and "cannot read" in err
    source = tmp_path / "e.jsonl"
    source.write_text('{"type": "run_started", "time": 0}\n', encoding="utf-8")
    code, _, err = cli("report", str(source), "-o", str(tmp_path / "no" / "r.html"))
    assert code == 2 and "cannot write" in err


def test_text_from_the_run_cannot_break_out_of_the_page() -> None:
    events: list[dict[str, Any]] = []
    obelisk.run_sync([{"_tool": "</script><b>x", "_outputPath": "†x"}], [],
                     activities={"</script><b>x": lambda *_: "</script>"},
                     on_event=events.append)
    page = render_page(events)
    assert page.count("</script>") == 2  # the data block's and the script's own
    assert "<b>x" not in page


def test_the_critical_path_follows_the_slowest_chain() -> None:
    def ev(kind: str, node: int, time: float, **more: Any) -> dict[str, Any]:
        return {"type": kind, "node": node, "call": node, "time": time, **more}

    events = [{"type": "run_started", "kind": "plan", "time": 0.0},
              {"type": "plan", "time": 0.0, "nodes": [{"node": n, "call": n} for n in range(4)],
               "edges": [[0, 2, [0]], [1, 2, [0]], [2, 3, [0]]]},
              ev("call_started", 0, 0.0), ev("call_started", 1, 0.0),
              ev("call_finished", 0, 1.0, outcome="executed"),
              ev("call_finished", 1, 3.0, outcome="executed"),
              ev("call_started", 2, 3.0), ev("call_finished", 2, 4.0, outcome="executed"),
              ev("call_started", 3, 4.0), ev("call_finished", 3, 4.5, outcome="executed")]
    assert [c.node for c in fold(events).critical_path()] == [1, 2, 3]

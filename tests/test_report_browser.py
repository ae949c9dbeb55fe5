"""``obelisk report``'s page in a real browser: headless Chromium through WebDriver
(selenium). No console errors, one SVG node and one timeline bar per call, a click shows
the call's details; a screenshot is saved under .ci/output/ (CI keeps it).

Skips where Chromium or its driver is absent, unless ``OBELISK_REQUIRE_BROWSER`` is set
(``.ci/run`` sets it): then it fails."""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

import obelisk
from obelisk.interpreters.stream import CONTENT_VARIABLE
from obelisk.runreport import render_page

ROOT = pathlib.Path(__file__).parent.parent
OUTPUT = ROOT / ".ci" / "output"

pytestmark = pytest.mark.slow


def _browser() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        message = ("Chromium and chromedriver are needed to open the report in a browser "
                   "(apt-get install chromium chromium-driver)")
        if os.environ.get("OBELISK_REQUIRE_BROWSER"):
            pytest.fail(message + ": OBELISK_REQUIRE_BROWSER is set")
        pytest.skip(message)
    return chromium, driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver = _browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="obelisk-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--no-sandbox", "--headless", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()
        shutil.rmtree(profile, ignore_errors=True)


def boom(*_: Any) -> Any:
    raise ValueError("declined")


def payment_events() -> list[dict[str, Any]]:
    """A run with a routed failure, a dead branch, a fan-out and a join."""
    plan = [{"_tool": "charge", "amount": 50, "_outputPath": "†receipt || †failure"},
            {"_tool": "confirm", "receipt": "†receipt", "_outputPath": "†confirmed"},
            {"_tool": "notify", "error": "†failure", "_outputPath": "†told"},
            {"_tool": "audit", "n": 1, "_outputPath": "†a1"},
            {"_tool": "audit", "n": 2, "_outputPath": "†a2"},
            {"_tool": "close", "a": "†a1", "b": "†a2", "t": "†told", "_outputPath": "†done"}]
    events: list[dict[str, Any]] = []
    obelisk.run_sync(plan, [], activities={"charge": boom, "confirm": lambda *_: 1,
                                           "notify": lambda *_: 2, "audit": lambda *_: 3,
                                           "close": lambda *_: 4},
                     approve=lambda call: call["_tool"] != "audit" or call["n"] == 1,
                     on_event=events.append)
    return events


def open_page(browser: Any, page: str, tmp_path: pathlib.Path) -> None:
    target = tmp_path / "run.html"
    target.write_text(page, encoding="utf-8")
    browser.get(target.as_uri())


def console_errors(browser: Any) -> list[Any]:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def test_the_page_works_in_chromium(browser: Any, tmp_path: pathlib.Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from selenium.webdriver.common.by import By

    monkeypatch.setenv(CONTENT_VARIABLE, "true")  # the details then show the calls
    events = payment_events()
    calls = sum(1 for e in events if e["type"] in ("call_finished", "call_skipped"))
    open_page(browser, render_page(events, "payment"), tmp_path)
    assert console_errors(browser) == []
    nodes = browser.find_elements(By.CSS_SELECTOR, "svg.graph g.node")
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.timeline g.row.call")
    assert len(nodes) == len(bars) == calls == 6
    details = browser.find_element(By.ID, "details")
    assert not details.is_displayed()
    nodes[0].click()
    assert details.is_displayed()
    assert "call 0 charge" in details.text
    assert "ValueError routed to alternative 2" in details.text
    assert "alternative taken 2" in details.text and '"amount": 50' in details.text
    bars[-1].click()  # the timeline's rows show details too
    assert "call" in details.text and details.is_displayed()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    nodes[1].click()
    assert "skip reason" in details.text and "dead branch" in details.text
    browser.save_screenshot(str(OUTPUT / "report.png"))
    assert console_errors(browser) == []


def test_an_agent_run_page_shows_its_ticks(browser: Any, tmp_path: pathlib.Path) -> None:
    from selenium.webdriver.common.by import By

    from obelisk.llm.scripted import ScriptedLLM

    tool = {"type": "object", "properties": {"_tool": {"const": "add"},
                                             "a": {"type": "integer"}}}
    llm = ScriptedLLM([{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†s"},
                                  {"_tool": "add", "a": 2, "_outputPath": "†t"}],
                        "output": None}, {"calls": [], "output": "†s"}])
    events: list[dict[str, Any]] = []
    obelisk.run_agent_sync([{"type": "task", "text": "add"}], llm, tools=[tool],
                           activities={"add": lambda *_: 3}, on_event=events.append)
    open_page(browser, render_page(events, "agent"), tmp_path)
    assert console_errors(browser) == []
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.graph g.node")) == 2
    llm_rows = browser.find_elements(By.CSS_SELECTOR, "svg.timeline g.row.llm")
    assert len(llm_rows) == 2
    llm_rows[0].click()
    details = browser.find_element(By.ID, "details")
    assert "tick 1" in details.text and "tokens" in details.text
    browser.save_screenshot(str(OUTPUT / "report-agent.png"))


def test_an_agent_runs_journal_page_has_a_node_and_a_bar_per_call(
        browser: Any, tmp_path: pathlib.Path) -> None:
    from selenium.webdriver.common.by import By

    from obelisk.journal.events import recorded_events
    from obelisk.llm.scripted import ScriptedLLM

    tool = {"type": "object", "properties": {"_tool": {"const": "add"},
                                             "a": {"type": "integer"}}}
    llm = ScriptedLLM([{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†s"},
                                  {"_tool": "add", "a": "†s", "_outputPath": "†t"}],
                        "output": None},
                       {"calls": [{"_tool": "add", "a": 2, "_outputPath": "†u"}],
                        "output": None}, {"calls": [], "output": "†u"}])
    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        obelisk.run_agent_sync([{"type": "task", "text": "add"}], llm, tools=[tool],
                               activities={"add": lambda *_: 3}, journal=journal, run_id="A")
        events = recorded_events(journal, "A")
    open_page(browser, render_page(events, "agent journal"), tmp_path)
    assert console_errors(browser) == []
    nodes = browser.find_elements(By.CSS_SELECTOR, "svg.graph g.node")
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.timeline g.row.call")
    assert len(nodes) == len(bars) == 3
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.timeline g.row.llm")) == 3
    bars[0].click()
    details = browser.find_element(By.ID, "details")
    assert details.is_displayed() and "call 0" in details.text
    assert console_errors(browser) == []


def thousand_events() -> list[dict[str, Any]]:
    plan = [{"_tool": "w", "i": i, "_outputPath": f"†s.c{i}"} if i % 10 == 0 else
            {"_tool": "w", "i": i, "prev": f"†s.c{i - 1}", "_outputPath": f"†s.c{i}"}
            for i in range(1000)]
    events: list[dict[str, Any]] = []
    obelisk.run_sync(plan, [], activities={"w": lambda call, *_: call["i"]},
                     on_event=events.append)
    return events


def test_a_thousand_call_run_stays_small_and_opens(browser: Any,
                                                   tmp_path: pathlib.Path) -> None:
    from selenium.webdriver.common.by import By

    page = render_page(thousand_events(), "a thousand calls")
    assert len(page.encode("utf-8")) < 2_000_000
    open_page(browser, page, tmp_path)
    assert console_errors(browser) == []
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.graph g.node")) == 1000

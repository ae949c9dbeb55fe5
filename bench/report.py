"""``obelisk report`` at 1,000 calls: the page's size, the time to make it, and the time
headless Chromium takes to load and draw it (the Navigation Timing API's loadEventEnd,
then one animation frame). Needs Debian's ``chromium`` and ``chromium-driver`` and the
dev extras (selenium)."""

from __future__ import annotations

import pathlib
import shutil
import sys
import tempfile
import time
from typing import Any

import obelisk
from obelisk.runreport import render_page

CALLS = 1000


def events() -> list[dict[str, Any]]:
    """A 1,000-call plan of 100 chains of 10 calls."""
    plan = [{"_tool": "w", "i": i, "_outputPath": f"†s.c{i}"} if i % 10 == 0 else
            {"_tool": "w", "i": i, "prev": f"†s.c{i - 1}", "_outputPath": f"†s.c{i}"}
            for i in range(CALLS)]
    found: list[dict[str, Any]] = []
    obelisk.run_sync(plan, [], activities={"w": lambda call, *_: call["i"]},
                     on_event=found.append)
    return found


def main() -> None:
    made = time.perf_counter()
    page = render_page(events(), "bench")
    made = time.perf_counter() - made
    print(f"page for {CALLS} calls: {len(page.encode('utf-8')) / 1e6:.2f} MB "
          f"(target < 2 MB), made in {made:.2f} s")
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        sys.exit("chromium and chromedriver are needed for the load time")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    folder = pathlib.Path(tempfile.mkdtemp(prefix="obelisk-report-bench-"))
    target = folder / "run.html"
    target.write_text(page, encoding="utf-8")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--no-sandbox", "--headless", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", f"--user-data-dir={folder / 'profile'}"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(driver), options=options)
    try:
        loads = []
        for _ in range(5):
            browser.get(target.as_uri())
            loads.append(browser.execute_async_script(
                "var done=arguments[0];requestAnimationFrame(function(){done("
                "performance.now()-0)});") / 1000)
        print(f"Chromium: load and first frame {min(loads):.3f} s best of 5, "
              f"{max(loads):.3f} s worst (target < 2 s)")
    finally:
        browser.quit()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
